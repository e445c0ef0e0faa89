package advise

import (
	"math"
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

// replay builds a replay of 2000 requests over 2000 s (1000 prompt tokens/s) on 8 measured
// replicas of 1 Mi tokens with a working set of ws times that, today's round-robin serving
// today of the prompt tokens from cache after the warm-up; policies follow.
func replay(today float64, ws int64, sessions bool, ps ...Policy) *Replay {
	r := &Replay{Input: "t.jsonl", Source: "trace", Requests: 2000, Duration: 2000, BlockSize: 16, PrefixInfo: true,
		SessionsKnown: sessions, Ceiling: 0.8, WorkingSetTokens: ws << 20, PromptTokens: 2_000_000, SteadyTokens: 1_000_000,
		WarmupSeconds: 1000, WarmupRequests: 1000, Replicas: 8, KVTokens: 1 << 20, ReplicasFrom: ShapeMetrics, KVFrom: ShapeFlag, Today: "round-robin"}
	r.Policies = append([]Policy{{Name: "round-robin", Family: FamilyBalance, HitRate: today, SteadyHitRate: today, LoadMaxOverMean: 1, TTFTP99: 1}}, ps...)
	return r
}

// pol is a policy serving steady of prompt tokens from cache after the warm-up (and over the
// whole replay).
func pol(name string, steady, load float64) Policy {
	return Policy{Name: name, Family: PolicyFamily(name), HitRate: steady, SteadyHitRate: steady, LoadMaxOverMean: load, TTFTP99: 1, HotSpot: load >= 2}
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
	// today 30%; session affinity 35% (+5 over today, but the KV router's +30 is 25 more); a
	// working set 10x one replica.
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	unique := finding.Finding{Severity: finding.Error, Code: "audit/unique-first-block", Message: "97% unique", Source: "requests"}
	withFinding := func(f finding.Finding) *Requests {
		r := requests(2000, 0.01, 0.01, true)
		r.Findings = []finding.Finding{f}
		return r
	}

	tests := []struct {
		name string
		in   Input
		want outcome
	}{
		{
			name: "single scraped replica",
			in:   Input{Metrics: healthy(1), Replay: kvWins},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"single-replica"}},
		},
		{
			name: "the user states one replica",
			in: Input{Metrics: func() *Metrics { m := healthy(2); m.Source = "file"; return m }(), Replay: func() *Replay {
				r := replay(0.3, 10, true, pol("kv-load", 0.9, 1))
				r.Replicas, r.ReplicasFrom = 1, ShapeFlag
				return r
			}()},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"single-replica"}},
		},
		{
			// One dump is a sample of the fleet, and metrics alone cannot tell.
			name: "single replica in a dump, no traffic",
			in:   Input{Metrics: func() *Metrics { m := healthy(1); m.Source = "file"; m.HitRate = ptr(0.5); return m }()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"metrics-cannot-tell"}},
		},
		{
			name: "single replica in a partial response",
			in: Input{Metrics: func() *Metrics {
				m := healthy(1)
				m.Source, m.HitRate = "prometheus", ptr(0.99)
				m.Warnings = []finding.Finding{{Severity: finding.Warning, Code: "server-warning", Message: "partial response", Source: "hitrate"}}
				return m
			}()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"metrics-cannot-tell"}, Fixes: []string{"warning server-warning"}},
		},
		{
			name: "metrics alone: the fleet already hits 97%",
			in:   Input{Metrics: func() *Metrics { m := healthy(4); m.HitRate = ptr(0.97); return m }()},
			want: outcome{Verdict: Nothing, Confidence: Medium, Rules: []string{"already-hits"}},
		},
		{
			// 97% over 21 requests: each is on average 4.8% of the tokens, under the 5-point
			// threshold, so the 3 points left are measured: nothing.
			name: "metrics alone: 97% over 21 requests",
			in: Input{Metrics: func() *Metrics {
				m := healthy(4)
				m.HitRate, m.Queries, m.Requests = ptr(0.97), ptr(21_000.0), ptr(21.0)
				return m
			}()},
			want: outcome{Verdict: Nothing, Confidence: Medium, Rules: []string{"already-hits"}},
		},
		{
			// 97% over 4 requests (two dumps 10 s apart): each is on average a quarter of the
			// tokens looked up; one more miss among them would be 25 points: cannot tell yet.
			name: "metrics alone: 97% over 4 requests",
			in: Input{Metrics: func() *Metrics {
				m := healthy(4)
				m.HitRate, m.Queries, m.Requests = ptr(0.97), ptr(1000.0), ptr(4.0)
				return m
			}()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"too-little-traffic"}},
		},
		{
			name: "metrics alone: a cold replica and one without prefix metrics",
			in: Input{Metrics: func() *Metrics {
				m := healthy(4)
				m.HitRate = ptr(0.6)
				m.Replicas[2].Cold, m.Replicas[3].NoPrefixMetrics = true, true
				return m
			}()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"metrics-cannot-tell"}},
		},
		{
			name: "nothing given",
			in:   Input{},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"no-traffic"}},
		},
		{
			name: "lengths-only trace",
			in:   Input{Replay: func() *Replay { r := replay(0, 1, false); r.PrefixInfo = false; return r }()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"lengths-only"}},
		},
		{
			name: "a KV-aware router: +30 points, 25 more than session affinity",
			in:   Input{Replay: kvWins},
			want: outcome{Verdict: KVAwareRouter, Confidence: High, Rules: []string{"kv-router-saves", "working-set-exceeds-replica", "hot-spots"}},
		},
		{
			name: "session affinity: +40 points, the KV router only 2 more",
			in:   Input{Replay: replay(0.2, 2, true, pol("session", 0.60, 1.3), pol("kv-llmd", 0.62, 1.1))},
			want: outcome{Verdict: SessionAffinity, Confidence: High, Rules: []string{"session-affinity-saves"}},
		},
		{
			name: "a KV router 4 points ahead of session affinity is a tie: the cheaper option, a thin margin",
			in:   Input{Replay: replay(0.2, 2, true, pol("session", 0.50, 1.3), pol("kv-llmd", 0.54, 1.1))},
			want: outcome{Verdict: SessionAffinity, Confidence: Medium, Rules: []string{"session-affinity-saves"}},
		},
		{
			name: "nothing: the best option saves 2 points",
			in:   Input{Replay: replay(0.9, 0, true, pol("session", 0.90, 1.3), pol("kv-llmd", 0.92, 1.1))},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"no-option-pays"}},
		},
		{
			name: "a gain that is warm-up only",
			in: Input{Replay: func() *Replay {
				r := replay(0.9, 0, false, pol("kv-llmd", 0.91, 1.1))
				r.Policies[0].HitRate, r.Policies[1].HitRate = 0.5, 0.6
				return r
			}()},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"no-option-pays", "warm-up-only", "sessions-unknown"}},
		},
		{
			name: "a hot spot is no option, whatever its hits",
			in:   Input{Replay: replay(0.3, 2, false, pol("kv-longest", 0.9, 4), pol("kv-load", 0.32, 1.1))},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"no-option-pays", "sessions-unknown", "hot-spots"}},
		},
		{
			name: "sessions unknown: session affinity not measured, the KV router judged alone",
			in:   Input{Replay: replay(0.2, 2, false, pol("kv-llmd", 0.6, 1.1))},
			want: outcome{Verdict: KVAwareRouter, Confidence: High, Rules: []string{"kv-router-saves", "working-set-exceeds-replica"}},
		},
		{
			name: "estimated tokens, few requests, an assumed fleet, a thin margin: low",
			in: Input{Replay: func() *Replay {
				r := replay(0.2, 2, true, pol("session", 0.27, 1.1))
				r.Estimated, r.Requests, r.WarmupRequests, r.ReplicasFrom = true, 300, 150, ShapeAssumed
				return r
			}()},
			want: outcome{Verdict: SessionAffinity, Confidence: Low, Rules: []string{"session-affinity-saves"}},
		},
		{
			// 40 requests, 20 after the warm-up: each is on average 1/20 = 5% of the tokens the
			// gains count, the whole threshold, so the +30 points session affinity shows could be
			// six placements: cannot tell yet.
			name: "20 requests after the warm-up: too little traffic to decide",
			in: Input{Replay: func() *Replay {
				r := replay(0.2, 2, true, pol("session", 0.5, 1.1))
				r.Requests, r.WarmupRequests = 40, 20
				return r
			}()},
			want: outcome{Verdict: Undetermined, Confidence: Low, Rules: []string{"too-little-traffic"}},
		},
		{
			// 42 requests, 21 after the warm-up: each is on average 4.8%, under the threshold:
			// the replay decides, at medium confidence (fewer than 1,000 requests lowers it a level).
			name: "21 requests after the warm-up: the replay decides",
			in: Input{Replay: func() *Replay {
				r := replay(0.2, 2, true, pol("session", 0.5, 1.1))
				r.Requests, r.WarmupRequests = 42, 21
				return r
			}()},
			want: outcome{Verdict: SessionAffinity, Confidence: Medium, Rules: []string{"session-affinity-saves"}},
		},
		{
			name: "an overloaded model is a reason against",
			in:   Input{Replay: func() *Replay { r := replay(0.2, 2, false, pol("kv-llmd", 0.6, 1.1)); r.Overloaded = true; return r }()},
			want: outcome{Verdict: KVAwareRouter, Confidence: Medium, Rules: []string{"kv-router-saves", "working-set-exceeds-replica"}, Against: []string{"overloaded"}},
		},
		{
			name: "prefix caching off",
			in: Input{Metrics: func() *Metrics { m := healthy(3); m.Replicas[1].PrefixCaching = ptr(false); return m }(),
				Replay: replay(0.2, 2, true, pol("session", 0.60, 1.3))},
			want: outcome{Verdict: FixFirst, Then: SessionAffinity, Confidence: High, Rules: []string{"prefix-caching-off", "session-affinity-saves"},
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
			want: outcome{Verdict: FixFirst, Then: Undetermined, Confidence: High, Rules: []string{"fleet-thrashes", "metrics-cannot-tell"}, Fixes: []string{"error thrashing", "warning thrashing"}},
		},
		{
			name: "pressure below the thrash thresholds only warns",
			in:   Input{Metrics: func() *Metrics { m := healthy(2); m.Replicas[0].PreemptionsPer1k = ptr(20.0); return m }(), Replay: replay(0.9, 0, true, pol("session", 0.9, 1))},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"no-option-pays"}, Fixes: []string{"warning thrashing"}},
		},
		{
			// Broken: nothing hits; once fixed, today 30% and a KV router 70%: the breaker
			// costs 70 points, and "then" is judged on the fixed traffic.
			name: "a breaker that costs 70 points: fix first, then what the fixed traffic says",
			in: Input{Requests: withFinding(unique), Replay: replay(0, 2, false, pol("kv-llmd", 0, 1.1)),
				Fixed: replay(0.3, 2, false, pol("kv-llmd", 0.7, 1.1)), FixedHow: "date/time in message 0 (system)"},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: High, Rules: []string{"breaker-costs", "kv-router-saves", "working-set-exceeds-replica"},
				Fixes: []string{"error audit/unique-first-block"}},
		},
		{
			name: "a breaker that costs 2 points is worth fixing, not blocking",
			in: Input{Requests: withFinding(unique), Replay: replay(0.9, 0, false, pol("kv-llmd", 0.9, 1.1)),
				Fixed: replay(0.92, 0, false, pol("kv-llmd", 0.92, 1.1)), FixedHow: "id in message 0 (system)"},
			want: outcome{Verdict: Nothing, Confidence: High, Rules: []string{"no-option-pays", "sessions-unknown", "breaker-cheap"}, Fixes: []string{"error audit/unique-first-block"}},
		},
		{
			// A session-first-block error has no divergence the fixer can replace: the replay
			// of the broken traffic says nothing about the traffic once fixed.
			name: "a request-log error with traffic but no fixed replay: then cannot tell",
			in:   Input{Requests: withFinding(unique), Replay: replay(0, 2, true, pol("session", 0, 1.1))},
			want: outcome{Verdict: FixFirst, Then: Undetermined, Confidence: High, Rules: []string{"request-breaker", "then-not-measured"}, Fixes: []string{"error audit/unique-first-block"}},
		},
		{
			name: "a request-log error that cannot be replaced: fix first, then cannot tell",
			in:   Input{Requests: withFinding(unique)},
			want: outcome{Verdict: FixFirst, Then: Undetermined, Confidence: High, Rules: []string{"request-breaker", "no-traffic"}, Fixes: []string{"error audit/unique-first-block"}},
		},
		{
			name: "template breaker per call with a trace; daily and late findings do not block",
			in:   Input{Templates: &Templates{Inputs: []string{"t/"}, Verdicts: map[string]int{"breaker": 2}, Findings: []finding.Finding{breaker, daily, late}}, Replay: kvWins},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: Medium, Rules: []string{"template-breaker", "kv-router-saves", "working-set-exceeds-replica", "hot-spots"},
				Fixes: []string{"error audit/breaker", "warning audit/breaker"}},
		},
		{
			name: "a template breaker the request log does not show is no blocker",
			in: Input{Templates: &Templates{Inputs: []string{"t/"}, Findings: []finding.Finding{breaker}}, Requests: requests(2000, 0.3, 0.1, true),
				Replay: kvWins},
			want: outcome{Verdict: KVAwareRouter, Confidence: High, Rules: []string{"kv-router-saves", "working-set-exceeds-replica", "hot-spots"}, Fixes: []string{"error audit/breaker"}},
		},
		{
			name: "hash parity blocks an exact router",
			in:   Input{Replay: kvWins, Stream: &Stream{Publishers: 2, SeedKnown: true, Reproducible: ptr(false), Consistent: ptr(false), DuplicateFraction: ptr(0.3)}},
			want: outcome{Verdict: FixFirst, Then: KVAwareRouter, Confidence: High, Rules: []string{"hash-parity", "kv-router-saves", "working-set-exceeds-replica", "duplicated-prefill", "hot-spots"},
				Fixes: []string{"error hash-inconsistent", "error hash-not-reproducible"}},
		},
		{
			name: "hash parity only warns when session affinity is enough",
			in:   Input{Replay: replay(0.2, 2, true, pol("session", 0.60, 1.3)), Stream: &Stream{Publishers: 2, Consistent: ptr(false), LostBatches: 3}},
			want: outcome{Verdict: SessionAffinity, Confidence: High, Rules: []string{"session-affinity-saves"}, Fixes: []string{"warning hash-inconsistent", "warning events-lost"}},
		},
		{
			name: "stream shows a new first block on every request, and churn",
			in:   Input{Stream: &Stream{Publishers: 3, FirstBlockStores: 400, FirstBlocksDistinct: 399, RestoreFraction: ptr(0.2)}},
			want: outcome{Verdict: FixFirst, Then: Undetermined, Confidence: High, Rules: []string{"stream-breaker", "no-traffic"}, Fixes: []string{"error block-zero-breaker", "warning eviction-churn"}},
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
			if got.Thresholds != DefaultThresholds() {
				t.Errorf("thresholds %+v not reported", got.Thresholds)
			}
		})
	}
}

