package sim

import "math/bits"

// job is one request (or one sibling of an n > 1 request) on its way through a replica.
type job struct {
	req     *Request
	ids     []int32 // req.Blocks as the trace's dense ids
	rep     int
	arrival float64
	queue   int // requests ahead of it at its replica when it arrived
	hit     int // blocks found in the cache when its prefill started
	pinned  int // blocks 0..pinned-1 are pinned for it
	ttft    float64
}

// replica is one vLLM instance: its cache and its queues.
type replica struct {
	cache      cache
	waiting    queue // routed, not yet admitted
	prefillQ   queue // admitted, waiting for the prefill engine
	prefilling bool
	running    int // admitted and not finished
	active     int // blocks of admitted requests (Dynamo's decode blocks)
	routed     int
}

// queue is a FIFO of jobs that reuses its backing array.
type queue struct {
	items []*job
	head  int
}

func (q *queue) push(j *job) { q.items = append(q.items, j) }
func (q *queue) len() int    { return len(q.items) - q.head }
func (q *queue) pop() *job {
	j := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return j
}

// fleet is the state a policy may read when it routes: replicas, their caches and load.
type fleet struct {
	cfg       Config
	blockSize int
	reps      []replica
	// where holds, per dense block id, the set of replicas caching it, one bit each, so that
	// the cached prefix on every replica is found with one lookup per block.
	where       []uint64
	universe    int
	events      eventHeap
	seq         uint64
	ovl         []int
	uncacheable int64 // computed blocks not cached because every slot was pinned
}

func newFleet(cfg Config, blockSize, universe int) *fleet {
	f := &fleet{
		cfg:       cfg,
		blockSize: blockSize,
		where:     make([]uint64, universe),
		universe:  universe,
	}
	for range cfg.Replicas {
		f.addReplica()
	}
	return f
}

func (f *fleet) addReplica() {
	f.reps = append(f.reps, replica{cache: newCache(f.cfg.KVBlocks, f.universe)})
	f.ovl = make([]int, len(f.reps))
}

// size is the number of replicas now.
func (f *fleet) size() int { return len(f.reps) }

// inflight is the number of requests routed to replica i and not finished.
func (f *fleet) inflight(i int) int { return f.reps[i].waiting.len() + f.reps[i].running }

// queued is the number of requests at replica i whose prefill has not started.
func (f *fleet) queued(i int) int {
	r := &f.reps[i]
	return r.waiting.len() + r.prefillQ.len()
}

// usage is the fraction of replica i's KV blocks held by requests in flight, like
// vllm:kv_cache_usage_perc.
func (f *fleet) usage(i int) float64 {
	return float64(min(f.reps[i].active, f.cfg.KVBlocks)) / float64(f.cfg.KVBlocks)
}

// overlaps returns, for every replica, how many blocks of the request's prefix it holds now
// (consecutive from block 0, at most the hit limit). The slice is reused by the next call.
func (f *fleet) overlaps(j *job) []int {
	out := f.ovl
	clear(out)
	lim := hitLimit(j.req, f.blockSize)
	alive := uint64(1)<<len(f.reps) - 1
	if len(f.reps) == 64 {
		alive = ^uint64(0)
	}
	i := 0
	for ; i < lim && alive != 0; i++ {
		m := f.where[j.ids[i]] & alive
		for d := alive &^ m; d != 0; d &= d - 1 {
			out[bits.TrailingZeros64(d)] = i
		}
		alive = m
	}
	for ; alive != 0; alive &= alive - 1 {
		out[bits.TrailingZeros64(alive)] = i
	}
	return out
}

// best returns the replica with the highest score; ties go to the replica with fewer requests
// in flight, then to the lowest index, so every policy is deterministic.
func (f *fleet) best(score func(i int) float64) int {
	bi, bs := 0, score(0)
	for i := 1; i < len(f.reps); i++ {
		s := score(i)
		if s > bs || (s == bs && f.inflight(i) < f.inflight(bi)) {
			bi, bs = i, s
		}
	}
	return bi
}

// event kinds.
const (
	evPrefillDone = iota
	evFinish
)

type event struct {
	t    float64
	seq  uint64
	kind int
	j    *job
}

// eventHeap is a binary min-heap ordered by time, then by scheduling order.
type eventHeap []event

func (h eventHeap) less(a, b int) bool {
	if h[a].t != h[b].t {
		return h[a].t < h[b].t
	}
	return h[a].seq < h[b].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

func (f *fleet) schedule(t float64, kind int, j *job) {
	f.seq++
	f.events.push(event{t: t, seq: f.seq, kind: kind, j: j})
}

// advance processes every event up to and including time t.
func (f *fleet) advance(t float64) {
	for len(f.events) > 0 && f.events[0].t <= t {
		e := f.events.pop()
		switch e.kind {
		case evPrefillDone:
			f.prefillDone(e.j, e.t)
		case evFinish:
			f.finish(e.j, e.t)
		}
	}
}

// arrive hands a routed job to its replica.
func (f *fleet) arrive(j *job, t float64) {
	r := &f.reps[j.rep]
	r.routed++
	j.queue = f.queued(j.rep)
	if r.prefilling {
		j.queue++
	}
	r.waiting.push(j)
	f.admit(j.rep, t)
}

func (f *fleet) admit(i int, t float64) {
	r := &f.reps[i]
	for r.running < f.cfg.Model.MaxRunning && r.waiting.len() > 0 {
		j := r.waiting.pop()
		r.running++
		r.active += len(j.req.Blocks)
		r.prefillQ.push(j)
	}
	f.startPrefill(i, t)
}

func (f *fleet) startPrefill(i int, t float64) {
	r := &f.reps[i]
	if r.prefilling || r.prefillQ.len() == 0 {
		return
	}
	j := r.prefillQ.pop()
	lim := hitLimit(j.req, f.blockSize)
	hit := 0
	for hit < lim && r.cache.pin(j.ids[hit]) {
		hit++
	}
	j.hit, j.pinned = hit, hit
	uncached := j.req.InputTokens - hit*f.blockSize
	r.prefilling = true
	f.schedule(t+float64(uncached)*f.cfg.Model.PrefillPerToken, evPrefillDone, j)
}

func (f *fleet) prefillDone(j *job, t float64) {
	r := &f.reps[j.rep]
	bit := uint64(1) << j.rep
	for k := j.pinned; k < fullBlocks(j.req, f.blockSize); k++ {
		key := j.ids[k]
		ok, victim, evicted := r.cache.insert(key)
		if evicted {
			f.where[victim] &^= bit
		}
		if !ok {
			// Every slot is pinned by requests in flight; later blocks would be unreachable
			// without this one, so stop caching this prompt.
			f.uncacheable += int64(fullBlocks(j.req, f.blockSize) - k)
			break
		}
		f.where[key] |= bit
		j.pinned = k + 1
	}
	j.ttft = t - j.arrival
	r.prefilling = false
	f.schedule(t+float64(j.req.OutputTokens)*f.cfg.Model.DecodePerToken, evFinish, j)
	f.startPrefill(j.rep, t)
}

func (f *fleet) finish(j *job, t float64) {
	r := &f.reps[j.rep]
	// vLLM frees a request's blocks tail first, so a chain's last blocks are evicted before
	// its shared head.
	for k := j.pinned - 1; k >= 0; k-- {
		r.cache.unpin(j.ids[k])
	}
	r.running--
	r.active -= len(j.req.Blocks)
	f.admit(j.rep, t)
}
