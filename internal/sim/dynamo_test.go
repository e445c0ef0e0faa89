package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDynamoRoundRobin: the counter goes on across an added replica. Two replicas, a third added
// at t=2.5, five requests at t=0..4: counter 0..4 gives 0%2, 1%2, 2%2, then 3%3 and 4%3, so
// 0 1 0 0 1. kvcheck's round-robin, which continues after the last replica chosen, gives
// 0 1 0 1 2.
func TestDynamoRoundRobin(t *testing.T) {
	tr := tinyTrace(req(0, "", 0, 1), req(1, "", 0, 2), req(2, "", 0, 3), req(3, "", 0, 4), req(4, "", 0, 5))
	c := tinyConfig(2)
	c.AddReplicaAt = 2.5
	for _, tc := range []struct {
		policy string
		want   []int
	}{
		{"dynamo-round-robin", []int{0, 1, 0, 0, 1}},
		{"round-robin", []int{0, 1, 0, 1, 2}},
	} {
		if got := runTiny(t, tr, c, tc.policy).Routes; !cmp.Equal(got, tc.want) {
			t.Errorf("%s: routes %v, want %v", tc.policy, got, tc.want)
		}
	}
}

// dynamoDecayTrace: one replica A with a shared prefix cached, a replica C added empty at t=1,
// then a burst of four requests on the same prefix at t=2. Blocks of 4 tokens; every request is
// 8 prefix blocks (1..8) and one of its own, 36 tokens, 9 request blocks, in flight for 100 s.
//
// r0 t=0 [1..8 100] goes to A (alone) and is prefilled by 0.36: A's engine holds its 9 blocks,
// the router counts 9 live blocks and no prefill tokens on A. At t=2 every request sees A's
// overlap 8 (the burst's own prefills have not ended) and C's 0. C's cost is always
// 1*(36/4 - 0) + 9 = 18. On A, before the k-th request of the burst (k = 1..4) the router has
// 4(k-1) prefill tokens (each earlier one left 36 - 8*4 = 4 uncached) and 9 + (k-1) live blocks,
// and the request adds one block of its own:
//
//	raw prefill = (4(k-1) + 36)/4 = 8 + k; decode = 9 + (k-1) + 1 = 9 + k
//	decay 0: credit 8: cost = k + 9 + k = 2k + 9: 11, 13, 15, 17, all below 18: all to A.
//	decay 1: the least prefill load is C's 0, so A's excess is (k-1) blocks, normalised by the 9
//	  request blocks: credit = 8/(1 + (k-1)/9):
//	  k=1: 8, cost 1 + 10 = 11; k=2: 7.2, cost 2.8 + 11 = 13.8; k=3: 72/11 = 6.545,
//	  cost 4.455 + 12 = 16.455; k=4: 6, cost 6 + 13 = 19 > 18: C.
//
// Hits: on A each hits the 8 prefix blocks (the hit limit is (36-1)/4 = 8); on C nothing.
func dynamoDecayTrace() *Trace {
	return tinyTrace(
		req(0, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 100),
		req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 101),
		req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 102),
		req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 103),
		req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 104),
	)
}

// TestDynamoCreditDecay: decay 0 (as shipped) leaves the added replica without traffic on
// dynamoDecayTrace; decay 1 gives it the fourth request of the burst.
func TestDynamoCreditDecay(t *testing.T) {
	c := tinyConfig(1)
	c.AddReplicaAt = 1
	cases := []struct {
		decay float64
		want  outcome
		share float64
	}{
		{0, outcome{Routes: []int{0, 0, 0, 0, 0}, Hits: []int{0, 8, 8, 8, 8}}, 0},
		{1, outcome{Routes: []int{0, 0, 0, 0, 1}, Hits: []int{0, 8, 8, 8, 0}}, 0.25},
	}
	for _, tc := range cases {
		cfg := withRouters(c, func(s *RouterSettings) { s.Dynamo.CreditDecay = tc.decay })
		if tc.decay == 0 {
			cfg.routers = nil // as shipped
		}
		if d := cmp.Diff(tc.want, runTiny(t, dynamoDecayTrace(), cfg, "dynamo-kv")); d != "" {
			t.Errorf("decay %v (-want +got):\n%s", tc.decay, d)
		}
		res, err := Simulate(dynamoDecayTrace(), cfg, "dynamo-kv")
		if err != nil {
			t.Fatal(err)
		}
		if res.FreshShare == nil || *res.FreshShare != tc.share {
			t.Errorf("decay %v: fresh share %v, want %v", tc.decay, res.FreshShare, tc.share)
		}
	}
}