// TestDecideThresholds moves the documented threshold and checks the verdict follows.
func TestDecideThresholds(t *testing.T) {
	in := Input{Replay: replay(0.3, 10, true, pol("session", 0.3, 1.2), pol("kv-load", 0.36, 1.1))}
	tests := []struct {
		name    string
		minGain float64
		want    Verdict
	}{
		{"default 5 points: 6 pays", 0.05, KVAwareRouter},
		{"10 points: 6 does not", 0.10, Nothing},
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

// TestNextSteps checks that missing measurements are named, not guessed, and that "cannot tell
// yet" names the one measurement to add first.
func TestNextSteps(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string // substrings of the measures, in order
		not  []string
	}{
		{"nothing but a trace without sessions", Input{Replay: replay(0.2, 90, false, pol("kv-load", 0.5, 1.07))},
			[]string{"--scrape", "--templates", "--requests", "session or conversation id", "kvcheck tap"}, []string{"--trace"}},
		{"tap without a seed", Input{Replay: replay(0.2, 90, true, pol("kv-load", 0.5, 1.07)), Stream: &Stream{Consistent: ptr(true)}},
			[]string{"--scrape", "--templates", "--requests", "--hash-seed"}, []string{"kvcheck tap"}},
		{"metrics only: cannot tell, add traffic first", Input{Metrics: func() *Metrics { m := healthy(4); m.HitRate = ptr(0.5); return m }()},
			[]string{"--requests", "--templates"}, nil},
		{"lengths only: a request log or a trace with block hashes", Input{Replay: func() *Replay { r := replay(0, 1, false); r.PrefixInfo = false; return r }()},
			[]string{"block hashes", "--scrape", "--templates"}, nil},
		{"one replica's log, caching unknown", Input{Metrics: &Metrics{Source: "log", Inputs: []string{"vllm.log"}, Mode: "log", Replicas: []Replica{{Name: "engine000"}}}},
			[]string{"--requests", "cache_config_info", "every replica", "--templates"}, nil},
		{"assumed fleet shape", Input{Replay: func() *Replay { r := replay(0.9, 1, true); r.KVFrom = ShapeAssumed; return r }()},
			[]string{"--scrape", "--templates", "--requests", "--kv-tokens"}, nil},
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

// TestAmortise checks the warm-up model's arithmetic on figures worked by hand: 4 replicas,
// 10,000 shared tokens, 100,000 prompt tokens over 100 s (1,000 tokens/s), 5 points: blind
// routing's one-off extra is 3 x 10,000 = 30,000 tokens, under 5 points of all prefill after
// 30,000 / (1,000 x 0.05) = 600 s.
func TestAmortise(t *testing.T) {
	base := Replay{Replicas: 4, KVTokens: 1 << 20, WorkingSetTokens: 50_000, SharedTokens: 10_000,
		PromptTokens: 100_000, SteadyTokens: 50_000, Duration: 100}
	for _, c := range []struct {
		name       string
		edit       func(*Replay)
		fits, only bool
	}{
		{"stationary shared prefixes that fit", func(*Replay) {}, true, true},
		// 3 x 1,000 = 3,000 tokens is over 5% of 50,000 (2,500): new content keeps coming.
		{"shared prefixes keep arriving", func(r *Replay) { r.LateSharedTokens = 1_000 }, true, false},
		// 3 x 800 = 2,400 is under 2,500: still warm-up.
		{"a few late shared prefixes", func(r *Replay) { r.LateSharedTokens = 800 }, true, true},
		{"working set larger than one replica", func(r *Replay) { r.KVTokens = 40_000 }, false, false},
	} {
		r := base
		c.edit(&r)
		a := r.Amortise(0.05)
		if a.OneOff != 30_000 || a.Rate != 1_000 || math.Abs(a.HoldSeconds-600) > 1e-9 || a.Fits != c.fits || a.WarmupOnly != c.only {
			t.Errorf("%s: got %+v, want one-off 30000, rate 1000, hold 600 s, fits %t, warm-up only %t", c.name, a, c.fits, c.only)
		}
	}
}

// TestNothingSaysWhy: a "nothing" verdict says why today's routing is enough, and only what is
// true of it. Each case is a replay built by hand (2000 requests, 8 replicas of 1 Mi tokens).
func TestNothingSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name string
		rp   *Replay
		conf Level
		// has must appear in the no-option-pays reason, hasNot must not; advice is the first
		// advice line's start; against the rules against the verdict.
		has, hasNot []string
		advice      string
		against     []string
	}{
		{
			// High confidence: 2000 requests, a measured fleet, a margin of 4.8 points.
			// Today is llm-d's exact scorer at 50%; approx-prefix reaches 50.2%: +0.2 points.
			// Keeping today's routing is right because it is KV-aware already, not because
			// "every replica warms up on its own" (the working set, 2x one replica, does not fit).
			name: "today is already a KV-aware router",
			rp: func() *Replay {
				r := replay(0.5, 2, false, pol("approx-prefix", 0.502, 1.5))
				r.Today, r.Policies[0].Name, r.Policies[0].Family = "kv-llmd", "kv-llmd", FamilyKV
				return r
			}(),
			conf:   High,
			has:    []string{"the best, approx-prefix, saves +0.2 points", "today's kv-llmd is itself a KV-aware policy, so it already captures the reuse"},
			hasNot: []string{"warms up on its own"},
			advice: "keep today's routing (kv-llmd): it already captures",
		},
		{
			// Today is session affinity at 93.5%; the KV policies reach the same: +0.0. The
			// working set fits, but today finds the prefixes by pinning sessions.
			name: "today is already session affinity, the working set fits",
			rp: func() *Replay {
				r := replay(0.935, 0, true, pol("chash-bounded", 0.935, 1.4), pol("kv-llmd", 0.935, 1.4))
				r.WorkingSetTokens = 100_000
				r.Today, r.Policies[0].Name, r.Policies[0].Family = "session", "session", FamilySession
				return r
			}(),
			conf:   High,
			has:    []string{"today's session is itself session affinity"},
			hasNot: []string{"warms up on its own"},
			advice: "keep today's routing (session)",
		},
		{
			// Today's approx-prefix concentrates an agent's tasks: 79.9% from cache with load
			// max/mean 2.25; kv-llmd spreads them and serves 20.3%: -59.6 points. The verdict keeps
			// today's routing, says every option serves less (not "+0.0"), and names today's hot
			// spot as a reason against, which lowers the confidence a level.
			name: "today's own router makes a hot spot and every option serves less",
			rp: func() *Replay {
				r := replay(0.799, 0, false, pol("kv-llmd", 0.203, 1.0))
				r.WorkingSetTokens = 160_000
				r.Today, r.Policies[0].Name, r.Policies[0].Family, r.Policies[0].LoadMaxOverMean, r.Policies[0].HotSpot = "approx-prefix", "approx-prefix", FamilyKV, 2.25, true
				return r
			}(),
			conf:    Medium,
			has:     []string{"every option serves less from cache; the closest, kv-llmd, -59.6 points"},
			hasNot:  []string{"+0.0 points"},
			advice:  "today's routing (approx-prefix) keeps the reuse but makes a hot spot (load max/mean 2.25)",
			against: []string{"today-hot-spot"},
		},
		{
			// Round-robin at 80%, session affinity +4 points: chat traffic whose conversations
			// keep bringing new shared prefixes (1/4 of the steady tokens first seen after the
			// warm-up, x7 replicas, far above 5%): the working set fits, but the gain does not
			// come from warming up, so the reason must not say round-robin "finds them".
			name: "blind routing close, but not from warming up",
			rp: func() *Replay {
				r := replay(0.8, 0, true, pol("session", 0.84, 1.2))
				r.WorkingSetTokens, r.SharedTokens, r.LateSharedTokens = 500_000, 400_000, 250_000
				return r
			}(),
			conf:   Medium, // a margin of 1 point, under half the threshold
			has:    []string{"the best, session, saves +4.0 points"},
			hasNot: []string{"warms up on its own", "itself"},
			advice: "keep today's routing; revisit",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := Decide(Input{Replay: c.rp}, DefaultThresholds())
			if rec.Verdict != Nothing || rec.Confidence != c.conf {
				t.Fatalf("verdict %s (%s), want nothing (%s): %+v", rec.Verdict, rec.Confidence, c.conf, rec.Reasons)
			}
			var text string
			var against []string
			for _, r := range rec.Reasons {
				if r.Rule == "no-option-pays" {
					text = r.Text
				}
				if r.Against {
					against = append(against, r.Rule)
				}
			}
			for _, h := range c.has {
				if !strings.Contains(text, h) {
					t.Errorf("reason %q lacks %q", text, h)
				}
			}
			for _, h := range c.hasNot {
				if strings.Contains(text, h) {
					t.Errorf("reason %q says %q", text, h)
				}
			}
			if len(rec.Advice) == 0 || !strings.HasPrefix(rec.Advice[0], c.advice) {
				t.Errorf("advice %q, want it to start %q", rec.Advice, c.advice)
			}
			if !slices.Equal(against, c.against) {
				t.Errorf("against %v, want %v", against, c.against)
			}
		})
	}
}

