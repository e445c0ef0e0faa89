package promql

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// Every name hitrate reads must be in the metric catalog: that is where its history comes from.
func TestNamesFromCatalog(t *testing.T) {
	want := map[string]Generation{
		"vllm:prefix_cache_queries_total":          Current,
		"vllm:gpu_prefix_cache_queries_total":      Deprecated,
		"vllm:prefix_cache_hits_total":             Current,
		"vllm:gpu_prefix_cache_hits_total":         Deprecated,
		"vllm:external_prefix_cache_queries_total": Current,
		"vllm:external_prefix_cache_hits_total":    Current,
		"vllm:num_preemptions_total":               Current,
		"vllm:request_success_total":               Current,
		"vllm:kv_cache_usage_perc":                 Current,
		"vllm:gpu_cache_usage_perc":                Deprecated,
		"vllm:num_requests_running":                Current,
		"vllm:num_requests_waiting":                Current,
		"vllm:gpu_prefix_cache_hit_rate":           V0,
		"vllm:cpu_prefix_cache_hit_rate":           V0,
	}
	got := map[string]Generation{}
	for _, mn := range names() {
		t.Run(mn.name, func(t *testing.T) {
			if mn.meta == nil {
				t.Fatalf("%s is not in the metric catalog", mn.name)
			}
			if mn.meta.Source != catalog.Engine {
				t.Errorf("catalog source %s, want engine", mn.meta.Source)
			}
			if got, want := mn.counter, strings.HasSuffix(mn.name, "_total"); got != want {
				t.Errorf("counter = %v from the catalog's type %s, want %v", got, mn.meta.Type, want)
			}
			if mn.gen != Current && mn.life() == "" {
				t.Errorf("old name without a life cycle in the catalog")
			}
		})
		got[mn.name] = mn.gen
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generations (-want +got):\n%s", diff)
	}
}

// The old-name finding takes its versions, replacements and unit notes from the catalog
// (SPEC §3.3), and says what the names are at the replica's version when it is known.
func TestOldNameFindingText(t *testing.T) {
	old := []string{"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"}
	oldOnly := func(version string) Observation {
		o := counters("r", 1000, 500)
		o.Generation, o.Version = Deprecated, version
		o.OldNames, o.Exported = old, old
		return o
	}
	cpuGauge := counters("r", 1000, 500)
	cpuGauge.OldNames = []string{"vllm:cpu_prefix_cache_hit_rate"}
	usage := counters("r", 1000, 500)
	usage.OldNames = []string{"vllm:gpu_cache_usage_perc"}
	usage.Exported = append(usage.Exported, "vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc")
	tests := []struct {
		name     string
		o        Observation
		severity finding.Severity
		want     []string
		not      []string
	}{
		{"version unknown", oldOnly(""), finding.Warning, []string{
			"exports old metric names, deprecated in vLLM 0.9.2, hidden in 0.11.0, removed in 0.12.0: ",
			"vllm:gpu_prefix_cache_queries_total (use vllm:prefix_cache_queries_total)",
			"vllm:gpu_prefix_cache_hits_total (use vllm:prefix_cache_hits_total)",
			"gpu_prefix_cache_queries_total and gpu_prefix_cache_hits_total counted blocks in 0.7.3-0.8.5, tokens from 0.9.0",
		}, []string{"this replica runs"}},
		{"deprecated at 0.10.1", oldOnly("0.10.1"), finding.Warning, []string{
			"this replica runs vLLM 0.10.1, where they are deprecated: dashboards and alerts on them go blank from 0.11.0",
		}, []string{"counted blocks", "count blocks"}},
		{"hidden at 0.11.1", oldOnly("0.11.1"), finding.Warning, []string{
			"where they are hidden: it must run with --show-hidden-metrics-for-version, and they are gone in 0.12.0",
		}, nil},
		{"counting blocks at 0.8.4", oldOnly("0.8.4"), finding.Warning, []string{
			"this replica runs vLLM 0.8.4, before their deprecation: upgrading it to 0.11.0 or later blanks dashboards and alerts on them",
			"gpu_prefix_cache_queries_total and gpu_prefix_cache_hits_total count blocks at vLLM 0.8.4, not tokens",
		}, nil},
		{"V0 gauge beside V1 counters", cpuGauge, finding.Warning, []string{
			"V0 engine only: deprecated in vLLM 0.8.0, hidden in 0.8.3, removed in 0.9.1",
			"vllm:cpu_prefix_cache_hit_rate (use rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m]) for V1's one local prefix cache, or rate(vllm:external_prefix_cache_hits_total[5m])",
		}, nil},
		{"replacement exported too", usage, finding.Info, []string{
			"vllm:gpu_cache_usage_perc (use vllm:kv_cache_usage_perc)",
		}, []string{"counted blocks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []finding.Finding
			oldNameFindings(tt.o, func(s finding.Severity, code, replica, format string, args ...any) {
				got = append(got, finding.Finding{Severity: s, Code: code, Subject: replica, Message: fmt.Sprintf(format, args...)})
			})
			if len(got) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(got), got)
			}
			if got[0].Severity != tt.severity || got[0].Code != "old-metric-name" {
				t.Errorf("got %s %s, want %s old-metric-name", got[0].Severity, got[0].Code, tt.severity)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("message lacks %q:\n%s", w, got[0].Message)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got[0].Message, n) {
					t.Errorf("message has %q:\n%s", n, got[0].Message)
				}
			}
		})
	}
}

