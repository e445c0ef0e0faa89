package sim

import (
	"math/rand/v2"
	"slices"
)

// refFleet is a second model of the fleet, written from Model's doc comment for traffic that
// never fills a replica's KV cache (the tests give it room), sharing no code with the simulator:
// each replica admits the requests sent to it in the order they arrive, at most MaxRunning at a
// time (a request is admitted once it has arrived, the one before it has been admitted, and
// fewer than MaxRunning of those before it are unfinished); it prefills the admitted ones one at
// a time in that order; a request hits the run of its blocks from block 0 that requests before
// it on that replica computed (full blocks only), at most (tokens-1)/block size; its prefill
// lasts its uncached tokens times the prefill cost, its decode its output tokens times the
// decode cost. A router reading the engines sees a request's blocks once its prefill has ended.
type refFleet struct {
	bs       int
	m        Model
	jobs     []refJob
	free     []float64         // when each replica's prefill engine is next free
	admitted []float64         // when each replica last admitted a request
	finishes [][]float64       // finish times of the requests sent to each replica
	computed []map[uint64]bool // full blocks each replica has computed (or will have, FIFO)
}

type refJob struct {
	r                         *Request
	rep                       int
	admit, start, end, finish float64
	hit                       int
}

func (e *refFleet) full(r *Request) []uint64 {
	return r.Blocks[:min(len(r.Blocks), r.InputTokens/e.bs)]
}

func (e *refFleet) grow(n int) {
	for len(e.free) < n {
		e.free = append(e.free, 0)
		e.admitted = append(e.admitted, 0)
		e.finishes = append(e.finishes, nil)
		e.computed = append(e.computed, map[uint64]bool{})
	}
}

// send starts r on replica rep and returns its hit.
func (e *refFleet) send(r *Request, rep int) int {
	e.grow(rep + 1)
	admit := max(r.Arrival, e.admitted[rep])
	if before := slices.Sorted(slices.Values(e.finishes[rep])); len(before) >= e.m.MaxRunning {
		// The slot of the (k-MaxRunning+1)-th request to finish among the k before it.
		admit = max(admit, before[len(before)-e.m.MaxRunning])
	}
	e.admitted[rep] = admit
	start := max(admit, e.free[rep])
	limit := 0
	if r.InputTokens > 0 {
		limit = min(len(r.Blocks), (r.InputTokens-1)/e.bs)
	}
	hit := 0
	for hit < limit && e.computed[rep][r.Blocks[hit]] {
		hit++
	}
	end := start + float64(r.InputTokens-hit*e.bs)*e.m.PrefillPerToken
	e.free[rep] = end
	for _, b := range e.full(r) {
		e.computed[rep][b] = true
	}
	finish := end + float64(r.OutputTokens)*e.m.DecodePerToken
	e.finishes[rep] = append(e.finishes[rep], finish)
	e.jobs = append(e.jobs, refJob{r: r, rep: rep, admit: admit, start: start, end: end, finish: finish, hit: hit})
	return hit
}

// cachedRun is how many of blocks[:lim], from block 0, replica rep's engine holds at time t.
func (e *refFleet) cachedRun(rep int, blocks []uint64, lim int, t float64) int {
	held := map[uint64]bool{}
	for _, j := range e.jobs {
		if j.rep == rep && j.end <= t {
			for _, b := range e.full(j.r) {
				held[b] = true
			}
		}
	}
	k := 0
	for k < lim && held[blocks[k]] {
		k++
	}
	return k
}

// randomTraffic is n requests of blocks of bs tokens: conversations that go on (a previous
// request's full blocks and more), prompts on one of four shared system prompts, prompts that
// share nothing and exact repeats; last blocks partial or whole, outputs of 0 to 19 tokens,
// arrivals 0 to 0.3 s apart.
func randomTraffic(seed uint64, n, bs int) *Trace {
	rng := rand.New(rand.NewPCG(seed, 7))
	fresh := uint64(1_000_000)
	next := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			fresh++
			out[i] = fresh
		}
		return out
	}
	var rs []Request
	t := 0.0
	for range n {
		t += rng.Float64() * 0.3
		var blocks []uint64
		tokens := -1
		switch x := rng.IntN(10); {
		case x == 9 && len(rs) > 0:
			p := rs[rng.IntN(len(rs))]
			blocks, tokens = p.Blocks, p.InputTokens
		case x < 4 && len(rs) > 0:
			p := rs[rng.IntN(len(rs))]
			blocks = append(slices.Clone(p.Blocks[:p.InputTokens/bs]), next(1+rng.IntN(3))...)
		case x < 8:
			s := rng.IntN(4)
			for k := range 1 + s {
				blocks = append(blocks, uint64(1000*(s+1)+k))
			}
			blocks = append(blocks, next(1+rng.IntN(4))...)
		default:
			blocks = next(1 + rng.IntN(6))
		}
		if tokens < 0 {
			tokens = len(blocks)*bs - rng.IntN(bs)
			if rng.IntN(3) == 0 {
				tokens = len(blocks) * bs // a whole last block
			}
		}
		rs = append(rs, Request{Arrival: t, Blocks: blocks, InputTokens: tokens, OutputTokens: rng.IntN(20), N: 1})
	}
	return &Trace{Name: "random", Format: "test", BlockSize: bs, PrefixInfo: true, Requests: rs}
}

// roomyConfig has caches and running slots no random trace fills.
func roomyConfig(seed uint64, replicas int, addAt float64) Config {
	c := modelConfig(seed, replicas, addAt)
	c.Model.MaxRunning = 1 << 16
	return c
}

// modelConfig has caches no random trace fills, so that refFleet applies, and three running
// slots per replica, so that requests wait.
func modelConfig(seed uint64, replicas int, addAt float64) Config {
	return Config{Replicas: replicas, KVBlocks: 1 << 16, AddReplicaAt: addAt, Seed: seed,
		Model: Model{PrefillPerToken: 0.002, DecodePerToken: 0.05, MaxRunning: 3}, Params: DefaultParams()}
}

// replayRef runs a second model of a router over t with refFleet and returns routes and hits.
func replayRef(t *Trace, c Config, route func(r *Request, n int) int, e *refFleet) outcome {
	var o outcome
	for i := range t.Requests {
		r := &t.Requests[i]
		n := c.Replicas
		if c.AddReplicaAt >= 0 && r.Arrival >= c.AddReplicaAt {
			n++
		}
		rep := route(r, n)
		o.Routes = append(o.Routes, rep)
		o.Hits = append(o.Hits, e.send(r, rep))
	}
	return o
}

// relative names routes by the replica the first request went to: the first request of these
// traces meets an empty fleet, where every score ties and the picker draws one at random.
func relative(routes []int) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = "other"
		if r == routes[0] {
			out[i] = "first"
		}
	}
	return out
}

// textReq is a completion whose prompt is text, of len(blocks) full blocks of bs tokens.
func textReq(at float64, out int, text string, bs int, blocks ...uint64) Request {
	return Request{Arrival: at, Blocks: blocks, InputTokens: len(blocks) * bs, OutputTokens: out, N: 1, View: &View{Text: text}}
}

// textTrace is a trace of requests with views (a request log's).
func textTrace(bs int, rs ...Request) *Trace {
	return &Trace{Name: "text", Format: "requests", BlockSize: bs, PrefixInfo: true, Requests: rs}
}
