package sim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
)

func TestNewReport(t *testing.T) {
	share := func(x float64) *float64 { return &x }
	fleet := func(r Result) Result { r.Replicas, r.KVBlocks = 2, 64; return r }
	results := []Result{
		fleet(Result{Policy: "round-robin", LoadMaxOverMean: 1, TTFTP99: 1, FreshShare: share(1.0 / 3)}),
		// Everything on one replica, 100 times slower than round-robin (9 of its 10 requests
		// waited), nothing to the added replica: a hot spot and a starved replica, both reported.
		fleet(Result{Policy: "kv-longest", PerReplica: []int{10, 0, 0}, Requests: 10, LoadMaxOverMean: 3, HotWaited: 0.9, TTFTP99: 100, PrefillSaved: 0.3, FreshShare: share(0)}),
		// Saves the most but is slower than approx-prefix, which is within BestMargin of it;
		// approx-prefix gives the added replica 1% of the later requests, under half its fair
		// share (1/3 of 3 replicas: 16.7%), so it is starved and cannot be best: kv-llmd is.
		fleet(Result{Policy: "kv-llmd", LoadMaxOverMean: 1.1, TTFTP99: 0.9, PrefillSaved: 0.2, FreshShare: share(0.3)}),
		fleet(Result{Policy: "approx-prefix", LoadMaxOverMean: 1.1, TTFTP99: 0.8, PrefillSaved: 0.198, FreshShare: share(0.01)}),
		// 10%: over a quarter of the fair share (8.3%), under half (16.7%): starved; it saves
		// less than the others anyway.
		fleet(Result{Policy: "session", LoadMaxOverMean: 1.2, TTFTP99: 0.7, PrefillSaved: 0.1, FreshShare: share(0.1)}),
		// 17%: just over half the fair share: not starved.
		fleet(Result{Policy: "chash-bounded", LoadMaxOverMean: 1.05, TTFTP99: 0.95, PrefillSaved: 0.05, FreshShare: share(0.17)}),
	}
	tr := &Trace{Name: "t", BlockSize: 4, PrefixInfo: true}
	sw := Sweep{Base: Config{AddReplicaAt: 10}}
	rep := NewReport(tr, Stats(tr), sw, results)
	if len(rep.Fleets) != 1 {
		t.Fatalf("fleets = %d, want 1", len(rep.Fleets))
	}
	f := rep.Fleets[0]
	if f.Best != "kv-llmd" {
		t.Errorf("best = %q, want kv-llmd (approx-prefix, within %.3f of the most saved and faster, starves the added replica)", f.Best, BestMargin)
	}
	if d := cmp.Diff([]string{"kv-longest"}, f.HotSpots); d != "" {
		t.Errorf("hot spots (-want +got):\n%s", d)
	}
	type key struct{ Code, Subject string }
	var got []key
	for _, fd := range rep.Findings {
		got = append(got, key{fd.Code, fd.Subject})
	}
	want := []key{
		{"hot-spot", "kv-longest@2x64"},
		{"starved-replica", "kv-longest@2x64"},
		{"starved-replica", "approx-prefix@2x64"},
		{"starved-replica", "session@2x64"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

// TestCeilingWithSiblings checks that the ceiling counts every copy of a request sent as
// siblings (the trace's own n, or --n): each copy after the first repeats the prompt, so one
// unbounded cache could hit more, and no policy may beat the ceiling the report prints.
func TestCeilingWithSiblings(t *testing.T) {
	two := req(0, "", 1, 1, 2)
	two.N = 2
	tr := tinyTrace(req(0, "", 1, 1, 2), two)
	cases := []struct {
		name     string
		siblings int
		want     TraceStats
	}{
		// 1 + 2 copies of [1 2]: 6 references, 2 distinct, 4 repeats.
		{"trace n", 0, TraceStats{Requests: 2, BlockRefs: 6, DistinctBlocks: 2, Repeats: 4, Ceiling: 4.0 / 6, InputTokens: 24, OutputTokens: 3}},
		// --n 3: 3 + 3 copies: 12 references, 10 repeats.
		{"--n 3", 3, TraceStats{Requests: 2, BlockRefs: 12, DistinctBlocks: 2, Repeats: 10, Ceiling: 10.0 / 12, InputTokens: 48, OutputTokens: 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SiblingStats(tr, tc.siblings)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("stats (-want +got):\n%s", d)
			}
			c := tinyConfig(1)
			c.Siblings = tc.siblings
			res, err := Simulate(tr, c, "round-robin")
			if err != nil {
				t.Fatal(err)
			}
			if res.BlockRefs != got.BlockRefs || res.BlockHitRate > got.Ceiling {
				t.Errorf("simulated %d block refs at block hit rate %.3f; stats %d refs, ceiling %.3f", res.BlockRefs, res.BlockHitRate, got.BlockRefs, got.Ceiling)
			}
		})
	}
}

// TestSiblingBound checks that a trace whose siblings expand past MaxRequests is refused before
// the simulator allocates a job for each: --n 1024 on a large trace would need gigabytes.
func TestSiblingBound(t *testing.T) {
	rs := make([]Request, MaxRequests/1024+1)
	for i := range rs {
		rs[i] = req(float64(i), "", 1, 1)
	}
	c := tinyConfig(2)
	c.Siblings = 1024
	_, err := Simulate(tinyTrace(rs...), c, "round-robin")
	if err == nil || !strings.Contains(err.Error(), "lower --n") {
		t.Fatalf("error = %v, want one saying to lower --n", err)
	}
	c.Siblings = 2
	if _, err := Simulate(tinyTrace(rs...), c, "round-robin"); err != nil {
		t.Errorf("--n 2: %v", err)
	}
}

// TestHotSpotWhateverTheModelledLoad is issue 9's tenth failure: a policy that sends
// everything to one replica of four (load max/mean 4.00) while the light-load model shows no
// TTFT cost was simulate's "Best". That trace was a request log without times replayed at
// --rate 1: its load is made up, so the imbalance alone makes the hot spot, whatever the
// modelled load; and a fleet whose round-robin TTFT p99 runs to thousands of seconds is
// overloaded, a finding. (With the traffic's own arrival times and no request waiting,
// TestHotSpotNeedsWaiting.)
func TestHotSpotWhateverTheModelledLoad(t *testing.T) {
	fleet := func(r Result) Result { r.Replicas, r.KVBlocks = 4, 64; return r }
	results := []Result{
		fleet(Result{Policy: "round-robin", LoadMaxOverMean: 1, TTFTP99: 0.02}),
		fleet(Result{Policy: "kv-llmd", PerReplica: []int{36, 0, 0, 0}, Requests: 36, LoadMaxOverMean: 4, TTFTP99: 0.01, PrefillSaved: 0.45}),
		fleet(Result{Policy: "kv-load", LoadMaxOverMean: 1.22, TTFTP99: 0.02, PrefillSaved: 0.08}),
	}
	tr := &Trace{Name: "t", BlockSize: 16, PrefixInfo: true, SyntheticArrivals: true}
	rep := NewReport(tr, Stats(tr), Sweep{Base: Config{AddReplicaAt: -1}}, results)
	f := rep.Fleets[0]
	if f.Best != "kv-load" || !slices.Equal(f.HotSpots, []string{"kv-llmd"}) {
		t.Errorf("best %q, hot spots %v: want kv-load, [kv-llmd] (max/mean 4.00 is a hot spot whatever the TTFT)", f.Best, f.HotSpots)
	}
	if f.Overloaded {
		t.Error("a fleet at 0.02 s TTFT p99 reported overloaded")
	}

	over := []Result{fleet(Result{Policy: "round-robin", LoadMaxOverMean: 1, TTFTP99: 3248}), fleet(Result{Policy: "kv-load", LoadMaxOverMean: 1.05, TTFTP99: 2900, PrefillSaved: 0.1})}
	rep = NewReport(tr, Stats(tr), Sweep{Base: Config{AddReplicaAt: -1}}, over)
	if !rep.Fleets[0].Overloaded || !slices.ContainsFunc(rep.Findings, func(f finding.Finding) bool { return f.Code == "overloaded" }) {
		t.Errorf("round-robin TTFT p99 3248 s: want the fleet overloaded and an overloaded finding, got %+v", rep.Findings)
	}
}

// TestSteadyFigures checks that the steady figures count only requests from MeasureFrom on:
// one shared 4-block prompt sent round-robin to 2 replicas misses once per replica (warm-up),
// then always hits.
func TestSteadyFigures(t *testing.T) {
	var reqs []Request
	for i := range 8 {
		reqs = append(reqs, Request{Arrival: float64(i), Blocks: []uint64{1, 2, 3, 4}, InputTokens: 4*4 + 1, OutputTokens: 1, N: 1})
	}
	tr := &Trace{Name: "shared", BlockSize: 4, PrefixInfo: true, Requests: reqs}
	c := Config{Replicas: 2, KVBlocks: 64, Model: DefaultModel(), AddReplicaAt: -1, Params: DefaultParams(), MeasureFrom: 4}
	res, err := Simulate(tr, c, "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	// Requests 0 and 1 are cold (one per replica); 2..7 hit all 4 blocks (16 tokens).
	if res.HitTokens != 6*16 || res.SteadyInputTokens != 4*17 || res.SteadyHitTokens != 4*16 {
		t.Errorf("hit %d, steady %d of %d: want 96, 64 of 68", res.HitTokens, res.SteadyHitTokens, res.SteadyInputTokens)
	}
}

// TestSteadyFromRequest: a burst (every request at the same instant) has no arrival time that
// separates its warm-up; MeasureFromRequest does. The shared 4-block prompt of TestSteadyFigures,
// eight requests all at 0 s, round-robin on 2 replicas, steady from request 4: the prefills on
// a replica run one after the other, so only requests 0 and 1 are cold; requests 4..7 each hit
// 4 blocks (16 tokens) of 17.
func TestSteadyFromRequest(t *testing.T) {
	var reqs []Request
	for range 8 {
		reqs = append(reqs, Request{Arrival: 0, Blocks: []uint64{1, 2, 3, 4}, InputTokens: 4*4 + 1, OutputTokens: 1, N: 1})
	}
	tr := &Trace{Name: "burst", BlockSize: 4, PrefixInfo: true, Requests: reqs}
	c := Config{Replicas: 2, KVBlocks: 64, Model: DefaultModel(), AddReplicaAt: -1, Params: DefaultParams(), MeasureFromRequest: 4}
	res, err := Simulate(tr, c, "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	if res.HitTokens != 6*16 || res.SteadyInputTokens != 4*17 || res.SteadyHitTokens != 4*16 {
		t.Errorf("hit %d, steady %d of %d: want 96, 64 of 68", res.HitTokens, res.SteadyHitTokens, res.SteadyInputTokens)
	}
}

// TestRunWatch: the sweep's last progress report counts every simulation and every request
// routed in them: 3 policies (two asked, round-robin added) x 2 fleets x 5 requests sent twice.
func TestRunWatch(t *testing.T) {
	var rs []Request
	for i := range 5 {
		rs = append(rs, req(float64(i), "", 1, 1, uint64(i+2)))
	}
	tr := tinyTrace(rs...)
	base := tinyConfig(1)
	base.Siblings = 2
	var last Progress
	calls := 0
	s := Sweep{Replicas: []int{1, 2}, KVBlocks: []int{8}, Policies: []string{"kv-longest", "session"}, Base: base,
		Watch: func(p Progress) { last = p; calls++ }}
	if _, err := Run(t.Context(), tr, s, nil); err != nil {
		t.Fatal(err)
	}
	want := Progress{Simulations: 6, SimulationsDone: 6, Requests: 60, RequestsRouted: 60, Elapsed: last.Elapsed}
	if calls == 0 || last != want {
		t.Errorf("last progress %+v after %d calls, want %+v", last, calls, want)
	}
}

// conversation is one conversation of n turns, each arriving gap seconds after the one before:
// turn k sends the whole conversation so far, 2(k+1) blocks of 16 tokens, and asks for 100
// output tokens (2 s of decode in the default model).
func conversation(n int, gap float64) *Trace {
	tr := &Trace{Name: "conversation", Format: "test", BlockSize: 16, PrefixInfo: true}
	var blocks []uint64
	for k := range n {
		blocks = append(blocks, uint64(2*k+1), uint64(2*k+2))
		tr.Requests = append(tr.Requests, Request{Arrival: gap * float64(k), Session: "c", Blocks: slices.Clone(blocks), InputTokens: 16*len(blocks) + 1, OutputTokens: 100, N: 1})
	}
	return tr
}

// TestHotSpotNeedsWaiting: one conversation of 20 sequential turns on 4 replicas, worked by
// hand in the default model (100 µs a prompt token, 20 ms an output token, 32 running).
//   - Light load, a turn every 60 s: session affinity keeps all 20 turns on one replica (20
//     against a mean of 5: load max/mean 4.00, where round-robin's 5 each is the evenest 20
//     requests allow), but each turn arrives long after the last one's answer (at most 41
//     blocks, 66 ms of prefill, 2 s of decode): no request ever waits, the busiest replica's
//     share of waiting requests is 0, under the 50% line: no hot spot. Session affinity
//     computes 2 new blocks a turn; round-robin finds on a replica only what it computed 4
//     turns before and computes 8 more a turn after the first four: session saves prefill and
//     is Best, with an idle-imbalance note.
//   - The same turns 1 ms apart: the first prefill alone (33 tokens) takes 3.3 ms, so every
//     later turn finds the replica's prefill engine busy: 19 of 20 wait (95%), a hot spot, and
//     round-robin is Best.
func TestHotSpotNeedsWaiting(t *testing.T) {
	c := Config{Replicas: 4, KVBlocks: 1024, Model: DefaultModel(), AddReplicaAt: -1, Seed: 1, Params: DefaultParams()}
	for _, tc := range []struct {
		name   string
		gap    float64
		waited float64
		hot    bool
		best   string
		code   string
	}{
		{"light load", 60, 0, false, "session", "idle-imbalance"},
		{"saturated", 0.001, 19.0 / 20, true, "round-robin", "hot-spot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := conversation(20, tc.gap)
			sw := Sweep{Replicas: []int{4}, KVBlocks: []int{1024}, Policies: []string{"round-robin", "session"}, Base: c}
			res, err := Run(t.Context(), tr, sw, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep := NewReport(tr, Stats(tr), sw, res)
			f := rep.Fleets[0]
			var sess *Result
			for i := range f.Results {
				if f.Results[i].Policy == "session" {
					sess = &f.Results[i]
				}
			}
			if sess == nil || sess.LoadMaxOverMean != 4 || math.Abs(sess.HotWaited-tc.waited) > 1e-9 {
				t.Fatalf("session: %+v, want load max/mean 4 and %v of the busiest replica's requests waiting", sess, tc.waited)
			}
			if got := LoadOf(*sess, tr).HotSpot(HotSpotRatio); got != tc.hot {
				t.Errorf("hot spot %v, want %v", got, tc.hot)
			}
			if f.Best != tc.best || (len(f.HotSpots) > 0) != tc.hot {
				t.Errorf("best %q, hot spots %v: want %s", f.Best, f.HotSpots, tc.best)
			}
			if tc.best == "session" && sess.PrefillSaved < 0.5 {
				t.Errorf("session saves %.2f of round-robin's prefill, want over half", sess.PrefillSaved)
			}
			if len(rep.Findings) != 1 || rep.Findings[0].Code != tc.code || rep.Findings[0].Subject != "session@4x1024" {
				t.Errorf("findings %+v, want one %s on session@4x1024", rep.Findings, tc.code)
			}
		})
	}
}
