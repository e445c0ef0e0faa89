package dynamo

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// kvRouter is dynamo-kv with settings s.
func kvRouter(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "dynamo-kv",
		About:   "NVIDIA Dynamo KV router (--router-mode kv): lowest overlap-weight x (prefill blocks - credited overlap) + decode blocks; credit decay 0, events or the 120 s TTL approximation",
		Family:  sim.FamilyKV,
		Reasons: []string{sim.ReasonPrefixMatch, sim.ReasonNoMatch, reasonSoftmax},
		// Above temperature 0 the replica is a softmax draw over the costs; at 0 the draw only
		// breaks ties.
		Draws:      s.Temperature > 0,
		Product:    display,
		Source:     "ai-dynamo/dynamo lib/kv-router/src/scheduling/selector.rs@01690d42 (worker_logit, softmax_sample_entries), lib/kv-router/src/sequences (WorkerLoadProjection, potential_decode_blocks), lib/llm/src/kv_router/approx.rs@17cf2360 (ApproxKvIndexer), kv_router_args.py@021d616; ROUTERS.md §4, SPEC §6",
		ReadsIndex: true,
		Check:      check(s),
		New: func(c sim.Config, blockSize int) sim.Policy {
			return &dynamoKVPolicy{s: s, bs: blockSize, rng: rand.New(rand.NewPCG(c.Seed, 0x64796e))}
		},
	}
}

// check refuses settings the cost cannot be computed with. Dynamo's configuration
// reference says the overlap credit "must be finite and nonnegative" and the prefill load
// scale's "minimum is 0.0"; for the decay and the temperature it gives no range (not verified
// in the argument checks), but a negative or non-finite one makes the credit or the sampling
// meaningless (a negative decay can divide by zero), so kvcheck refuses them too rather than give
// a figure; the approximate mode's TTL must be a positive number of seconds.
func check(s Settings) func(sim.Config, *sim.Trace) error {
	return func(_ sim.Config, t *sim.Trace) error { return refused(s, t) }
}

func refused(s Settings, t *sim.Trace) error {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }
	for _, v := range []struct {
		flag string
		x    float64
	}{
		{"--router-kv-overlap-score-credit", s.OverlapCredit},
		{"--router-prefill-load-scale (or the deprecated --router-kv-overlap-score-weight)", s.OverlapWeight},
		{"--router-kv-overlap-score-credit-decay", s.CreditDecay},
		{"--router-temperature", s.Temperature},
	} {
		if bad(v.x) {
			return &sim.CannotRunError{Policy: "dynamo-kv", Trace: t.Name, Reason: fmt.Sprintf("%s %v: the KV router's cost needs a finite number of at least 0", v.flag, v.x)}
		}
	}
	if !s.KVEvents && (bad(s.TTLSecs) || s.TTLSecs == 0) {
		return &sim.CannotRunError{Policy: "dynamo-kv", Trace: t.Name, Reason: fmt.Sprintf("--router-ttl-secs %v: the approximate mode (--no-router-kv-events) needs a positive number of seconds", s.TTLSecs)}
	}
	return nil
}

// reasonSoftmax is dynamo-kv's reason for a worker sampled from the softmax of the costs
// (--router-temperature above 0).
const reasonSoftmax = "softmax"