// TestDynamoApproxTTL: without KV events the router remembers a block for 120 s after it last
// routed it. Two replicas, blocks of 4 tokens; r0 stays in flight for 1,000 s on a random replica
// X, so its blocks 1-4 stay in X's engine cache throughout and count 4 live blocks there.
// Every later request is [1 2 3 n] (16 tokens, 4 full blocks) and leaves right after its prefill.
// An idle replica Y costs 4 + 4 = 8. On X, with overlap o, cost = max(4 - o, 0) + 4 + 1 (its own
// block n is the only one not live on X): 6 when o = 3, 9 when o = 0.
//
//	r1 t=100: the record of r0 (expiry 120) gives X overlap 3: 6 < 8: X, hit 3; 1 2 3 now
//	  expire at 220.
//	r2 t=219: still alive: X, hit 3; they now expire at 339.
//	r3 t=340: expired at 339: overlap 0, 9 > 8: Y, hit 0, although X's engine still holds them.
//
// With KV events the router reads X's cache instead: r3 goes to X too and hits 3.
func TestDynamoApproxTTL(t *testing.T) {
	tr := tinyTrace(
		req(0, "", 1000, 1, 2, 3, 4),
		req(100, "", 0, 1, 2, 3, 7),
		req(219, "", 0, 1, 2, 3, 8),
		req(340, "", 0, 1, 2, 3, 9),
	)
	type got struct {
		Routes []string
		Hits   []int
	}
	cases := []struct {
		events bool
		want   got
	}{
		{false, got{[]string{"first", "first", "first", "other"}, []int{0, 3, 3, 0}}},
		{true, got{[]string{"first", "first", "first", "first"}, []int{0, 3, 3, 3}}},
	}
	for _, tc := range cases {
		c := withRouters(tinyConfig(2), func(s *RouterSettings) { s.Dynamo.KVEvents = tc.events })
		o := runTiny(t, tr, c, "dynamo-kv")
		if d := cmp.Diff(tc.want, got{relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("kv events %v (-want +got):\n%s", tc.events, d)
		}
	}
}

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

// refDynamo is a second model of dynamo-kv, written from the description of the router in
// ROUTERS.md §4 and selector.rs (not from dynamo.go): the router keeps, per worker, the requests it
// sent there with the prompt tokens each left uncached; a request counts toward the worker's
// active prefill until its prefill ends and its full blocks count as live until it finishes. For
// a request of isl tokens, per worker: raw = (active prefill + isl) / bs; decay = 1/(1 + d *
// ((active prefill - least active prefill)/bs / ceil(isl/bs))); credit = credit weight * decay
// * overlap; decode = distinct live blocks with the request's own; cost = weight * max(raw -
// credit, 0) + decode. The lowest wins, ties to a uniformly drawn one (one draw, only when two
// or more tie); at temperature T one uniform draw u picks the first worker whose cumulative
// share of exp(-(cost - min)/((max - min) T)) reaches u. Overlap: with events the engine's run
// (refFleet), without them the full blocks the router sent to the worker less than TTL ago.
type refDynamo struct {
	s        DynamoSettings
	bs       int
	rng      *rand.Rand
	e        *refFleet
	uncached []int // per job sent, in order
	forget   []map[uint64]float64
}

func (d *refDynamo) route(r *Request, n int) int {
	for len(d.forget) < n {
		d.forget = append(d.forget, map[uint64]float64{})
	}
	t := r.Arrival
	full := d.e.full(r)
	isl := float64(r.InputTokens)
	bs := float64(d.bs)
	prefill := make([]int, n)
	live := make([]map[uint64]bool, n)
	for i := range live {
		live[i] = map[uint64]bool{}
	}
	for k, j := range d.e.jobs {
		if j.end > t {
			prefill[j.rep] += d.uncached[k]
		}
		if j.finish > t {
			for _, b := range d.e.full(j.r) {
				live[j.rep][b] = true
			}
		}
	}
	overlap := make([]int, n)
	for i := range n {
		if d.s.KVEvents {
			overlap[i] = d.e.cachedRun(i, r.Blocks, len(full), t)
			continue
		}
		for overlap[i] < len(full) && d.forget[i][full[overlap[i]]] > t {
			overlap[i]++
		}
	}
	least := slices.Min(prefill)
	costs := make([]float64, n)
	for i := range n {
		decay := 1.0
		if d.s.CreditDecay > 0 {
			decay = 1 / (1 + d.s.CreditDecay*(float64(prefill[i]-least)/bs/math.Ceil(isl/bs)))
		}
		credit := d.s.OverlapCredit * decay * float64(overlap[i])
		blocks := len(live[i])
		for _, b := range full {
			if !live[i][b] {
				blocks++
			}
		}
		costs[i] = d.s.OverlapWeight*max((float64(prefill[i])+isl)/bs-credit, 0) + float64(blocks)
	}
	lo, hi := slices.Min(costs), slices.Max(costs)
	pick := 0
	if d.s.Temperature == 0 {
		var ties []int
		for i, c := range costs {
			if c == lo {
				ties = append(ties, i)
			}
		}
		pick = ties[0]
		if len(ties) > 1 {
			pick = ties[d.rng.IntN(len(ties))]
		}
	} else {
		u := d.rng.Float64()
		if lo == hi {
			pick = min(int(u*float64(n)), n-1)
		} else {
			w := make([]float64, n)
			sum := 0.0
			for i, c := range costs {
				w[i] = math.Exp(-(c - lo) / ((hi - lo) * d.s.Temperature))
				sum += w[i]
			}
			pick = n - 1
			acc := 0.0
			for i := range n {
				acc += w[i] / sum
				if u <= acc {
					pick = i
					break
				}
			}
		}
	}
	d.uncached = append(d.uncached, r.InputTokens-overlap[pick]*d.bs)
	if !d.s.KVEvents {
		for _, b := range full {
			d.forget[pick][b] = t + d.s.TTLSecs
		}
	}
	return pick
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

// TestDynamoKVModel: dynamo-kv agrees with refDynamo on routes and hits over random traffic, with
// events and without, with and without decay, at temperature 0 and above.
func TestDynamoKVModel(t *testing.T) {
	variants := []struct {
		name string
		set  func(*DynamoSettings)
	}{
		{"shipped", func(*DynamoSettings) {}},
		{"decay 0.7 weight 2", func(s *DynamoSettings) { s.CreditDecay, s.OverlapWeight = 0.7, 2 }},
		{"ttl 1.5s decay 0.5", func(s *DynamoSettings) { s.KVEvents, s.TTLSecs, s.CreditDecay = false, 1.5, 0.5 }},
		{"temperature 0.5 credit 0.6", func(s *DynamoSettings) { s.Temperature, s.OverlapCredit = 0.5, 0.6 }},
	}
	for _, v := range variants {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				tr := randomTraffic(seed, 300, tinyBlock)
				c := modelConfig(seed, 3, tr.Requests[150].Arrival)
				c = withRouters(c, func(s *RouterSettings) { v.set(&s.Dynamo) })
				e := &refFleet{bs: tinyBlock, m: c.Model}
				d := &refDynamo{s: c.routers.Dynamo, bs: tinyBlock, rng: rand.New(rand.NewPCG(seed, 0x64796e)), e: e}
				want := replayRef(tr, c, d.route, e)
				got := runTiny(t, tr, c, "dynamo-kv")
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("dynamo-kv against the second model (-model +emulation):\n%s", d)
				}
				if slices.Max(want.Hits) == 0 || slices.Max(want.Routes) < 3 {
					t.Errorf("the traffic should hit and reach the added replica: hits max %d, routes max %d", slices.Max(want.Hits), slices.Max(want.Routes))
				}
			})
		}
	}
}

