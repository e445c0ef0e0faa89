package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestDynamoRoundRobin: the counter goes on across an added replica. Two replicas, a third added
// at t=2.5, five requests at t=0..4: counter 0..4 gives 0%2, 1%2, 2%2, then 3%3 and 4%3, so
// 0 1 0 0 1. kvcheck's round-robin, which continues after the last replica chosen, gives
// 0 1 0 1 2.
func TestDynamoRoundRobin(t *testing.T) {
	tr := simtest.Trace(simtest.Req(0, "", 0, 1), simtest.Req(1, "", 0, 2), simtest.Req(2, "", 0, 3), simtest.Req(3, "", 0, 4), simtest.Req(4, "", 0, 5))
	c := simtest.Config(2)
	c.AddReplicaAt = 2.5
	for _, tc := range []struct {
		policy string
		want   []int
	}{
		{"dynamo-round-robin", []int{0, 1, 0, 0, 1}},
		{"round-robin", []int{0, 1, 0, 1, 2}},
	} {
		info := roundRobin()
		if tc.policy == "round-robin" {
			info = sim.Policies()[1]
		}
		if got := simtest.Routes(t, tr, c, info).Routes; !cmp.Equal(got, tc.want) {
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
func dynamoDecayTrace() *sim.Trace {
	return simtest.Trace(
		simtest.Req(0, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 100),
		simtest.Req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 101),
		simtest.Req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 102),
		simtest.Req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 103),
		simtest.Req(2, "", 100, 1, 2, 3, 4, 5, 6, 7, 8, 104),
	)
}

