package sim

import (
	"math/bits"
	"slices"
)

// Job is one request (or one sibling of an n > 1 request) on its way through a replica, as a
// policy routes it and, for an Observer, as it leaves its prefill and the replica. Jobs live
// only while in flight: finish adds a job to the pool's tally and returns it to the job pool,
// so a replay holds as many jobs as there are requests routed and not finished; a policy must
// not keep one past Finished.
type Job struct {
	seq     int // order sent, siblings included
	index   int // the request's index in the trace
	sibling int // its copy among the request's siblings, from 0
	req     *Request
	ids     []int32 // req.Blocks as the trace's dense ids
	rep     int
	arrival float64
	queue   int // requests ahead of it at its replica when it arrived
	hit     int // blocks found in the cache when its prefill started
	pinned  int // blocks 0..pinned-1 are pinned for it
	// nodes are the cache nodes of the pinned blocks, so that finishing unpins them without a
	// lookup; the buffer belongs to the replica's pool while the job does not run.
	nodes  []int32
	ttft   float64
	done   float64 // when it finished (set before loadObserver.finished)
	steady bool    // counted in the steady figures (Config.MeasureFrom, MeasureFromRequest)
	reason string  // the policy's reason for rep
}

// Seq is the job's place in the order requests were sent, siblings included, from 0: unique
// among the jobs of a replay.
func (j *Job) Seq() int { return j.seq }

// Request is the request the job sends.
func (j *Job) Request() *Request { return j.req }

// IDs are the request's blocks (Request.Blocks) as the trace's dense ids: equal ids, equal
// blocks. Pool.Overlaps and Pool.Runs read them.
func (j *Job) IDs() []int32 { return j.ids }

// Arrival is when the request arrives, in seconds from the trace's start.
func (j *Job) Arrival() float64 { return j.arrival }

// Replica is the replica the job was routed to (for an Observer).
func (j *Job) Replica() int { return j.rep }

// Done is when the job finished (for Observer.Finished).
func (j *Job) Done() float64 { return j.done }

// TTFT is the time from the job's arrival to its first token, the end of its prefill (for
// Observer.Prefilled and Finished).
func (j *Job) TTFT() float64 { return j.ttft }

// FullBlocks is the number of the request's blocks that are full blocks of blockSize tokens:
// those an engine caches.
func (j *Job) FullBlocks(blockSize int) int { return fullBlocks(j.req, blockSize) }

// replica is one vLLM instance: its cache and its queues.
type replica struct {
	cache    cache
	waiting  queue // routed, not yet admitted
	prefillQ queue // admitted, waiting for the prefill engine
	// prefill is the job in prefill, nil when the prefill engine is idle.
	prefill *Job
	running int // admitted and not finished
	active  int // blocks of admitted requests (Dynamo's decode blocks)
	routed  int
	// waited counts the requests routed here that could not start their prefill on arrival
	// (the prefill engine busy, requests queued ahead, or every running slot taken), except
	// those that waited only for their twins (twinWait).
	waited int
	// bufs are node buffers for jobs that start their prefill: at most MaxRunning are out at
	// once, so a replica keeps at most that many, each as long as the longest prompt it ran.
	bufs [][]int32
}

// queue is a FIFO of jobs that reuses its backing array.
type queue struct {
	items []*Job
	head  int
}

func (q *queue) push(j *Job) { q.items = append(q.items, j) }
func (q *queue) len() int    { return len(q.items) - q.head }
func (q *queue) pop() *Job {
	j := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 1024 && 2*q.head >= len(q.items):
		// A queue that never empties (a policy that sends everything to one replica) would
		// otherwise keep, and copy as it grows, a slot for every job it ever held: move the
		// waiting jobs to the front once at least half the array is behind the head.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return j
}

// Pool is the fleet as a policy sees it when it routes: the replicas, their load and, for a
// policy that reads it (PolicyInfo.ReadsIndex), which blocks each caches. It is the
// simulator's own state; a policy reads it through its methods and never changes it.
type Pool struct {
	cfg       Config
	blockSize int
	reps      []replica
	indexed   bool // where is kept up to date (the policy reads it)
	// where holds, per block cached somewhere, the set of replicas caching it.
	where       blockIndex
	universe    int // distinct blocks of the trace
	events      eventHeap
	seq         uint64
	ovl         []int
	alive       []uint64 // overlaps' scratch replica set
	uncacheable int64    // computed blocks not cached because every slot was pinned
	pool        jobPool
	tally       tally
	// obs, when the policy keeps its own account of the requests it sent, is told when a job's
	// prefill ends and when it finishes.
	obs Observer
	// routes, when set, is told every finished job's route (simulate --routes).
	routes *routeLog
	// err is what stopped the policy (Fail).
	err error
}

