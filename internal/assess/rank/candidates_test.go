package rank

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
	"github.com/kvcheck/kvcheck/internal/sim"
)

func infos(names ...string) []sim.PolicyInfo {
	out := make([]sim.PolicyInfo, len(names))
	for i, n := range names {
		out[i] = sim.PolicyInfo{Name: n}
	}
	return out
}

var allEmulations = []string{"prodstack-roundrobin", "prodstack-session", "prodstack-prefixaware", "prodstack-kvaware", "prodstack-loadaware",
	"llmd-approx", "llmd-precise", "dynamo-round-robin", "dynamo-kv", "sglang-cache-aware", "ray-prefix-affinity",
	"litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching",
	"vllm-router-consistent-hash", "vllm-router-rendezvous-hash", "vllm-router-power-of-two", "vllm-router-round-robin", "vllm-router-random",
	"aibrix-prefix-cache", "kthena-router"}

// TestNoFilesAllUnknown: without --config files no requirement a file would show is met or
// missing; only the traffic's own (a session header, cache_control markers) are judged, and on
// a block trace those are unknown too.
func TestNoFilesAllUnknown(t *testing.T) {
	tr := Traffic{Name: "t.jsonl", Format: "mooncake", Replicas: 4, KVTokens: 1 << 20}
	for _, c := range Candidates(infos(allEmulations...), tr, nil) {
		for _, q := range c.Requirements {
			if q.Status != Unknown {
				t.Errorf("%s %s: %s is %s (%s), want unknown", c.Policy, c.Variant, q.Name, q.Status, q.Detail)
			}
		}
	}
}

// TestShippedRows: one shipped row per emulation, SGLang's twice (CLI and hint defaults).
func TestShippedRows(t *testing.T) {
	cs := Candidates(infos("sglang-cache-aware", "llmd-approx"), Traffic{Format: "mooncake"}, nil)
	var sg []SGLangCheck
	for _, c := range cs {
		if c.Policy == "sglang-cache-aware" && c.Variant == Shipped {
			sg = append(sg, SGLangCheck{c.Label, c.Settings.(sglang.Settings).MaxTreeSize, c.Settings.(sglang.Settings).CacheThreshold})
		}
	}
	want := []SGLangCheck{{"CLI defaults", 1 << 26, 0.3}, {"policy-hint defaults", 10000, 0.5}}
	if len(sg) != 2 || sg[0] != want[0] || sg[1] != want[1] {
		t.Errorf("SGLang shipped rows %+v, want %+v", sg, want)
	}
}

type SGLangCheck struct {
	Label     string
	Tree      int
	Threshold float64
}

// TestTuning: each tuned change follows from the traffic or the fleet, and only then.
func TestTuning(t *testing.T) {
	shipped := func(p string) Candidate {
		return Candidate{Policy: p, Product: productOf(p), Variant: Shipped, Settings: shippedOf(p)}
	}
	// Dynamo: credit decay only when a replica is added.
	if _, ok := tune(shipped("dynamo-kv"), Traffic{Replicas: 4}); ok {
		t.Error("dynamo-kv tuned without an added replica")
	}
	c, ok := tune(shipped("dynamo-kv"), Traffic{Replicas: 4, AddReplica: true})
	if !ok || c.Settings.(dynamo.Settings).CreditDecay != dynamo.TunedCreditDecay || c.Variant != Tuned || c.Changes[0].Setting != "--router-kv-overlap-score-credit-decay" {
		t.Errorf("dynamo-kv tuned: %+v", c)
	}
	// llm-d precise: the vllm tokenizer, always (the estimate never matches).
	if c, ok := tune(shipped("llmd-precise"), Traffic{}); !ok || c.Settings.(llmd.Settings).Tokenizer != "vllm" {
		t.Errorf("llmd-precise tuned: %+v", c)
	}
	// Ray: a finite threshold when one first block opens more than a replica's share: 30% of
	// requests on 4 replicas (fair 25%) yes, 20% no.
	if c, ok := tune(shipped("ray-prefix-affinity"), Traffic{Replicas: 4, HotPrefixShare: 0.3}); !ok || c.Settings.(ray.Settings).ImbalancedThreshold != ray.TunedImbalance {
		t.Errorf("ray tuned at 30%%: %+v", c)
	}
	if _, ok := tune(shipped("ray-prefix-affinity"), Traffic{Replicas: 4, HotPrefixShare: 0.2}); ok {
		t.Error("ray tuned at 20% on 4 replicas")
	}
	// SGLang: the tree holds what the fleet holds, 4 x 1 Mi tokens x 4 characters = 16 Mi.
	if c, ok := tune(shipped("sglang-cache-aware"), Traffic{Replicas: 4, KVTokens: 1 << 20}); !ok || c.Settings.(sglang.Settings).MaxTreeSize != 1<<24 {
		t.Errorf("sglang tuned: %+v", c.Settings.(sglang.Settings))
	}
	// production-stack session: the traffic's header becomes the key.
	if c, ok := tune(shipped("prodstack-session"), Traffic{SessionHeader: "x-session-id"}); !ok || c.Settings.(prodstack.Settings).SessionKey != "x-session-id" {
		t.Errorf("prodstack-session tuned: %+v", c)
	}
	if _, ok := tune(shipped("prodstack-session"), Traffic{}); ok {
		t.Error("prodstack-session tuned without a session header")
	}
	// Nothing to tune: no tuned row.
	if _, ok := tune(shipped("llmd-approx"), Traffic{Replicas: 4, AddReplica: true, HotPrefixShare: 1}); ok {
		t.Error("llmd-approx tuned")
	}
	if !math.IsInf(ray.Shipped().ImbalancedThreshold, 1) {
		t.Error("tuning changed the shipped defaults")
	}
}

