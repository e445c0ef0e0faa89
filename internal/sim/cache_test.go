package sim

import (
	"runtime"
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

// TestMemoryBound checks the memory bound the README states: what a replay allocates does not
// grow with the trace's distinct blocks. Two traces of 10,000 requests of 10 blocks each, one
// naming 10 distinct blocks and one 100,000, replayed on 64 replicas of 64 blocks: the second may
// allocate more only for what the caches and the block index can hold (64 x 64 blocks at the
// stated bytes per block). The dense per-replica arrays this replaced cost 4 bytes per distinct
// block per replica, 25 MB here.
func TestMemoryBound(t *testing.T) {
	build := func(fresh bool) *Trace {
		var rs []Request
		for i := range 10000 {
			var blocks []uint64
			for k := range 10 {
				if fresh {
					blocks = append(blocks, uint64(i*10+k))
				} else {
					blocks = append(blocks, uint64(k))
				}
			}
			rs = append(rs, Request{Arrival: float64(i) / 100, Blocks: blocks, InputTokens: 40, OutputTokens: 1, N: 1})
		}
		tr := tinyTrace(rs...)
		tr.intern()
		return tr
	}
	c := tinyConfig(64)
	c.Model.PrefillPerToken, c.Model.DecodePerToken = 1e-6, 1e-6
	allocated := func(tr *Trace, policy string) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		if _, err := Simulate(tr, c, policy); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	shared, fresh := build(false), build(true)
	bound := uint64(c.Replicas * c.KVBlocks * (cacheBytesPerBlock + indexBytesPerBlock(1)))
	for _, p := range []string{"round-robin", "kv-cost"} {
		a, b := allocated(shared, p), allocated(fresh, p)
		if b > a+bound {
			t.Errorf("%s: %d bytes for 100,000 distinct blocks against %d for 10: more than the %d the caches and index may add", p, b, a, bound)
		}
	}
}

// TestTableSizes checks the per-block figures the bound is stated in against the tables built,
// both new and once grown to hold capacity blocks (the most they can hold).
func TestTableSizes(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 64, 65, 100, 1024, 1025, 2048, 5000} {
		c := newCache(capacity, 1<<30)
		for full := range 2 {
			if got := cap(c.nodes)*16 + len(c.table)*8; got > (capacity+1)*cacheBytesPerBlock {
				t.Errorf("cache of %d blocks (full: %d) takes %d bytes, more than %d per block", capacity, full, got, cacheBytesPerBlock)
			}
			for k := range capacity {
				c.insert(int32(k))
			}
		}
		for _, reps := range []int{1, 64, 65, 128} {
			x := newBlockIndex(reps, capacity)
			for full := range 2 {
				if got := len(x.keys)*4 + len(x.sets)*8; got > capacity*indexBytesPerBlock(x.words)+8*(4+8*x.words) {
					t.Errorf("index of %d blocks on %d replicas (full: %d) takes %d bytes, more than %d per block", capacity, reps, full, got, indexBytesPerBlock(x.words))
				}
				for k := range capacity {
					x.add(int32(k), k%reps)
				}
			}
		}
	}
}

// TestGrowth fills a cache and the block index well past the size they start at (cacheStart,
// indexStart), so that their tables double several times, and checks every block against what
// was put in: growing keeps every entry and the LRU order, which is what keeps a replay's results
// the same as with tables sized for the whole capacity at the start.
func TestGrowth(t *testing.T) {
	const capacity = 40 * cacheStart
	c := newCache(capacity, 1<<30)
	for k := range capacity {
		if ok, _, evicted := c.insert(int32(3 * k)); !ok || evicted {
			t.Fatalf("insert %d into a cache of %d with %d held: ok %v, evicted %v", 3*k, capacity, k, ok, evicted)
		}
	}
	if 4*c.used > len(c.table) || len(c.table) > tableSize(capacity) {
		t.Errorf("%d blocks in a table of %d slots, want at most a quarter full and at most %d slots", c.used, len(c.table), tableSize(capacity))
	}
	for k := range 3 * capacity {
		if got, want := c.has(int32(k)), k%3 == 0; got != want {
			t.Fatalf("has(%d) = %v, want %v", k, got, want)
		}
	}
	// Freed in the order 0, 3, 6, ...: new blocks evict them in that order.
	for k := range capacity {
		c.unpin(int32(3 * k))
	}
	for k := range capacity {
		_, victim, evicted := c.insert(int32(3*k + 1))
		if !evicted || victim != int32(3*k) {
			t.Fatalf("insert %d: evicted %v (%v), want %d", 3*k+1, victim, evicted, 3*k)
		}
	}

	const blocks = 20 * indexStart
	x := newBlockIndex(70, blocks)
	for k := range blocks {
		x.add(int32(k), k%70)
		x.add(int32(k), 69-k%70)
	}
	for k := 0; k < blocks; k += 2 {
		x.remove(int32(k), k%70)
		x.remove(int32(k), 69-k%70)
	}
	if x.n != blocks/2 || 4*x.n > len(x.keys) || len(x.keys) > tableSize(blocks) {
		t.Errorf("%d entries in %d slots, want %d entries in at most %d slots, at most a quarter full", x.n, len(x.keys), blocks/2, tableSize(blocks))
	}
	for k := range blocks + 10 {
		set := x.lookup(int32(k))
		if k%2 == 0 || k >= blocks {
			if set != nil {
				t.Fatalf("block %d: set %x after removal, want none", k, set)
			}
			continue
		}
		want := make([]uint64, 2)
		for _, r := range []int{k % 70, 69 - k%70} {
			want[r/64] |= 1 << (r % 64)
		}
		if diff := cmp.Diff(want, set); diff != "" {
			t.Fatalf("block %d: replica set (-want +got):\n%s", k, diff)
		}
	}
}

