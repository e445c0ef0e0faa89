package lint

import (
	bin "encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestPlainWord: the eight-bytes-at-a-time test of the JSON string scan says what testing each
// byte says (no quote, backslash, control character or byte past ASCII), on random words whose
// bytes are drawn mostly from the edges: 0x1f and 0x20, the quote and its neighbours, the
// backslash, 0x7f and 0x80.
func TestPlainWord(t *testing.T) {
	edges := []byte{0x00, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 'a', 0x7f, 0x80, 0xc3, 0xff}
	rng := rand.New(rand.NewPCG(5, 6))
	var b [8]byte
	for range 1_000_000 {
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = edges[rng.IntN(len(edges))]
			}
		}
		want := true
		for _, c := range b {
			if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				want = false
			}
		}
		if got := plainWord(bin.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("plainWord(% x) = %v, want %v", b, got, want)
		}
	}
}