// TestCapacityBound: 40 tenants' 1,024-token prompts (40,960 shared tokens) on 4 replicas of
// 2,048 tokens (8,192 in all): even a router that gave each replica its own tenants could keep
// a fifth of them. Round-robin serves 2.8%, the best KV policy 7.5% (+4.7, under 5): nothing,
// and the report says the gap to the 60% ceiling is capacity (40,960 / 8,192 = 5.0x), with
// advice to add KV. With 4 x 16,384 tokens (65,536 > 40,960) the sentence is not there.
func TestCapacityBound(t *testing.T) {
	for _, c := range []struct {
		kv   int64
		want bool
	}{{2048, true}, {16384, false}} {
		r := replay(0.028, 0, false, pol("approx-prefix", 0.075, 1.4))
		r.Replicas, r.KVTokens, r.SharedTokens, r.WorkingSetTokens, r.Ceiling = 4, c.kv, 40960, 245760, 0.6
		rec := Decide(Input{Replay: r}, DefaultThresholds())
		if rec.Verdict != Nothing {
			t.Fatalf("kv %d: verdict %s, want nothing", c.kv, rec.Verdict)
		}
		got := slices.ContainsFunc(rec.Reasons, func(x Reason) bool {
			return x.Rule == "capacity-bound" && strings.Contains(x.Text, "the shared prefixes (40960 tokens) are 5.0x the whole fleet's KV cache (4 x 2048 = 8192 tokens)")
		})
		advised := len(rec.Advice) > 0 && strings.Contains(rec.Advice[0], "give the fleet more KV cache")
		if got != c.want || advised != c.want {
			t.Errorf("kv %d: capacity-bound %v, advice to add KV %v, want %v: %+v %q", c.kv, got, advised, c.want, rec.Reasons, rec.Advice)
		}
	}
}

