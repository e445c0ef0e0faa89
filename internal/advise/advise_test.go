package advise

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
)

func ptr[T any](v T) *T { return &v }

// healthy returns n replicas with prefix caching on, little pressure and 2048 blocks of 16.
func healthy(n int) *Metrics {
	m := &Metrics{Source: "scrape", Mode: "rate", KVBlocks: 2048, KVBlockSize: 16}
	for i := range n {
		m.Replicas = append(m.Replicas, Replica{Name: "r" + string(rune('0'+i)), PrefixCaching: ptr(true),
			PreemptionsPer1k: ptr(1.0), KVUsage: ptr(0.5), BlockSize: 16})
	}
	return m
}

// requests builds a request audit: prompt tokens 100k over n requests, with the given shares of
// cross- and within-session reuse.
func requests(n int64, cross, within float64, exact bool) *Requests {
	const prompt = 100_000
	return &Requests{Input: "log.jsonl", Estimated: !exact, Requests: n, Sessions: n / 4, WithBlock: n,
		PromptTokens: prompt, CrossSessionTokens: int64(cross * prompt), WithinSessionTokens: int64(within * prompt),
		CacheableTokens: int64((cross + within) * prompt)}
}

// simulation builds a simulated fleet of 8 replicas with the given policies; the working set is
// ws times one replica's KV.
func simulation(ceiling float64, ws int64, ps ...Policy) *Simulation {
	s := &Simulation{Trace: "t.jsonl", Requests: 1000, BlockSize: 512, PrefixInfo: true, Ceiling: ceiling,
		Replicas: 8, KVTokens: 1 << 20, WorkingSetTokens: ws << 20, ReplicasFrom: "--replicas", KVFrom: "--kv-blocks"}
	s.Policies = append([]Policy{{Name: "round-robin", Family: FamilyBalance, HitRate: 0.08, LoadMaxOverMean: 1, TTFTP99: 10}}, ps...)
	return s
}

func pol(name string, saved, load float64, hot bool) Policy {
	return Policy{Name: name, Family: PolicyFamily(name), HitRate: 0.08 + saved, PrefillSaved: saved, LoadMaxOverMean: load, TTFTP99: 9, HotSpot: hot}
}

// outcome is what the tests compare: the verdict, what follows the fixes, the confidence, the
// rules that support the verdict, the rules against it and the fix codes with severities.
type outcome struct {
	Verdict    Verdict
	Then       Verdict
	Confidence Level
	Rules      []string
	Against    []string
	Fixes      []string
}

func summarize(r Recommendation) outcome {
	o := outcome{Verdict: r.Verdict, Then: r.Then, Confidence: r.Confidence}
	for _, x := range r.Reasons {
		if x.Against {
			o.Against = append(o.Against, x.Rule)
		} else {
			o.Rules = append(o.Rules, x.Rule)
		}
	}
	for _, f := range r.Fixes {
		o.Fixes = append(o.Fixes, f.Severity.String()+" "+f.Code)
	}
	return o
}