// TestDynamoCreditDecay: decay 0 (as shipped) leaves the added replica without traffic on
// dynamoDecayTrace; decay 1 gives it the fourth request of the burst.
func TestDynamoCreditDecay(t *testing.T) {
	c := simtest.Config(1)
	c.AddReplicaAt = 1
	cases := []struct {
		decay float64
		want  simtest.Outcome
		share float64
	}{
		{0, simtest.Outcome{Routes: []int{0, 0, 0, 0, 0}, Hits: []int{0, 8, 8, 8, 8}}, 0},
		{1, simtest.Outcome{Routes: []int{0, 0, 0, 0, 1}, Hits: []int{0, 8, 8, 8, 0}}, 0.25},
	}
	for _, tc := range cases {
		s := Shipped()
		s.CreditDecay = tc.decay
		info := kvRouter(s)
		if d := cmp.Diff(tc.want, simtest.Routes(t, dynamoDecayTrace(), c, info)); d != "" {
			t.Errorf("decay %v (-want +got):\n%s", tc.decay, d)
		}
		res, err := sim.SimulatePolicy(context.Background(), dynamoDecayTrace(), c, info)
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
	tr := simtest.Trace(
		simtest.Req(0, "", 1000, 1, 2, 3, 4),
		simtest.Req(100, "", 0, 1, 2, 3, 7),
		simtest.Req(219, "", 0, 1, 2, 3, 8),
		simtest.Req(340, "", 0, 1, 2, 3, 9),
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
		s := Shipped()
		s.KVEvents = tc.events
		o := simtest.Routes(t, tr, simtest.Config(2), kvRouter(s))
		if d := cmp.Diff(tc.want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("kv events %v (-want +got):\n%s", tc.events, d)
		}
	}
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
	s        Settings
	bs       int
	rng      *rand.Rand
	e        *simtest.RefFleet
	uncached []int // per job sent, in order
	forget   []map[uint64]float64
}

func (d *refDynamo) route(r *sim.Request, n int) int {
	for len(d.forget) < n {
		d.forget = append(d.forget, map[uint64]float64{})
	}
	t := r.Arrival
	full := d.e.Full(r)
	isl := float64(r.InputTokens)
	bs := float64(d.bs)
	prefill := make([]int, n)
	live := make([]map[uint64]bool, n)
	for i := range live {
		live[i] = map[uint64]bool{}
	}
	for k, j := range d.e.Jobs {
		if j.End > t {
			prefill[j.Rep] += d.uncached[k]
		}
		if j.Finish > t {
			for _, b := range d.e.Full(j.R) {
				live[j.Rep][b] = true
			}
		}
	}
	overlap := make([]int, n)
	for i := range n {
		if d.s.KVEvents {
			overlap[i] = d.e.CachedRun(i, r.Blocks, len(full), t)
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

// TestDynamoKVModel: dynamo-kv agrees with refDynamo on routes and hits over random traffic, with
// events and without, with and without decay, at temperature 0 and above.
func TestDynamoKVModel(t *testing.T) {
	variants := []struct {
		name string
		set  func(*Settings)
	}{
		{"shipped", func(*Settings) {}},
		{"decay 0.7 weight 2", func(s *Settings) { s.CreditDecay, s.OverlapWeight = 0.7, 2 }},
		{"ttl 1.5s decay 0.5", func(s *Settings) { s.KVEvents, s.TTLSecs, s.CreditDecay = false, 1.5, 0.5 }},
		{"temperature 0.5 credit 0.6", func(s *Settings) { s.Temperature, s.OverlapCredit = 0.5, 0.6 }},
	}
	for _, v := range variants {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				tr := simtest.RandomTraffic(seed, 300, simtest.Block)
				c := simtest.ModelConfig(seed, 3, tr.Requests[150].Arrival)
				s := Shipped()
				v.set(&s)
				e := simtest.NewRefFleet(simtest.Block, c.Model)
				d := &refDynamo{s: s, bs: simtest.Block, rng: rand.New(rand.NewPCG(seed, 0x64796e)), e: e}
				want := simtest.Replay(tr, c, d.route, e)
				got := simtest.Routes(t, tr, c, kvRouter(s))
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
	tr := simtest.Trace(simtest.Req(0, "", 0, 1))
	cases := []struct {
		set  func(*Settings)
		flag string
	}{
		{func(s *Settings) { s.OverlapCredit = -0.5 }, "--router-kv-overlap-score-credit"},
		{func(s *Settings) { s.OverlapWeight = math.NaN() }, "--router-kv-overlap-score-weight"},
		{func(s *Settings) { s.CreditDecay = math.Inf(1) }, "--router-kv-overlap-score-credit-decay"},
		{func(s *Settings) { s.Temperature = -1 }, "--router-temperature"},
		{func(s *Settings) { s.KVEvents, s.TTLSecs = false, 0 }, "--router-ttl-secs"},
	}
	for _, tc := range cases {
		s := Shipped()
		tc.set(&s)
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), kvRouter(s))
		var cr *sim.CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: err %v, want a CannotRunError naming it", tc.flag, err)
		}
	}
	// With KV events the TTL is not read.
	s := Shipped()
	s.TTLSecs = 0
	if _, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), kvRouter(s)); err != nil {
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
	rs := []sim.Request{simtest.Req(0, "", 10000, 1, 2, 3, 4)}
	for i := range 2000 {
		rs = append(rs, simtest.Req(float64(1+i), "", 0, uint64(100+i)))
	}
	tr := simtest.Trace(rs...)
	for _, temp := range []float64{0, 0.25, 1} {
		s := Shipped()
		s.Temperature = temp
		o := simtest.Routes(t, tr, simtest.Config(2), kvRouter(s))
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
	tr := simtest.Trace(
		simtest.Req(0, "", 1000, 1, 2, 3, 4),
		simtest.Req(100, "", 0, 1, 2, 3, 7),
		simtest.Req(219, "", 0, 1, 2, 3, 8),
		simtest.Req(340, "", 0, 1, 2, 3, 9),
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
		s := Shipped()
		s.KVEvents, s.NoEngineEvents = tc.events, !tc.engineEvents
		o := simtest.Routes(t, tr, simtest.Config(2), kvRouter(s))
		if d := cmp.Diff(tc.want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("router kv events %v, engine events %v (-want +got):\n%s", tc.events, tc.engineEvents, d)
		}
	}
}