// dynamoKVPolicy is Dynamo's KV router in aggregated serving. For every worker i, with the
// request's isl prompt tokens in blocks of bs tokens (the engine's, which the router must share):
//
//  1. overlap_i: the request's full blocks worker i holds consecutively from block 0. With KV
//     events (--router-kv-events, the default) from the radix tree the engines' events build: here
//     the fleet's block index; 0 on every worker when the engines publish no events
//     (NoEngineEvents: the tree stays empty, the load-only decisions Dynamo's docs describe, so
//     the router also counts every prompt token as prefill in step 2's account). Without (--no-router-kv-events, the approximate mode of
//     lib/llm/src/kv_router/approx.rs) from the router's own record: when it routes a request it
//     stores every full block of it for the chosen worker with an expiry of now + TTL
//     (--router-ttl-secs, 120), replacing the expiry of a block already stored; a block stops
//     counting at its expiry (expired when expiry <= now). It never sees the engine's evictions.
//  2. raw prefill blocks = (active prefill tokens_i + isl) / bs, where active prefill tokens_i
//     are the uncached prompt tokens of the requests routed to i whose first token has not come
//     back (the request's own uncached tokens plus its cached ones make isl).
//  3. decay_i = 1 / (1 + CreditDecay * ((active prefill tokens_i - the least of any worker) / bs) /
//     request blocks), request blocks = ceil(isl / bs); 1 when CreditDecay is 0, the default.
//  4. credit_i = OverlapCredit (1.0) * decay_i * overlap_i.
//  5. decode blocks_i = the distinct full blocks of the requests routed to i and not finished,
//     plus the request's full blocks not among them (--router-assume-kv-reuse, true).
//  6. cost_i = OverlapWeight (prefill_load_scale, 1.0) * max(raw prefill blocks - credit_i, 0) +
//     decode blocks_i (decode_active_request_weight 0).
//  7. Temperature 0 (the default): the lowest cost, ties to a uniformly random one of them.
//     Temperature T > 0: softmax over the costs, p_i proportional to
//     exp(-(cost_i - min) / ((max - min) * T)) (uniform when all costs are equal), sampled with
//     the seeded generator.
//
// ROUTERS.md §4 and SPEC §6 write the cost as overlap_weight x prefill_blocks + decode_blocks,
// the older form of lib/llm/src/kv_router/scheduler.rs where prefill blocks are the uncached
// ones. The newest selector.rs separates the weight (now prefill_load_scale; a nonzero legacy
// --router-kv-overlap-score-weight sets it) from the credit (--router-kv-overlap-score-credit,
// 1.0) and its decay; at the shipped values (scale 1, credit 1, decay 0) the two forms give the
// same cost. The block size is the engine's (--kv-cache-block-size must match it): the trace's.
//
// The credit is what pulls a request to the worker holding its prefix. With decay 0 it is the
// whole overlap whatever that worker's backlog, so an added replica, holding nothing, only wins
// when every other worker's decode and prefill load exceeds its own by more than the overlap
// (lint rule DY-02). With decay > 0 a worker whose prefill backlog exceeds the least loaded one's
// loses part of its credit, and the fresh replica, at the floor, wins sooner.
//
// Memory: per replica the distinct full blocks of the requests in flight there (a map entry
// each) and, without KV events, the blocks routed there in the last TTL (a map entry and a
// queue entry each); per request in flight one map entry until its prefill ends.
//
// Reasons: prefix-match (temperature 0, the worker chosen holds some of the prefix), no-match
// (temperature 0, it holds none: its load alone won), softmax (temperature above 0: sampled).
//
// Not modelled: host, disk and shared-cache tiers (their credits are 0 with no offload);
// replica sync between several frontends; queueing at the router (--router-queue-threshold
// unset: none); tree-size pruning of the approximate index (TTL only).
//
// Checked against the source (ai-dynamo/dynamo@01690d42:lib/kv-router/src/scheduling/selector.rs):
//   - the logit prefill_load_scale x max(raw prefill blocks - credit, 0) + decode blocks +
//     decode_active_request_weight x active requests (worker_logit), raw prefill the worker's
//     active prefill tokens plus the request's over the block size;
//   - credit = overlap_score_credit x decay x device overlap blocks, decay 1 / (1 + d x excess
//     active prefill blocks over the least eligible worker's / request blocks), 1 at d = 0
//     (worker_logit);
//   - temperature 0: the least logit, ties by reservoir sampling; above 0, softmax over logits
//     rescaled to [-1/T, 0] by the spread, uniform when all equal (select_worker,
//     softmax_sample_entries).
//
// Left out:
//   - host, disk and shared-cache tiers, taints, pinned workers, DP ranks, the decode-only
//     formula of disaggregated serving; the second model (refDynamo) is written from
//     ROUTERS.md §4 and selector.rs.
type dynamoKVPolicy struct {
	s     Settings
	bs    int
	rng   *rand.Rand
	load  []dynamoLoad
	ttl   []map[int32]float64 // approximate mode: block -> expiry, per worker
	fifo  []dynamoExpiry      // approximate mode: stored expiries in time order, for pruning
	head  int
	ovl   []int
	costs []float64
	ties  []int
	// pending is each routed job's prefill tokens, by job seq, until its prefill ends.
	pending map[int]int
}

// dynamoLoad is the router's account of one worker's requests (ActiveSequences).
type dynamoLoad struct {
	prefill int             // active prefill tokens
	blocks  map[int32]int32 // full blocks of live requests -> number of live requests holding each
}

type dynamoExpiry struct {
	at  float64
	rep int
	id  int32
}

func (p *dynamoKVPolicy) grow(n int) {
	for len(p.load) < n {
		p.load = append(p.load, dynamoLoad{blocks: map[int32]int32{}})
		p.ttl = append(p.ttl, map[int32]float64{})
		p.ovl = append(p.ovl, 0)
		p.costs = append(p.costs, 0)
	}
	if p.pending == nil {
		p.pending = map[int]int{}
	}
}