func TestDecide(t *testing.T) {
	breaker := finding.Finding{Severity: finding.Error, Code: "audit/breaker", Subject: "graph.py:41", Message: "isoformat() in block 0", Source: "templates", Fix: "move it"}
	daily := finding.Finding{Severity: finding.Warning, Code: "audit/breaker", Subject: "llama.py:26", Message: "date in block 0", Source: "templates"}
	late := finding.Finding{Severity: finding.Info, Code: "audit/late", Subject: "x.py:3", Message: "late", Source: "templates"}
	kvWins := simulation(0.36, 90, pol("chash-bounded", -0.001, 1.3, false), pol("session", -0.03, 8, true), pol("kv-load", 0.20, 1.07, false))

	tests := []struct {
		name string
		in   Input
		want outcome
	}{
		{
			name: "single replica",
			in:   Input{Metrics: healthy(1), Requests: requests(500, 0.5, 0, true)},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"single-replica"}},
		},
		{
			// One dump or log is a sample of the fleet: one replica there decides nothing.
			name: "single replica in a dump",
			in:   Input{Metrics: func() *Metrics { m := healthy(1); m.Source = "file"; return m }()},
			want: outcome{Verdict: Nothing, Confidence: Low, Rules: []string{"no-reuse-measured"}},
		},
		{
			name: "single replica in a log, with cross-session reuse",
			in:   Input{Metrics: func() *Metrics { m := healthy(1); m.Source = "log"; return m }(), Requests: requests(500, 0.5, 0, true)},
			want: outcome{Verdict: KVAwareRouter, Confidence: High, Rules: []string{"cross-session-reuse"}},
		},
		{
			// Thanos answered with a partial response: the other replicas may be in the store
			// that did not answer.
			name: "single replica in a partial response",
			in: Input{Metrics: func() *Metrics {
				m := healthy(1)
				m.Source = "prometheus"
				m.Warnings = []finding.Finding{{Severity: finding.Warning, Code: "server-warning", Message: "partial response", Source: "hitrate"}}
				return m
			}()},
			want: outcome{Verdict: Nothing, Confidence: Low, Rules: []string{"no-reuse-measured"}, Fixes: []string{"warning server-warning"}},
		},
		{
			name: "single simulated replica",
			in:   Input{Simulation: func() *Simulation { s := simulation(0.4, 2); s.Replicas = 1; return s }()},
			want: outcome{Verdict: Nothing, Confidence: Medium, Rules: []string{"single-replica"}},
		},
		{
			name: "little shareable prefill, exact tokens",
			in:   Input{Metrics: healthy(4), Requests: requests(500, 0.03, 0.02, true)},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"little-shareable-prefill"}},
		},
		{
			name: "low trace ceiling and small simulated gain agree",
			in:   Input{Simulation: simulation(0.05, 3, pol("kv-load", 0.01, 1.1, false), pol("chash-bounded", 0, 1.2, false))},
			want: outcome{Verdict: Nothing, Confidence: Medium, Rules: []string{"low-trace-ceiling", "small-simulated-gain"}},
		},
		{
			name: "small simulated gain, contradicted by the request log",
			in: Input{Requests: requests(500, 0.4, 0, true),
				Simulation: simulation(0.3, 3, pol("kv-load", 0.02, 1.1, false), pol("chash-bounded", 0, 1.2, false))},
			want: outcome{Verdict: Nothing, Confidence: Low, Rules: []string{"small-simulated-gain"}, Against: []string{"cross-session-reuse"}},
		},
		{
			name: "reuse within sessions",
			in:   Input{Metrics: healthy(4), Requests: requests(500, 0.02, 0.5, false)},
			want: outcome{Verdict: SessionAffinity, Confidence: Medium, Rules: []string{"reuse-within-sessions"}},
		},
		{
			name: "simulated session affinity gets most of the gain",
			in: Input{Requests: requests(500, 0.01, 0.6, true),
				Simulation: simulation(0.5, 20, pol("chash-bounded", 0.18, 1.2, false), pol("session", 0.19, 3, true), pol("kv-load", 0.20, 1.05, false))},
			want: outcome{Verdict: SessionAffinity, Confidence: High, Rules: []string{"reuse-within-sessions", "session-gets-most-gain"}},
		},
		{
			name: "KV-aware router: simulation and working set",
			in:   Input{Simulation: kvWins},
			want: outcome{Verdict: KVAwareRouter, Confidence: Medium, Rules: []string{"kv-routing-wins", "working-set-exceeds-replica"}},
		},
		{
			name: "KV-aware router: requests, tap and simulation agree",
			in: Input{Metrics: healthy(8), Requests: requests(1000, 0.4, 0.05, true), Simulation: kvWins,
				Stream: &Stream{Publishers: 8, SeedKnown: true, Reproducible: ptr(true), Consistent: ptr(true), DuplicateFraction: ptr(0.3)}},
			want: outcome{Verdict: KVAwareRouter, Confidence: High, Rules: []string{"cross-session-reuse", "duplicated-prefill", "kv-routing-wins", "working-set-exceeds-replica"}},
		},
		{
			name: "KV-aware router wins, but the working set fits one replica",
			in:   Input{Simulation: simulation(0.4, 0, pol("chash-bounded", 0.01, 1.2, false), pol("kv-llmd", 0.12, 1.1, false))},
			want: outcome{Verdict: KVAwareRouter, Confidence: Low, Rules: []string{"kv-routing-wins"}, Against: []string{"working-set-fits-replica"}},
		},
		{
			name: "KV-aware policy only with bad balance",
			in:   Input{Simulation: simulation(0.4, 10, pol("chash-bounded", 0.0, 1.2, false), pol("kv-longest", 0.15, 1.9, false))},
			want: outcome{Verdict: KVAwareRouter, Confidence: Medium, Rules: []string{"kv-routing-wins-unbalanced", "working-set-exceeds-replica"}},
		},
		{
			name: "KV-aware policy narrowly ahead of session affinity",
			in:   Input{Simulation: simulation(0.4, 10, pol("chash-bounded", 0.07, 1.2, false), pol("kv-load", 0.10, 1.1, false))},
			want: outcome{Verdict: KVAwareRouter, Confidence: Medium, Rules: []string{"kv-routing-wins-narrowly", "working-set-exceeds-replica"}},
		},
		{
			name: "cross-session reuse without session ids is weak",
			in:   Input{Requests: func() *Requests { r := requests(500, 0.4, 0, true); r.Sessions = 0; return r }()},
			want: outcome{Verdict: KVAwareRouter, Confidence: Low, Rules: []string{"cross-session-reuse"}},
		},
		{
			name: "no reuse measured",
			in:   Input{Metrics: healthy(4)},
			want: outcome{Verdict: Nothing, Confidence: Low, Rules: []string{"no-reuse-measured"}},
		},
		{
			name: "prefix caching off",
			in: Input{Metrics: func() *Metrics { m := healthy(3); m.Replicas[1].PrefixCaching = ptr(false); return m }(),
				Requests: requests(500, 0.02, 0.5, false)},
			want: outcome{Verdict: FixFirst, Then: SessionAffinity, Confidence: High, Rules: []string{"prefix-caching-off", "reuse-within-sessions"},
				Fixes: []string{"error prefix-caching-off"}},
		},
		{
			name: "thrashing fleet, rates",
			in: Input{Metrics: func() *Metrics {
				m := healthy(2)
				m.Replicas[0].PreemptionsPer1k = ptr(80.0)
				m.Replicas[1].KVUsage = ptr(0.92)
				return m
			}()},
			want: outcome{Verdict: FixFirst, Confidence: High, Rules: []string{"fleet-thrashes"}, Fixes: []string{"error thrashing", "warning thrashing"}},
		},
		{
			name: "thrashing seen in KV usage alone cites only what was measured",
			in:   Input{Metrics: &Metrics{Source: "log", Mode: "log", Replicas: []Replica{{Name: "e0", KVUsage: ptr(0.98)}, {Name: "e1", KVUsage: ptr(0.5)}}}},
			want: outcome{Verdict: FixFirst, Confidence: Medium, Rules: []string{"fleet-thrashes"}, Fixes: []string{"error thrashing"}},
		},
		{
			name: "pressure below the thrash thresholds only warns",
			in:   Input{Metrics: func() *Metrics { m := healthy(2); m.Replicas[0].PreemptionsPer1k = ptr(20.0); return m }()},
			want: outcome{Verdict: Nothing, Confidence: Low, Rules: []string{"no-reuse-measured"}, Fixes: []string{"warning thrashing"}},
		},
		{
			name: "template breaker per call; daily and late findings do not block",
			in:   Input{Templates: &Templates{Inputs: []string{"t/"}, Verdicts: map[string]int{"breaker": 2}, Findings: []finding.Finding{breaker, daily, late}}, Simulation: kvWins},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: Medium, Rules: []string{"template-breaker", "kv-routing-wins", "working-set-exceeds-replica"},
				Fixes: []string{"error audit/breaker", "warning audit/breaker"}},
		},
		{
			name: "daily template date alone does not block",
			in:   Input{Templates: &Templates{Inputs: []string{"t/"}, Verdicts: map[string]int{"breaker": 1}, Findings: []finding.Finding{daily}}, Simulation: kvWins},
			want: outcome{Verdict: KVAwareRouter, Confidence: Medium, Rules: []string{"kv-routing-wins", "working-set-exceeds-replica"}, Fixes: []string{"warning audit/breaker"}},
		},
		{
			name: "request log diverging at block zero",
			in: Input{Requests: func() *Requests {
				r := requests(500, 0.01, 0.01, false)
				r.Findings = []finding.Finding{{Severity: finding.Error, Code: "audit/unique-first-block", Message: "97% unique", Source: "requests"}}
				return r
			}()},
			want: outcome{Verdict: FixFirst, Then: Nothing, Confidence: Medium, Rules: []string{"request-breaker", "little-shareable-prefill"}, Fixes: []string{"error audit/unique-first-block"}},
		},
		{
			name: "hash parity blocks an exact router",
			in:   Input{Simulation: kvWins, Stream: &Stream{Publishers: 2, SeedKnown: true, Reproducible: ptr(false), Consistent: ptr(false)}},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: High, Rules: []string{"hash-parity", "kv-routing-wins", "working-set-exceeds-replica"},
				Fixes: []string{"error hash-inconsistent", "error hash-not-reproducible"}},
		},
		{
			name: "hash parity only warns when session affinity is enough",
			in:   Input{Requests: requests(500, 0.01, 0.6, true), Stream: &Stream{Publishers: 2, Consistent: ptr(false), LostBatches: 3}},
			want: outcome{Verdict: SessionAffinity, Confidence: High, Rules: []string{"reuse-within-sessions"}, Fixes: []string{"warning hash-inconsistent", "warning events-lost"}},
		},
		{
			name: "stream shows a new first block on every request, and churn",
			in:   Input{Stream: &Stream{Publishers: 3, FirstBlockStores: 400, FirstBlocksDistinct: 399, RestoreFraction: ptr(0.2)}},
			want: outcome{Verdict: FixFirst, Confidence: High, Rules: []string{"stream-breaker"}, Fixes: []string{"error block-zero-breaker", "warning eviction-churn"}},
		},
		{
			name: "several blockers are all listed",
			in: Input{
				Metrics: func() *Metrics {
					m := healthy(2)
					m.Replicas[0].PrefixCaching = ptr(false)
					m.Replicas[1].KVUsage = ptr(0.99)
					return m
				}(),
				Templates: &Templates{Findings: []finding.Finding{breaker}},
				Stream:    &Stream{Publishers: 2, Consistent: ptr(false)},
				Requests:  requests(500, 0.4, 0, true),
			},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: High,
				Rules: []string{"prefix-caching-off", "fleet-thrashes", "template-breaker", "hash-parity", "cross-session-reuse"},
				Fixes: []string{"error prefix-caching-off", "error thrashing", "error audit/breaker", "error hash-inconsistent"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in, DefaultThresholds())
			if d := cmp.Diff(tt.want, summarize(got)); d != "" {
				t.Errorf("Decide (-want +got):\n%s\nreasons: %+v", d, got.Reasons)
			}
			// Every cited evidence line exists.
			for _, r := range got.Reasons {
				for _, id := range r.Evidence {
					if !slices.ContainsFunc(got.Evidence, func(e Evidence) bool { return e.ID == id }) {
						t.Errorf("reason %s cites %s, which is not in the evidence", r.Rule, id)
					}
				}
			}
			if got.Reasons == nil || got.Evidence == nil || got.Fixes == nil || got.NextSteps == nil || got.Advice == nil {
				t.Errorf("nil list in %+v: JSON would say null", got)
			}
		})
	}
}