func TestVersionBounds(t *testing.T) {
	tests := []struct {
		name     string
		exported []string
		want     string
	}{
		{"current counters", []string{"vllm:prefix_cache_queries_total", "vllm:num_preemptions_total"}, ">=0.9.2"},
		{"both generations", []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}, ">=0.9.2 <0.11.0"},
		{"old counters", []string{"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_cache_usage_perc"}, ">=0.7.3 <0.11.0"},
		{"V0 gauges", []string{"vllm:gpu_prefix_cache_hit_rate", "vllm:num_requests_swapped"}, "<0.8.3"},
		{"prompt tokens by source", []string{"vllm:prefix_cache_hits_total", "vllm:prompt_tokens_by_source_total"}, ">=0.16.0"},
		{"external tier", []string{"vllm:external_prefix_cache_hits_total"}, ">=0.11.1"},
		{"names that tell nothing", []string{"vllm:num_requests_running", "vllm:not_a_metric"}, ""},
		{"a counter's family name is not exposed", []string{"vllm:prompt_tokens_by_source"}, ""},
		{"contradictory names claim nothing", []string{"vllm:gpu_prefix_cache_hit_rate", "vllm:prompt_tokens_by_source_total"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rangeText(versionBounds(tt.exported)); got != tt.want {
				t.Errorf("range = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"0.10.1", "0.10.1", true},
		{"v0.11.0rc1", "0.11.0", true},
		{"0.10.1.1+cu126", "0.10.1", true},
		{"0.9", "0.9.0", true},
		{"main", "", false},
		{"", "", false},
		{"0.0", "", false},
	}
	for _, tt := range tests {
		v, ok := parseVersion(tt.in)
		if ok != tt.ok || v.String() != tt.want {
			t.Errorf("parseVersion(%q) = %q, %v; want %q, %v", tt.in, v, ok, tt.want, tt.ok)
		}
	}
}

// A version label on the series (added by relabelling) dates the replica exactly.
func TestAssembleVersionLabel(t *testing.T) {
	pts := []point{
		{name: configInfo, labels: map[string]string{"pod": "a", "block_size": "16", "vllm_version": "0.10.1"}, value: 1},
		{name: "vllm:prefix_cache_queries_total", labels: map[string]string{"pod": "a"}, value: 100},
		{name: "vllm:prefix_cache_queries_total", labels: map[string]string{"pod": "b", "version": "not-a-version"}, value: 100},
	}
	asm := assemble(slices.Values(pts), grouping{}, 60)
	type v struct{ Replica, Version, From, Range string }
	var got []v
	for _, o := range asm.obs {
		got = append(got, v{o.Replica, o.Version, o.VersionFrom, rangeText(o.VersionMin, o.VersionBefore)})
	}
	want := []v{{"a", "0.10.1", "label", ">=0.9.2"}, {"b", "", "", ">=0.9.2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}
