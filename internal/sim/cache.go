package sim

// cache is one replica's prefix cache: a fixed number of block slots, blocks in use by a running
// request pinned, unpinned blocks evictable in LRU order. This is vLLM's free-block queue: a
// freed block goes to the back and the front is evicted first. Blocks are the trace's dense ids
// (see Trace.intern), so the index is a slice rather than a map: 4 bytes per distinct block of
// the trace, which is what makes a replay fast.
type cache struct {
	capacity int
	slot     []int32     // dense id -> node, 0 when not cached
	nodes    []cacheNode // nodes[0] is the sentinel of the evictable list
	free     []int32
	used     int // blocks held, pinned or not
	evicted  int64
}

type cacheNode struct {
	key        int32
	prev, next int32
	refs       int32
}

// newCache returns an empty cache of capacity blocks for ids below universe.
func newCache(capacity, universe int) cache {
	c := cache{capacity: capacity, slot: make([]int32, universe)}
	c.nodes = append(c.nodes, cacheNode{})
	return c
}

func (c *cache) has(key int32) bool { return c.slot[key] != 0 }

func (c *cache) unlink(n int32) {
	p, nx := c.nodes[n].prev, c.nodes[n].next
	c.nodes[p].next = nx
	c.nodes[nx].prev = p
}

func (c *cache) pushBack(n int32) {
	last := c.nodes[0].prev
	c.nodes[n].prev, c.nodes[n].next = last, 0
	c.nodes[last].next = n
	c.nodes[0].prev = n
}

// pin marks a cached block as in use, taking it off the evictable list. It reports whether the
// block was cached.
func (c *cache) pin(key int32) bool {
	n := c.slot[key]
	if n == 0 {
		return false
	}
	if c.nodes[n].refs == 0 {
		c.unlink(n)
	}
	c.nodes[n].refs++
	return true
}

// insert adds a block pinned, evicting the least recently freed block when full. ok is false
// when every slot is pinned: the block is then not cached. When a block was evicted to make
// room, its key is returned with evicted true.
func (c *cache) insert(key int32) (ok bool, victim int32, evicted bool) {
	if c.pin(key) {
		return true, 0, false
	}
	if c.capacity <= 0 {
		return false, 0, false
	}
	if c.used >= c.capacity {
		v := c.nodes[0].next
		if v == 0 {
			return false, 0, false
		}
		c.unlink(v)
		victim, evicted = c.nodes[v].key, true
		c.slot[victim] = 0
		c.free = append(c.free, v)
		c.used--
		c.evicted++
	}
	var n int32
	if k := len(c.free); k > 0 {
		n = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		c.nodes = append(c.nodes, cacheNode{})
		n = int32(len(c.nodes) - 1)
	}
	c.nodes[n] = cacheNode{key: key, refs: 1}
	c.slot[key] = n
	c.used++
	return true, victim, evicted
}

// unpin releases one use of a cached block; the last release makes it evictable.
func (c *cache) unpin(key int32) {
	n := c.slot[key]
	if n == 0 || c.nodes[n].refs == 0 {
		return
	}
	c.nodes[n].refs--
	if c.nodes[n].refs == 0 {
		c.pushBack(n)
	}
}
