package sim

var approxPrefixInfo = PolicyInfo{
	Name:    "approx-prefix",
	About:   "llm-d scorers fed by a router-side LRU of its own decisions (64-token floor), no events",
	Family:  FamilyKV,
	Reasons: matchReasons,
	New: func(c Config, blockSize int) Policy {
		return newApproxPolicy(c, blockSize)
	},
}

// approxFloor is the smallest chunk, in tokens, the approximate index tracks (llm-d floors its
// block size at 64).
const approxFloor = 64

// approxPolicy is llm-d's approximate prefix producer: the router remembers, per replica, the
// prompt chunks it sent there, in an LRU of bounded size, and assumes they are still cached. It
// needs no KV events, so it also sees its own decisions at once (siblings stick together), but
// it cannot see evictions, and two routers would each have a different picture.
type approxPolicy struct {
	chunk   int // blocks per chunk
	index   []cache
	perRep  int
	matched []int
}

func newApproxPolicy(c Config, blockSize int) *approxPolicy {
	chunk := 1
	if blockSize < approxFloor {
		chunk = (approxFloor + blockSize - 1) / blockSize
	}
	tokens := c.Params.ApproxTokens
	if tokens == 0 {
		tokens = c.KVBlocks * blockSize
	}
	return &approxPolicy{chunk: chunk, perRep: max(1, tokens/(chunk*blockSize))}
}

// chunkKey names chunk k of a prompt by the key of its last block: block keys are chains, so
// the last key identifies the whole prefix.
func (p *approxPolicy) chunkKey(j *Job, k int) int32 { return j.ids[(k+1)*p.chunk-1] }

// Route implements Policy. Reasons: prefix-match, no-match (matchReason, on the router's own
// index).
func (p *approxPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	for len(p.index) < f.Size() {
		p.index = append(p.index, newCache(p.perRep, f.universe))
		p.matched = append(p.matched, 0)
	}
	chunks := hitLimit(r, f.blockSize) / p.chunk
	for i := range f.Size() {
		m := 0
		for m < chunks && p.index[i].has(p.chunkKey(j, m)) {
			m++
		}
		p.matched[i] = m * p.chunk
	}
	best := llmdPick(f, func(i int) float64 { return prefixFraction(p.matched[i], len(r.Blocks)) })
	idx := &p.index[best]
	for k := range fullBlocks(r, f.blockSize) / p.chunk {
		// insert pins and unpin makes the chunk most recently used.
		key := p.chunkKey(j, k)
		idx.insert(key)
		idx.unpin(key)
	}
	return best, matchReason(p.matched[best])
}