// TestDuplicates counts extra copies by hand: block 1 on three replicas is two extra copies,
// block 3 on two is one, blocks 2, 4 and 5 on one are none: 3. Both ways of counting (the block
// index of the prefix-aware policies, the bitmap of the others) must agree.
func TestDuplicates(t *testing.T) {
	held := [][]int32{{1, 2, 4}, {1, 3}, {1, 3, 5}}
	for _, indexed := range []bool{true, false} {
		f := newPool(tinyConfig(3), tinyBlock, 6, indexed)
		for rep, keys := range held {
			for _, k := range keys {
				f.reps[rep].cache.insert(k)
				if indexed {
					f.where.add(k, rep)
				}
			}
		}
		if got := f.duplicates(); got != 3 {
			t.Errorf("indexed %v: %d duplicate blocks, want 3", indexed, got)
		}
	}
	// End to end: round-robin sends [1 2] to replica 0, [1 3] to replica 1, [4] to replica 0;
	// block 1 is then held twice, so 1 duplicate of the 5 blocks cached.
	tr := tinyTrace(req(0, "", 0, 1, 2), req(1, "", 0, 1, 3), req(2, "", 0, 4))
	res, err := Simulate(tr, tinyConfig(2), "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	if res.DuplicateBlocks != 1 || res.DuplicateFraction != 0.2 {
		t.Errorf("duplicates %d (%.2f of cached), want 1 (0.20)", res.DuplicateBlocks, res.DuplicateFraction)
	}
}

// TestQueueNeverEmpty keeps 100 jobs waiting while 100,000 pass through, as at a replica that
// every request is sent to: the jobs must come out in the order they went in, and the queue must
// hold slots for about what waits, not for every job it ever held.
func TestQueueNeverEmpty(t *testing.T) {
	jobs := make([]Job, 100_000)
	var q queue
	next := 0
	for i := range jobs {
		jobs[i].seq = i
		q.push(&jobs[i])
		if q.len() > 100 {
			if j := q.pop(); j.seq != next {
				t.Fatalf("popped job %d, want %d", j.seq, next)
			}
			next++
		}
	}
	if q.len() != 100 {
		t.Errorf("%d waiting, want 100", q.len())
	}
	if cap(q.items) > 4096 {
		t.Errorf("a queue of at most 101 jobs holds %d slots after 100,000 jobs, want at most 4096", cap(q.items))
	}
	for ; q.len() > 0; next++ {
		if j := q.pop(); j.seq != next {
			t.Fatalf("popped job %d, want %d", j.seq, next)
		}
	}
	if next != len(jobs) {
		t.Errorf("%d jobs out, want %d", next, len(jobs))
	}
}

// TestSlotOfSpreadsAWindow: the blocks resident in a cache or the block index are mostly a
// window of consecutive dense ids (interning numbers blocks in order of first appearance, and
// LRU keeps the recent ones). Fibonacci hashing spreads such a window over the table without a
// collision when it takes the product's top bits; the middle bits, used before, cost a lookup
// of a window of 16,384 ids in 65,536 slots 0.70 extra probes on average (and the block index's
// lookups in a kv-llmd replay of the Mooncake trace 1.9 probes, against 1.02 now). Here every
// table, filled to a quarter with a window, holds every id in its home slot but a few.
func TestSlotOfSpreadsAWindow(t *testing.T) {
	for _, size := range []int{1 << 10, 1 << 14, 1 << 16, 1 << 18} {
		for _, from := range []int32{0, 1000, 182_790, 3_000_001} {
			n := size / 4
			x := newBlockIndex(1, n)
			c := newCache(n, 1<<30)
			for k := range int32(n) {
				x.add(from+k, 0)
				if ok, _, _ := c.insert(from + k); !ok {
					t.Fatalf("insert %d: cache full", from+k)
				}
			}
			if len(x.keys) != size || len(c.table) != size {
				t.Fatalf("tables of %d and %d slots, want %d", len(x.keys), len(c.table), size)
			}
			displaced := 0
			for i, k := range x.keys {
				if k != 0 && uint32(i) != slotOf(k-1, x.shift) {
					displaced++
				}
			}
			for i, s := range c.table {
				if s.node != 0 && uint32(i) != slotOf(s.key, c.shift) {
					displaced++
				}
			}
			if displaced > 2*n/100 {
				t.Errorf("%d slots, ids %d to %d: %d of %d entries out of their home slot, want at most 1%%", size, from, from+int32(n)-1, displaced, 2*n)
			}
		}
	}
}
