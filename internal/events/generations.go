package events

// generations is a map bounded by forgetting in bulk: entries go into the current generation;
// when it holds half the bound, the previous generation is dropped whole and the current one
// takes its place. An entry written is put in the current generation, so what is in use
// survives. Dropping whole maps instead of deleting entry by entry keeps lookups fast (no
// tombstones to probe past) and needs no separate eviction order.
type generations[V any] struct {
	cur, old map[uint64]V
}

func newGenerations[V any]() generations[V] {
	return generations[V]{cur: map[uint64]V{}, old: map[uint64]V{}}
}

func (g *generations[V]) get(k uint64) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.old[k]
	return v, ok
}

// put stores v under k in the current generation. A copy left in the previous generation is
// not looked for: get finds the current one first, and the stale copy goes at the next
// rotation, so the cost of a put is one map assignment.
func (g *generations[V]) put(k uint64, v V) { g.cur[k] = v }

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
	return n
}

func (g *generations[V]) clear() {
	clear(g.cur)
	clear(g.old)
}
