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
	"sync/atomic"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedScheme prefixes the zmq4 transport names under which tcp endpoints are dialled and
// bound. zmq4 reads every frame header and body with its own read call on the socket; on a busy
// stream two thirds of the receiver's CPU went to read syscalls and the publisher dropped at
// its high-water mark. Reading through a large buffer makes each syscall carry many frames.
//
// The transport also enforces a bound on message size: zmq4 allocates each frame at whatever
// size its ZMTP header claims (up to 2^63 bytes) before reading it, and appends frames to a
// message for as long as the MORE flag says, so a broken or hostile peer could make the tap
// allocate without limit. The connection parses the ZMTP frame headers that pass through it
// and fails with a MessageTooLargeError before zmq4 sees a header that takes the frames of one
// message past the bound. zmq4 transports are registered by name, once per process, so there
// is one name per bound: "kvtcp<bound>".
const bufferedScheme = "kvtcp"

// DefaultMaxMessage is the message-size bound when none is configured. A vLLM message is one
// scheduler step's events, a few KB to a few MB even for 128k-token prefills; 64 MiB leaves a
// wide margin.
const DefaultMaxMessage = 64 << 20

const readBufferSize = 256 << 10

// zmtpGreeting is the length of the ZMTP 3.x greeting that precedes the frames.
const zmtpGreeting = 64

// registered holds the transport names already registered with zmq4, by bound.
var registered sync.Map

// schemeFor registers (once) and returns the transport name for messages of at most maxMessage
// bytes.
func schemeFor(maxMessage uint64) string {
	name := bufferedScheme + strconv.FormatUint(maxMessage, 10)
	if _, loaded := registered.LoadOrStore(name, true); !loaded {
		// A duplicate name can only mean another copy of this function registered it.
		_ = zmq4.RegisterTransport(name, bufferedTransport{maxMessage: maxMessage})
	}
	return name
}

// zmqEndpoint maps a user's tcp:// endpoint to the buffered transport with the given message
// bound (0 means DefaultMaxMessage).
func zmqEndpoint(ep string, maxMessage uint64) string {
	if maxMessage == 0 {
		maxMessage = DefaultMaxMessage
	}
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return schemeFor(maxMessage) + "://" + rest
	}
	return ep
}

// ourScheme matches our transport names in zmq4's error messages.
var ourScheme = regexp.MustCompile(bufferedScheme + `[0-9]*://`)

type bufferedTransport struct{ maxMessage uint64 }

func (t bufferedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c, t.maxMessage), nil
}

func (t bufferedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	g, _ := ctx.Value(peersKey{}).(*peerGauge)
	return bufferedListener{l, t.maxMessage, g}, nil
}

// peersKey carries a *peerGauge in the context of a listening socket: zmq4 passes the socket's
// context to the transport, and does not tell its user which peer a message came from.
type peersKey struct{}

// peerGauge counts the peers connected to a listener, and the most connected at once.
type peerGauge struct {
	open, most atomic.Int64
}

func (g *peerGauge) add(d int64) {
	n := g.open.Add(d)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (bufferedTransport) Addr(ep string) (string, error) {
	return transport.New("tcp").Addr(ep)
}

type bufferedListener struct {
	net.Listener
	maxMessage uint64
	peers      *peerGauge
}

func (l bufferedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	bc := newBufferedConn(c, l.maxMessage).(*bufferedConn)
	if l.peers != nil {
		l.peers.add(1)
		bc.peers = l.peers
	}
	return bc, nil
}

// MessageTooLargeError is returned by a connection whose peer sent ZMTP frame headers claiming
// more bytes for one message (all its frames) than the bound; the connection is dropped before
// anything is allocated for the frame that crossed it. Size is what the message claimed up to
// and including that frame: the message is at least that large.
type MessageTooLargeError struct {
	Peer      string
	Size, Max uint64
	// Frames is set instead of Size when the message went over maxConnFrames frames.
	Frames int
}

func (e *MessageTooLargeError) Error() string {
	if e.Frames > 0 {
		return fmt.Sprintf("peer %s sent a ZMTP message of more than %d frames (a vLLM message has 3): connection dropped", e.Peer, e.Frames-1)
	}
	return fmt.Sprintf("peer %s sent a ZMTP message of at least %d bytes, over the %d-byte bound (--max-message): connection dropped", e.Peer, e.Size, e.Max)
}

// maxConnFrames bounds the frames of one message on a connection. zmq4 appends a frame to the
// message for every header with the MORE flag, and empty frames add nothing to the byte
// bound, so without it a peer could grow one message without limit. Messages of more than
// maxFrames but at most maxConnFrames frames are received and counted as malformed; past
// maxConnFrames the connection is dropped like an oversize message.
const maxConnFrames = 4096

// bufferedConn reads through a large buffer and tracks the ZMTP framing of what it hands out:
// first the greeting, then per frame a header (flags, then 1 size byte, or 8 with the LONG
// flag) and a body. It hands out no byte of a header before adding the frame's size to its
// message's and checking the bound.
type bufferedConn struct {
	net.Conn
	r          *bufio.Reader
	maxMessage uint64
	greeting   int    // greeting bytes still to hand out
	header     int    // header bytes still to hand out
	body       uint64 // body bytes still to hand out
	more       bool   // the current frame has the MORE flag: the message goes on
	message    uint64 // bytes claimed by the current message's frames so far
	frames     int    // frames of the current message so far
	err        error
	peers      *peerGauge // the listener's, counted down once on Close
	closeOnce  sync.Once
}

func (c *bufferedConn) Close() error {
	if c.peers != nil {
		c.closeOnce.Do(func() { c.peers.add(-1) })
	}
	return c.Conn.Close()
}

func newBufferedConn(c net.Conn, maxMessage uint64) net.Conn {
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize), maxMessage: maxMessage, greeting: zmtpGreeting}
}

const (
	zmtpMore = 0x01
	zmtpLong = 0x02
)

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
		var size uint64
		header := 2
		if flags[0]&zmtpLong == 0 {
			h, err := c.r.Peek(2)
			if err != nil {
				return 0, err
			}
			size = uint64(h[1])
		} else {
			h, err := c.r.Peek(9)
			if err != nil {
				return 0, err
			}
			size, header = binary.BigEndian.Uint64(h[1:9]), 9
		}
		if !c.more {
			c.message, c.frames = 0, 0 // the previous frame ended its message
		}
		c.more = flags[0]&zmtpMore != 0
		c.frames++
		if c.frames > maxConnFrames {
			c.err = &MessageTooLargeError{Peer: c.RemoteAddr().String(), Size: c.message, Max: c.maxMessage, Frames: c.frames}
			return 0, c.err
		}
		if size > c.maxMessage-c.message {
			c.err = &MessageTooLargeError{Peer: c.RemoteAddr().String(), Size: c.message + min(size, 1<<62), Max: c.maxMessage}
			return 0, c.err
		}
		c.message += size
		c.header, c.body = header, size
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