// TestDecideThresholds moves the documented thresholds and checks the verdict follows.
func TestDecideThresholds(t *testing.T) {
	in := Input{Simulation: simulation(0.4, 10, pol("chash-bounded", 0, 1.2, false), pol("kv-load", 0.06, 1.1, false))}
	tests := []struct {
		name    string
		minGain float64
		want    Verdict
	}{
		{"default 5%: 6% pays", 0.05, KVAwareRouter},
		{"10%: 6% does not", 0.10, Nothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := DefaultThresholds()
			th.MinGain = tt.minGain
			if got := Decide(in, th).Verdict; got != tt.want {
				t.Errorf("verdict = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestNextSteps checks that missing measurements are named, not guessed.
func TestNextSteps(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string // substrings of the measures, in order
		not  []string
	}{
		{"nothing but a trace", Input{Simulation: simulation(0.36, 90, pol("chash-bounded", 0, 1.3, false), pol("kv-load", 0.2, 1.07, false))},
			[]string{"--scrape", "--templates", "--requests", "kvcheck tap"}, []string{"--trace"}},
		{"tap without a seed", Input{Simulation: simulation(0.36, 90, pol("kv-load", 0.2, 1.07, false)), Stream: &Stream{Consistent: ptr(true)}},
			[]string{"--scrape", "--templates", "--requests", "--hash-seed"}, []string{"kvcheck tap"}},
		{"estimated requests without sessions", Input{Requests: func() *Requests { r := requests(500, 0.01, 0.01, false); r.Sessions = 0; return r }()},
			[]string{"--scrape", "--templates", "--tokenize", "session id", "--trace"}, nil},
		{"one replica's log, caching unknown", Input{Metrics: &Metrics{Source: "log", Inputs: []string{"vllm.log"}, Mode: "log", Replicas: []Replica{{Name: "engine000"}}}},
			[]string{"cache_config_info", "every replica", "--templates", "--requests", "--trace"}, nil},
		{"default fleet shape", Input{Simulation: func() *Simulation { s := simulation(0.05, 1); s.KVFrom = "default"; return s }()},
			[]string{"--scrape", "--templates", "--requests", "fleet's own shape"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in, DefaultThresholds()).NextSteps
			var measures []string
			for _, n := range got {
				measures = append(measures, n.Measure)
			}
			all := strings.Join(measures, "\n")
			if len(measures) != len(tt.want) {
				t.Errorf("got %d next steps, want %d:\n%s", len(measures), len(tt.want), all)
			}
			for i, w := range tt.want {
				if i < len(measures) && !strings.Contains(measures[i], w) {
					t.Errorf("next step %d = %q, want it to mention %q", i, measures[i], w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(all, n) {
					t.Errorf("next steps mention %q, which was given:\n%s", n, all)
				}
			}
		})
	}
}

func TestVersionNote(t *testing.T) {
	tests := []struct{ version, want string }{
		{"0.10.1", "vLLM 0.10.1 counts a preempted request's recomputed tokens as hits"},
		{"v0.11.0", "vLLM v0.11.0 leaves preempted lookups out"},
		{"0.25.1", "issue #43736"},
		{"", "before vLLM 0.11"},
		{"nightly", "before vLLM 0.11"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			if got := versionNote(tt.version); !strings.Contains(got, tt.want) {
				t.Errorf("versionNote(%q) = %q, want it to contain %q", tt.version, got, tt.want)
			}
		})
	}
}
