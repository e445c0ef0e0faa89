package sim

import "math/bits"

// cache is one replica's prefix cache: a fixed number of block slots, blocks in use by a running
// request pinned, unpinned blocks evictable in LRU order. This is vLLM's free-block queue: a
// freed block goes to the back and the front is evicted first. Blocks are the trace's dense ids
// (see Trace.intern). The index from id to slot is an open-addressing hash table bounded by the
// capacity, not by the trace, so a replica costs what it holds: at most cacheBytesPerBlock bytes
// per block of capacity, however many distinct blocks the trace has. The table and the nodes
// start small and double as blocks arrive (see cacheStart), so a replica a replay leaves almost
// empty costs almost nothing to set up.
type cache struct {
	capacity int
	limit    int         // the most blocks it can hold: min(capacity, universe)
	nodes    []cacheNode // nodes[0] is the sentinel of the evictable list
	free     []int32
	table    []cacheSlot // open addressing, linear probing; node 0 means empty
	mask     uint32      // len(table)-1
	shift    uint8       // 64 - log2(len(table)), for slotOf
	used     int         // blocks held, pinned or not
	evicted  int64
}

type cacheNode struct {
	key        int32
	prev, next int32
	refs       int32
}

type cacheSlot struct{ key, node int32 }

// cacheBytesPerBlock is what a cache costs per block of capacity at most: a 16-byte node and, at
// a load factor of at least 1/8 once full, at most eight 8-byte table slots.
const cacheBytesPerBlock = 16 + 8*8

// cacheStart is the most blocks a new cache's table and nodes are sized for; both double as the
// cache fills, up to what min(capacity, universe) blocks need. Sizing every replica for its whole
// capacity up front cost a 12k-request replay on 64 replicas, most of them nearly empty under a
// policy that sends everything to one, 6 MB of set-up.
const cacheStart = 64

// newCache returns an empty cache of capacity blocks for ids below universe. It never holds more
// than min(capacity, universe) blocks, and never grows past what that needs.
func newCache(capacity, universe int) cache {
	c := cache{capacity: capacity, limit: min(max(capacity, 0), universe)}
	n := tableSize(min(c.limit, cacheStart))
	c.table = make([]cacheSlot, n)
	c.mask, c.shift = uint32(n-1), slotShift(n)
	c.nodes = make([]cacheNode, 1, min(c.limit, cacheStart)+1)
	return c
}

// grow doubles the table, keeping the load factor at most 1/4 for the blocks held; the table
// never passes tableSize(limit), since a cache never holds more than limit blocks.
func (c *cache) grow() {
	old := c.table
	c.table = make([]cacheSlot, 2*len(old))
	c.mask, c.shift = uint32(len(c.table)-1), slotShift(len(c.table))
	for _, s := range old {
		if s.node != 0 {
			c.tableInsert(s.key, s.node)
		}
	}
}

// tableSize is the power of two at least four times n (and at least 8): a load factor of at most
// 1/4, which keeps probe runs short (at 1/2 the replays spent a third of their time probing).
func tableSize(n int) int {
	s := 8
	for s < 4*n {
		s <<= 1
	}
	return s
}

// slotOf is the home slot of a dense id in a table of 2^(64-shift) slots: a multiplicative
// (Fibonacci) hash taking the product's top bits, so that ids that are consecutive, as interning
// makes them, land almost evenly spaced. The product's middle bits, used before, clustered them:
// at a load factor of 1/4 a lookup in the block index probed 1.9 slots on average on the
// Mooncake trace instead of 1.02.
func slotOf(key int32, shift uint8) uint32 {
	return uint32((uint64(uint32(key)) * 0x9e3779b97f4a7c15) >> shift)
}

// slotShift is slotOf's shift for a table of n slots, a power of two.
func slotShift(n int) uint8 { return uint8(65 - bits.Len(uint(n))) }

// find returns the node holding key, 0 when the block is not cached.
func (c *cache) find(key int32) int32 {
	for i := slotOf(key, c.shift); ; i = (i + 1) & c.mask {
		s := c.table[i]
		if s.node == 0 {
			return 0
		}
		if s.key == key {
			return s.node
		}
	}
}

func (c *cache) tableInsert(key, node int32) {
	i := slotOf(key, c.shift)
	for c.table[i].node != 0 {
		i = (i + 1) & c.mask
	}
	c.table[i] = cacheSlot{key, node}
}

// tableDelete removes key, shifting later entries of its probe run back (no tombstones, so
// lookups stay short however long the replay).
func (c *cache) tableDelete(key int32) {
	i := slotOf(key, c.shift)
	for c.table[i].key != key || c.table[i].node == 0 {
		i = (i + 1) & c.mask
	}
	for j := (i + 1) & c.mask; c.table[j].node != 0; j = (j + 1) & c.mask {
		h := slotOf(c.table[j].key, c.shift)
		// Move j's entry into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			c.table[i] = c.table[j]
			i = j
		}
	}
	c.table[i] = cacheSlot{}
}

func (c *cache) has(key int32) bool { return c.find(key) != 0 }

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
func (c *cache) pin(key int32) bool { return c.pinNode(key) != 0 }

// pinNode is pin returning the block's node (0 when it is not cached), which stays the block's
// while it is pinned: unpinNode releases it without looking the key up again.
func (c *cache) pinNode(key int32) int32 {
	n := c.find(key)
	if n == 0 {
		return 0
	}
	if c.nodes[n].refs == 0 {
		c.unlink(n)
	}
	c.nodes[n].refs++
	return n
}

// insert adds a block pinned, evicting the least recently freed block when full. ok is false
// when every slot is pinned: the block is then not cached. When a block was evicted to make
// room, its key is returned with evicted true.
func (c *cache) insert(key int32) (ok bool, victim int32, evicted bool) {
	n, victim, evicted := c.insertNode(key)
	return n != 0, victim, evicted
}

// insertNode is insert returning the block's node, 0 when it could not be cached.
func (c *cache) insertNode(key int32) (node int32, victim int32, evicted bool) {
	if n := c.pinNode(key); n != 0 {
		return n, 0, false
	}
	if c.capacity <= 0 {
		return 0, 0, false
	}
	if c.used >= c.capacity {
		v := c.nodes[0].next
		if v == 0 {
			return 0, 0, false
		}
		c.unlink(v)
		victim, evicted = c.nodes[v].key, true
		c.tableDelete(victim)
		c.free = append(c.free, v)
		c.used--
		c.evicted++
	}
	var n int32
	if k := len(c.free); k > 0 {
		n = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		if len(c.nodes) == cap(c.nodes) {
			// Double, but never past the limit+1 nodes a full cache needs.
			nodes := make([]cacheNode, len(c.nodes), min(2*cap(c.nodes), c.limit+1))
			copy(nodes, c.nodes)
			c.nodes = nodes
		}
		c.nodes = append(c.nodes, cacheNode{})
		n = int32(len(c.nodes) - 1)
	}
	c.nodes[n] = cacheNode{key: key, refs: 1}
	if 4*(c.used+1) > len(c.table) {
		c.grow()
	}
	c.tableInsert(key, n)
	c.used++
	return n, victim, evicted
}

// unpin releases one use of a cached block; the last release makes it evictable.
func (c *cache) unpin(key int32) { c.unpinNode(c.find(key)) }

// unpinNode releases one use of the block at node n (pinNode's or insertNode's; 0 does
// nothing).
func (c *cache) unpinNode(n int32) {
	if n == 0 || c.nodes[n].refs == 0 {
		return
	}
	c.nodes[n].refs--
	if c.nodes[n].refs == 0 {
		c.pushBack(n)
	}
}
