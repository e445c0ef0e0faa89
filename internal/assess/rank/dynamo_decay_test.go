package rank

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestRankDynamoDecayRescuesAddedReplica: the real dynamo-kv emulation in the ranking, as shipped
// (credit decay 0) and as kvcheck tunes it when a replica is added (decay dynamo.TunedCreditDecay,
// 0.5). The traffic is internal/sim's dynamoDecayTrace: blocks of 4 tokens; one replica A; r0
// at t=0 is prefix blocks 1..8 and one of its own (36 tokens, 9 request blocks), in flight 100
// s (100 output tokens at 1 s each), prefilled by 0.36 s; a replica C joins empty at t=1; at
// t=2 a burst of four requests on the same prefix, each with one block of its own.
//
// Dynamo's cost (internal/sim/dynamo.go): cost = 1 x max(raw prefill blocks - credit, 0) +
// decode blocks. C's is always (0 + 36)/4 - 0 + 9 = 18. Before the k-th request of the burst
// (k = 1..4) A has 4(k-1) prefill tokens (each earlier one left 36 - 8x4 = 4 uncached) and
// 9 + (k-1) live blocks, and A holds the 8 prefix blocks: raw = 8 + k, decode = 9 + k.
//   - Decay 0: credit 8: cost 2k + 9 = 11, 13, 15, 17, all under 18: the whole burst goes to A,
//     C gets 0 of the 4 requests after it joined against a fair share of 1/2: it starves (under
//     1/4), and the row is not ranked. Hits: 8 blocks for each of the burst's 4: 32 of the 45
//     blocks, 128 of 180 tokens.
//   - Decay 0.5: C's prefill load, 0, is the least, so A's excess is (k-1) blocks over the 9
//     request blocks: credit = 8 / (1 + 0.5 (k-1)/9):
//     k=1: 8, cost 1 + 10 = 11; k=2: 7.579, cost 2.421 + 11 = 13.42; k=3: 7.2, cost 3.8 + 12 =
//     15.8; k=4: 6.857, cost 5.143 + 13 = 18.14 > 18: C. C gets 1 of 4 = 1/4, exactly half
//     its fair share, which is not under half: not starved, ranked first. Hits: 24 blocks, 96
//     of 180 tokens.
//
// With two replicas load max/mean is at most 2, so the hot-spot line is set above it: only
// starvation decides here (decay 0 puts all 5 on A, 5 / 2.5 = 2.0, the default line).
func TestRankDynamoDecayRescuesAddedReplica(t *testing.T) {
	tr := &sim.Trace{Name: "decay", Format: "test", BlockSize: 4, PrefixInfo: true}
	for i, at := range []float64{0, 2, 2, 2, 2} {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: at, Blocks: []uint64{1, 2, 3, 4, 5, 6, 7, 8, uint64(100 + i)},
			InputTokens: 36, OutputTokens: 100, N: 1})
	}
	var dyn sim.PolicyInfo
	for _, e := range router.Shipped() {
		if e.Name == "dynamo-kv" {
			dyn = e
		}
	}
	cands := Candidates([]sim.PolicyInfo{dyn}, product.TrafficOf(tr, 1, 64*4, true), nil)
	if len(cands) != 2 || cands[0].Settings.(dynamo.Settings).CreditDecay != 0 || cands[1].Variant != Tuned || cands[1].Settings.(dynamo.Settings).CreditDecay != dynamo.TunedCreditDecay {
		t.Fatalf("candidates: %+v", cands)
	}
	s := Setup{Today: "round-robin", HotSpot: 2.5, Base: sim.Config{Replicas: 1, KVBlocks: 64, AddReplicaAt: 1, Seed: 1, Siblings: 1,
		Model: sim.Model{PrefillPerToken: 0.01, DecodePerToken: 1, MaxRunning: 8}, Params: sim.DefaultParams()}}
	rk, err := Run(context.Background(), tr, s, cands)
	if err != nil {
		t.Fatal(err)
	}
	tuned, shipped := rk.Rows[0], rk.Rows[1]
	if tuned.Variant != Tuned || tuned.Rank != 1 || tuned.Starves || tuned.FreshShare == nil || *tuned.FreshShare != 0.25 || tuned.FairShare != 0.5 {
		t.Errorf("tuned: %+v", tuned)
	}
	if math.Abs(tuned.HitRate-96.0/180) > 1e-9 {
		t.Errorf("tuned hit rate %v, want 96/180", tuned.HitRate)
	}
	if shipped.Variant != Shipped || shipped.Rank != 0 || !shipped.Starves || shipped.FreshShare == nil || *shipped.FreshShare != 0 {
		t.Errorf("shipped: %+v", shipped)
	}
	if math.Abs(shipped.HitRate-128.0/180) > 1e-9 {
		t.Errorf("shipped hit rate %v, want 128/180", shipped.HitRate)
	}
	if !strings.HasPrefix(shipped.Excluded, "starves the added replica: 0.0% of the requests after it joined, under half its fair share 50.0%") {
		t.Errorf("shipped excluded %q", shipped.Excluded)
	}
	if len(tuned.Changes) != 1 || tuned.Changes[0].Setting != "--router-kv-overlap-score-credit-decay" || tuned.Changes[0].Value != "0.5" {
		t.Errorf("tuned changes %+v", tuned.Changes)
	}
}