// TestSessionEnoughWording: session affinity +20 points over round-robin, the best KV policy
// +18: the KV router adds nothing over session affinity, which the reason says as such rather
// than "adds only -2.0 points more".
func TestSessionEnoughWording(t *testing.T) {
	rec := Decide(Input{Replay: replay(0.5, 2, true, pol("session", 0.7, 1.2), pol("kv-llmd", 0.68, 1.1))}, DefaultThresholds())
	if rec.Verdict != SessionAffinity {
		t.Fatalf("verdict %s, want session affinity", rec.Verdict)
	}
	text := rec.Reasons[0].Text
	if !strings.Contains(text, "the best KV-aware policy (kv-llmd, +18.0 points) adds nothing over it") || strings.Contains(text, "adds only -") {
		t.Errorf("reason %q", text)
	}
}

// TestReplayAgainstMetrics: the replay of today's routing should reproduce the hit rate the
// fleet's metrics measured; when the two are the threshold (5 points) or more apart, the replay
// does not describe the fleet measured, which is a reason against its verdict and lowers the
// confidence a level. Round-robin replays at 30% (whole replay); a KV policy at 60% wins.
func TestReplayAgainstMetrics(t *testing.T) {
	for _, c := range []struct {
		measured float64
		against  bool
		conf     Level
	}{
		{0.32, false, High},  // 2 points apart: the replay reproduces the fleet
		{0.349, false, High}, // 4.9 points
		{0.35, true, Medium}, // 5 points: against, one level down
		{0.70, true, Medium}, // 40 points
	} {
		m := healthy(8)
		m.HitRate = ptr(c.measured)
		rec := Decide(Input{Metrics: m, Replay: replay(0.30, 10, false, pol("kv-load", 0.60, 1.07))}, DefaultThresholds())
		got := slices.ContainsFunc(rec.Reasons, func(r Reason) bool { return r.Rule == "replay-disagrees-with-metrics" && r.Against })
		if rec.Verdict != KVAwareRouter || got != c.against || rec.Confidence != c.conf {
			t.Errorf("measured %.3f: verdict %s (%s), against %v; want kv-aware-router (%s), against %v", c.measured, rec.Verdict, rec.Confidence, got, c.conf, c.against)
		}
	}
}

