package events

// generations is a map bounded by forgetting in bulk: entries go into the current generation;
// when it holds half the bound, the previous generation is dropped whole and the current one
// takes its place. An entry written is put in the current generation, so what is in use
// survives. Dropping whole maps instead of deleting entry by entry keeps lookups fast (no
// tombstones to probe past) and needs no separate eviction order.
//
// With a filter (newFilteredGenerations), each generation also has a small bit set of the keys
// put into it, so that a get of a key in neither generation (every new block of a busy stream)
// costs a look at the two filters, which stay in the CPU's cache, instead of a probe of each
// map: on a large map a probe is a cache miss, and the map probes were the largest share of
// the tap's CPU.
type generations[V any] struct {
	cur, old map[uint64]V
	// curKeys and oldKeys filter the keys put into cur and old since they became the current
	// generation (nil: no filter).
	curKeys, oldKeys keyFilter
}

func newGenerations[V any]() generations[V] {
	return generations[V]{cur: map[uint64]V{}, old: map[uint64]V{}}
}

// newFilteredGenerations returns generations with filters sized for perGeneration keys in
// each generation.
func newFilteredGenerations[V any](perGeneration int) generations[V] {
	g := newGenerations[V]()
	g.curKeys, g.oldKeys = newKeyFilter(perGeneration), newKeyFilter(perGeneration)
	return g
}

func (g *generations[V]) get(k uint64) (V, bool) {
	var zero V
	if g.curKeys.bits == nil {
		if v, ok := g.cur[k]; ok {
			return v, true
		}
		v, ok := g.old[k]
		return v, ok
	}
	// A key put into a generation is in its filter, so a filter that has not seen k saves
	// the probe of that generation's map.
	if g.curKeys.has(k) {
		if v, ok := g.cur[k]; ok {
			return v, true
		}
	}
	if !g.oldKeys.has(k) {
		return zero, false
	}
	v, ok := g.old[k]
	return v, ok
}

// put stores v under k in the current generation. A copy left in the previous generation is
// not looked for: get finds the current one first, and the stale copy goes at the next
// rotation, so the cost of a put is one map assignment.
func (g *generations[V]) put(k uint64, v V) {
	g.cur[k] = v
	if g.curKeys.bits != nil {
		g.curKeys.add(k)
	}
}

// del removes k. The filters keep it: a filter may say a key is there when it is not, which
// costs a probe and nothing else.
func (g *generations[V]) del(k uint64) bool {
	_, inCur := g.cur[k]
	_, inOld := g.old[k]
	delete(g.cur, k)
	delete(g.old, k)
	return inCur || inOld
}

// len is an upper bound of the entries held (a key may sit in both generations).
func (g *generations[V]) len() int { return len(g.cur) + len(g.old) }

// rotate drops the previous generation and returns how many entries it forgot.
func (g *generations[V]) rotate() int {
	n := len(g.old)
	g.old, g.cur = g.cur, make(map[uint64]V, len(g.cur))
	if g.curKeys.bits != nil {
		g.oldKeys, g.curKeys = g.curKeys, g.oldKeys
		clear(g.curKeys.bits)
	}
	return n
}

func (g *generations[V]) clear() {
	clear(g.cur)
	clear(g.old)
	clear(g.curKeys.bits)
	clear(g.oldKeys.bits)
}

// keyFilter is a Bloom filter of uint64 keys with two bits a key: about 8 bits a key at the
// size it is made for, so about 5% of the keys it never saw are reported as maybe there.
type keyFilter struct {
	bits []uint64
	mask uint64 // bit index mask (the filter has a power-of-two number of bits)
}

func newKeyFilter(keys int) keyFilter {
	n := uint64(1 << 12)
	for n < 8*uint64(max(keys, 1)) {
		n <<= 1
	}
	return keyFilter{bits: make([]uint64, n/64), mask: n - 1}
}

// spread mixes a key so that its two bit positions are independent of how the key was made
// (engine hashes can be small sequential integers).
func spread(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

func (f *keyFilter) add(k uint64) {
	h := spread(k)
	a, b := h&f.mask, (h>>32)&f.mask
	f.bits[a>>6] |= 1 << (a & 63)
	f.bits[b>>6] |= 1 << (b & 63)
}

func (f *keyFilter) has(k uint64) bool {
	h := spread(k)
	a, b := h&f.mask, (h>>32)&f.mask
	return f.bits[a>>6]&(1<<(a&63)) != 0 && f.bits[b>>6]&(1<<(b&63)) != 0
}
