package fleet

import (
	"math/rand/v2"
	"slices"
)

// Workload describes the requests one replica receives: a share of them start with one of a few
// shared prefixes (system prompts, few-shot examples), the rest are unique.
type Workload struct {
	// ArrivalsPerStep is the mean number of new requests per scheduler step.
	ArrivalsPerStep float64
	// SharedFraction is the probability that a request starts with a shared prefix.
	SharedFraction float64
	// SharedPrefixes is the number of distinct shared prefixes.
	SharedPrefixes int
	// SharedTokens is the length of a shared prefix in tokens.
	SharedTokens int
	// PrivateTokens is the mean length of the unique part of a prompt in tokens.
	PrivateTokens int
	// OutputTokens is the mean number of generated tokens per request.
	OutputTokens int
}

// DefaultWorkload is a chat-like workload with a strong shared-prefix component.
var DefaultWorkload = Workload{
	ArrivalsPerStep: 0.3,
	SharedFraction:  0.8,
	SharedPrefixes:  4,
	SharedTokens:    512,
	PrivateTokens:   128,
	OutputTokens:    32,
}

// Request is one request of a given traffic (Config.Traffic): the keys of its prompt's full
// blocks (equal keys are equal content), its prompt length and the tokens it generates.
type Request struct {
	Blocks []uint64
	Prompt int
	Output int
}

// maxWaiting bounds the waiting queue of an engine.
const maxWaiting = 1024

// counters are an engine's monotonic counters, as vLLM exports them.
type counters struct {
	queries, hits           float64 // prefix-cache lookups and hits, in tokens
	preemptions             float64
	requests                float64 // finished requests
	promptTokens, genTokens float64
	localCompute, cacheHit  float64 // prompt tokens by source
}

// request is one request in flight inside an engine.
type request struct {
	hashes    []uint64 // hashes of the prompt's full blocks
	prompt    int      // prompt tokens
	output    int      // tokens to generate
	generated int
	blocks    []uint64 // blocks pinned while running (prompt and generated)
	preempted bool
}

// engine models one vLLM engine core: a fixed pool of KV blocks with prefix caching, a waiting
// queue and a running batch. A decode that needs a block when none is free preempts the newest
// running request, as vLLM's scheduler does.
type engine struct {
	rng        *rand.Rand
	wl         Workload
	blockSize  int
	capacity   int
	maxRunning int
	// preemptedHits reports whether the lookups of preempted requests count as hits (vLLM
	// before PR #25787, about 0.11).
	preemptedHits bool

	// traffic, when set, replaces wl: the engine serves these requests in order, one at a
	// time, and goes round again (see Config.Traffic); next is the one to serve, pass counts
	// the rounds.
	traffic    []Request
	next       int
	pass       uint64
	noPrefixes bool

	cache   *Cache
	nextID  uint64
	waiting []*request
	running []*request
	c       counters
}

func newEngine(seed uint64, wl Workload, blockSize, capacity, maxRunning int, preemptedHits bool) *engine {
	return &engine{
		rng:           rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		wl:            wl,
		blockSize:     blockSize,
		capacity:      capacity,
		maxRunning:    maxRunning,
		preemptedHits: preemptedHits,
		cache:         NewCache(capacity),
		nextID:        1 << 40,
	}
}

// step runs one scheduler step: arrivals, decode (with preemption under pressure), completion
// and admission.
func (e *engine) step() {
	if e.traffic != nil {
		// The next request arrives when the last one has finished.
		if len(e.traffic) > 0 && len(e.waiting) == 0 && len(e.running) == 0 {
			e.waiting = append(e.waiting, e.trafficRequest())
		}
		e.decode()
		e.admit()
		return
	}
	n := int(e.wl.ArrivalsPerStep)
	if e.rng.Float64() < e.wl.ArrivalsPerStep-float64(n) {
		n++
	}
	for range n {
		// A bounded queue keeps memory flat when arrivals outrun the batch; the overflow is
		// rejected, as a gateway would shed it.
		if len(e.waiting) < maxWaiting {
			e.waiting = append(e.waiting, e.newRequest())
		}
	}
	e.decode()
	e.admit()
}

func (e *engine) newRequest() *request {
	bs := e.blockSize
	private := 1 + e.rng.IntN(2*max(e.wl.PrivateTokens, 1))
	r := &request{output: 1 + e.rng.IntN(2*max(e.wl.OutputTokens, 1))}
	shared := 0
	if e.wl.SharedPrefixes > 0 && e.rng.Float64() < e.wl.SharedFraction {
		g := uint64(e.rng.IntN(e.wl.SharedPrefixes))
		shared = e.wl.SharedTokens / bs * bs
		for i := range shared / bs {
			r.hashes = append(r.hashes, mix(g+1, uint64(i)))
		}
	}
	r.prompt = shared + private
	for range r.prompt/bs - len(r.hashes) {
		r.hashes = append(r.hashes, e.uniqueHash())
	}
	return r
}