// TestKVMustClearCheaper documents the rule "over the cheaper option that pays": round-robin at
// 50%. Session affinity +3 points is not worth deploying on its own, so a KV policy at +7 is
// measured against today's routing, not against session affinity: +7 clears 5, a KV-aware
// router (before issue 22 this was nothing, "+4 over session affinity", while the ranking put
// that router first at 7 points). Session affinity at +6 pays: a KV policy at +10 (4 more) is
// then not worth the dearer option, session affinity; at +12 (6 more) it is. Worked before
// running kvcheck.
func TestKVMustClearCheaper(t *testing.T) {
	for _, c := range []struct {
		sess, kv float64
		want     Verdict
		text     string
	}{
		{0.53, 0.57, KVAwareRouter, "+7.0 points of all prefill (70 prompt tokens/s at the traffic's rate), above the 5-point threshold; the best session affinity (chash-bounded) saves +3.0 points, under the threshold on its own, so the cheaper option does not pay"},
		{0.53, 0.59, KVAwareRouter, "the best session affinity (chash-bounded) saves +3.0 points, under the threshold on its own"},
		{0.56, 0.60, SessionAffinity, "the best KV-aware policy (kv-load, +10.0 points) adds only +4.0 points more, under the threshold"},
		{0.56, 0.62, KVAwareRouter, "and +6.0 points more than the best session affinity (chash-bounded, +6.0 points)"},
	} {
		rec := Decide(Input{Replay: replay(0.5, 10, true, pol("chash-bounded", c.sess, 1.2), pol("kv-load", c.kv, 1.1))}, DefaultThresholds())
		if rec.Verdict != c.want || !strings.Contains(rec.Reasons[0].Text, c.text) {
			t.Errorf("session %.2f, kv %.2f: verdict %s, want %s; reason %q lacks %q", c.sess, c.kv, rec.Verdict, c.want, rec.Reasons[0].Text, c.text)
		}
	}
}

