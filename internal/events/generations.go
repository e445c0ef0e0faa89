package events

// generations is a table bounded by forgetting in bulk: entries go into the current generation;
// when it holds half the bound, the previous generation is dropped whole and the current one
// takes its place. An entry written is put in the current generation, so what is in use
// survives. Dropping whole tables instead of deleting entry by entry needs no separate
// eviction order.
//
// With a filter (newFilteredGenerations), each generation also has a small bit set of the keys
// put into it, so that a get of a key in neither generation (every new block of a busy stream)
// costs a probe of the current table (where it is then inserted) and a look at the previous
// generation's filter, which stays in the CPU's cache, instead of a probe of that table too:
// on a large table a probe is a cache miss.
type generations[V any] struct {
	cur, old table[V]
	// curKeys and oldKeys filter the keys put into cur and old since they became the current
	// generation (nil: no filter).
	curKeys, oldKeys keyFilter
}

func newGenerations[V any]() generations[V] {
	return generations[V]{}
}

// newFilteredGenerations returns generations with filters sized for perGeneration keys in
// each generation.
func newFilteredGenerations[V any](perGeneration int) generations[V] {
	g := newGenerations[V]()
	g.curKeys, g.oldKeys = newKeyFilter(perGeneration), newKeyFilter(perGeneration)
	return g
}

func (g *generations[V]) get(k uint64) (V, bool) {
	if v := g.cur.find(k); v != nil {
		return *v, true
	}
	if v := g.findOld(k); v != nil {
		return *v, true
	}
	var zero V
	return zero, false
}

// findOld looks k up in the previous generation; its filter, when it has one, saves the probe
// of a key it never saw.
func (g *generations[V]) findOld(k uint64) *V {
	if g.oldKeys.bits != nil && !g.oldKeys.has(k) {
		return nil
	}
	return g.old.find(k)
}

// inCur reports whether k is in the current generation.
func (g *generations[V]) inCur(k uint64) bool { return g.cur.find(k) != nil }

// curLen is the number of entries in the current generation.
func (g *generations[V]) curLen() int { return g.cur.n }

// put stores v under k in the current generation. A copy left in the previous generation is
// not looked for: get finds the current one first, and the stale copy goes at the next
// rotation, so the cost of a put is one probe.
func (g *generations[V]) put(k uint64, v V) {
	p, held := g.cur.put(k)
	*p = v
	if !held && g.curKeys.bits != nil {
		g.curKeys.add(k)
	}
}

// ref returns a pointer to k's value in the current generation, to read and change in place,
// and whether k was held: a value held only in the previous generation is copied into the
// current one (as get then put would). An absent k is inserted with the zero value when add
// is set; otherwise ref returns nil, false. The pointer is valid until the next change of g.
func (g *generations[V]) ref(k uint64, add bool) (*V, bool) {
	if v := g.cur.find(k); v != nil {
		return v, true
	}
	o := g.findOld(k)
	if o == nil && !add {
		return nil, false
	}
	v, _ := g.cur.put(k)
	if g.curKeys.bits != nil {
		g.curKeys.add(k)
	}
	if o == nil {
		return v, false
	}
	*v = *o
	return v, true
}

// del removes k. The filters keep it: a filter may say a key is there when it is not, which
// costs a probe and nothing else.
func (g *generations[V]) del(k uint64) bool {
	inCur := g.cur.del(k)
	inOld := g.old.del(k)
	return inCur || inOld
}

// len is an upper bound of the entries held (a key may sit in both generations).
func (g *generations[V]) len() int { return g.cur.n + g.old.n }

// rotate drops the previous generation and returns how many entries it forgot. The new
// current generation takes the dropped one's array when that is the size the entries of the
// generation before would need, so a steady stream rotates without allocating.
func (g *generations[V]) rotate() int {
	n := g.old.n
	g.old.reset(g.cur.n)
	g.old, g.cur = g.cur, g.old
	if g.curKeys.bits != nil {
		g.oldKeys, g.curKeys = g.curKeys, g.oldKeys
		clear(g.curKeys.bits)
	}
	return n
}

// each calls f with every entry of both generations, which f may change.
func (g *generations[V]) each(f func(k uint64, v *V)) {
	g.cur.each(f)
	g.old.each(f)
}

func (g *generations[V]) clear() {
	g.cur.reset(g.cur.n)
	g.old.reset(g.old.n)
	clear(g.curKeys.bits)
	clear(g.oldKeys.bits)
}

// keyFilter is a Bloom filter of uint64 keys with two bits a key: about 8 bits a key at the
// size it is made for, so about 5% of the keys it never saw are reported as maybe there.
type keyFilter struct {
	bits []uint64
	mask uint64 // bit index mask (the filter has a power-of-two number of bits)
}

// maxFilterBits caps a filter's size (16 MiB): the filters are allocated up front, sized from
// --max-blocks, and the bound may be far above what the stream ever fills (--max-blocks 1e12
// asked for about a terabyte and the tap died out of memory). Past 8 bits a key for 2^24 keys
// a generation the filter only answers "maybe" more often, which costs a probe, never a wrong
// answer; the tables themselves grow only as blocks arrive.
const maxFilterBits = 1 << 27

func newKeyFilter(keys int) keyFilter {
	n := uint64(1 << 12)
	for n < 8*uint64(max(keys, 1)) && n < maxFilterBits {
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
