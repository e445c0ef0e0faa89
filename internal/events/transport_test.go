package events

import (
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
