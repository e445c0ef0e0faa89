package promql

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
)

func counters(name string, queries, hits float64) Observation {
	return Observation{Replica: name, Window: 60, Queries: &queries, Hits: &hits, Generation: Current,
		QueriesName: "vllm:prefix_cache_queries_total", HitsName: "vllm:prefix_cache_hits_total",
		Exported: []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"}}
}

type codeAt struct {
	Code     string
	Replica  string
	Severity finding.Severity
}

func codes(rep Report) []codeAt {
	out := []codeAt{}
	for _, x := range rep.Findings {
		out = append(out, codeAt{x.Code, x.Subject, x.Severity})
	}
	return out
}

func TestFindings(t *testing.T) {
	on, off := true, false
	pressured := counters("p", 1000, 500)
	pressured.Preemptions, pressured.Requests = f(5), f(100)
	full := counters("k", 1000, 500)
	full.KVUsage = f(0.95)
	full.Version = "0.10.1"
	both := counters("both", 1000, 500)
	both.OldNames = []string{"vllm:gpu_prefix_cache_hits_total"}
	both.Exported = append(both.Exported, "vllm:gpu_prefix_cache_hits_total")
	oldOnly := counters("old", 1000, 500)
	oldOnly.Generation = Deprecated
	oldOnly.OldNames = []string{"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"}
	oldOnly.Exported = oldOnly.OldNames
	v0 := Observation{Replica: "v0", Generation: V0, GaugeHitRate: f(0.3), OldNames: []string{"vllm:gpu_prefix_cache_hit_rate"}}
	idle := counters("idle", 0, 0)
	caching := counters("c", 0, 0)
	caching.PrefixCaching = &off
	reset := counters("r", 100, 10)
	reset.Resets = []string{"vllm:prefix_cache_queries_total"}
	healthy := counters("h", 1000, 500)
	healthy.PrefixCaching = &on
	queriesOnly := counters("q", 1000, 0)
	queriesOnly.Hits, queriesOnly.HitsName = nil, ""
	tests := []struct {
		name string
		in   Input
		want []codeAt
	}{
		{"healthy pair", Input{Mode: ModeRate, Observations: []Observation{healthy, counters("h2", 1000, 450)}}, []codeAt{}},
		{"single replica", Input{Observations: []Observation{healthy}}, []codeAt{{"single-replica", "h", finding.Info}}},
		{"preemptions", Input{Observations: []Observation{pressured, healthy}}, []codeAt{{"kv-pressure", "p", finding.Warning}}},
		{"kv full", Input{Observations: []Observation{full, healthy}}, []codeAt{{"kv-pressure", "k", finding.Warning}}},
		{"old names beside new ones", Input{Observations: []Observation{both, healthy}}, []codeAt{{"old-metric-name", "both", finding.Info}}},
		{"old names only", Input{Observations: []Observation{oldOnly, healthy}}, []codeAt{{"old-metric-name", "old", finding.Warning}}},
		{"v0 gauges", Input{Observations: []Observation{v0, healthy}}, []codeAt{{"v0-gauges-only", "v0", finding.Warning}}},
		{"idle", Input{Observations: []Observation{idle, healthy}}, []codeAt{{"no-queries", "idle", finding.Warning}}},
		{"caching off", Input{Observations: []Observation{caching, healthy}}, []codeAt{{"prefix-caching-off", "c", finding.Error}}},
		{"reset", Input{Observations: []Observation{reset, healthy}}, []codeAt{{"counter-reset", "r", finding.Warning}}},
		{"cold and hot", Input{Observations: []Observation{counters("a", 100, 50), counters("b", 100, 52), counters("c", 100, 10), counters("d", 100, 90), counters("e", 100, 49)}},
			[]codeAt{{"replica-cold", "c", finding.Warning}, {"replica-hot", "d", finding.Warning}}},
		{"down and router", Input{Observations: []Observation{healthy, healthy}, Down: []Down{{"x:1", "refused"}}, Routers: []string{"r"}},
			[]codeAt{{"target-down", "x:1", finding.Error}, {"router-series", "", finding.Info}}},
		// Two targets, one refused: a down target, not a fleet of one.
		{"one read, one down", Input{Observations: []Observation{healthy}, Down: []Down{{"x:2", "refused"}}},
			[]codeAt{{"target-down", "x:2", finding.Error}}},
		{"queries without hits", Input{Observations: []Observation{queriesOnly, healthy}}, []codeAt{{"missing-counter", "q", finding.Warning}}},
		{"server warning", Input{Inputs: []string{"http://p"}, Observations: []Observation{healthy, healthy}, Warnings: []ServerWarning{{"partial response", []string{"counters"}}}},
			[]codeAt{{"server-warning", "", finding.Warning}}},
		{"lifetime", Input{Mode: ModeLifetime, Observations: []Observation{healthy, healthy}}, []codeAt{{"lifetime-totals", "", finding.Info}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := codes(Analyze(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPressureNoteNamesVersion(t *testing.T) {
	v := func(s string) catalog.Version {
		x, err := catalog.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	tests := []struct {
		name string
		o    Observation
		want string
	}{
		{"reported old", Observation{Version: "0.10.1"}, "this replica runs vLLM 0.10.1: before vLLM 0.11 (PR #25787)"},
		{"reported new", Observation{Version: "0.25.1"}, "this replica runs vLLM 0.25.1: since vLLM 0.11"},
		{"reported with a build suffix", Observation{Version: "0.11.0rc2+cu128"}, "this replica runs vLLM 0.11.0rc2+cu128: since vLLM 0.11"},
		{"dated old by its names", Observation{VersionMin: v("0.9.2"), VersionBefore: v("0.11.0")}, "its metric names date it before vLLM 0.11.0: before vLLM 0.11"},
		{"dated new by its names", Observation{VersionMin: v("0.16.0")}, "its metric names date it at vLLM 0.16.0 or later: since vLLM 0.11"},
		{"a range across the fix", Observation{VersionMin: v("0.9.2"), VersionBefore: v("0.12.0")}, "before vLLM 0.11 (PR #25787)"},
		{"unknown", Observation{}, "before vLLM 0.11 (PR #25787)"},
		{"garbage version", Observation{Version: "main"}, "before vLLM 0.11 (PR #25787)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pressureVersionNote(tt.o); !strings.HasPrefix(got, tt.want) {
				t.Errorf("pressureVersionNote = %q, want prefix %q", got, tt.want)
			}
		})
	}
}

func TestFleetFigures(t *testing.T) {
	rep := Analyze(Input{Mode: ModeRate, Window: 60, Observations: []Observation{counters("a", 3000, 2400), counters("b", 1000, 200)}})
	fl := rep.Fleet
	if got, want := *fl.HitRate, 2600.0/4000; got != want {
		t.Errorf("token-weighted hit rate = %v, want %v", got, want)
	}
	if *fl.MinHitRate != 0.2 || *fl.MaxHitRate != 0.8 {
		t.Errorf("spread = %v..%v, want 0.2..0.8", *fl.MinHitRate, *fl.MaxHitRate)
	}
	if got, want := *fl.HitRateCV, 0.3/0.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("CV = %v, want %v", got, want)
	}
	if got, want := *fl.QueriesPerSec, 4000.0/60; math.Abs(got-want) > 1e-9 {
		t.Errorf("fleet queries/s = %v, want %v", got, want)
	}
	if rep.Fleet.HitRateWeighting != "tokens" {
		t.Errorf("weighting = %q, want tokens", rep.Fleet.HitRateWeighting)
	}
}

func TestEmptyListsNotNil(t *testing.T) {
	rep := Analyze(Input{})
	for name, isNil := range map[string]bool{
		"replicas": rep.Replicas == nil, "findings": rep.Findings == nil, "down": rep.Down == nil,
		"router_series": rep.RouterSeries == nil, "inputs": rep.Inputs == nil,
	} {
		if isNil {
			t.Errorf("%s is nil, want an empty list", name)
		}
	}
}

func TestAssembleGenerations(t *testing.T) {
	pts := []point{
		{name: "vllm:prefix_cache_queries_total", labels: map[string]string{"pod": "a", "engine": "0"}, value: 100},
		{name: "vllm:prefix_cache_hits_total", labels: map[string]string{"pod": "a", "engine": "0"}, value: 50},
		{name: "vllm:gpu_prefix_cache_queries_total", labels: map[string]string{"pod": "a", "engine": "0"}, value: 100},
		{name: "vllm:gpu_prefix_cache_queries_total", labels: map[string]string{"pod": "b"}, value: 10},
		{name: "vllm:gpu_prefix_cache_hits_total", labels: map[string]string{"pod": "b"}, value: 5},
		{name: "vllm:gpu_prefix_cache_hit_rate", labels: map[string]string{"pod": "c"}, value: -1},
		{name: "vllm:kv_cache_usage_perc", labels: map[string]string{"pod": "a", "engine": "0"}, value: 0.2},
		{name: "vllm:kv_cache_usage_perc", labels: map[string]string{"pod": "a", "engine": "1"}, value: 0.4},
		{name: "vllm:num_requests_running", labels: map[string]string{"server": "r1"}, value: 3},
	}
	asm := assemble(slices.Values(pts), grouping{}, 60)
	var gens []Generation
	for _, o := range asm.obs {
		gens = append(gens, o.Generation)
	}
	if diff := cmp.Diff([]Generation{Current, Deprecated, V0}, gens); diff != "" {
		t.Errorf("generations of a, b, c (-want +got):\n%s", diff)
	}
	if got := *asm.obs[0].KVUsage; math.Abs(got-0.3) > 1e-12 {
		t.Errorf("KV usage of a = %v, want the engines' mean 0.3", got)
	}
	if !slices.Equal(asm.routers, []string{"r1"}) {
		t.Errorf("routers = %v, want [r1]", asm.routers)
	}
	if asm.obs[2].GaugeHitRate != nil {
		t.Errorf("V0 gauge -1 gave hit rate %v, want none", *asm.obs[2].GaugeHitRate)
	}
}

func TestGroupingKey(t *testing.T) {
	l := map[string]string{"pod": "p", "instance": "10.0.0.1:8000", "engine": "1", "namespace": "prod"}
	noPod := map[string]string{"instance": "10.0.0.1:8000", "engine": "1"}
	bare := map[string]string{"engine": "1"}
	tests := []struct {
		name string
		g    grouping
		l    map[string]string
		want string
	}{
		{"pod wins", grouping{}, l, "p"},
		{"else instance", grouping{}, noPod, "10.0.0.1:8000"},
		{"else the target", grouping{fallback: "t:1"}, bare, "t:1"},
		{"by engine splits the detected replica", grouping{by: []string{"engine"}}, l, "p/1"},
		{"by engine on a scrape target", grouping{by: []string{"engine"}, fallback: "t:1"}, bare, "t:1/1"},
		{"custom labels", grouping{by: []string{"namespace", "pod"}}, l, "prod/p"},
		{"custom label missing", grouping{by: []string{"kubernetes_pod_name"}, fallback: "t:1"}, bare, "t:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.key(tt.l); got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConfigWithoutEngine checks that a vllm:cache_config_info series without an engine label
// gives its settings to the replica's engine rows under --by ...,engine instead of a row of
// its own.
func TestConfigWithoutEngine(t *testing.T) {
	cfg := map[string]string{"instance": "h:1", "block_size": "32", "enable_prefix_caching": "True"}
	points := []point{{name: configInfo, labels: cfg, value: 1}}
	for _, e := range []string{"0", "1"} {
		l := map[string]string{"instance": "h:1", "engine": e, "model_name": "m"}
		points = append(points,
			point{name: "vllm:prefix_cache_queries_total", labels: l, value: 100},
			point{name: "vllm:prefix_cache_hits_total", labels: l, value: 50})
	}
	for _, by := range [][]string{{"instance", "engine"}, {"engine"}} {
		t.Run(strings.Join(by, ","), func(t *testing.T) {
			type row struct {
				Replica       string
				BlockSize     int
				PrefixCaching *bool
			}
			var got []row
			for _, o := range assemble(slices.Values(points), grouping{by: by}, 60).obs {
				got = append(got, row{o.Replica, o.BlockSize, o.PrefixCaching})
			}
			on := true
			want := []row{{"h:1/0", 32, &on}, {"h:1/1", 32, &on}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNumGPUBlocks checks that num_gpu_blocks from vllm:cache_config_info reaches the replica
// (also when the series has no engine label). hitrate's JSON does not show it (report's
// TestHitrateJSONEveryField).
func TestNumGPUBlocks(t *testing.T) {
	points := []point{{name: configInfo, labels: map[string]string{"instance": "h:1", "block_size": "16", "num_gpu_blocks": "4096"}, value: 1}}
	for _, e := range []string{"0", "1"} {
		l := map[string]string{"instance": "h:1", "engine": e}
		points = append(points, point{name: "vllm:prefix_cache_queries_total", labels: l, value: 100})
	}
	for _, by := range [][]string{{"instance"}, {"instance", "engine"}} {
		t.Run(strings.Join(by, ","), func(t *testing.T) {
			rep := Analyze(Input{Mode: ModeRate, Observations: assemble(slices.Values(points), grouping{by: by}, 60).obs})
			if len(rep.Replicas) == 0 {
				t.Fatal("no replicas")
			}
			for _, r := range rep.Replicas {
				if r.NumGPUBlocks == nil || *r.NumGPUBlocks != 4096 {
					t.Errorf("%s: NumGPUBlocks = %v, want 4096", r.Replica, r.NumGPUBlocks)
				}
			}
		})
	}
}

// TestIncomplete: a report with every input read is a success; one missing one of three inputs
// says 1 of 3.
func TestIncomplete(t *testing.T) {
	if err := (Report{Replicas: []Replica{{}, {}}}).Incomplete(); err != nil {
		t.Errorf("every input read: %v, want nil", err)
	}
	err := (Report{Replicas: []Replica{{}, {}}, Down: []Down{{Target: "b:8000", Error: "refused"}}}).Incomplete()
	if err == nil || !strings.HasPrefix(err.Error(), "1 of 3 inputs could not be read") {
		t.Errorf("one of three down: %v, want 1 of 3 inputs could not be read", err)
	}
}
