package events

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedScheme is the zmq4 transport name under which tcp endpoints are dialled and bound.
// zmq4 reads every frame header and body with its own read call on the socket; on a busy
// stream two thirds of the receiver's CPU went to read syscalls and the publisher dropped at
// its high-water mark. Reading through a large buffer makes each syscall carry many frames.
const bufferedScheme = "kvtcp"

const readBufferSize = 256 << 10

var registerOnce sync.Once

func registerTransport() {
	registerOnce.Do(func() {
		// A duplicate name can only mean another copy of this function registered it.
		_ = zmq4.RegisterTransport(bufferedScheme, bufferedTransport{})
	})
}

// zmqEndpoint maps a user's tcp:// endpoint to the buffered transport.
func zmqEndpoint(ep string) string {
	registerTransport()
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return bufferedScheme + "://" + rest
	}
	return ep
}

type bufferedTransport struct{}

func (bufferedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c), nil
}

func (bufferedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return bufferedListener{l}, nil
}

func (bufferedTransport) Addr(ep string) (string, error) {
	return transport.New("tcp").Addr(ep)
}

type bufferedListener struct{ net.Listener }

func (l bufferedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c), nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func newBufferedConn(c net.Conn) net.Conn {
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize)}
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
