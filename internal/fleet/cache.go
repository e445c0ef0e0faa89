package fleet

import "container/list"

// Cache is a replica's prefix cache as vLLM keeps it: a fixed number of KV blocks keyed by
// block hash; blocks in use by a running request are pinned, and a block nobody uses stays
// cached for later hits until it is the least recently released one and a new block needs
// its place. The engine model and the emulated publishers' traffic both keep theirs in one.
type Cache struct {
	capacity int
	blocks   map[uint64]*block
	free     *list.List // cached blocks nobody pins, least recently released first
	pinned   int
	// OnEvict, when set, is called with the hash of each block evicted to make room.
	OnEvict func(hash uint64)
}

// block is a KV block in the cache.
type block struct {
	hash uint64
	refs int
	lru  *list.Element // position in the free list while refs == 0
}

// NewCache returns an empty cache of capacity blocks.
func NewCache(capacity int) *Cache {
	return &Cache{capacity: capacity, blocks: make(map[uint64]*block), free: list.New()}
}

// Cached reports whether the block with hash h is in the cache.
func (c *Cache) Cached(h uint64) bool {
	_, ok := c.blocks[h]
	return ok
}

// pinnedBlock reports whether the block with hash h is cached and in use.
func (c *Cache) pinnedBlock(h uint64) bool {
	b, ok := c.blocks[h]
	return ok && b.refs > 0
}

// Pin takes the block with hash h for a request: a hit when it is cached, else a new block,
// evicting the least recently released one when the cache is full. It returns false when
// every block is pinned and nothing can be evicted.
func (c *Cache) Pin(h uint64) bool {
	if b, ok := c.blocks[h]; ok {
		if b.refs == 0 {
			c.free.Remove(b.lru)
			b.lru = nil
			c.pinned++
		}
		b.refs++
		return true
	}
	if c.pinned >= c.capacity {
		return false
	}
	if len(c.blocks) >= c.capacity {
		old := c.free.Remove(c.free.Front()).(*block)
		delete(c.blocks, old.hash)
		if c.OnEvict != nil {
			c.OnEvict(old.hash)
		}
	}
	c.blocks[h] = &block{hash: h, refs: 1}
	c.pinned++
	return true
}

// Unpin releases one use of the block with hash h; a block nobody uses stays cached as the
// most recently released.
func (c *Cache) Unpin(h uint64) {
	b := c.blocks[h]
	b.refs--
	if b.refs == 0 {
		b.lru = c.free.PushBack(b)
		c.pinned--
	}
}

// Pinned is the number of blocks in use.
func (c *Cache) Pinned() int { return c.pinned }

// Capacity is the cache's size in blocks.
func (c *Cache) Capacity() int { return c.capacity }

// Reset empties the cache, as vLLM's reset_prefix_cache does; nothing may be pinned.
func (c *Cache) Reset() {
	clear(c.blocks)
	c.free.Init()
	c.pinned = 0
}