// overlaps fills p.ovl (step 1).
func (p *dynamoKVPolicy) overlaps(f *sim.Pool, j *sim.Job, now float64) {
	full := j.FullBlocks(p.bs)
	ids := j.IDs()
	if p.s.KVEvents && p.s.NoEngineEvents {
		clear(p.ovl)
		return
	}
	if p.s.KVEvents {
		f.Runs(j, full, p.ovl)
		return
	}
	// Forget what expired (the indexer's expiry timer), so the record stays bounded by the
	// blocks routed in the last TTL.
	for p.head < len(p.fifo) && p.fifo[p.head].at <= now {
		e := p.fifo[p.head]
		if at, ok := p.ttl[e.rep][e.id]; ok && at == e.at {
			delete(p.ttl[e.rep], e.id)
		}
		p.head++
	}
	if p.head > 1024 && p.head*2 > len(p.fifo) {
		p.fifo = append(p.fifo[:0], p.fifo[p.head:]...)
		p.head = 0
	}
	for i := range f.Size() {
		k := 0
		for k < full {
			at, ok := p.ttl[i][ids[k]]
			if !ok || at <= now {
				break
			}
			k++
		}
		p.ovl[i] = k
	}
}

// Route implements sim.Policy.
func (p *dynamoKVPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	p.grow(f.Size())
	now := j.Arrival()
	p.overlaps(f, j, now)
	isl := float64(j.Request().InputTokens)
	bs := float64(p.bs)
	full := j.FullBlocks(p.bs)
	ids := j.IDs()
	reqBlocks := math.Ceil(isl / bs)
	minPrefill := 0
	if p.s.CreditDecay > 0 {
		minPrefill = p.load[0].prefill
		for i := 1; i < f.Size(); i++ {
			minPrefill = min(minPrefill, p.load[i].prefill)
		}
	}
	for i := range f.Size() {
		l := &p.load[i]
		raw := (float64(l.prefill) + isl) / bs
		decay := 1.0
		if p.s.CreditDecay > 0 && reqBlocks > 0 {
			normalized := float64(l.prefill-minPrefill) / bs / reqBlocks
			decay = 1 / (1 + p.s.CreditDecay*normalized)
		}
		credit := p.s.OverlapCredit * decay * float64(p.ovl[i])
		extra := 0
		for _, id := range ids[:full] {
			if l.blocks[id] == 0 {
				extra++
			}
		}
		decode := float64(len(l.blocks) + extra)
		p.costs[i] = p.s.OverlapWeight*max(raw-credit, 0) + decode
	}
	best := p.choose(f.Size())

	// The router's account of the request (ActiveSequences add) and, in the approximate mode,
	// its record of where the blocks went.
	l := &p.load[best]
	uncached := j.Request().InputTokens - p.ovl[best]*p.bs
	l.prefill += uncached
	p.pending[j.Seq()] = uncached
	for _, id := range ids[:full] {
		l.blocks[id]++
	}
	if !p.s.KVEvents {
		at := now + p.s.TTLSecs
		for _, id := range ids[:full] {
			p.ttl[best][id] = at
			p.fifo = append(p.fifo, dynamoExpiry{at: at, rep: best, id: id})
		}
	}
	switch {
	case p.s.Temperature > 0:
		return best, reasonSoftmax
	case p.ovl[best] > 0:
		return best, sim.ReasonPrefixMatch
	}
	return best, sim.ReasonNoMatch
}

// choose picks among p.costs[:n] (step 7).
func (p *dynamoKVPolicy) choose(n int) int {
	lo, hi := p.costs[0], p.costs[0]
	for _, c := range p.costs[1:n] {
		lo, hi = min(lo, c), max(hi, c)
	}
	if p.s.Temperature <= 0 {
		p.ties = p.ties[:0]
		for i, c := range p.costs[:n] {
			if c == lo {
				p.ties = append(p.ties, i)
			}
		}
		if len(p.ties) == 1 {
			return p.ties[0]
		}
		return p.ties[p.rng.IntN(len(p.ties))]
	}
	u := p.rng.Float64()
	if lo == hi {
		return min(int(u*float64(n)), n-1)
	}
	sum := 0.0
	for i, c := range p.costs[:n] {
		w := math.Exp(-(c - lo) / ((hi - lo) * p.s.Temperature))
		p.costs[i] = w
		sum += w
	}
	acc := 0.0
	for i := range n {
		acc += p.costs[i] / sum
		if u <= acc {
			return i
		}
	}
	return n - 1
}

// Prefilled implements sim.Observer: the request's prefill tokens leave the worker's account.
func (p *dynamoKVPolicy) Prefilled(j *sim.Job) {
	if t, ok := p.pending[j.Seq()]; ok {
		p.load[j.Replica()].prefill -= t
		delete(p.pending, j.Seq())
	}
}

// Finished implements sim.Observer: the request's blocks are no longer live on its worker.
func (p *dynamoKVPolicy) Finished(j *sim.Job) {
	l := &p.load[j.Replica()]
	for _, id := range j.IDs()[:j.FullBlocks(p.bs)] {
		if l.blocks[id]--; l.blocks[id] <= 0 {
			delete(l.blocks, id)
		}
	}
}
