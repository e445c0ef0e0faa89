package events

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// zmtpStream is a greeting followed by frames as a ZMTP 3 peer writes them.
func zmtpStream(bodies ...int) []byte {
	out := bytes.Repeat([]byte{0x7f}, zmtpGreeting)
	for i, n := range bodies {
		var flags byte
		if i < len(bodies)-1 {
			flags |= 0x01 // MORE
		}
		if n > 255 {
			out = append(out, flags|zmtpLong)
			out = binary.BigEndian.AppendUint64(out, uint64(n))
		} else {
			out = append(out, flags, byte(n))
		}
		out = append(out, bytes.Repeat([]byte{byte(i)}, n)...)
	}
	return out
}

// pipeConn serves b to a bufferedConn with the given bound, as a socket would.
func pipeConn(t *testing.T, b []byte, maxMessage uint64) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	go func() {
		_, _ = server.Write(b)
		_ = server.Close()
	}()
	return newBufferedConn(client, maxMessage)
}

// TestBufferedConnFrames: messages within the bound pass through byte for byte, in reads of
// any size; a frame header that takes its message over the bound fails the connection before
// any byte of that header is handed out, so zmq4 never sees the size it would allocate.
func TestBufferedConnFrames(t *testing.T) {
	msg := func(bodies ...int) []byte { return zmtpStream(bodies...)[zmtpGreeting:] }
	greeting := zmtpStream()
	join := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{greeting}, parts...), nil) }
	const bound = 1 << 10
	tests := []struct {
		name     string
		in       []byte
		readSize int
		// wantSize is the message size in the error (0: no error); handed is how many bytes
		// come out before it.
		wantSize uint64
		handed   int
	}{
		{"short frames", join(msg(0, 8, 255)), 4096, 0, 0},
		{"message at the bound", join(msg(3, 8, 1013)), 4096, 0, 0},
		{"bound per message", join(msg(3, 8, 1013), msg(1000), msg(1024)), 4096, 0, 0},
		{"byte by byte", join(msg(3, 8, 300, 0)), 1, 0, 0},
		{"long frame over the bound", join(msg(3, 8, 1014)), 4096, 1025, len(join(msg(3, 8)))},
		{"huge claim", join(msg(3), binary.BigEndian.AppendUint64([]byte{zmtpLong}, 1<<40)), 4096, 1 << 40, len(join(msg(3)))},
		{"many short frames", join(msg(200, 200, 200, 200, 200, 200, 200)), 7, 1200, len(join(msg(200, 200, 200, 200, 200)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pipeConn(t, tt.in, bound)
			var got []byte
			buf := make([]byte, tt.readSize)
			var err error
			for {
				var n int
				n, err = c.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			var tl *MessageTooLargeError
			if tt.wantSize != 0 {
				if !errors.As(err, &tl) || tl.Size != tt.wantSize || tl.Max != bound {
					t.Fatalf("Read error = %v, want a MessageTooLargeError for %d bytes", err, tt.wantSize)
				}
				if len(got) != tt.handed {
					t.Errorf("handed out %d bytes, want %d (up to the header that crossed the bound)", len(got), tt.handed)
				}
				if _, err := c.Read(buf); !errors.As(err, &tl) {
					t.Errorf("Read after the failure = %v, want the same error", err)
				}
				return
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Read error = %v, want EOF", err)
			}
			if !bytes.Equal(got, tt.in) {
				t.Errorf("read %d bytes, want the %d written, unchanged", len(got), len(tt.in))
			}
		})
	}
}

// readerConn serves a reader as a net.Conn, for the transport benchmark.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (readerConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5557} }

// BenchmarkTransportRead reads three-frame vLLM-sized messages the way zmq4 does (a 2-byte
// header, the rest of a long header, then the body, each with io.ReadFull) through the
// frame-checking connection and through a plain buffered reader, in the same run.
func BenchmarkTransportRead(b *testing.B) {
	msg := zmtpStream(0, 8, 2822)[zmtpGreeting:] // topic, sequence, a 2.8 KB batch
	const perRound = 1024
	stream := bytes.Repeat(msg, perRound)
	read := func(b *testing.B, newConn func(io.Reader) io.Reader) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		var hdr [8]byte
		body := make([]byte, 4096)
		for b.Loop() {
			r := newConn(io.MultiReader(bytes.NewReader(make([]byte, zmtpGreeting)), bytes.NewReader(stream)))
			if _, err := io.ReadFull(r, body[:zmtpGreeting]); err != nil {
				b.Fatal(err)
			}
			for range perRound * 3 {
				if _, err := io.ReadFull(r, hdr[:2]); err != nil {
					b.Fatal(err)
				}
				size := uint64(hdr[1])
				if hdr[0]&zmtpLong != 0 {
					var long [8]byte
					long[0] = hdr[1]
					if _, err := io.ReadFull(r, long[1:]); err != nil {
						b.Fatal(err)
					}
					size = binary.BigEndian.Uint64(long[:])
				}
				if _, err := io.ReadFull(r, body[:size]); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("framed", func(b *testing.B) {
		read(b, func(r io.Reader) io.Reader { return newBufferedConn(readerConn{r: r}, DefaultMaxMessage) })
	})
	b.Run("plain", func(b *testing.B) {
		read(b, func(r io.Reader) io.Reader { return bufio.NewReaderSize(r, readBufferSize) })
	})
}

// FuzzBufferedConn feeds arbitrary bytes after a greeting through the frame-checking
// connection in reads of varying size: it never panics, hands out a prefix of what it got,
// and unless a message crosses the bound, all of it but a header cut short at the end.
func FuzzBufferedConn(f *testing.F) {
	f.Add(zmtpStream(3, 8, 300)[zmtpGreeting:], uint8(7))
	f.Add(binary.BigEndian.AppendUint64([]byte{zmtpLong | zmtpMore}, 1<<63), uint8(1))
	f.Add(bytes.Repeat([]byte{zmtpMore, 255}, 8), uint8(255))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		stream := append(zmtpStream(), in...)
		c := newBufferedConn(readerConn{r: bytes.NewReader(stream)}, 1<<10)
		buf := make([]byte, int(step)+1)
		var got []byte
		var err error
		for err == nil {
			var n int
			n, err = c.Read(buf)
			got = append(got, buf[:n]...)
		}
		if len(got) > len(stream) || !bytes.Equal(got, stream[:len(got)]) {
			t.Fatalf("handed out %d bytes that are not a prefix of the %d sent", len(got), len(stream))
		}
		// Without a bound crossed, all is handed out but a header cut short by the end of
		// the stream (zmq4 fails on that anyway).
		var tl *MessageTooLargeError
		if !errors.As(err, &tl) && len(stream)-len(got) >= 9 {
			t.Fatalf("ended with %v after %d of %d bytes", err, len(got), len(stream))
		}
	})
}

// TestBufferedConnFrameBound: empty frames add nothing to the byte bound, so without a frame
// bound a peer could grow one message (zmq4 appends every MORE frame) without limit. A message
// of maxConnFrames frames passes; one more frame drops the connection.
func TestBufferedConnFrameBound(t *testing.T) {
	for _, tt := range []struct {
		frames  int
		tooMany bool
	}{{maxConnFrames, false}, {maxConnFrames + 1, true}} {
		bodies := make([]int, tt.frames)
		c := pipeConn(t, zmtpStream(bodies...), 1<<10)
		_, err := io.Copy(io.Discard, c)
		var tl *MessageTooLargeError
		if got := errors.As(err, &tl); got != tt.tooMany || (got && tl.Frames != maxConnFrames+1) {
			t.Errorf("%d empty frames: err %v, want too large %v", tt.frames, err, tt.tooMany)
		}
	}
}
