package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lruOrder lists the evictable blocks, next victim first.
func lruOrder(c *cache) []int32 {
	var out []int32
	for n := c.nodes[0].next; n != 0; n = c.nodes[n].next {
		out = append(out, c.nodes[n].key)
	}
	return out
}

func TestCache(t *testing.T) {
	t.Run("pinned blocks are never evicted", func(t *testing.T) {
		c := newCache(2, 16)
		c.insert(1)
		c.insert(2)
		if ok, _, _ := c.insert(3); ok {
			t.Fatalf("insert into a cache of pinned blocks succeeded, want refused")
		}
		c.unpin(1)
		ok, victim, evicted := c.insert(3)
		if !ok || !evicted || victim != 1 {
			t.Errorf("insert 3 = ok %v victim %d evicted %v, want ok, victim 1", ok, victim, evicted)
		}
		if c.has(1) || !c.has(2) || !c.has(3) {
			t.Errorf("after eviction: has(1)=%v has(2)=%v has(3)=%v, want false true true", c.has(1), c.has(2), c.has(3))
		}
	})
	t.Run("freed blocks are evicted in the order freed", func(t *testing.T) {
		c := newCache(4, 16)
		for k := int32(1); k <= 3; k++ {
			c.insert(k)
		}
		// A request frees its chain tail first, as vLLM does: 3, 2, 1.
		for k := int32(3); k >= 1; k-- {
			c.unpin(k)
		}
		if d := cmp.Diff([]int32{3, 2, 1}, lruOrder(&c)); d != "" {
			t.Errorf("eviction order (-want +got):\n%s", d)
		}
		// A hit pins block 2; releasing it makes it the most recent.
		c.pin(2)
		c.unpin(2)
		if d := cmp.Diff([]int32{3, 1, 2}, lruOrder(&c)); d != "" {
			t.Errorf("eviction order after a hit (-want +got):\n%s", d)
		}
	})
	t.Run("a block shared by two requests stays pinned until both finish", func(t *testing.T) {
		c := newCache(1, 16)
		c.insert(7)
		c.pin(7)
		c.unpin(7)
		if ok, _, _ := c.insert(8); ok {
			t.Errorf("block 7 evicted while one request still uses it")
		}
		c.unpin(7)
		if ok, victim, _ := c.insert(8); !ok || victim != 7 {
			t.Errorf("insert 8 = ok %v victim %d, want ok, victim 7", ok, victim)
		}
	})
	t.Run("zero capacity caches nothing", func(t *testing.T) {
		c := newCache(0, 16)
		if ok, _, _ := c.insert(1); ok {
			t.Errorf("insert into a zero-capacity cache succeeded")
		}
	})
}

// TestHitLimit checks the N-1 rule and that partial blocks are never cached.
func TestHitLimit(t *testing.T) {
	cases := []struct {
		input, blocks, wantFull, wantLimit int
	}{
		{input: 16, blocks: 4, wantFull: 4, wantLimit: 3}, // exact multiple: last token recomputed
		{input: 17, blocks: 5, wantFull: 4, wantLimit: 4}, // partial last block
		{input: 3, blocks: 1, wantFull: 0, wantLimit: 0},  // shorter than a block
		{input: 0, blocks: 0, wantFull: 0, wantLimit: 0},
		{input: 40, blocks: 2, wantFull: 2, wantLimit: 2}, // fewer keys than the length says
	}
	for _, tc := range cases {
		r := &Request{InputTokens: tc.input, Blocks: make([]uint64, tc.blocks)}
		if got := fullBlocks(r, 4); got != tc.wantFull {
			t.Errorf("fullBlocks(%d tokens, %d keys) = %d, want %d", tc.input, tc.blocks, got, tc.wantFull)
		}
		if got := hitLimit(r, 4); got != tc.wantLimit {
			t.Errorf("hitLimit(%d tokens, %d keys) = %d, want %d", tc.input, tc.blocks, got, tc.wantLimit)
		}
	}
}

// TestPrefixOnly checks that a hit is the run of cached blocks from block 0: a cached block
// after a miss does not count.
func TestPrefixOnly(t *testing.T) {
	tr := tinyTrace(
		req(0, "", 0, 1, 2, 3, 9),
		req(1, "", 0, 5, 2, 3, 9), // blocks 2 and 3 cached, but block 0 differs
		req(2, "", 0, 1, 2, 7, 9),
	)
	got := runTiny(t, tr, tinyConfig(1), "round-robin")
	if d := cmp.Diff([]int{0, 0, 2}, got.Hits); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
}
