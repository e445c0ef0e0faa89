package assess

import (
	"context"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestRankWarmUp: the ranking counts after the warm-up, as the replay does. Eight requests share
// one block S, then one of their own (32 tokens: at least 16 computed, 1.6 ms of prefill); 2
// replicas. The first arrives at 0 s, the other seven 1 ms apart from 1 s: kv-longest sends
// them all to replica 0, which holds S, and from the third on each finds the one before still
// in prefill (6 of 8 wait, a hot spot; sim.Load). The warm-up is the first half
// (requests 0-3). After it, round-robin and kv-longest both find S on whichever replica they
// pick (both replicas hold it by then under round-robin; replica 0 under kv-longest): 4 of the
// 8 later blocks hit for each, so neither saves anything over the other, and kv-longest, with
// all 8 requests on replica 0 (load max/mean 2), is not ranked.
func TestRankWarmUp(t *testing.T) {
	tr := &sim.Trace{Name: "hot", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 8 {
		at := 0.0
		if i > 0 {
			at = 1 + 0.001*float64(i-1)
		}
		tr.Requests = append(tr.Requests, sim.Request{Arrival: at, Blocks: []uint64{1, uint64(100 + i)}, InputTokens: 32, OutputTokens: 1})
	}
	o := Options{Today: "round-robin", Routers: []sim.PolicyInfo{{Name: "kv-longest"}, {Name: "round-robin"}}}
	rk, err := Rank(context.Background(), tr, Shape{Replicas: 2, KVTokens: 16 * 1000, ReplicasFrom: advise.ShapeFlag}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rk.TodayHitRate != 0.5 || rk.Rows[0].Policy != "round-robin" || rk.Rows[0].Rank != 1 {
		t.Fatalf("today %v, first %+v", rk.TodayHitRate, rk.Rows[0])
	}
	if kl := rk.Rows[1]; kl.HitRate != 0.5 || kl.PrefillSaved != 0 || kl.Rank != 0 || kl.LoadMaxOverMean != 2 {
		t.Errorf("kv-longest: %+v", kl)
	}
	// No emulation to replay: no ranking.
	o.Routers = []sim.PolicyInfo{}
	if rk, err := Rank(context.Background(), tr, Shape{Replicas: 2, KVTokens: 16000}, o, nil); rk != nil || err != nil {
		t.Errorf("empty: %v %v", rk, err)
	}
}
