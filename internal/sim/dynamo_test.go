package sim

import (
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
			cfg.Routers = nil // as shipped
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