// TestWarmUpWithoutRate: a burst (every request at one instant, Duration 0) whose KV gain (+10
// points) is warm-up alone (the working set fits, no shared prefix after the warm-up): nothing,
// and with no rate the reason cannot say how long a run amortises it; it said "the traffic's rate
// is unknown: the difference holds only for runs shorter than that", with no time to refer to.
func TestWarmUpWithoutRate(t *testing.T) {
	r := replay(0.5, 0, false, pol("kv-load", 0.6, 1.1))
	r.Duration, r.WorkingSetTokens, r.SharedTokens, r.LateSharedTokens = 0, 100_000, 40_000, 0
	rec := Decide(Input{Replay: r}, DefaultThresholds())
	if rec.Verdict != Nothing || rec.Reasons[0].Rule != "warm-up-amortises" {
		t.Fatalf("verdict %s (%s), want nothing (warm-up-amortises)", rec.Verdict, rec.Reasons[0].Rule)
	}
	text := rec.Reasons[0].Text
	if strings.Contains(text, "shorter than that") || !strings.Contains(text, "how long a run amortises it cannot be said") {
		t.Errorf("reason %q", text)
	}
}

// TestRouterRowsAreOptions: issue 22, failure 4 (an agent over one context: "nothing", no
// option saves 5 points, while the ranking put a router first at +35 points). Round-robin at
// 20%; every idealised KV policy makes a hot spot (never an option); the ranking's first row,
// a shipped router at 55% (load 1.28), is an option the verdict weighs: +35 points, a
// KV-aware router naming that row. Without the rows the same replay says nothing.
func TestRouterRowsAreOptions(t *testing.T) {
	rp := replay(0.20, 10, false, pol("approx-prefix", 0.80, 2.4), pol("kv-llmd", 0.78, 2.2))
	if rec := Decide(Input{Replay: rp}, DefaultThresholds()); rec.Verdict != Nothing {
		t.Fatalf("without the ranking's rows: %s, want nothing", rec.Verdict)
	}
	rp.Routers = []Policy{{Name: "sglang-cache-aware (shipped, CLI defaults)", Family: FamilyKV, HitRate: 0.55, SteadyHitRate: 0.55, LoadMaxOverMean: 1.28, TTFTP99: 0.24}}
	rec := Decide(Input{Replay: rp}, DefaultThresholds())
	if rec.Verdict != KVAwareRouter || !strings.Contains(rec.Reasons[0].Text, "sglang-cache-aware (shipped, CLI defaults) serves 55.0% of prompt tokens from cache after the warm-up against 20.0% with today's round-robin: +35.0 points") {
		t.Errorf("with the rows: %s, %q", rec.Verdict, rec.Reasons[0].Text)
	}
}
