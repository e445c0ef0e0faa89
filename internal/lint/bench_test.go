package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// benchDashboards is the size of the generated directory.
const benchDashboards = 1000

// writeDashboards generates n Grafana dashboards shaped like the vLLM examples: a templating
// variable, a collapsed row, 24 panels of 2-4 PromQL targets, about one query in six using a
// removed name. It returns the total bytes written.
func writeDashboards(tb testing.TB, dir string, n int) int64 {
	tb.Helper()
	exprs := []string{
		`histogram_quantile(0.99, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`,
		`rate(vllm:prompt_tokens_total{model_name="$model_name"}[$__rate_interval])`,
		`vllm:num_requests_running{model_name="$model_name"}`,
		`histogram_quantile(0.9, sum by(le) (rate(vllm:time_per_output_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`,
		`sum(rate(vllm:prefix_cache_hits_total{model_name=~"$model_name"}[$__rate_interval])) / sum(rate(vllm:prefix_cache_queries_total{model_name=~"$model_name"}[$__rate_interval]))`,
		`rate(vllm:request_queue_time_seconds_sum{model_name="$model_name"}[$__rate_interval])`,
		`vllm:gpu_cache_usage_perc{model_name="$model_name"}`,
		`sum by(finished_reason) (increase(vllm:request_success_total{model_name="$model_name"}[$__rate_interval]))`,
		`rate(vllm:e2e_request_latency_seconds_sum{model_name="$model_name"}[$__rate_interval])
/
rate(vllm:e2e_request_latency_seconds_count{model_name="$model_name"}[$__rate_interval])`,
		`vllm:kv_cache_usage_perc{model_name="$model_name"}`,
		`sum(vllm:num_requests_swapped{model_name="$model_name"})`,
		`histogram_quantile(0.5, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`,
	}
	var total int64
	for d := 0; d < n; d++ {
		type target struct {
			Datasource   map[string]string `json:"datasource"`
			Expr         string            `json:"expr"`
			LegendFormat string            `json:"legendFormat"`
			RefID        string            `json:"refId"`
		}
		type panel struct {
			Type        string         `json:"type"`
			Title       string         `json:"title"`
			GridPos     map[string]int `json:"gridPos"`
			FieldConfig map[string]any `json:"fieldConfig"`
			Targets     []target       `json:"targets,omitempty"`
			Panels      []panel        `json:"panels,omitempty"`
			Collapsed   bool           `json:"collapsed,omitempty"`
		}
		var panels []panel
		for p := 0; p < 24; p++ {
			pn := panel{Type: "timeseries", Title: fmt.Sprintf("Panel %d of dashboard %d", p, d),
				GridPos:     map[string]int{"h": 8, "w": 12, "x": 12 * (p % 2), "y": 8 * p},
				FieldConfig: map[string]any{"defaults": map[string]any{"unit": "s", "color": map[string]string{"mode": "palette-classic"}}, "overrides": []any{}}}
			for q := 0; q < 2+(p+d)%3; q++ {
				pn.Targets = append(pn.Targets, target{
					Datasource: map[string]string{"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
					Expr:       exprs[(d*7+p*3+q)%len(exprs)], LegendFormat: "{{instance}}", RefID: string(rune('A' + q))})
			}
			panels = append(panels, pn)
		}
		row := panel{Type: "row", Title: "Collapsed", Collapsed: true, Panels: panels[20:]}
		doc := map[string]any{
			"title": fmt.Sprintf("vLLM %d", d), "uid": fmt.Sprintf("vllm-%d", d), "schemaVersion": 39,
			"panels": append(panels[:20:20], row),
			"templating": map[string]any{"list": []any{map[string]any{"name": "model_name", "type": "query",
				"query": map[string]string{"query": "label_values(vllm:generation_tokens_total, model_name)", "refId": "V"}}}},
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("dashboard-%04d.json", d)), b, 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(len(b))
	}
	return total
}

// BenchmarkLintDirectory lints a generated directory of 1,000 dashboards per iteration.
func BenchmarkLintDirectory(b *testing.B) {
	dir := b.TempDir()
	size := writeDashboards(b, dir, benchDashboards)
	cat, err := catalog.Load()
	if err != nil {
		b.Fatal(err)
	}
	l := New(cat, Options{}) // as kvcheck lint runs without --fix or --diff
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		rs, err := l.Paths(context.Background(), []string{dir})
		if err != nil || len(rs) != benchDashboards {
			b.Fatalf("linted %d files: %v", len(rs), err)
		}
	}
	b.ReportMetric(float64(benchDashboards)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkReferenceJSONDecode is the reference for BenchmarkLintDirectory: reading the same
// files and decoding them with encoding/json into interface values, the least any tool that
// understands dashboards must do.
func BenchmarkReferenceJSONDecode(b *testing.B) {
	dir := b.TempDir()
	size := writeDashboards(b, dir, benchDashboards)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(benchDashboards)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// TestGeneratedDashboards keeps the benchmark honest: its dashboards produce the findings
// they were built to produce.
func TestGeneratedDashboards(t *testing.T) {
	dir := t.TempDir()
	writeDashboards(t, dir, 3)
	rs, err := newLinter(t, "").Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Findings) == 0 || r.Queries < 48 {
			t.Errorf("%s: %d findings over %d queries, want some findings over at least 48 queries", r.Path, len(r.Findings), r.Queries)
		}
		for _, f := range r.Findings {
			if !strings.Contains(f.Metric, "time_per_output_token") && !strings.Contains(f.Metric, "gpu_cache_usage") && !strings.Contains(f.Metric, "swapped") {
				t.Errorf("%s: unexpected finding %+v", r.Path, f)
			}
		}
	}
}
