package events

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedScheme prefixes the zmq4 transport names under which tcp endpoints are dialled and
// bound. zmq4 reads every frame header and body with its own read call on the socket; on a busy
// stream two thirds of the receiver's CPU went to read syscalls and the publisher dropped at
// its high-water mark. Reading through a large buffer makes each syscall carry many frames.
//
// The transport also enforces a bound on frame size: zmq4 allocates each frame at whatever
// size its ZMTP header claims (up to 2^63 bytes) before reading it, so a broken or hostile peer
// could make the tap allocate without limit. The connection parses the ZMTP frame headers that
// pass through it and fails with a FrameTooLargeError before zmq4 sees a header claiming more
// than the bound. zmq4 transports are registered by name, once per process, so there is one
// name per bound: "kvtcp<bound>".
const bufferedScheme = "kvtcp"

// DefaultMaxFrame is the frame-size bound when none is configured. A vLLM batch is one scheduler
// step's events, a few KB to a few MB even for 128k-token prefills; 64 MiB leaves a wide margin.
const DefaultMaxFrame = 64 << 20

const readBufferSize = 256 << 10

// zmtpGreeting is the length of the ZMTP 3.x greeting that precedes the frames.
const zmtpGreeting = 64

// registered holds the transport names already registered with zmq4, by bound.
var registered sync.Map

// schemeFor registers (once) and returns the transport name for frames of at most maxFrame bytes.
func schemeFor(maxFrame uint64) string {
	name := bufferedScheme + strconv.FormatUint(maxFrame, 10)
	if _, loaded := registered.LoadOrStore(name, true); !loaded {
		// A duplicate name can only mean another copy of this function registered it.
		_ = zmq4.RegisterTransport(name, bufferedTransport{maxFrame: maxFrame})
	}
	return name
}

// zmqEndpoint maps a user's tcp:// endpoint to the buffered transport with the given frame
// bound (0 means DefaultMaxFrame).
func zmqEndpoint(ep string, maxFrame uint64) string {
	if maxFrame == 0 {
		maxFrame = DefaultMaxFrame
	}
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return schemeFor(maxFrame) + "://" + rest
	}
	return ep
}

// ourScheme matches our transport names in zmq4's error messages.
var ourScheme = regexp.MustCompile(bufferedScheme + `[0-9]*://`)

type bufferedTransport struct{ maxFrame uint64 }

func (t bufferedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c, t.maxFrame), nil
}

func (t bufferedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return bufferedListener{l, t.maxFrame}, nil
}

func (bufferedTransport) Addr(ep string) (string, error) {
	return transport.New("tcp").Addr(ep)
}

type bufferedListener struct {
	net.Listener
	maxFrame uint64
}

func (l bufferedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c, l.maxFrame), nil
}

// FrameTooLargeError is returned by a connection whose peer sent a ZMTP frame header claiming
// more bytes than the bound; the connection is dropped before anything is allocated for it.
type FrameTooLargeError struct {
	Peer      string
	Size, Max uint64
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("peer %s sent a %d-byte ZMTP frame, over the %d-byte bound (--max-frame): connection dropped", e.Peer, e.Size, e.Max)
}

// bufferedConn reads through a large buffer and tracks the ZMTP framing of what it hands out:
// first the greeting, then per frame a header (flags, then 1 size byte, or 8 with the LONG
// flag) and a body. It hands out no byte of a long header before checking its size.
type bufferedConn struct {
	net.Conn
	r        *bufio.Reader
	maxFrame uint64
	greeting int    // greeting bytes still to hand out
	header   int    // header bytes still to hand out
	body     uint64 // body bytes still to hand out
	err      error
}

func newBufferedConn(c net.Conn, maxFrame uint64) net.Conn {
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize), maxFrame: maxFrame, greeting: zmtpGreeting}
}

const zmtpLong = 0x02

func (c *bufferedConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	switch {
	case len(p) == 0:
		return 0, nil
	case c.greeting > 0:
		n, err := c.r.Read(p[:min(len(p), c.greeting)])
		c.greeting -= n
		return n, err
	case c.header == 0 && c.body == 0: // at a frame header
		flags, err := c.r.Peek(1)
		if err != nil {
			return 0, err
		}
		if flags[0]&zmtpLong == 0 {
			h, err := c.r.Peek(2)
			if err != nil {
				return 0, err
			}
			c.header, c.body = 2, uint64(h[1])
			break
		}
		h, err := c.r.Peek(9)
		if err != nil {
			return 0, err
		}
		size := binary.BigEndian.Uint64(h[1:9])
		if size > c.maxFrame {
			c.err = &FrameTooLargeError{Peer: c.RemoteAddr().String(), Size: size, Max: c.maxFrame}
			return 0, c.err
		}
		c.header, c.body = 9, size
	}
	if c.header > 0 {
		n, err := c.r.Read(p[:min(len(p), c.header)])
		c.header -= n
		return n, err
	}
	n, err := c.r.Read(p[:min(uint64(len(p)), c.body)])
	c.body -= uint64(n)
	return n, err
}