// tally is what a replay keeps of every finished job: sums, and the TTFTs for the quantiles.
type tally struct {
	jobs                   int
	inputTokens, hitBlocks int64
	blockRefs, queueSum    int64
	queueMax               int
	steadyInputTokens      int64
	steadyHitBlocks        int64
	lastDone               float64 // when the last job finished
	ttft                   []float64
	records                []Job // every job by seq, only when asked for them (routes, tests)
}

// jobPool hands out jobs from chunks, so that pointers stay valid, and reuses finished ones.
type jobPool struct {
	free  []*Job
	chunk []Job
}

func (p *jobPool) get() *Job {
	if n := len(p.free); n > 0 {
		j := p.free[n-1]
		p.free = p.free[:n-1]
		return j
	}
	if len(p.chunk) == 0 {
		p.chunk = make([]Job, 256)
	}
	j := &p.chunk[0]
	p.chunk = p.chunk[1:]
	return j
}

func (p *jobPool) put(j *Job) {
	*j = Job{}
	p.free = append(p.free, j)
}

func newPool(cfg Config, blockSize, universe int, indexed bool) *Pool {
	most := maxFleet(cfg)
	f := &Pool{
		cfg:       cfg,
		blockSize: blockSize,
		indexed:   indexed,
		universe:  universe,
	}
	if indexed {
		f.where = newBlockIndex(most, min(most*max(cfg.KVBlocks, 0), universe))
	}
	f.alive = make([]uint64, f.where.words)
	for range cfg.Replicas {
		f.addReplica()
	}
	return f
}

// maxFleet is the most replicas the fleet will have: one more with an added replica.
func maxFleet(c Config) int {
	if c.AddReplicaAt >= 0 {
		return c.Replicas + 1
	}
	return c.Replicas
}

func (f *Pool) addReplica() {
	f.reps = append(f.reps, replica{cache: newCache(f.cfg.KVBlocks, f.universe)})
	f.ovl = make([]int, len(f.reps))
}

// duplicates is the number of extra copies of blocks cached on more than one replica.
func (f *Pool) duplicates() int64 {
	if f.indexed {
		return f.where.duplicates()
	}
	// Without the index: one bit per distinct block of the trace for the time of the count, an
	// eighth of a byte per distinct block. Indexing every resident block instead cost a small
	// trace's replay on 64 replicas a tenth of its time.
	seen := make([]uint64, (f.universe+63)/64)
	var d int64
	for i := range f.reps {
		for _, s := range f.reps[i].cache.table {
			if s.node == 0 {
				continue
			}
			w, b := s.key/64, uint64(1)<<(s.key%64)
			if seen[w]&b != 0 {
				d++
			}
			seen[w] |= b
		}
	}
	return d
}

// Size is the number of replicas now (one more once an added replica joins).
func (f *Pool) Size() int { return len(f.reps) }

// Fail tells the replay that the policy cannot go on (a router whose state is on file that
// could not be read back): the replay stops after this route and returns err, rather than
// report figures the policy's wrong answers made. The first error counts.
func (f *Pool) Fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// InFlight is the number of requests routed to replica i and not finished.
func (f *Pool) InFlight(i int) int { return f.reps[i].waiting.len() + f.reps[i].running }

// Waiting is the number of requests routed to replica i that it has not admitted (beyond
// Model.MaxRunning): vllm:num_requests_waiting.
func (f *Pool) Waiting(i int) int { return f.reps[i].waiting.len() }

// Queued is the number of requests at replica i whose prefill has not started.
func (f *Pool) Queued(i int) int {
	r := &f.reps[i]
	return r.waiting.len() + r.prefillQ.len()
}

// Usage is the fraction of replica i's KV blocks held by requests in flight, like
// vllm:kv_cache_usage_perc.
func (f *Pool) Usage(i int) float64 {
	return float64(min(f.reps[i].active, f.cfg.KVBlocks)) / float64(f.cfg.KVBlocks)
}

// BlockSize is the trace's block size in tokens: the engines'.
func (f *Pool) BlockSize() int { return f.blockSize }

// What a replica reports of itself (a router polling the engines' load, or reading their KV
// events as they stand now, without PolicyInfo.ReadsIndex's block index).

// CachedRun is the number of ids, consecutive from the first, that replica i's cache holds now.
func (f *Pool) CachedRun(i int, ids []int32) int {
	c := &f.reps[i].cache
	k := 0
	for k < len(ids) && c.has(ids[k]) {
		k++
	}
	return k
}

// Cached is the number of blocks replica i's cache holds now.
func (f *Pool) Cached(i int) int { return f.reps[i].cache.used }

