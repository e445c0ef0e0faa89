package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/finding"
)

func fp(v float64) *float64 { return &v }

// assessInputs are hand-built evidence for each verdict, rendered against golden files.
func assessInputs() map[string]advise.Input {
	on, off := true, false
	metrics := &advise.Metrics{Source: "scrape", Inputs: []string{"10.0.0.1:8000", "10.0.0.2:8000"}, Mode: "rate", HitRate: fp(0.42), KVBlocks: 2048, KVBlockSize: 16,
		Replicas: []advise.Replica{
			{Name: "10.0.0.1:8000", PrefixCaching: &on, PreemptionsPer1k: fp(2), KVUsage: fp(0.6), BlockSize: 16},
			{Name: "10.0.0.2:8000", PrefixCaching: &off, PreemptionsPer1k: fp(0), KVUsage: fp(0.2), BlockSize: 16},
		}}
	rp := &advise.Replay{Input: "conv.jsonl", Source: "trace", Requests: 12031, Duration: 3537, BlockSize: 512, PrefixInfo: true, Ceiling: 0.366, WorkingSetTokens: 93588480,
		PromptTokens: 100_000_000, SteadyTokens: 50_000_000, WarmupSeconds: 1768, WarmupRequests: 6015,
		// Conversations keep arriving: shared prefixes are still first seen after the warm-up.
		SharedTokens: 34_000_000, LateSharedTokens: 15_000_000,
		Replicas: 8, KVTokens: 1 << 20, ReplicasFrom: advise.ShapeFlag, KVFrom: advise.ShapeAssumed, Today: "round-robin", Policies: []advise.Policy{
			{Name: "round-robin", Family: advise.FamilyBalance, HitRate: 0.083, SteadyHitRate: 0.085, LoadMaxOverMean: 1, TTFTP99: 12.2},
			{Name: "kv-longest", Family: advise.FamilyKV, HitRate: 0.056, SteadyHitRate: 0.056, LoadMaxOverMean: 8, TTFTP99: 10033, HotSpot: true},
			{Name: "kv-load", Family: advise.FamilyKV, HitRate: 0.269, SteadyHitRate: 0.271, LoadMaxOverMean: 1.07, TTFTP99: 11.2},
		}}
	chat := &advise.Replay{Input: "chat.jsonl", Source: "requests", Requests: 120, Duration: 119, BlockSize: 16, PrefixInfo: true, Estimated: true, SessionsKnown: true,
		Ceiling: 0.57, WorkingSetTokens: 12718, PromptTokens: 29371, SteadyTokens: 17000, WarmupSeconds: 60, WarmupRequests: 60,
		// Each conversation's history is shared by its later turns; new conversations keep
		// starting after the warm-up, so the session gain is not warm-up alone.
		SharedTokens: 11000, LateSharedTokens: 6000,
		Replicas: 4, KVTokens: 1 << 20, ReplicasFrom: advise.ShapeFlag, KVFrom: advise.ShapeFlag, Today: "round-robin", Policies: []advise.Policy{
			{Name: "round-robin", Family: advise.FamilyBalance, HitRate: 0.15, SteadyHitRate: 0.16, LoadMaxOverMean: 1, TTFTP99: 0.05},
			{Name: "session", Family: advise.FamilySession, HitRate: 0.55, SteadyHitRate: 0.6, LoadMaxOverMean: 1.3, TTFTP99: 0.04},
			{Name: "kv-llmd", Family: advise.FamilyKV, HitRate: 0.56, SteadyHitRate: 0.61, LoadMaxOverMean: 1.2, TTFTP99: 0.04},
		}}
	return map[string]advise.Input{
		"fix_first": {Metrics: metrics, Replay: rp, Templates: &advise.Templates{Inputs: []string{"templates"}, Verdicts: map[string]int{"breaker": 1, "clean": 1},
			Findings: []finding.Finding{{Severity: finding.Error, Code: "audit/breaker", Subject: "graph.py:41", Message: "datetime.now().isoformat() lands in block 0", Source: "templates", Fix: "move the time to the last user message"}}}},
		"kv_router": {Replay: rp},
		"session": {Requests: &advise.Requests{Input: "chat.jsonl", Estimated: true, Requests: 120, Sessions: 30, RepeatedSessions: 30, InSessions: 120, WithBlock: 120, PromptTokens: 29371,
			CacheableTokens: 16653, WithinSessionTokens: 16653}, Replay: chat},
		"undetermined": {Metrics: &advise.Metrics{Source: "scrape", Inputs: []string{"10.0.0.1:8000", "10.0.0.2:8000"}, Mode: "rate", HitRate: fp(0.42), Replicas: []advise.Replica{
			{Name: "10.0.0.1:8000", PrefixCaching: &on, HitRate: fp(0.6)}, {Name: "10.0.0.2:8000", PrefixCaching: &on, HitRate: fp(0.1), Cold: true}}}},
		"nothing": {Metrics: &advise.Metrics{Source: "scrape", Inputs: []string{"10.0.0.1:8000"}, Mode: "rate", Replicas: []advise.Replica{{Name: "10.0.0.1:8000", PrefixCaching: &on}}}},
	}
}

