package advise

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/sim"
)

func TestFromHitrate(t *testing.T) {
	on, off := true, false
	rep := promql.Analyze(promql.Input{Source: promql.SourceScrape, Mode: promql.ModeRate, Window: 30, Inputs: []string{"a", "b"},
		Observations: []promql.Observation{
			{Replica: "a", Window: 30, Queries: ptr(1000.0), Hits: ptr(500.0), Preemptions: ptr(5.0), Requests: ptr(100.0), KVUsage: ptr(0.5), BlockSize: 16, PrefixCaching: &on},
			{Replica: "b", Window: 30, Queries: ptr(0.0), Hits: ptr(0.0), BlockSize: 16, PrefixCaching: &off},
		}})
	got := FromHitrate(rep)
	// b exports no request counter: the fleet's requests are unknown, not a's 100.
	want := &Metrics{Source: "scrape", Inputs: []string{"a", "b"}, Mode: "rate", HitRate: ptr(0.5), Queries: ptr(1000.0), Replicas: []Replica{
		{Name: "a", PrefixCaching: &on, HitRate: ptr(0.5), PreemptionsPer1k: ptr(50.0), KVUsage: ptr(0.5), BlockSize: 16},
		{Name: "b", PrefixCaching: &off, BlockSize: 16},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FromHitrate (-want +got):\n%s", d)
	}
	rep.Replicas[1].Requests = ptr(3.0)
	if got := FromHitrate(rep).Requests; got == nil || *got != 103 {
		t.Errorf("requests %v, want 100 + 3", got)
	}
}

func TestFromAudit(t *testing.T) {
	tr := audit.TemplateReport{
		Templates: []audit.Template{{File: "a.py", Verdict: audit.VerdictBreaker}, {File: "b.jinja", Verdict: audit.VerdictClean}},
		Findings:  []audit.Finding{{Finding: finding.Finding{Severity: finding.Error, Code: "audit/breaker", Message: "m", File: "a.py", Line: 41, Fix: "move it"}}},
	}
	got := FromTemplates(tr, []string{"dir"})
	want := &Templates{Inputs: []string{"dir"}, Verdicts: map[string]int{"breaker": 1, "clean": 1}, Findings: []finding.Finding{
		finding.Finding{Severity: finding.Error, Code: "audit/breaker", Message: "m", Subject: "a.py:41", Source: "templates", Fix: "move it", File: "a.py", Line: 41},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FromTemplates (-want +got):\n%s", d)
	}
	r := FromRequests(audit.Summary{Exact: true, Requests: 10, Short: 2, Sessions: 3, PromptTokens: 1000, CacheableTokens: 400,
		CrossSessionTokens: 300, WithinSessionTokens: 100, UniqueFirstBlock: 1}, "log.jsonl")
	if r.Estimated || r.WithBlock != 8 || r.CrossSessionTokens != 300 || r.Input != "log.jsonl" {
		t.Errorf("FromRequests = %+v", r)
	}
}

func TestFromTap(t *testing.T) {
	yes, no := true, false
	rep := &events.Report{
		Publishers: []events.Publisher{{Endpoint: "a", UnrecoverableBatches: 2}, {Endpoint: "b", UnrecoverableBatches: 1}},
		Analysis: events.Analysis{StoredBlocks: 100, DuplicateTokenFraction: ptr(0.25), FirstBlockStores: 30, FirstBlocksDistinct: 2,
			HashParity: events.HashParity{SeedKnown: true, Reproducible: &yes, ConsistentAcrossReplicas: &no}},
	}
	got := FromTap(rep, []string{"a.kvtap"}, true)
	want := &Stream{Inputs: []string{"a.kvtap"}, Publishers: 2, StoredBlocks: 100, SeedKnown: true, Reproducible: &yes, Consistent: &no,
		LostBatches: 3, DuplicateFraction: ptr(0.25), FirstBlockStores: 30, FirstBlocksDistinct: 2}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FromTap (-want +got):\n%s", d)
	}
}

// TestFromReplay runs the real simulator on a small trace where every conversation repeats
// a shared first block, and checks the families and the hot spot come through. The replicas
// run 4 requests at once: a request a replica every 2 s under round-robin, each holding its
// slot 4 s, keeps 2 running and none waits; the policies that pile all 60 on one replica (a
// request every 0.5 s) fill its 4 slots by the fifth, and nearly every later one waits: hot
// spots.
func TestFromReplay(t *testing.T) {
	tr := &sim.Trace{Name: "tiny", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 60 {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(i) * 0.5, Blocks: []uint64{1, 2, uint64(100 + i)}, InputTokens: 48, OutputTokens: 200, N: 1})
	}
	sw := sim.Sweep{Replicas: []int{4}, KVBlocks: []int{64}, Policies: []string{"round-robin", "session", "kv-longest", "kv-load"},
		Base: sim.Config{Model: sim.Model{PrefillPerToken: 100e-6, DecodePerToken: 20e-3, MaxRunning: 4}, Seed: 1, AddReplicaAt: -1, Siblings: 1, Params: sim.DefaultParams()}}
	res, err := sim.Run(context.Background(), tr, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := FromReplay(sim.NewReport(tr, sim.Stats(tr), sw, res), ReplayShape{Source: "trace", ReplicasFrom: ShapeFlag, KVFrom: ShapeFlag, Today: "round-robin", HotSpot: 2})
	if s.Replicas != 4 || s.KVTokens != 64*16 || s.WorkingSetTokens != 62*16 || s.Requests != 60 {
		t.Errorf("fleet = %d replicas x %d tokens, working set %d, %d requests; want 4 x 1024, 992, 60", s.Replicas, s.KVTokens, s.WorkingSetTokens, s.Requests)
	}
	fam := map[string]Family{}
	for _, p := range s.Policies {
		fam[p.Name] = p.Family
	}
	want := map[string]Family{"round-robin": FamilyBalance, "session": FamilySession, "kv-longest": FamilyKV, "kv-load": FamilyKV}
	if d := cmp.Diff(want, fam); d != "" {
		t.Errorf("families (-want +got):\n%s", d)
	}
	// Every request starts with block 1: naive longest-prefix puts them all on one replica.
	for _, p := range s.Policies {
		// session has no ids to hash and falls back to block 0: the same hot spot.
		if p.HotSpot != (p.Name == "kv-longest" || p.Name == "session") {
			t.Errorf("%s: hot spot %v at load max/mean %.2f", p.Name, p.HotSpot, p.LoadMaxOverMean)
		}
		if p.HitRate < 0 || p.HitRate > 1 || p.SteadyHitRate < 0 || p.SteadyHitRate > 1 {
			t.Errorf("%s: hit rates %v, %v", p.Name, p.HitRate, p.SteadyHitRate)
		}
	}
	if s.PromptTokens != 60*48 || s.Duration != 29.5 {
		t.Errorf("prompt tokens %d over %v s, want 2880 over 29.5", s.PromptTokens, s.Duration)
	}
}

// A partial response from Thanos or Mimir is a hitrate finding; assess must show it as
// evidence and pass it on as a fix, not only print it on stderr.
func TestServerWarningSurfaces(t *testing.T) {
	on := true
	rep := promql.Analyze(promql.Input{Source: promql.SourcePrometheus, Mode: promql.ModeRate, Window: 300, Inputs: []string{"http://thanos"},
		Observations: []promql.Observation{
			{Replica: "a", Window: 300, Queries: ptr(1000.0), Hits: ptr(500.0), BlockSize: 16, PrefixCaching: &on},
			{Replica: "b", Window: 300, Queries: ptr(1000.0), Hits: ptr(500.0), BlockSize: 16, PrefixCaching: &on},
		},
		Warnings: []promql.ServerWarning{{Warning: "partial response: store 10.0.0.9 unavailable", Queries: []string{"hits"}}}})
	m := FromHitrate(rep)
	if len(m.Warnings) != 1 || m.Warnings[0].Code != "server-warning" || m.Warnings[0].Severity != finding.Warning {
		t.Fatalf("FromHitrate warnings = %+v, want one server-warning warning", m.Warnings)
	}
	rec := Decide(Input{Metrics: m}, DefaultThresholds())
	if !slices.ContainsFunc(rec.Fixes, func(f finding.Finding) bool { return f.Code == "server-warning" }) {
		t.Errorf("fixes = %+v, want the server warning", rec.Fixes)
	}
	i := slices.IndexFunc(rec.Evidence, func(e Evidence) bool { return e.ID == "hitrate.server_warnings" })
	if i < 0 || !strings.Contains(rec.Evidence[i].Figure, "store 10.0.0.9 unavailable") {
		t.Errorf("evidence = %+v, want hitrate.server_warnings naming the warning", rec.Evidence)
	}
	if rec.Verdict == FixFirst {
		t.Errorf("verdict = %s: a warning alone must not block", rec.Verdict)
	}
}

// Requests that start with the user's own question have unique first blocks without any value
// to move: the audit grades that as info, and assess must not say "fix this first".
func TestUserTextFirstIsNoBreaker(t *testing.T) {
	sum := func(role, cause string) audit.Summary {
		return audit.Summary{Requests: 200, UniqueFirstBlock: 200, PromptTokens: 16000, BlockSize: 16,
			Sites: []audit.Site{{Message: 0, Role: role, Block: 0, Cause: cause, Count: 200, Example: "what is"}}}
	}
	tests := []struct {
		name, role, cause string
		sev               finding.Severity
		verdict           Verdict
	}{
		// Without a replay the audit alone decides nothing; what matters is no fix-first.
		{"user text", "user", "text", finding.Info, Undetermined},
		{"a number the user typed", "user", "number", finding.Info, Undetermined},
		{"system text", "system", "text", finding.Error, FixFirst},
		{"date in a user message", "user", "date/time", finding.Error, FixFirst},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := FromRequests(sum(tt.role, tt.cause), "log.jsonl")
			i := slices.IndexFunc(r.Findings, func(f finding.Finding) bool { return f.Code == "audit/unique-first-block" })
			if i < 0 {
				t.Fatalf("findings = %+v, want audit/unique-first-block", r.Findings)
			}
			if got := r.Findings[i].Severity; got != tt.sev {
				t.Errorf("severity = %s, want %s", got, tt.sev)
			}
			if got := Decide(Input{Requests: r}, DefaultThresholds()).Verdict; got != tt.verdict {
				t.Errorf("verdict = %s, want %s", got, tt.verdict)
			}
		})
	}
}