// TestTrafficOf reads a request log's facts: the commonest session header, cache_control, the
// hot first block (LiteLLM's id rule is litellm's TestSessions).
func TestTrafficOf(t *testing.T) {
	tr := &sim.Trace{Name: "r.jsonl", Format: "requests", BlockSize: 16, PrefixInfo: true, Requests: []sim.Request{
		{Blocks: []uint64{1, 2}, View: &sim.View{Chat: true, Headers: map[string]string{"x-session-id": "abc"}}},
		{Blocks: []uint64{1, 3}, View: &sim.View{Chat: true, Headers: map[string]string{"x-session-id": "abd"}}},
		{Blocks: []uint64{1, 4}, View: &sim.View{Chat: true, Headers: map[string]string{"x-acme-session-id": "short"}}},
		{Blocks: []uint64{5, 6}, View: &sim.View{CacheKey: 7}},
	}}
	got := product.TrafficOf(tr, 4, 1<<20, false)
	// x-session-id twice, x-acme-session-id once.
	if !got.Text || !got.Chat || got.SessionHeader != "x-session-id" || !got.CacheControl || got.HotPrefixShare != 0.75 {
		t.Errorf("%+v", got)
	}
	tr.Requests[3].View = nil
	if got := product.TrafficOf(tr, 4, 1<<20, false); got.Text {
		t.Error("a request without a view makes the traffic not text")
	}
}

// TestWithoutEngineEvents: the files show an engine without KV events (dgdApprox's worker has no
// --kv-events-config), so llm-d's precise producer, whose index only the events build, is
// simulated with no prefix match as shipped; the tuned row (the vllm tokenizer) keeps the events
// its configuration needs, says so, and its requirement stays missing. Without files the
// requirement is unknown and both rows read the events as before.
func TestWithoutEngineEvents(t *testing.T) {
	files := filesOf(t, map[string]string{"dgd.yaml": dgdApprox})
	tr := Traffic{Name: "t", Format: "mooncake", Replicas: 2}
	for _, tc := range []struct {
		files    *Files
		status   string
		noEvents []bool
		notes    []string
	}{
		{files, Missing, []bool{true, false}, []string{"simulated without engine KV events", "simulated with the engines publishing"}},
		{nil, Unknown, []bool{false, false}, []string{"", ""}},
	} {
		cands := Candidates(infos("llmd-precise"), tr, tc.files)
		if len(cands) != 2 || cands[0].Variant != Shipped || cands[1].Variant != Tuned {
			t.Fatalf("rows %+v", cands)
		}
		for i, c := range cands {
			k := slices.IndexFunc(c.Requirements, func(q Requirement) bool { return q.Name == ReqKVEvents })
			if k < 0 || c.Requirements[k].Status != tc.status {
				t.Errorf("%s %s: requirements %+v, want KV events %s", c.Variant, tc.status, c.Requirements, tc.status)
			}
			if c.Settings.(llmd.Settings).NoEngineEvents != tc.noEvents[i] {
				t.Errorf("%s %s: no engine events %v, want %v", c.Variant, tc.status, c.Settings.(llmd.Settings).NoEngineEvents, tc.noEvents[i])
			}
			if want := tc.notes[i]; want == "" && len(c.Notes) != 0 || want != "" && (len(c.Notes) != 1 || !strings.HasPrefix(c.Notes[0], want)) {
				t.Errorf("%s %s: notes %q, want %q", c.Variant, tc.status, c.Notes, want)
			}
		}
	}
}
