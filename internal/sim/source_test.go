package sim

import (
	"errors"
	"slices"
	"testing"
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