// FromHitrate takes the smallest replica's KV cache (num_gpu_blocks x block_size) from the
// report, so assess needs no scrape of its own.
func TestFromHitrateKVShape(t *testing.T) {
	rep := promql.Report{Source: promql.SourceScrape, Replicas: []promql.Replica{
		{Replica: "a", BlockSize: ptr(16), NumGPUBlocks: ptr(4096)},
		{Replica: "b", BlockSize: ptr(32), NumGPUBlocks: ptr(1024)},
		{Replica: "c", BlockSize: ptr(16)},
	}}
	m := FromHitrate(rep)
	if m.KVBlocks != 1024 || m.KVBlockSize != 32 {
		t.Errorf("KV shape = %d x %d, want 1024 x 32 (the smallest cache)", m.KVBlocks, m.KVBlockSize)
	}
}

// Tap's warnings that no rule restates (a truncated recording, a restarted publisher) qualify
// the stream's figures: assess passes them on instead of dropping them.
func TestFromTapFindings(t *testing.T) {
	f := func(sev finding.Severity, code string) finding.Finding {
		return finding.Finding{Severity: sev, Code: code, Subject: "a.kvtap", Message: code}
	}
	rep := &events.Report{Findings: []finding.Finding{
		f(finding.Warning, "recording-truncated"), f(finding.Warning, "publisher-restarted"),
		f(finding.Error, "hash-inconsistent"), f(finding.Info, "duplicate-batches"),
	}}
	s := FromTap(rep, []string{"a.kvtap"}, false)
	var got []string
	for _, x := range s.Findings {
		got = append(got, x.Code)
	}
	if want := []string{"recording-truncated", "publisher-restarted"}; !cmp.Equal(want, got) {
		t.Errorf("stream findings = %v, want %v", got, want)
	}
	rec := Decide(Input{Stream: s}, DefaultThresholds())
	if !slices.ContainsFunc(rec.Fixes, func(x finding.Finding) bool { return x.Code == "recording-truncated" }) {
		t.Errorf("fixes = %+v, want recording-truncated passed on", rec.Fixes)
	}
}