// QueuedUncached is the prompt tokens of the requests at replica i whose prefill has not started
// (Queued) that its cache does not hold now: each request's input tokens less its blocks cached
// from block 0, never below 0.
func (f *Pool) QueuedUncached(i int) int64 {
	r := &f.reps[i]
	bs := int64(f.blockSize)
	var n int64
	for _, q := range []*queue{&r.waiting, &r.prefillQ} {
		for _, j := range q.items[q.head:] {
			n += max(int64(j.req.InputTokens)-int64(f.CachedRun(i, j.ids))*bs, 0)
		}
	}
	return n
}

// Decoding is the number of requests replica i is decoding now: admitted, with their prefill
// done.
func (f *Pool) Decoding(i int) int {
	r := &f.reps[i]
	n := r.running - r.prefillQ.len()
	if r.prefill != nil {
		n--
	}
	return n
}

// Model is the service model the replicas run (Config.Model).
func (f *Pool) Model() Model { return f.cfg.Model }

// Runs sets out[i] to the number of the job's blocks, consecutive from block 0 and at most lim,
// that replica i caches now according to the block index (what a router fed by the engines' KV
// events knows). out has one entry per replica. Only for a policy with PolicyInfo.ReadsIndex.
func (f *Pool) Runs(j *Job, lim int, out []int) {
	if !f.indexed {
		panic("sim: a policy reads the block index without PolicyInfo.ReadsIndex")
	}
	clear(out)
	for k := range lim {
		set := f.where.lookup(j.ids[k])
		if set == nil {
			return
		}
		more := false
		for i := range out {
			if out[i] == k && set[i/64]&(1<<(i%64)) != 0 {
				out[i]++
				more = true
			}
		}
		if !more {
			return
		}
	}
}

// Overlaps returns, for every replica, how many blocks of the request's prefix it holds now
// (consecutive from block 0, at most the hit limit: the blocks a prefill can hit). The slice is
// reused by the next call. Only for a policy with PolicyInfo.ReadsIndex.
func (f *Pool) Overlaps(j *Job) []int { return f.overlaps(j) }

func (f *Pool) overlaps(j *Job) []int {
	if !f.indexed {
		panic("sim: a policy reads the block index without PolicyInfo.ReadsIndex")
	}
	out := f.ovl
	clear(out)
	lim := hitLimit(j.req, f.blockSize)
	alive := f.alive
	for w := range alive {
		n := len(f.reps) - 64*w
		switch {
		case n >= 64:
			alive[w] = ^uint64(0)
		case n > 0:
			alive[w] = uint64(1)<<n - 1
		default:
			alive[w] = 0
		}
	}
	more := len(f.reps) > 0
	i := 0
	for ; i < lim && more; i++ {
		set := f.where.lookup(j.ids[i])
		more = false
		for w, a := range alive {
			if a == 0 {
				continue
			}
			var m uint64
			if set != nil {
				m = set[w] & a
			}
			for d := a &^ m; d != 0; d &= d - 1 {
				out[64*w+bits.TrailingZeros64(d)] = i
			}
			alive[w] = m
			more = more || m != 0
		}
	}
	for w, a := range alive {
		for ; a != 0; a &= a - 1 {
			out[64*w+bits.TrailingZeros64(a)] = i
		}
	}
	return out
}

// Best returns the replica with the highest score; ties go to the replica with fewer requests
// in flight, then to the lowest index, so every policy is deterministic.
func (f *Pool) Best(score func(i int) float64) int { return f.best(score) }

