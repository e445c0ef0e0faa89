package sim

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// KVBlocks keeps whole blocks only: 1<<20 tokens in 512-token blocks is 2048 blocks, 1000
// tokens in 16-token blocks is 62 (992 tokens; the last 8 fill no block), and 511 tokens
// hold no 512-token block at all.
func TestKVBlocks(t *testing.T) {
	got, err := KVBlocks([]int{1 << 20, 512}, 512)
	if err != nil || !slices.Equal(got, []int{2048, 1}) {
		t.Fatalf("KVBlocks(1<<20, 512 / 512) = %v, %v; want [2048 1]", got, err)
	}
	if got, err := KVBlocks([]int{1000}, 16); err != nil || !slices.Equal(got, []int{62}) {
		t.Fatalf("KVBlocks(1000 / 16) = %v, %v; want [62]", got, err)
	}
	_, err = KVBlocks([]int{4096, 511}, 512)
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Tokens != 511 || ce.BlockSize != 512 {
		t.Fatalf("KVBlocks(511 / 512) error = %v; want a CapacityError for 511 tokens", err)
	}
}

// A trace whose last request arrives at 90.0125 s: 90 s is inside it, 90.0125 s is its last
// instant (still inside), 90.013 s is after; the arrival shown is cut to 1m30.012s.
func TestAfterEnd(t *testing.T) {
	tr := &Trace{Requests: []Request{{Arrival: 0}, {Arrival: 90.0125}}}
	for _, c := range []struct {
		at    time.Duration
		after bool
	}{{90 * time.Second, false}, {90012500 * time.Microsecond, false}, {90013 * time.Millisecond, true}} {
		after, last := tr.AfterEnd(c.at)
		if after != c.after || last != 90012*time.Millisecond {
			t.Errorf("AfterEnd(%s) = %v, %s; want %v, 1m30.012s", c.at, after, last, c.after)
		}
	}
}
