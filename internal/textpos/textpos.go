// Package textpos maps byte offsets of a file to 1-based lines and character columns and back,
// as findings and editors count them: lines end at LF, CRLF or a lone CR, as YAML and most
// editors count them, and columns count characters (UTF-8 sequences), not bytes.
package textpos

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
)

// Index maps a file's byte offsets to lines and columns. It also keeps how many characters
// precede every chunk of ChunkSize bytes: a column is then found by counting at most one chunk,
// and a minified file (one line of megabytes) costs one pass, not one pass per position asked.
// Its size is one int per line plus one per ChunkSize bytes.
type Index struct {
	src    []byte
	starts []int // the offset where each line starts
	chunks []int // chunks[k]: characters in src[:k*ChunkSize]
}

// ChunkSize is the span of bytes a column lookup counts at most.
const ChunkSize = 1024

// New indexes src, which it keeps (src must not change while the index is used). It costs two
// passes over src a few bytes at a time: the lines are found with bytes.IndexByte, and the
// characters of each chunk are counted eight bytes at a time.
func New(src []byte) *Index { return NewInto(src, nil) }

// NewInto is New in x's memory when x is not nil (x's lines and chunks are overwritten: an
// index made by New or NewInto before, no longer used), so that a caller indexing many files
// one after another allocates its index once.
func NewInto(src []byte, x *Index) *Index {
	if x == nil {
		x = &Index{}
	}
	lines := bytes.Count(src, []byte{'\n'}) + 2
	starts := x.starts[:0]
	if cap(starts) < lines {
		starts = make([]int, 0, lines)
	}
	starts = append(starts, 0)
	if bytes.IndexByte(src, '\r') < 0 {
		for i := 0; ; {
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			starts = append(starts, i)
		}
	} else {
		for i, c := range src {
			if c == '\n' || (c == '\r' && (i+1 == len(src) || src[i+1] != '\n')) {
				starts = append(starts, i+1)
			}
		}
	}
	chunks := x.chunks[:0]
	if cap(chunks) < len(src)/ChunkSize+2 {
		chunks = make([]int, 0, len(src)/ChunkSize+2)
	}
	n := 0
	for k := 0; k*ChunkSize < len(src); k++ {
		chunks = append(chunks, n)
		n += chars(src[k*ChunkSize : min(len(src), (k+1)*ChunkSize)])
	}
	if len(src)%ChunkSize == 0 {
		chunks = append(chunks, n)
	}
	*x = Index{src: src, starts: starts, chunks: chunks}
	return x
}

// Forget drops the text x indexes, for an index kept to be made again (NewInto) that must not
// keep its last file's text alive meanwhile.
func (x *Index) Forget() { x.src = nil }

// chars counts the characters of b: its bytes but the UTF-8 continuation bytes (10xxxxxx),
// which are found eight at a time: a byte's top bit set and the next bit clear.
func chars(b []byte) int {
	const high = 0x8080808080808080
	n := len(b)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if w&high == 0 {
			continue // ASCII
		}
		n -= bits.OnesCount64(w & high &^ (w << 1))
	}
	for ; i < len(b); i++ {
		if !StartsChar(b[i]) {
			n--
		}
	}
	return n
}

// StartsChar reports whether c starts a character: any byte but a UTF-8 continuation byte.
// Counting these counts the characters of valid UTF-8 and splits at any byte boundary.
func StartsChar(c byte) bool { return c&0xC0 != 0x80 }

// Lines returns the number of lines (a file ending in a newline has an empty last line).
func (x *Index) Lines() int { return len(x.starts) }

// Starts returns the offset where each line starts, the first line's (0) first. The slice is
// the index's own: read it, never change it.
func (x *Index) Starts() []int { return x.starts }

// LineStart returns the offset where a 1-based line starts; the file's length past the last.
func (x *Index) LineStart(line int) int {
	if line < 1 {
		return 0
	}
	if line > len(x.starts) {
		return len(x.src)
	}
	return x.starts[line-1]
}

// chars returns the number of characters in src[:off].
func (x *Index) chars(off int) int {
	k := off / ChunkSize
	return x.chunks[k] + chars(x.src[k*ChunkSize:off])
}

// Pos returns the 1-based line and character column of a byte offset, which is clamped to the
// file.
func (x *Index) Pos(off int) (line, col int) {
	off = min(max(off, 0), len(x.src))
	i, _ := slices.BinarySearch(x.starts, off+1)
	line = i // starts[i-1] <= off
	start := x.starts[line-1]
	return line, x.chars(off) - x.chars(start) + 1
}

// Offset returns the byte offset of a 1-based line and character column; a column past the
// end of its line gives the line's end, a line past the file's end the file's length.
func (x *Index) Offset(line, col int) int {
	if line < 1 || line > len(x.starts) {
		return len(x.src)
	}
	start := x.starts[line-1]
	want := x.chars(start) + max(col, 1) - 1 // characters before the offset sought
	// The last chunk with at most want characters before it (chunks[0] is 0).
	k, _ := slices.BinarySearch(x.chunks, want+1)
	off := max(start, (k-1)*ChunkSize)
	if line < len(x.starts) && off >= x.starts[line] {
		// Past the end of the line: its end is the line terminator.
		end := x.starts[line] - 1
		if end > start && x.src[end] == '\n' && x.src[end-1] == '\r' {
			end--
		}
		return end
	}
	n := x.chars(off)
	for off < len(x.src) && x.src[off] != '\n' && x.src[off] != '\r' {
		if StartsChar(x.src[off]) {
			if n == want {
				return off
			}
			n++
		}
		off++
	}
	return off
}
