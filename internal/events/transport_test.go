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
func pipeConn(t *testing.T, b []byte, maxFrame uint64) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	go func() {
		_, _ = server.Write(b)
		server.Close()
	}()
	return newBufferedConn(client, maxFrame)
}

// TestBufferedConnFrames: frames within the bound pass through byte for byte, in reads of any
// size; a long header over the bound fails the connection before any of its bytes is handed
// out, so zmq4 never sees the size it would allocate.
func TestBufferedConnFrames(t *testing.T) {
	tests := []struct {
		name     string
		bodies   []int
		maxFrame uint64
		readSize int
		tooLarge bool
	}{
		{"short frames", []int{0, 8, 255}, 1 << 10, 4096, false},
		{"long frame at the bound", []int{3, 1 << 10}, 1 << 10, 4096, false},
		{"byte by byte", []int{3, 8, 300, 0}, 1 << 10, 1, false},
		{"long frame over the bound", []int{3, 8, 1<<10 + 1}, 1 << 10, 4096, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := zmtpStream(tt.bodies...)
			c := pipeConn(t, in, tt.maxFrame)
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
			var tl *FrameTooLargeError
			if tt.tooLarge {
				if !errors.As(err, &tl) || tl.Size != 1<<10+1 || tl.Max != tt.maxFrame {
					t.Fatalf("Read error = %v, want a FrameTooLargeError for %d bytes", err, 1<<10+1)
				}
				// Everything before the oversize header was handed out, and none of the header.
				if want := len(zmtpStream(tt.bodies[:len(tt.bodies)-1]...)); len(got) != want {
					t.Errorf("handed out %d bytes, want %d (up to the oversize header)", len(got), want)
				}
				if _, err := c.Read(buf); !errors.As(err, &tl) {
					t.Errorf("Read after the failure = %v, want the same error", err)
				}
				return
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Read error = %v, want EOF", err)
			}
			if !bytes.Equal(got, in) {
				t.Errorf("read %d bytes, want the %d written, unchanged", len(got), len(in))
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
		read(b, func(r io.Reader) io.Reader { return newBufferedConn(readerConn{r: r}, DefaultMaxFrame) })
	})
	b.Run("plain", func(b *testing.B) {
		read(b, func(r io.Reader) io.Reader { return bufio.NewReaderSize(r, readBufferSize) })
	})
}
