package textpos

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestIndex: positions and offsets agree with counting characters from the line start,
// across chunk boundaries, multi-byte characters and every line-end style.
func TestIndex(t *testing.T) {
	inputs := []string{
		"",
		"a",
		"one\ntwo\r\nthree\rfour",
		strings.Repeat("é", ChunkSize) + "\n" + strings.Repeat("x€", ChunkSize) + "\r\n",
		strings.Repeat("ab\n", 700) + strings.Repeat("日本語", 900),
	}
	for _, in := range inputs {
		src := []byte(in)
		x := New(src)
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
