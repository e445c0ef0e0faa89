package textpos

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestIndex: positions and offsets agree with counting characters from the line start,
// across chunk boundaries, multi-byte characters and every line-end style, for an index made
// afresh and for one made again in the memory of the indexes of the other inputs (NewInto,
// the inputs forward then backward: a long one's memory then serves a short one).
func TestIndex(t *testing.T) {
	inputs := []string{
		"",
		"a",
		"one\ntwo\r\nthree\rfour",
		strings.Repeat("é", ChunkSize) + "\n" + strings.Repeat("x€", ChunkSize) + "\r\n",
		strings.Repeat("ab\n", 700) + strings.Repeat("日本語", 900),
	}
	var again *Index
	for i := range 4 * len(inputs) {
		in := inputs[i/2%len(inputs)]
		if i >= 2*len(inputs) {
			in = inputs[len(inputs)-1-i/2%len(inputs)]
		}
		src := []byte(in)
		x := New(src)
		if i%2 == 1 {
			again = NewInto(src, again)
			again.Forget()
			x = NewInto(src, again)
		}
		line, lineStart := 1, 0
		for off := 0; off <= len(src); off++ {
			if off > 0 && (src[off-1] == '\n' || (src[off-1] == '\r' && (off == len(src) || src[off] != '\n'))) {
				line, lineStart = line+1, off
			}
			if off < len(src) && !utf8.RuneStart(src[off]) {
				continue
			}
			col := utf8.RuneCount(src[lineStart:off]) + 1
			if gl, gc := x.Pos(off); gl != line || gc != col {
				t.Fatalf("Pos(%d) = %d:%d, want %d:%d", off, gl, gc, line, col)
			}
			if got := x.Offset(line, col); got != off && (off >= len(src) || (src[off] != '\n' && src[off] != '\r')) {
				t.Fatalf("Offset(%d, %d) = %d, want %d", line, col, got, off)
			}
			if x.LineStart(line) != lineStart {
				t.Fatalf("LineStart(%d) = %d, want %d", line, x.LineStart(line), lineStart)
			}
		}
		if x.Lines() != line {
			t.Errorf("Lines() = %d, want %d", x.Lines(), line)
		}
		if got := x.Offset(1, 1<<20); got != bytes.IndexAny(append(src, '\n'), "\r\n") {
			t.Errorf("offset past the end of line 1 = %d, want the line's end", got)
		}
	}
}

// TestChars: counting characters eight bytes at a time gives what counting the bytes that
// start one gives, on random bytes (any mix of ASCII, lead, continuation and invalid bytes) of
// every length and alignment.
func TestChars(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			switch rng.IntN(3) {
			case 0:
				b[i] = byte(rng.IntN(0x80))
			case 1:
				b[i] = 0x80 | byte(rng.IntN(0x40)) // a continuation byte
			default:
				b[i] = byte(rng.IntN(256))
			}
		}
		for from := range min(len(b), 9) {
			want := 0
			for _, c := range b[from:] {
				if StartsChar(c) {
					want++
				}
			}
			if got := chars(b[from:]); got != want {
				t.Fatalf("chars(% x) = %d, want %d", b[from:], got, want)
			}
		}
	}
}