// TestDynamoRefusesSettings: a setting Dynamo would not take gives a CannotRunError naming the
// flag, never a figure.
func TestDynamoRefusesSettings(t *testing.T) {
	tr := tinyTrace(req(0, "", 0, 1))
	cases := []struct {
		set  func(*DynamoSettings)
		flag string
	}{
		{func(s *DynamoSettings) { s.OverlapCredit = -0.5 }, "--router-kv-overlap-score-credit"},
		{func(s *DynamoSettings) { s.OverlapWeight = math.NaN() }, "--router-kv-overlap-score-weight"},
		{func(s *DynamoSettings) { s.CreditDecay = math.Inf(1) }, "--router-kv-overlap-score-credit-decay"},
		{func(s *DynamoSettings) { s.Temperature = -1 }, "--router-temperature"},
		{func(s *DynamoSettings) { s.KVEvents, s.TTLSecs = false, 0 }, "--router-ttl-secs"},
	}
	for _, tc := range cases {
		_, err := Simulate(tr, withRouters(tinyConfig(2), func(s *RouterSettings) { tc.set(&s.Dynamo) }), "dynamo-kv")
		var cr *CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: err %v, want a CannotRunError naming it", tc.flag, err)
		}
	}
	// With KV events the TTL is not read.
	if _, err := Simulate(tr, withRouters(tinyConfig(2), func(s *RouterSettings) { s.Dynamo.TTLSecs = 0 }), "dynamo-kv"); err != nil {
		t.Errorf("TTL 0 with KV events: %v", err)
	}
}

