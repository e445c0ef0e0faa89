package fleet

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/events"
)

func TestCacheLRU(t *testing.T) {
	c := NewCache(3)
	var evicted []uint64
	c.OnEvict = func(h uint64) { evicted = append(evicted, h) }
	use := func(hs ...uint64) {
		for _, h := range hs {
			if !c.Pin(h) {
				t.Fatalf("Pin(%d) failed", h)
			}
		}
		for _, h := range hs {
			c.Unpin(h)
		}
	}
	use(1, 2, 3)
	use(1)    // 1 is now the most recently used: 2 goes first
	use(4, 5) // evicts 2, then 3
	if diff := cmp.Diff([]uint64{2, 3}, evicted); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	for h, want := range map[uint64]bool{1: true, 2: false, 3: false, 4: true, 5: true} {
		if c.Cached(h) != want {
			t.Errorf("Cached(%d) = %v, want %v", h, !want, want)
		}
	}
	// A pinned block is never evicted; with every block pinned, a new one does not fit.
	for _, h := range []uint64{1, 4, 5} {
		c.Pin(h)
	}
	if c.Pin(6) || c.Pinned() != 3 {
		t.Errorf("Pin with every block pinned succeeded (pinned %d)", c.Pinned())
	}
	for _, h := range []uint64{1, 4, 5} {
		c.Unpin(h)
	}
	c.Reset()
	if c.Cached(1) || c.Pinned() != 0 || !c.Pin(7) {
		t.Error("Reset left blocks behind")
	}
}

// TestPublisherServe: a prompt stores what the cache lacks, chained to what it holds, and
// says which blocks made room.
func TestPublisherServe(t *testing.T) {
	p, err := NewPublisher(context.Background(), PublisherConfig{BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := NewCache(3)
	a := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	full, err := p.Stored(a, "")
	if err != nil {
		t.Fatal(err)
	}
	hashes := func(ev events.Event) []uint64 {
		var out []uint64
		for _, h := range ev.BlockHashes {
			out = append(out, h.Value)
		}
		return out
	}

	evs, err := p.Serve(c, a)
	if err != nil || len(evs) != 1 || evs[0].HasParent || !cmp.Equal(hashes(evs[0]), hashes(full)) {
		t.Fatalf("first serve: %+v, %v; want one store of all 3 blocks from the root", evs, err)
	}
	if evs, _ := p.Serve(c, a); len(evs) != 0 {
		t.Errorf("a prompt the cache holds whole: %d events, want none", len(evs))
	}
	// The same first two blocks, another third: one new block after block 1, evicting the
	// least recently used block, which is a's third (a's first two were just used again).
	b := append(append([]int64{}, a[:8]...), 90, 91, 92, 93)
	evs, err = p.Serve(c, b)
	if err != nil || len(evs) != 2 {
		t.Fatalf("second prompt: %+v, %v; want a store and a removal", evs, err)
	}
	st, rm := evs[0], evs[1]
	if st.Type != events.TypeBlockStored || !st.HasParent || st.Parent.Value != full.BlockHashes[1].Value || len(st.BlockHashes) != 1 || !cmp.Equal(st.TokenIDs, []int64{90, 91, 92, 93}) {
		t.Errorf("store = %+v; want block 2 of b after a's block 1", st)
	}
	if rm.Type != events.TypeBlockRemoved || !cmp.Equal(hashes(rm), []uint64{full.BlockHashes[2].Value}) {
		t.Errorf("removal = %+v; want a's third block", rm)
	}
}
