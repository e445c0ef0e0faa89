package advise

import (
	"math"
	"slices"
	"testing"
)

// FuzzDecide feeds Decide figures from anywhere in their range, NaN and infinities included
// (a malformed dump or an empty trace can produce them): it must never panic, must return one of
// the five verdicts with non-nil lists, and every reason must cite recorded evidence.
func FuzzDecide(f *testing.F) {
	f.Add(4, 0.5, 20.0, 0.9, int64(1000), int64(100000), int64(30000), int64(5000), 0.36, int64(90), 0.2, 0.0, 1.1, true, false, uint64(30), uint64(2))
	f.Add(1, math.NaN(), math.Inf(1), -1.0, int64(0), int64(0), int64(0), int64(0), 0.0, int64(0), math.NaN(), math.Inf(-1), 0.0, false, true, uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, replicas int, hit, preempt, usage float64, reqs, prompt, cross, within int64, ceiling float64, ws int64,
		saved, sessSaved, load float64, caching, consistent bool, firstStores, firstDistinct uint64) {
		replicas = min(max(replicas, 0), 64)
		m := &Metrics{Source: "file", Mode: "rate", HitRate: &hit, KVBlocks: replicas * 10, KVBlockSize: 16}
		for range replicas {
			m.Replicas = append(m.Replicas, Replica{Name: "r", PrefixCaching: &caching, PreemptionsPer1k: &preempt, KVUsage: &usage})
		}
		in := Input{
			Metrics:  m,
			Requests: &Requests{Requests: reqs, Sessions: reqs / 3, WithBlock: reqs, PromptTokens: prompt, CrossSessionTokens: cross, WithinSessionTokens: within, CacheableTokens: cross + within},
			Stream:   &Stream{Consistent: &consistent, DuplicateFraction: &saved, RestoreFraction: &sessSaved, FirstBlockStores: firstStores, FirstBlocksDistinct: firstDistinct},
			Replay: &Replay{Input: "t", PrefixInfo: true, Ceiling: ceiling, Replicas: replicas, KVTokens: int64(replicas), WorkingSetTokens: ws, Today: "round-robin",
				SessionsKnown: caching, Duration: ceiling, PromptTokens: prompt, Requests: int(reqs % 1e6), WarmupRequests: int(reqs%1e6) / 2, ReplicasFrom: ShapeFlag, KVFrom: ShapeAssumed, Policies: []Policy{
					{Name: "round-robin", Family: FamilyBalance, LoadMaxOverMean: 1, HitRate: hit, SteadyHitRate: hit},
					{Name: "chash-bounded", Family: FamilySession, HitRate: sessSaved, SteadyHitRate: sessSaved, LoadMaxOverMean: load},
					{Name: "kv-load", Family: FamilyKV, HitRate: saved, SteadyHitRate: usage, LoadMaxOverMean: load, HotSpot: load >= 2},
				}},
		}
		if consistent {
			fx := *in.Replay
			in.Fixed, in.FixedHow = &fx, "date/time"
		}
		r := Decide(in, DefaultThresholds())
		if !slices.Contains([]Verdict{SessionAffinity, KVAwareRouter, Nothing, FixFirst, Undetermined}, r.Verdict) {
			t.Fatalf("verdict %q", r.Verdict)
		}
		if !slices.Contains([]Level{Low, Medium, High}, r.Confidence) {
			t.Fatalf("confidence %q", r.Confidence)
		}
		if r.Reasons == nil || r.Evidence == nil || r.Fixes == nil || r.NextSteps == nil || r.Advice == nil || len(r.Reasons) == 0 {
			t.Fatalf("nil or empty list: %+v", r)
		}
		for _, x := range r.Reasons {
			for _, id := range x.Evidence {
				if !slices.ContainsFunc(r.Evidence, func(e Evidence) bool { return e.ID == id }) {
					t.Fatalf("reason %s cites missing %s", x.Rule, id)
				}
			}
		}
	})
}