// TestDynamoTemperature works the softmax by hand. r0 (4 blocks, in flight for 10,000 s) sits on
// a random replica X; then 2,000 requests of one fresh block each, 1 s apart, each gone 0.04 s
// after it arrives. For each, no overlap anywhere and no prefill backlog: Y costs 1 + 1 = 2, X
// costs 1 + (4 + 1) = 6. Dynamo scales the costs by their range before the softmax, so with two
// costs the share of the cheaper is 1/(1 + exp(-1/T)) whatever the gap: 0.731 at T = 1, 0.982 at
// T = 0.25; at T = 0 it is 1. The count over 2,000 draws is within 5 standard deviations.
func TestDynamoTemperature(t *testing.T) {
	rs := []Request{req(0, "", 10000, 1, 2, 3, 4)}
	for i := range 2000 {
		rs = append(rs, req(float64(1+i), "", 0, uint64(100+i)))
	}
	tr := tinyTrace(rs...)
	for _, temp := range []float64{0, 0.25, 1} {
		c := withRouters(tinyConfig(2), func(s *RouterSettings) { s.Dynamo.Temperature = temp })
		o := runTiny(t, tr, c, "dynamo-kv")
		cheap := 0
		for _, r := range o.Routes[1:] {
			if r != o.Routes[0] {
				cheap++
			}
		}
		p := 1 / (1 + math.Exp(-1/temp))
		sd := math.Sqrt(2000 * p * (1 - p))
		if math.Abs(float64(cheap)-2000*p) > 5*sd+0.5 {
			t.Errorf("temperature %v: %d of 2000 to the cheaper replica, want about %.0f (sd %.1f)", temp, cheap, 2000*p, sd)
		}
	}
}

// TestDynamoNoEngineEvents: in kv mode with KV events (as shipped) but workers that publish none,
// the router's tree stays empty: "the router falls back to load-only decisions even in kv mode"
// (ROUTERS.md §4). The trace of TestDynamoApproxTTL: r0 [1 2 3 4] stays 1,000 s on X, so X keeps
// 4 live blocks; every later request [1 2 3 n] (16 tokens, 4 blocks) leaves after its prefill.
// With no overlap anywhere, X costs 16/4 + 4 live + 1 new = 9, an idle Y 4 + 4 = 8:
//
//	r1 t=100: Y, hit 0 (Y's engine holds nothing yet; with events it went to X and hit 3).
//	r2 t=219: X 9, Y 8 (r1 has left, its blocks are no longer live): Y, which r1 left holding
//	  1 2 3: hit 3, found by the engine though the router did not look.
//	r3 t=340: the same: Y, hit 3.
//
// The approximate mode (--no-router-kv-events) needs no engine events: its routes do not change.
func TestDynamoNoEngineEvents(t *testing.T) {
	tr := tinyTrace(
		req(0, "", 1000, 1, 2, 3, 4),
		req(100, "", 0, 1, 2, 3, 7),
		req(219, "", 0, 1, 2, 3, 8),
		req(340, "", 0, 1, 2, 3, 9),
	)
	type got struct {
		Routes []string
		Hits   []int
	}
	cases := []struct {
		events, engineEvents bool
		want                 got
	}{
		{true, false, got{[]string{"first", "other", "other", "other"}, []int{0, 0, 3, 3}}},
		{true, true, got{[]string{"first", "first", "first", "first"}, []int{0, 3, 3, 3}}},
		{false, false, got{[]string{"first", "first", "first", "other"}, []int{0, 3, 3, 0}}},
	}
	for _, tc := range cases {
		c := withRouters(tinyConfig(2), func(s *RouterSettings) {
			s.Dynamo.KVEvents, s.Dynamo.NoEngineEvents = tc.events, !tc.engineEvents
		})
		o := runTiny(t, tr, c, "dynamo-kv")
		if d := cmp.Diff(tc.want, got{relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("router kv events %v, engine events %v (-want +got):\n%s", tc.events, tc.engineEvents, d)
		}
	}
}