// trafficRequest makes the next request of the given traffic. Each round renames the blocks
// (the round mixed into every key), so a round finds nothing of its own traffic cached, as the
// first did: the blocks of the rounds before are never hit again, and being released earlier
// than any of this round's they are the first evicted, as if the cache had started empty.
func (e *engine) trafficRequest() *request {
	t, pass := e.traffic[e.next], e.pass
	e.next++
	if e.next == len(e.traffic) {
		e.next, e.pass = 0, e.pass+1
	}
	bs := e.blockSize
	r := &request{prompt: t.Prompt, output: max(t.Output, 1)}
	for _, k := range t.Blocks[:min(len(t.Blocks), r.prompt/bs)] {
		if e.noPrefixes {
			r.hashes = append(r.hashes, e.uniqueHash())
			continue
		}
		r.hashes = append(r.hashes, mix(pass+1, k))
	}
	for range r.prompt/bs - len(r.hashes) {
		r.hashes = append(r.hashes, e.uniqueHash())
	}
	return r
}

func (e *engine) uniqueHash() uint64 {
	e.nextID++
	return mix(0, e.nextID)
}

// mix is splitmix64 over two words: distinct inputs give distinct-looking block hashes.
func mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b + 0x632be59bd9b4e5d
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// decode advances every running request by one token, finishing those that are done.
func (e *engine) decode() {
	for i := 0; i < len(e.running); i++ {
		r := e.running[i]
		r.generated++
		e.c.genTokens++
		if (r.prompt+r.generated)%e.blockSize == 0 {
			if !e.allocate(r, e.uniqueHash()) {
				// No free block: preempt the newest running request (possibly r itself).
				victim := e.running[len(e.running)-1]
				e.preempt(victim)
				if victim == r {
					i--
					continue
				}
				e.allocate(r, e.uniqueHash())
			}
		}
		if r.generated >= r.output {
			e.release(r)
			e.running = append(e.running[:i], e.running[i+1:]...)
			i--
			e.c.requests++
		}
	}
}

func (e *engine) preempt(r *request) {
	e.c.preemptions++
	e.release(r)
	for i, x := range e.running {
		if x == r {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	r.generated = 0
	r.preempted = true
	e.waiting = append([]*request{r}, e.waiting...)
}

// admit moves waiting requests into the batch while their prompt blocks fit.
func (e *engine) admit() {
	for len(e.waiting) > 0 && len(e.running) < e.maxRunning {
		r := e.waiting[0]
		need := (r.prompt + e.blockSize) / e.blockSize // prompt blocks plus the partial one
		hit := 0
		for _, h := range r.hashes {
			if !e.cache.Cached(h) {
				break
			}
			hit++
		}
		// The last prompt token is always recomputed, so a hit covers at most (N-1) tokens.
		hitTokens := min(hit*e.blockSize, (r.prompt-1)/e.blockSize*e.blockSize)
		if e.cache.Pinned()+need-e.reusablePinned(r.hashes[:hit]) > e.capacity {
			return
		}
		e.waiting = e.waiting[1:]
		if !r.preempted || e.preemptedHits {
			e.c.queries += float64(r.prompt)
			e.c.hits += float64(hitTokens)
		}
		e.c.promptTokens += float64(r.prompt)
		e.c.cacheHit += float64(hitTokens)
		e.c.localCompute += float64(r.prompt - hitTokens)
		for _, h := range r.hashes {
			e.allocate(r, h)
		}
		e.allocate(r, e.uniqueHash())
		e.running = append(e.running, r)
	}
}

// reusablePinned counts the blocks among hs that are already pinned by another request and so
// need no new space.
func (e *engine) reusablePinned(hs []uint64) int {
	n := 0
	for _, h := range hs {
		if e.cache.pinnedBlock(h) {
			n++
		}
	}
	return n
}

// allocate pins the block with hash h for r (see Cache.Pin). It returns false when every
// block is pinned.
func (e *engine) allocate(r *request, h uint64) bool {
	if !e.cache.Pin(h) {
		return false
	}
	r.blocks = append(r.blocks, h)
	return true
}

// release unpins r's blocks, tail first as vLLM frees them, so a prompt's last blocks are
// evicted before its head, which other requests share; they stay cached for later hits until
// evicted.
func (e *engine) release(r *request) {
	for _, h := range slices.Backward(r.blocks) {
		e.cache.Unpin(h)
	}
	r.blocks = r.blocks[:0]
}

// usage is the fraction of KV blocks pinned by running requests, as vllm:kv_cache_usage_perc.
func (e *engine) usage() float64 { return float64(e.cache.Pinned()) / float64(e.capacity) }