func TestAssessGolden(t *testing.T) {
	for name, in := range assessInputs() {
		t.Run(name, func(t *testing.T) {
			res := Assess(advise.Decide(in, advise.DefaultThresholds()))
			golden(t, "assess/"+name+".txt.golden", render(t, FormatText, res))
			var all bytes.Buffer
			if err := Write(&all, FormatText, res, Options{All: true}); err != nil {
				t.Fatal(err)
			}
			golden(t, "assess/"+name+".all.txt.golden", all.Bytes())
			golden(t, "assess/"+name+".json.golden", render(t, FormatJSON, res))
			golden(t, "assess/"+name+".sarif.golden", render(t, FormatSARIF, res))
			golden(t, "assess/"+name+".github.golden", render(t, FormatGitHub, res))
		})
	}
}

// TestAssessJSONEmptyLists checks that a recommendation built without lists still says [].
func TestAssessJSONEmptyLists(t *testing.T) {
	buf := bytes.NewBuffer(render(t, FormatJSON, Assess(advise.Recommendation{Verdict: advise.Nothing, Confidence: advise.Low})))
	if err := error(nil); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema_version"] != float64(SchemaVersion) {
		t.Errorf("schema_version = %v, want %d", doc["schema_version"], SchemaVersion)
	}
	for _, k := range []string{"reasons", "evidence", "fixes", "next_steps", "advice"} {
		if l, ok := doc[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %v, want []", k, doc[k])
		}
	}
}

// TestAssessBrief: the default text shows the figures the reasons cite and no other, each input
// once with its number; --evidence all adds every figure and each reason in full.
func TestAssessBrief(t *testing.T) {
	rec := advise.Decide(assessInputs()["session"], advise.DefaultThresholds())
	cited := map[string]bool{}
	for _, r := range rec.Reasons {
		for _, id := range r.Evidence {
			cited[id] = true
		}
	}
	if len(cited) == 0 || len(cited) == len(rec.Evidence) {
		t.Fatalf("fixture: %d of %d figures cited; want some, not all", len(cited), len(rec.Evidence))
	}
	brief := string(render(t, FormatText, Assess(rec)))
	var all bytes.Buffer
	if err := Write(&all, FormatText, Assess(rec), Options{All: true}); err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.Evidence {
		line := "  - " + e.What + ": " + e.Figure + " [1]"
		if got := strings.Contains(brief, line+"\n"); got != cited[e.ID] {
			t.Errorf("%s (cited %v): in the brief view %v, want %v", e.ID, cited[e.ID], got, cited[e.ID])
		}
		// Piped, the whole table is tab-separated with the input written out.
		if row := e.Source + "\t" + e.What + "\t" + e.Figure + "\t" + e.Input + "\t" + e.ID + "\n"; !strings.Contains(all.String(), row) {
			t.Errorf("--evidence all lacks the row %q", row)
		}
	}
	// Both analyses read chat.jsonl: one input, listed once.
	if n := strings.Count(brief, "chat.jsonl"); n != 1 || !strings.Contains(brief, "  [1] requests: chat.jsonl\n") {
		t.Errorf("chat.jsonl appears %d times; want once, as input [1]:\n%s", n, brief)
	}
	for _, r := range rec.Reasons {
		if !strings.Contains(all.String(), r.Text) {
			t.Errorf("--evidence all lacks the reason in full: %q", r.Text)
		}
		if g := gist(r.Text); !strings.Contains(brief, g) || (g != r.Text && strings.Contains(brief, r.Text)) {
			t.Errorf("the brief view does not show the reason's gist %q", g)
		}
	}
}
