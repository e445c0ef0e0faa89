package lint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
)

const fixtures = "../../testdata/lint"

func newLinter(t testing.TB, target string) *Linter {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	var v catalog.Version
	if target != "" {
		if v, err = catalog.ParseVersion(target); err != nil {
			t.Fatal(err)
		}
	}
	return New(cat, Options{Target: v, Rewrite: true, Refs: true})
}

// got is the part of a finding the expectations pin down.
type got struct {
	Line     int
	Status   string
	Metric   string
	Location string
	Fixable  bool
}

func summarize(fs []Finding) []got {
	out := []got{}
	for _, f := range fs {
		out = append(out, got{f.Line, f.Status, f.Metric, f.Location, f.Fixable()})
	}
	return out
}

const (
	rm    = StatusRemoved
	unk   = StatusUnknown
	drift = StatusLabelDrift
	qry   = StatusQuery
)

// TestFixtures lists, for each fixture, every finding a careful reader would list.
func TestFixtures(t *testing.T) {
	tests := []struct {
		file    string
		formats []Format
		want    []got
	}{
		{"grafana_rows.json", []Format{FormatGrafana}, []got{
			{12, rm, "vllm:num_requests_swapped", `panel "Shared queue panel" query A`, false}, // library panel model in __elements
			{28, rm, "vllm:gpu_cache_usage_perc", `panel "KV usage" query A`, true},            // inside a collapsed row
			{29, rm, "vllm:gpu_cache_usage_perc", `panel "KV usage" query B`, true},            // in a range: still a rename
			{39, rm, "vllm:gpu_prefix_cache_hit_rate", `panel "Hit rate" query A`, true},       // expression rewrite
			{40, rm, "vllm:gpu_prefix_cache_hits_total", `panel "Hit rate" query B`, true},
			{40, rm, "vllm:gpu_prefix_cache_queries_total", `panel "Hit rate" query B`, true},
			{41, unk, "vllm:num_preemptions", `panel "Hit rate" query C`, true}, // counter without _total
			{42, drift, "vllm:num_requests_waiting", `panel "Hit rate" query D`, false},
			{44, unk, "vllm:prompt_token_total", `panel "Hit rate" query F`, false}, // a typo
			{45, rm, "ray_vllm_gpu_cache_usage_perc", `panel "Hit rate" query G`, true},
			{46, rm, "vllm:(gpu|cpu)_cache_usage_perc", `panel "Hit rate" query H`, false}, // regex matching only removed names
			{47, rm, "vllm:time_per_output_token_seconds_count", `panel "Hit rate" query I`, true},
			{69, StatusUnparsed, "sum(rate(vllm:prompt_tokens_total[5m])", `panel "Broken" query A`, false},
			{78, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Legacy TPOT" query A`, true}, // old "rows"
			{84, rm, "vllm:gpu_cache_usage_perc", `variable "model"`, true},                            // label_values
			{85, rm, "vllm:num_requests_swapped", `variable "job"`, false},                             // query_result
		}},
		{"clean_grafana.json", []Format{FormatGrafana}, []got{}},
		{"grafana_variables.json", []Format{FormatGrafana}, []got{
			{5, drift, "vllm:generation_tokens_total", `variable "model"`, false}, // label_values(..., model)
			{6, drift, "vllm:num_requests_running", `variable "m2"`, false},       // one finding: the matcher
			// The router's counter is labelled model; label_values(model) names no metric.
		}},
		{"grafana_overrides.json", []Format{FormatGrafana}, []got{
			{7, rm, "vllm:gpu_cache_usage_perc", `panel "KV" override 0`, true}, // legend isolation
			{9, rm, "vllm:num_requests_swapped", `panel "KV" override 1`, false},
			{15, rm, "vllm:gpu_cache_usage_perc", `panel "KV" query A`, true},
		}},
		{"gcm.json", []Format{FormatGCM}, []got{
			{12, rm, "vllm:gpu_cache_usage_perc", `widget "KV cache usage"`, true},
		}},
		{"rules.yaml", []Format{FormatRules}, []got{
			{6, rm, "vllm:gpu_cache_usage_perc", `record "vllm:kv_usage:max"`, true},
			{10, rm, "vllm:num_requests_swapped", `alert "VLLMQueueBuilding"`, false},
			{13, rm, "vllm:time_per_output_token_seconds_bucket", `alert "VLLMSlowTokens"`, true},
			{15, rm, "vllm:gpu_prefix_cache_hit_rate", `alert "VLLMLowHitRate"`, true},
		}},
		{"prometheusrule.yaml", []Format{FormatRules}, []got{}},
		{"grouping.yaml", []Format{FormatRules}, []got{
			{6, drift, "vllm:num_requests_waiting", `alert "QueuePerModel"`, false},
			{8, drift, "vllm:prompt_tokens_total", `alert "TokensAcrossModels"`, false},
			{10, drift, "vllm:num_requests_running", `alert "BusyAndQueued"`, false},
			{12, drift, "vllm:num_requests_waiting", `alert "MatcherFirst"`, false}, // one finding: the matcher
		}},
		{"keda.yaml", []Format{FormatKEDA}, []got{
			{12, drift, "vllm:num_requests_waiting", "trigger 0", false},
			{17, rm, "vllm:gpu_cache_usage_perc", "trigger 1", true},
		}},
		{"hpa.yaml", []Format{FormatHPA, FormatHPA}, []got{
			{14, rm, "prometheus.googleapis.com|vllm:gpu_cache_usage_perc|gauge", "document 1: metric 0", true},
			{33, rm, "vllm_num_requests_swapped", "document 2: metric 0", false},
		}},
		{"adapter.yaml", []Format{FormatAdapter}, []got{
			{3, rm, "^vllm:gpu_cache_usage_perc$", "rule 0", false},
		}},
		{"aibrix.yaml", []Format{FormatAIBrix}, []got{
			{10, rm, "gpu_cache_usage_perc", "metricsSources 0", true},
		}},
		{"perses.yaml", []Format{FormatPerses}, []got{
			{15, rm, "vllm:gpu_cache_usage_perc", `variable "model"`, true},
			{28, rm, "vllm:gpu_cache_usage_perc", `panel "cache"`, true},
		}},
		{"configmap.yaml", []Format{FormatYAML, FormatYAML}, []got{
			{15, rm, "vllm:gpu_cache_usage_perc", `document 1: /data/vllm.json: panel "KV cache" query A`, true},
			{16, rm, "vllm:gpu_prefix_cache_hit_rate", `document 1: /data/vllm.json: panel "KV cache" query B`, true},
			{21, rm, "vllm:gpu_cache_usage_perc", `document 1: /data/small.json: panel "T" query A`, true}, // double-quoted
			{29, rm, "vllm:num_requests_swapped", `document 2: /spec/json: panel "Queue"`, false},          // folded
		}},
		{"config.json", []Format{FormatJSON}, []got{
			{3, rm, "vllm:gpu_cache_usage_perc", "/autoscaler/metric", true},
			{4, rm, "ray_vllm_num_requests_swapped", "/autoscaler/fallback/0", false},
			{6, rm, "vllm:gpu_prefix_cache_hit_rate", "/autoscaler/expr", true},
		}},
		{"values.yaml", []Format{FormatYAML}, []got{
			{4, rm, "vllm:gpu_cache_usage_perc", "/autoscaling/metric", true},
			{7, rm, "ray_vllm_num_requests_swapped", "/autoscaling/fallbackMetrics/0", false},
			{15, rm, "vllm:gpu_cache_usage_perc", `alert "KV"`, true},
		}},
		{"helm-rules.yaml", []Format{FormatHelmTemplate}, []got{
			// YAML once its {{ }} actions are masked: queries are parsed and checked.
			{1, StatusSkipped, "", "", false},
			{11, rm, "vllm:gpu_cache_usage_perc", `alert "KVFull"`, true},
			{13, unk, "vllm:num_preemptions", `alert "Waiting"`, true},
			{19, drift, "vllm:num_preemptions_total", `alert "Preempting"`, false},
			// The rewrite would carry the masked namespace into the expression: left alone.
			{21, rm, "vllm:gpu_prefix_cache_hit_rate", `alert "LowHitRate"`, false},
			// A range filled in by the chart does not parse masked: info, not a warning.
			{23, StatusUnparsed, "rate(vllm:num_preemptions_total[{{ .Values.window }}]) > 0", `alert "Templated"`, false},
		}},
		{"runbook.md", []Format{FormatText}, []got{
			{3, rm, "vllm:gpu_cache_usage_perc", "line 3", true},
			{4, rm, "vllm:num_requests_swapped", "line 4", false},
		}},
	}
	l := newLinter(t, "")
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(fixtures, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := l.File(tt.file, src)
			if diff := cmp.Diff(tt.formats, r.Formats); diff != "" {
				t.Errorf("formats (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, summarize(r.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFixRelint rewrites every fixture and lints the result: it must still parse, and only
// the findings without an exact rewrite may remain.
func TestFixRelint(t *testing.T) {
	l := newLinter(t, "")
	entries, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(fixtures, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			checkFix(t, l, e.Name(), src)
		})
	}
}

// checkFix applies the fixes of one file and checks the result.
func checkFix(t *testing.T, l *Linter, name string, src []byte) {
	t.Helper()
	before := l.File(name, src)
	var fixable []got
	var rest []got
	for _, f := range before.Findings {
		g := got{Status: f.Status, Metric: f.Metric, Location: f.Location}
		if f.Status == StatusQuery {
			g.Metric = "" // a query finding stays after --fix, about the renamed series
		}
		if f.Fixable() {
			fixable = append(fixable, g)
			if !f.Fixed {
				t.Errorf("%s: fixable finding not fixed: %+v", name, g)
			}
		} else {
			rest = append(rest, g)
		}
	}
	if len(fixable) == 0 {
		if before.Fixed != nil {
			t.Errorf("%s: rewritten although nothing was fixable", name)
		}
		return
	}
	if before.Fixed == nil {
		t.Fatalf("%s: %d fixable findings but no rewrite", name, len(fixable))
	}
	assertParses(t, name, before.Formats, before.Fixed)
	after := l.File(name, before.Fixed)
	var left []got
	for _, f := range after.Findings {
		g := got{Status: f.Status, Metric: f.Metric, Location: f.Location}
		if f.Status == StatusQuery {
			g.Metric = ""
		}
		left = append(left, g)
	}
	if diff := cmp.Diff(rest, left); diff != "" {
		t.Errorf("%s: findings after --fix (-want +got):\n%s", name, diff)
	}
	if after.Fixed != nil {
		t.Errorf("%s: a second --fix would change the file again", name)
	}
	// Outside the rewritten strings, the file is byte for byte the same: the line count and
	// every line without a finding are unchanged.
	bl, al := bytes.Split(src, []byte("\n")), bytes.Split(before.Fixed, []byte("\n"))
	if len(bl) != len(al) {
		t.Errorf("%s: line count %d -> %d", name, len(bl), len(al))
		return
	}
	changed := map[int]bool{}
	for _, f := range before.Findings {
		changed[f.Line] = true
	}
	for i := range bl {
		if !bytes.Equal(bl[i], al[i]) && !changed[i+1] && !isMirrorLine(bl[i]) {
			t.Errorf("%s: line %d changed without a finding:\n- %s\n+ %s", name, i+1, bl[i], al[i])
		}
	}
}

// isMirrorLine recognises Grafana's definition, rewritten along with its variable query.
func isMirrorLine(b []byte) bool { return bytes.Contains(b, []byte(`"definition"`)) }

func assertParses(t *testing.T, name string, formats []Format, b []byte) {
	t.Helper()
	switch formats[0] {
	case FormatGrafana, FormatGCM, FormatJSON:
		if !json.Valid(b) {
			t.Errorf("%s: fixed output is not valid JSON", name)
		}
	case FormatText, FormatHelmTemplate:
	default:
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: fixed output is not valid YAML: %v", name, err)
				break
			}
		}
	}
}

// corpusExpect is what a careful engineer lists for each real file, by hand: the metric as
// written, its status and where.
var corpusExpect = map[string][]got{
	"dashboards/vllm_grafana_900edbfa_v0-era.json": {
		{405, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query A`, true},
		{421, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query B`, true},
		{438, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query C`, true},
		{455, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query D`, true},
		{471, rm, "vllm:time_per_output_token_seconds_sum", `panel "Time Per Output Token Latency" query E`, true},
		{471, rm, "vllm:time_per_output_token_seconds_count", `panel "Time Per Output Token Latency" query E`, true},
		{587, rm, "vllm:num_requests_swapped", `panel "Scheduler State" query B`, false},
		{872, rm, "vllm:gpu_cache_usage_perc", `panel "Cache Utilization" query A`, true},
		{884, rm, "vllm:cpu_cache_usage_perc", `panel "Cache Utilization" query B`, false},
	},
	"dashboards/vllm_grafana_7e094105_kv_cache.json":       {},
	"dashboards/llmd_llm-d-vllm-overview_post-v1-fix.json": {},
	"dashboards/prodstack_vllm-dashboard_pre-rename.json": {
		// avg(x_sum) / avg(x_count): the mean latency since each server started, not of the
		// last minutes; the panel says "Average Latency" and moves less every hour.
		{161, qry, "vllm:e2e_request_latency_seconds_sum", `panel "Average Latency" query A`, false},
		{161, qry, "vllm:e2e_request_latency_seconds_count", `panel "Average Latency" query A`, false},
		{372, rm, "vllm:time_per_output_token_seconds_sum", `panel "Average ITL" query A`, true},
		{372, qry, "vllm:time_per_output_token_seconds_sum", `panel "Average ITL" query A`, false},
		{372, rm, "vllm:time_per_output_token_seconds_count", `panel "Average ITL" query A`, true},
		{372, qry, "vllm:time_per_output_token_seconds_count", `panel "Average ITL" query A`, false},
		{732, rm, "vllm:gpu_cache_usage_perc", `panel "GPU KV Usage Percentage" query A`, true},
		// hits_total / queries_total without rate: the lifetime hit rate, which hides a cache
		// that stopped hitting an hour ago.
		{825, rm, "vllm:gpu_prefix_cache_hits_total", `panel "GPU KV Cache Hit Rate" query A`, true},
		{825, qry, "vllm:gpu_prefix_cache_hits_total", `panel "GPU KV Cache Hit Rate" query A`, false},
		{825, rm, "vllm:gpu_prefix_cache_queries_total", `panel "GPU KV Cache Hit Rate" query A`, true},
		{825, qry, "vllm:gpu_prefix_cache_queries_total", `panel "GPU KV Cache Hit Rate" query A`, false},
		{892, rm, "vllm:num_requests_swapped", `panel "Number of Swapped Requests" query A`, false},
		{998, rm, "vllm:gpu_cache_usage_perc", `panel "GPU Cache Usage (%)" query A`, true},
		// vllm:healthy_pods_total and vllm:current_qps are the router's, router_*_percent
		// are not vLLM's: no finding.
	},
	"dashboards/aibrix_AIBrix_vLLM_Engine_Dashboard.json": {
		{1114, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query A`, true},
		{1130, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query B`, true},
		{1147, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query C`, true},
		{1164, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query D`, true},
		{1180, rm, "vllm:time_per_output_token_seconds_sum", `panel "Time Per Output Token Latency" query F`, true},
		{1180, rm, "vllm:time_per_output_token_seconds_count", `panel "Time Per Output Token Latency" query F`, true},
		{1193, rm, "vllm:time_per_output_token_seconds_sum", `panel "Time Per Output Token Latency" query E`, true},
		{1193, rm, "vllm:time_per_output_token_seconds_count", `panel "Time Per Output Token Latency" query E`, true},
		{1540, rm, "vllm:num_requests_swapped", `panel "Scheduler State" query B`, false},
		{1660, rm, "vllm:gpu_prefix_cache_hit_rate", `panel "Prefix Cache Hit Rate" query A`, true},
		{1672, rm, "vllm:cpu_prefix_cache_hit_rate", `panel "Prefix Cache Hit Rate" query B`, false},
		{1772, rm, "vllm:gpu_cache_usage_perc", `panel "Cache Utilization" query A`, true},
		{1784, rm, "vllm:cpu_cache_usage_perc", `panel "Cache Utilization" query B`, false},
	},
	"dashboards/kubeai_vllm-grafana-dashboard.json": {
		// The second mention of gpu_cache_usage_perc is a legend-isolation override pinned to the
		// series' display name: renamed with the query, or the panel's graph hides every series.
		{97, rm, "vllm:gpu_cache_usage_perc", `panel "GPU Cache Usage" override 0`, true},
		{145, rm, "vllm:gpu_cache_usage_perc", `panel "GPU Cache Usage" query A`, true},
		{380, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query A`, true},
		{396, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query B`, true},
		{413, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query C`, true},
		{430, rm, "vllm:time_per_output_token_seconds_bucket", `panel "Time Per Output Token Latency" query D`, true},
		{446, rm, "vllm:time_per_output_token_seconds_sum", `panel "Time Per Output Token Latency" query E`, true},
		{446, rm, "vllm:time_per_output_token_seconds_count", `panel "Time Per Output Token Latency" query E`, true},
		{564, rm, "vllm:num_requests_swapped", `panel "Scheduler State" query B`, false},
	},
	// num_requests_waiting is current; metricName is only KEDA's label for it.
	"autoscaling/prodstack_keda-scaled-object.yaml": {},
	// vllm:num_incoming_requests_total is production-stack's router counter, labelled model.
	"autoscaling/prodstack_prom-adapter.yaml": {},
	// vllm_num_requests_waiting is the adapter's rename of a current metric.
	"autoscaling/prodstack_hpa-10.yaml": {},
	"autoscaling/aibrix_podautoscaler_hpa.yaml": {
		{18, rm, "gpu_cache_usage_perc", "metricsSources 0", true},
	},
}

func TestCorpus(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	l := newLinter(t, "")
	results, err := l.Paths(context.Background(), []string{filepath.Join(dir, "dashboards"), filepath.Join(dir, "autoscaling")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range results {
		rel, _ := filepath.Rel(dir, r.Path)
		want, ok := corpusExpect[rel]
		if !ok {
			t.Errorf("%s: no expectation written for this corpus file", rel)
			continue
		}
		seen[rel] = true
		t.Run(rel, func(t *testing.T) {
			if diff := cmp.Diff(want, summarize(r.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			checkFix(t, l, rel, r.Original)
		})
	}
	for f := range corpusExpect {
		if !seen[f] {
			t.Errorf("%s: expected in the corpus, not found", f)
		}
	}
}

func TestTargetVersion(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(fixtures, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type sv struct {
		Metric, Status, Since string
		Sev                   finding.Severity
	}
	tests := []struct {
		target string
		want   []sv
	}{
		{"0.8.2", []sv{
			{"vllm:num_requests_swapped", StatusDeprecated, "0.8.0", finding.Warning},
			{"vllm:gpu_prefix_cache_hit_rate", StatusDeprecated, "0.8.0", finding.Warning},
		}},
		{"0.10", []sv{
			{"vllm:gpu_cache_usage_perc", StatusDeprecated, "0.9.2", finding.Warning},
			{"vllm:num_requests_swapped", StatusRemoved, "0.9.1", finding.Error},
			{"vllm:gpu_prefix_cache_hit_rate", StatusRemoved, "0.9.1", finding.Error},
		}},
		{"0.11.0", []sv{
			{"vllm:gpu_cache_usage_perc", StatusHidden, "0.11.0", finding.Error},
			{"vllm:num_requests_swapped", StatusRemoved, "0.9.1", finding.Error},
			{"vllm:time_per_output_token_seconds_bucket", StatusDeprecated, "0.10.2", finding.Warning},
			{"vllm:gpu_prefix_cache_hit_rate", StatusRemoved, "0.9.1", finding.Error},
		}},
		{"0.13", []sv{
			{"vllm:gpu_cache_usage_perc", StatusRemoved, "0.12.0", finding.Error},
			{"vllm:num_requests_swapped", StatusRemoved, "0.9.1", finding.Error},
			{"vllm:time_per_output_token_seconds_bucket", StatusHidden, "0.12.0", finding.Error},
			{"vllm:gpu_prefix_cache_hit_rate", StatusRemoved, "0.9.1", finding.Error},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := newLinter(t, tt.target).File("rules.yaml", src)
			var gotv []sv
			for _, f := range r.Findings {
				gotv = append(gotv, sv{f.Metric, f.Status, f.Since, f.Severity})
			}
			if diff := cmp.Diff(tt.want, gotv); diff != "" {
				t.Errorf("at %s (-want +got):\n%s", tt.target, diff)
			}
		})
	}
	// The flag that shows hidden metrics names the minor release before the running one.
	for _, tt := range []struct{ target, metric, flag string }{
		{"0.11.0", "vllm:gpu_cache_usage_perc", "--show-hidden-metrics-for-version=0.10)"},
		{"0.13", "vllm:time_per_output_token_seconds_bucket", "--show-hidden-metrics-for-version=0.12)"},
		{"0.14.1", "vllm:time_per_output_token_seconds_bucket", "--show-hidden-metrics-for-version=0.13)"},
	} {
		var msg string
		for _, f := range newLinter(t, tt.target).File("rules.yaml", src).Findings {
			if f.Metric == tt.metric {
				msg = f.Message
			}
		}
		if !strings.Contains(msg, tt.flag) {
			t.Errorf("at %s, %s: message %q lacks %q", tt.target, tt.metric, msg, tt.flag)
		}
	}
	// A metric newer than the target is unknown there.
	r := newLinter(t, "0.9.0").File("q.yaml", []byte("groups: [{name: g, rules: [{record: r, expr: 'vllm:kv_cache_usage_perc'}]}]\n"))
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusUnknown || !strings.Contains(r.Findings[0].Message, "added in vLLM 0.9.2") {
		t.Errorf("kv_cache_usage_perc at 0.9.0: got %+v, want one unknown finding naming 0.9.2", r.Findings)
	}
}

func TestSubstituteVariables(t *testing.T) {
	tests := []struct {
		in, want, wantNumeric string
	}{
		{`rate(x[$__rate_interval])`, `rate(x[5m])`, `rate(x[5m])`},
		{`rate(x[${__interval}])`, `rate(x[5m])`, `rate(x[5m])`},
		{`x{a="$v"}`, `x{a="$v"}`, `x{a="$v"}`},
		{`x{a=~"${v:regex}|[[w]]"}`, `x{a=~"${v:regex}|[[w]]"}`, `x{a=~"${v:regex}|[[w]]"}`},
		{`sum by ($label) (x)`, `sum by (grafana_variable) (x)`, `sum by (1) (x)`},
		{`topk($n, x)`, `topk(grafana_variable, x)`, `topk(1, x)`},
		{`x / $__range_s`, `x / 1`, `x / 1`},
		{`[[metric]]{job="j"}`, `grafana_variable{job="j"}`, `1{job="j"}`},
		{`x offset $__interval`, `x offset 5m`, `x offset 5m`},
		{`rate(x[5m:$__interval])`, `rate(x[5m:5m])`, `rate(x[5m:5m])`},
		{`no variables`, `no variables`, `no variables`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := substituteVariables(tt.in, false).text; got != tt.want {
				t.Errorf("substituteVariables(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := substituteVariables(tt.in, true).text; got != tt.wantNumeric {
				t.Errorf("substituteVariables(%q, numeric) = %q, want %q", tt.in, got, tt.wantNumeric)
			}
		})
	}
	// Offsets after a placeholder map back to the original text.
	s := substituteVariables(`rate(vllm:a[$__rate_interval]) / vllm:b`, false)
	at := strings.Index(s.text, "vllm:b")
	if got := s.orig(at); got != strings.Index(`rate(vllm:a[$__rate_interval]) / vllm:b`, "vllm:b") {
		t.Errorf("orig(%d) = %d", at, got)
	}
}

func TestTemplateQuery(t *testing.T) {
	tests := []struct {
		in       string
		expr     string
		regex    string
		ok       bool
		exprSeen string // the text at the returned offset
	}{
		{"label_values(vllm:x{a=\"b\"}, model_name)", "vllm:x{a=\"b\"}", "", true, "vllm:x"},
		{" label_values(up, job) ", "up", "", true, "up"},
		{"label_values(model_name)", "", "", false, ""},
		{"query_result(topk(5, vllm:y))", "topk(5, vllm:y)", "", true, "topk"},
		{"metrics(vllm:gpu_.*)", "", "vllm:gpu_.*", true, ""},
		{"label_names()", "", "", false, ""},
		{"sum(vllm:z)", "sum(vllm:z)", "", true, "sum"},
		{"", "", "", false, ""},
	}
	for _, tt := range tests {
		expr, off, regex, ok := templateQuery(tt.in)
		if expr != tt.expr || regex != tt.regex || ok != tt.ok {
			t.Errorf("templateQuery(%q) = %q, %q, %v; want %q, %q, %v", tt.in, expr, regex, ok, tt.expr, tt.regex, tt.ok)
		}
		if tt.exprSeen != "" && !strings.HasPrefix(tt.in[off:], tt.exprSeen) {
			t.Errorf("templateQuery(%q): offset %d points at %q", tt.in, off, tt.in[off:])
		}
	}
}

func TestDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\ntwelve\n"
	want := `--- a/f
+++ b/f
@@ -2,11 +2,11 @@
 2
 3
 4
-5
+five
 6
 7
 8
 9
 10
 11
-12
+twelve
`
	if got := Diff("f", []byte(a), []byte(b)); got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
	if got := Diff("f", []byte(a), []byte(a)); got != "" {
		t.Errorf("Diff of equal inputs = %q, want empty", got)
	}
	far := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	farB := "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nfifteen\n"
	if got := strings.Count(Diff("f", []byte(far), []byte(farB)), "@@ -"); got != 2 {
		t.Errorf("distant changes: %d hunks, want 2", got)
	}
	// Adjacent changed lines, each paired with its rewrite.
	if got, want := Diff("f", []byte("a\nb\nc\n"), []byte("a\nB\nC\n")), "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n-c\n+C\n"; got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
	// Two rewrites 20,000 lines apart: what a fix does to a big file. The diff pairs lines
	// instead of building a table of every line against every line (1.6 GB here).
	var big, bigB strings.Builder
	for i := range 20000 {
		line := fmt.Sprintf("line %d\n", i)
		big.WriteString(line)
		if i == 0 || i == 19999 {
			line = fmt.Sprintf("LINE %d\n", i)
		}
		bigB.WriteString(line)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := Diff("f", []byte(big.String()), []byte(bigB.String()))
	runtime.ReadMemStats(&after)
	if got := strings.Count(d, "@@ -"); got != 2 {
		t.Errorf("big file: %d hunks, want 2", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("big file: the diff allocated %d MB, want it proportional to the file (< 64 MB)", alloc>>20)
	}
}

func TestBadInput(t *testing.T) {
	l := newLinter(t, "")
	tests := []struct {
		name, src string
		status    string
	}{
		{"truncated JSON", `{"panels": [{"targets": [{"expr": "vllm:gpu_cache_usage_perc"`, StatusUnparsed},
		{"deep JSON", strings.Repeat("[", 2000) + strings.Repeat("]", 2000), StatusUnparsed},
		{"binary", "\x00\x01\x02vllm:gpu_cache_usage_perc\xff", rm},
		{"broken.yaml", "groups:\n- rules: [{expr: vllm:gpu_cache_usage_perc\n", StatusUnparsed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := l.File(tt.name, []byte(tt.src))
			if len(r.Findings) == 0 || r.Findings[0].Status != tt.status {
				t.Errorf("got %+v, want a first finding with status %s", summarize(r.Findings), tt.status)
			}
		})
	}
}

// TestDetect checks format detection on content that is not a config: it must not produce
// noise, and names in prose are still found.
func TestDetect(t *testing.T) {
	l := newLinter(t, "")
	tests := []struct {
		name   string
		src    string
		format Format
		want   []got
	}{
		{"exposition", "# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage.\n# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n",
			FormatExposition, []got{}},
		{"json lines", "{\"ts\": 1, \"metric\": \"vllm:gpu_cache_usage_perc\"}\n{\"ts\": 2}\n",
			FormatText, []got{{1, rm, "vllm:gpu_cache_usage_perc", "line 1", true}}},
		{"jinja", "{%- if messages %}{{ messages[0].content }}{% endif %}\n", FormatText, []got{}},
		{"helm", "{{- if .Values.on }}\nkind: PrometheusRule\nspec: {{ toYaml .Values.spec | nindent 2 }}\n{{- end }}\n",
			FormatHelmTemplate, []got{{1, StatusSkipped, "", "", false}}},
		{"prose", "Nothing about metrics here.\n", FormatText, []got{}},
		{"yaml scalar", "just a string\n", FormatText, []got{}},
		{"empty", "", FormatText, []got{}},
		{"bom json", "\ufeff{\"panels\": [{\"targets\": [{\"expr\": \"vllm:cpu_cache_usage_perc\"}]}]}",
			FormatGrafana, []got{{1, rm, "vllm:cpu_cache_usage_perc", "/panels/0/targets/0/expr", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := l.File(tt.name, []byte(tt.src))
			if len(r.Formats) != 1 || r.Formats[0] != tt.format {
				t.Errorf("formats %v, want [%s]", r.Formats, tt.format)
			}
			if diff := cmp.Diff(tt.want, summarize(r.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordedNames checks that a vllm: name defined by a recording rule linted in the same
// run is not called unknown, while a typo of it still is.
func TestRecordedNames(t *testing.T) {
	dir := t.TempDir()
	rules := "groups:\n  - name: g\n    rules:\n      - record: vllm:kv_usage_avg\n        expr: avg(vllm:kv_cache_usage_perc)\n"
	dash := `{"panels":[{"title":"T","targets":[{"expr":"vllm:kv_usage_avg","refId":"A"},{"expr":"vllm:kv_usage_avgg","refId":"B"}]}]}`
	for name, body := range map[string]string{"rules.yaml": rules, "d.json": dash} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := newLinter(t, "")
	results, err := l.Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var gotv []string
	for _, r := range results {
		for _, f := range r.Findings {
			gotv = append(gotv, f.Status+" "+f.Metric)
		}
	}
	if want := []string{"unknown vllm:kv_usage_avgg"}; !cmp.Equal(gotv, want) {
		t.Errorf("findings %v, want %v", gotv, want)
	}
	alone, err := l.Paths(context.Background(), []string{filepath.Join(dir, "d.json")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(alone[0].Findings); n != 2 {
		t.Errorf("dashboard alone: %d findings, want 2 (the rule file was not linted)", n)
	}
}

// TestRegexSince checks that a __name__ regex over several retired names dates from the
// last of them to go (it matched something until then) and names each one's fate.
func TestRegexSince(t *testing.T) {
	src := []byte(`{"panels": [{"title": "R", "targets": [{"expr": "{__name__=~\"vllm:(gpu|cpu)_cache_usage_perc\"}", "refId": "A"}]}]}`)
	r := newLinter(t, "").File("d.json", src)
	if len(r.Findings) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(r.Findings), r.Findings)
	}
	f := r.Findings[0]
	if f.Since != "0.12.0" || f.Status != StatusRemoved {
		t.Errorf("status %s since %s, want removed since 0.12.0", f.Status, f.Since)
	}
	for _, w := range []string{"vllm:cpu_cache_usage_perc (removed 0.9.1)", "vllm:gpu_cache_usage_perc (removed 0.12.0)"} {
		if !strings.Contains(f.Message, w) {
			t.Errorf("message %q lacks %q", f.Message, w)
		}
	}
}

func TestMaskTemplate(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"directive lines become blank", "{{- if .X }}\na: 1\n  {{- end }}\n", "            \na: 1\n            \n"},
		{"values become x's", "name: {{ .Release.Name }}-rules\n", "name: xxxxxxxxxxxxxxxxxxx-rules\n"},
		{"inside a query", `expr: m{ns="{{ .NS }}"} > {{ .T }}`, `expr: m{ns="xxxxxxxxx"} > xxxxxxxx`},
		{"multi-line comment keeps its newlines", "{{/* a\nb */}}\nk: v\n", "      \n      \nk: v\n"},
		{"other bytes stay, NUL included", "a: \x00 {{ .X }}\n", "a: \x00 xxxxxxxx\n"},
		{"unclosed", "a: {{ .X\n", ""},
		{"no action", "a: 1\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, masks := maskTemplate([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("maskTemplate(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if (got == nil) != (masks == nil) {
				t.Errorf("masks %v for output %q", masks, got)
			}
			if got != nil && len(got) != len(tt.in) {
				t.Errorf("length %d, want %d", len(got), len(tt.in))
			}
		})
	}
	// A rewrite of a template changes the names and nothing else: no mask leaks into it.
	tpl, err := os.ReadFile(filepath.Join(fixtures, "helm-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("vllm:gpu_cache_usage_perc{", "vllm:kv_cache_usage_perc{",
		"vllm:num_preemptions[", "vllm:num_preemptions_total[").Replace(string(tpl))
	if got := string(newLinter(t, "").File("helm-rules.yaml", tpl).Fixed); got != want {
		t.Errorf("fixed template:\n%s\nwant:\n%s", got, want)
	}
	// A template that is not YAML even when masked is still scanned for names.
	src := []byte("{{- if .X }}\nexpr: |\n{{ .Values.rules }}\n  - a: vllm:gpu_cache_usage_perc\n    b: [\n")
	r := newLinter(t, "").File("t.yaml", src)
	if diff := cmp.Diff([]Format{FormatHelmTemplate}, r.Formats); diff != "" {
		t.Errorf("formats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]got{{1, StatusSkipped, "", "", false}, {4, rm, "vllm:gpu_cache_usage_perc", "line 4", true}}, summarize(r.Findings)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestEmptyNamed: a file named on the command line that is empty (or only whitespace) is an
// error, since a CI gate saying "no findings" would pass a render that produced nothing; an
// empty file met while walking a directory is counted as skipped.
func TestEmptyNamed(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"empty.yaml": "", "blank.json": " \n\t\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		rs, err := newLinter(t, "").Paths(context.Background(), []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || len(rs[0].Findings) != 1 {
			t.Fatalf("%s: %+v, want one finding", name, rs)
		}
		f := rs[0].Findings[0]
		if f.Severity != finding.Error || f.Code != CodeSkipped || !strings.Contains(f.Message, "empty") {
			t.Errorf("%s: %s %s %q, want an error %s saying the file is empty", name, f.Severity, f.Code, f.Message, CodeSkipped)
		}
	}
	// Walked, they are counted as skipped; and since nothing else was there, the run says it
	// checked nothing.
	in, err := newLinter(t, "").Read(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range in.Skipped {
		skipped = append(skipped, filepath.Base(s.Path)+": "+s.What)
	}
	if diff := cmp.Diff([]string{"blank.json: empty files", "empty.yaml: empty files"}, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if len(in.Files) != 1 || len(in.Files[0].Findings) != 1 || in.Files[0].Findings[0].Severity != finding.Error ||
		!strings.HasPrefix(in.Files[0].Findings[0].Message, "nothing was checked") {
		t.Errorf("walked: %+v, want one error saying nothing was checked", in.Files)
	}
}

// TestCompatibilityRecordingRule: a migration keeps old dashboards alive with recording rules
// that record the old names from the new ones. Linted in the same run, a dashboard query on
// vllm:gpu_cache_usage_perc still returns series, so it is no error "removed in vLLM 0.12.0"
// but an info note naming the rule (still fixable: the rewrite makes the rule unneeded). The
// rule copying a counter as it is keeps a counter, which rate() then reads: no
// counter-without-rate on it, while a sum of counters recorded as it is still gets one.
func TestCompatibilityRecordingRule(t *testing.T) {
	dir := t.TempDir()
	rules := "groups:\n  - name: compat\n    rules:\n" +
		"      - record: vllm:gpu_cache_usage_perc\n        expr: vllm:kv_cache_usage_perc\n" +
		"      - record: vllm:gpu_prefix_cache_hits_total\n        expr: (vllm:prefix_cache_hits_total)\n" +
		"      - record: job:hits:sum\n        expr: sum(vllm:prefix_cache_queries_total)\n"
	dash := `{"panels":[{"title":"T","targets":[{"expr":"avg(vllm:gpu_cache_usage_perc)","refId":"A"},{"expr":"vllm:num_requests_swapped","refId":"B"}]}]}`
	for name, body := range map[string]string{"rules.yaml": rules, "d.json": dash} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	results, err := newLinter(t, "").Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		for _, f := range r.Findings {
			got = append(got, fmt.Sprintf("%s %s %s %s fixable=%v", filepath.Base(r.Path), f.Severity, f.Code, f.Metric, f.Fixable()))
			if f.Metric == "vllm:gpu_cache_usage_perc" && !strings.Contains(f.Message, `record "vllm:gpu_cache_usage_perc" in `) {
				t.Errorf("note %q does not name the recording rule", f.Message)
			}
		}
	}
	want := []string{
		"d.json info metric-removed vllm:gpu_cache_usage_perc fixable=true",
		"d.json error metric-removed vllm:num_requests_swapped fixable=false",
		"rules.yaml warning counter-without-rate vllm:prefix_cache_queries_total fixable=false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestDiffQuotesNames: a file name with a newline, a tab, a quote or a backslash is C-quoted on
// the diff's ---/+++ lines as git writes it (git apply and GNU patch read it back), so the name
// cannot end the line and start a forged one.
func TestDiffQuotesNames(t *testing.T) {
	d := Diff("a\n::error::x\t\"\\\x1b.yaml", []byte("a\n"), []byte("b\n"))
	head := strings.SplitN(d, "\n", 3)
	want := []string{`--- "a/a\n::error::x\t\"\\\033.yaml"`, `+++ "b/a\n::error::x\t\"\\\033.yaml"`}
	if len(head) < 3 || head[0] != want[0] || head[1] != want[1] {
		t.Errorf("diff starts %q, want %q", head[:2], want)
	}
	if d := Diff("plain é.yaml", []byte("a\n"), []byte("b\n")); !strings.HasPrefix(d, "--- a/plain é.yaml\n") {
		t.Errorf("a plain name is quoted: %q", d)
	}
}