func (f *Pool) best(score func(i int) float64) int {
	bi, bs := 0, score(0)
	for i := 1; i < len(f.reps); i++ {
		s := score(i)
		if s > bs || (s == bs && f.InFlight(i) < f.InFlight(bi)) {
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
	j    *Job
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

func (f *Pool) schedule(t float64, kind int, j *Job) {
	f.seq++
	f.events.push(event{t: t, seq: f.seq, kind: kind, j: j})
}

// advance processes every event up to and including time t.
func (f *Pool) advance(t float64) {
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
func (f *Pool) arrive(j *Job, t float64) {
	r := &f.reps[j.rep]
	r.routed++
	if (r.prefill != nil || r.prefillQ.len() > 0 || r.waiting.len() > 0 || r.running >= f.cfg.Model.MaxRunning) && !f.twinWait(r, j) {
		r.waited++
	}
	j.queue = f.Queued(j.rep)
	if r.prefill != nil {
		j.queue++
	}
	r.waiting.push(j)
	f.admit(j.rep, t)
}

// twinWait reports whether j, arriving at the busy replica r, waits only for its twins: a slot
// is free, the request in prefill is the same prompt as j (a sibling of one request with n, or
// the same prompt sent again while the first is computed), and so is every request admitted
// ahead of j. The one in prefill computes every block j needs, and j then finds them cached:
// such a wait is the price of computing the prompt once, not a sign of load, and the hot-spot
// rule (Load.HotSpot) does not count it, or every policy that keeps siblings together would be
// a hot spot for making the second wait for the first one's prefill. A request that shares
// only a prefix with the one in prefill (a system prompt, an earlier turn of its conversation)
// has work of its own to wait with, and counts.
func (f *Pool) twinWait(r *replica, j *Job) bool {
	p := r.prefill
	if p == nil || r.waiting.len() > 0 || r.running >= f.cfg.Model.MaxRunning || !samePrompt(p, j) {
		return false
	}
	for _, q := range r.prefillQ.items[r.prefillQ.head:] {
		if !samePrompt(q, j) {
			return false
		}
	}
	return true
}

// samePrompt reports whether two jobs carry the same prompt: the same request (siblings), or
// the same blocks and length.
func samePrompt(a, b *Job) bool {
	if a.req == b.req {
		return true
	}
	return a.req.InputTokens == b.req.InputTokens && slices.Equal(a.ids, b.ids)
}

func (f *Pool) admit(i int, t float64) {
	r := &f.reps[i]
	for r.running < f.cfg.Model.MaxRunning && r.waiting.len() > 0 {
		j := r.waiting.pop()
		r.running++
		r.active += len(j.req.Blocks)
		r.prefillQ.push(j)
	}
	f.startPrefill(i, t)
}

func (f *Pool) startPrefill(i int, t float64) {
	r := &f.reps[i]
	if r.prefill != nil || r.prefillQ.len() == 0 {
		return
	}
	j := r.prefillQ.pop()
	lim := hitLimit(j.req, f.blockSize)
	if k := len(r.bufs); k > 0 {
		j.nodes = r.bufs[k-1]
		r.bufs = r.bufs[:k-1]
	}
	nodes := j.nodes[:0]
	for len(nodes) < lim {
		n := r.cache.pinNode(j.ids[len(nodes)])
		if n == 0 {
			break
		}
		nodes = append(nodes, n)
	}
	j.nodes = nodes
	hit := len(nodes)
	j.hit, j.pinned = hit, hit
	uncached := j.req.InputTokens - hit*f.blockSize
	r.prefill = j
	f.schedule(t+float64(uncached)*f.cfg.Model.PrefillPerToken, evPrefillDone, j)
}

func (f *Pool) prefillDone(j *Job, t float64) {
	r := &f.reps[j.rep]
	full := fullBlocks(j.req, f.blockSize)
	for k := j.pinned; k < full; k++ {
		key := j.ids[k]
		n, victim, evicted := r.cache.insertNode(key)
		if evicted && f.indexed {
			f.where.remove(victim, j.rep)
		}
		if n == 0 {
			// Every slot is pinned by requests in flight; later blocks would be unreachable
			// without this one, so stop caching this prompt.
			f.uncacheable += int64(full - k)
			break
		}
		if f.indexed {
			f.where.add(key, j.rep)
		}
		j.nodes = append(j.nodes, n)
		j.pinned = k + 1
	}
	j.ttft = t - j.arrival
	if f.obs != nil {
		f.obs.Prefilled(j)
	}
	r.prefill = nil
	f.schedule(t+float64(j.req.OutputTokens)*f.cfg.Model.DecodePerToken, evFinish, j)
	f.startPrefill(j.rep, t)
}

func (f *Pool) finish(j *Job, t float64) {
	r := &f.reps[j.rep]
	// vLLM frees a request's blocks tail first, so a chain's last blocks are evicted before
	// its shared head.
	for k := j.pinned - 1; k >= 0; k-- {
		r.cache.unpinNode(j.nodes[k])
	}
	r.bufs = append(r.bufs, j.nodes[:0])
	j.nodes = nil
	r.running--
	r.active -= len(j.req.Blocks)
	j.done = t
	if f.obs != nil {
		f.obs.Finished(j)
	}
	rep := j.rep
	f.record(j)
	f.admit(rep, t)
}

// record adds a finished job to the tally and returns it to the pool.
func (f *Pool) record(j *Job) {
	s := &f.tally
	s.jobs++
	s.lastDone = max(s.lastDone, j.done)
	s.inputTokens += int64(j.req.InputTokens)
	s.hitBlocks += int64(j.hit)
	if j.steady {
		s.steadyInputTokens += int64(j.req.InputTokens)
		s.steadyHitBlocks += int64(j.hit)
	}
	s.blockRefs += int64(len(j.req.Blocks))
	s.queueSum += int64(j.queue)
	s.queueMax = max(s.queueMax, j.queue)
	s.ttft = append(s.ttft, j.ttft)
	if s.records != nil {
		s.records[j.seq] = *j
	}
	if f.routes != nil {
		f.routes.add(j)
	}
	f.pool.put(j)
}
