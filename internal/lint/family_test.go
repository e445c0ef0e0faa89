package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

func newLinterTargets(t testing.TB, spec string) *Linter {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	targets, err := cat.ParseTargets(spec)
	if err != nil {
		t.Fatal(err)
	}
	return New(cat, Options{Targets: targets, Rewrite: true})
}

func rule(expr string) []byte {
	return []byte("groups:\n- name: g\n  rules:\n  - alert: a\n    expr: '" + expr + "'\n")
}

// TestFixNeverWritesANameTheTargetLacks is the defect the issue names: at vLLM 0.8.5 the
// V0 gauge vllm:gpu_prefix_cache_hit_rate was rewritten to a ratio of
// vllm:prefix_cache_hits_total, which vLLM publishes only from 0.9.2. At 0.8.5 the V1
// counters are the gpu_ ones (0.7.3 on), so that is what the rewrite must use.
func TestFixNeverWritesANameTheTargetLacks(t *testing.T) {
	src := rule(`vllm:gpu_prefix_cache_hit_rate{model_name="m"} < 0.2`)
	r := newLinter(t, "0.8.5").File("r.yaml", src)
	fixed := string(r.Fixed)
	if strings.Contains(fixed, "vllm:prefix_cache_hits_total") || strings.Contains(fixed, "vllm:prefix_cache_queries_total") {
		t.Fatalf("at 0.8.5 the fix writes a name added in 0.9.2:\n%s", fixed)
	}
	want := `(rate(vllm:gpu_prefix_cache_hits_total{model_name="m"}[5m]) / rate(vllm:gpu_prefix_cache_queries_total{model_name="m"}[5m])) < 0.2`
	if !strings.Contains(fixed, want) {
		t.Errorf("at 0.8.5 the fix is not the ratio of the gpu_ counters:\n%s\nwant %s", fixed, want)
	}
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Message, "vllm:gpu_prefix_cache_hits_total") {
		t.Errorf("the message names the replacement the target has: %+v", r.Findings)
	}
	// From 0.9.2 on the current counters are right.
	if fixed := string(newLinter(t, "0.12").File("r.yaml", src).Fixed); !strings.Contains(fixed, `rate(vllm:prefix_cache_hits_total{model_name="m"}[5m])`) {
		t.Errorf("at 0.12 the fix does not use vllm:prefix_cache_hits_total:\n%s", fixed)
	}
}

// TestFixRespectsTargetEverywhere checks the rule for every rewrite the catalog offers, at
// every release boundary it names: whatever --fix writes is a series the target publishes
// (not added later, not removed), in every family.
func TestFixRespectsTargetEverywhere(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]map[catalog.Version]bool{}
	for _, m := range cat.Metrics {
		if versions[m.Family] == nil {
			versions[m.Family] = map[catalog.Version]bool{}
		}
		for _, v := range []catalog.Version{m.Added, m.Deprecated, m.Hidden, m.Removed} {
			if !v.IsZero() {
				versions[m.Family][v] = true
			}
		}
	}
	nameRE := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	checked := 0
	for _, m := range cat.Metrics {
		if m.Source != catalog.Engine || (m.Rewrite != catalog.RewriteRename && m.Rewrite != catalog.RewriteExpr) {
			continue
		}
		written := m.Series()[0]
		for v := range versions[m.Family] {
			spec := fmt.Sprintf("%s=%s", m.Family, v)
			r := newLinterTargets(t, spec).File("r.yaml", rule(written+" > 0"))
			if r.Fixed == nil {
				continue
			}
			checked++
			expr := string(r.Fixed)
			expr = expr[strings.Index(expr, "expr: '")+7:]
			expr = expr[:strings.IndexByte(expr, '\'')]
			for _, n := range nameRE.FindAllString(expr, -1) {
				mt, ok := cat.Lookup(n)
				if !ok || mt.Engine == nil {
					continue // rate, a window, a number
				}
				if st, since := mt.Engine.StatusAt(v); st == catalog.NotYet || st == catalog.Removed {
					t.Errorf("%s at %s: --fix writes %s, %s since %s there: %q", written, spec, n, st, since, expr)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d rewrites checked; the catalog offers more", checked)
	}
}

// TestLLMDRenames: the endpoint picker's 2026 renames, judged at llm-d-router releases.
func TestLLMDRenames(t *testing.T) {
	tests := []struct {
		spec, expr        string
		status, since     string
		fixed, notInFixed string
		msg               string
	}{
		// The GAIE-era name, deprecated when llm-d-router v0.9.0 began emitting llm_d_epp_*.
		{"", `sum(rate(inference_objective_request_total[5m]))`, StatusDeprecated, "0.9.0",
			"llm_d_epp_request_total", "", "deprecated since llm-d-router 0.9.0"},
		// The help text says llm_d_epp_request_sizes; the release has llm_d_epp_request_size_bytes.
		{"", `histogram_quantile(0.9, sum by (le) (rate(inference_objective_request_sizes_bucket[5m])))`, StatusDeprecated, "0.9.0",
			"llm_d_epp_request_size_bytes_bucket", "llm_d_epp_request_sizes", ""},
		// At 0.8 the old name is the only one: nothing to say.
		{"llm-d=0.8", `sum(rate(inference_objective_request_total[5m]))`, "", "", "", "", ""},
		// ... and the new name does not exist yet.
		{"llm-d=0.8", `sum(rate(llm_d_epp_request_total[5m]))`, StatusUnknown, "0.9.0", "", "", "added in llm-d-router 0.9.0"},
		// llm_d_router_epp_ was a subsystem name on main only, renamed before v0.9.0.
		{"", `llm_d_router_epp_ready_endpoints < 1`, StatusRemoved, "0.9.0", "llm_d_epp_ready_endpoints", "", "never in a llm-d-router release"},
		// The KV-cache index: kvcache_index_* became llm_d_router_epp_kv_cache_index_* in v0.10.0.
		{"", `rate(kvcache_index_lookup_hits_total[5m]) / rate(kvcache_index_lookup_requests_total[5m])`, StatusDeprecated, "0.10.0",
			"llm_d_router_epp_kv_cache_index_lookup_hits_total", "", "deprecated since llm-d-router 0.10.0"},
		// The main-branch name is newer than every release read.
		{"", `rate(llm_d_epp_kv_cache_index_lookup_hits_total[5m])`, StatusUnknown, "0.11.0", "", "", "added in llm-d-router 0.11.0"},
		// A typo under a prefix only llm-d uses.
		{"", `llm_d_epp_request_totl`, StatusUnknown, "", "", "", "not a metric llm-d-router publishes"},
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.expr, func(t *testing.T) {
			r := newLinterTargets(t, tt.spec).File("r.yaml", rule(tt.expr))
			if tt.status == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want no finding, got %+v", r.Findings)
				}
				return
			}
			if len(r.Findings) == 0 {
				t.Fatalf("no finding")
			}
			f := r.Findings[0]
			if f.Status != tt.status || f.Since != tt.since || !strings.Contains(f.Message, tt.msg) {
				t.Errorf("got %s since %q: %s; want %s since %q, message with %q", f.Status, f.Since, f.Message, tt.status, tt.since, tt.msg)
			}
			if tt.fixed != "" && !strings.Contains(string(r.Fixed), tt.fixed) {
				t.Errorf("fix lacks %s:\n%s", tt.fixed, r.Fixed)
			}
			if tt.notInFixed != "" && strings.Contains(strings.ReplaceAll(string(r.Fixed), tt.fixed, ""), tt.notInFixed) {
				t.Errorf("fix writes %s:\n%s", tt.notInFixed, r.Fixed)
			}
		})
	}
}

// TestSharedFamilyNames: llm-d's picker and GAIE's share the inference_* names. By default
// llm-d judges (the picker moved there); naming only GAIE's target makes GAIE judge.
func TestSharedFamilyNames(t *testing.T) {
	src := rule(`inference_pool_average_kv_cache_utilization > 0.9`)
	r := newLinterTargets(t, "").File("r.yaml", src)
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusDeprecated || !strings.Contains(r.Findings[0].Message, "Gateway API Inference Extension published this name too, until 1.6.0") {
		t.Fatalf("default: %+v", r.Findings)
	}
	if r := newLinterTargets(t, "gaie=1.5").File("r.yaml", src); len(r.Findings) != 0 {
		t.Errorf("gaie=1.5 has the name: %+v", r.Findings)
	}
	r = newLinterTargets(t, "gaie=1.6").File("r.yaml", src)
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusRemoved || r.Findings[0].Fixable() {
		t.Errorf("gaie=1.6: %+v, want removed and no rewrite (the picker moved to another project)", r.Findings)
	}
	// GAIE's own rename: InferenceModel became InferenceObjective in v1.1.0.
	r = newLinterTargets(t, "gaie=1.2").File("r.yaml", rule(`sum(rate(inference_model_request_total[5m]))`))
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusRemoved || !strings.Contains(string(r.Fixed), "inference_objective_request_total") {
		t.Errorf("gaie=1.2: %+v\n%s", r.Findings, r.Fixed)
	}
}

// TestRenameChain: one rewrite follows renames across families to the name the targets
// publish. GKE's inference-gateway dashboards query GAIE's inference_model_request_total,
// renamed inference_objective_request_total in GAIE 1.1.0; at the default targets GAIE 1.6.0
// no longer has the picker and llm-d-router 0.10.0 publishes that name deprecated since 0.9.0
// in favour of llm_d_epp_request_total. So the first --fix writes llm_d_epp_request_total and
// a second finds nothing.
func TestRenameChain(t *testing.T) {
	l := newLinterTargets(t, "")
	r := l.File("d.json", []byte(`{"panels": [{"title": "req", "targets": [{"expr": "sum(rate(inference_model_request_total[5m]))", "refId": "A"}]}]}`))
	want := "inference_model_request_total was removed in Gateway API Inference Extension 1.1.0; use inference_objective_request_total, which in turn is deprecated since llm-d-router 0.9.0: so use llm_d_epp_request_total"
	if len(r.Findings) != 1 || r.Findings[0].Message != want || r.Findings[0].Replacement != "llm_d_epp_request_total" {
		t.Fatalf("findings %+v, want one: %s", r.Findings, want)
	}
	if !strings.Contains(string(r.Fixed), "rate(llm_d_epp_request_total[5m])") {
		t.Fatalf("fixed %s, want llm_d_epp_request_total", r.Fixed)
	}
	if again := l.File("d.json", r.Fixed); len(again.Findings) != 0 {
		t.Errorf("a second run finds %+v, want nothing", again.Findings)
	}
}

// TestFixFixpoint: one --fix over the corpus leaves nothing fixable.
func TestFixFixpoint(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(corpus)); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	run, err := Check(context.Background(), cat, RunOptions{Options: Options{Rewrite: true}, Fix: true}, []string{dir}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	fixed := 0
	for _, f := range run.Files {
		for _, x := range f.Findings {
			if x.Fixed {
				fixed++
			}
		}
	}
	again, err := Check(context.Background(), cat, RunOptions{}, []string{dir}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range again.Files {
		for _, x := range f.Findings {
			if x.Fixable() {
				t.Errorf("after one --fix: %s %d:%d %s is still fixable: %s", f.Path, x.Line, x.Column, x.Code, x.Message)
			}
		}
	}
	if fixed == 0 {
		t.Error("the first run rewrote nothing: the corpus has renamed metrics")
	}
}

// TestFamilyForms: other families' names in the managed-Prometheus spelling are judged too.
func TestFamilyForms(t *testing.T) {
	r := newLinterTargets(t, "").File("hpa.yaml", []byte(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: x}
spec:
  metrics:
  - type: External
    external:
      metric:
        name: prometheus.googleapis.com|kvcache_index_lookup_hits_total|counter
      target: {type: AverageValue, averageValue: "1"}
`))
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusDeprecated || !strings.Contains(string(r.Fixed), "prometheus.googleapis.com|llm_d_router_epp_kv_cache_index_lookup_hits_total|counter") {
		t.Errorf("GMP form: %+v\n%s", r.Findings, r.Fixed)
	}
}

// TestRealRouterDashboards lints reductions of public dashboards and rules of the router
// layer (each file says where it comes from) at the releases their authors ran and after.
func TestRealRouterDashboards(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type want struct {
		findings, fixable int
		status            string // every finding's status
	}
	tests := []struct {
		file, targets string
		want          want
	}{
		// GAIE's own dashboard: right for GAIE 1.5, whose picker publishes every name; the
		// llm-d picker (the default judge of these shared names) deprecated them in 0.9.0;
		// GAIE 1.6 ships no picker. Queue Size Per Pod has no exact rewrite (the label changed).
		{"gaie_inference_gateway_v1.5.0.json", "gaie=1.5", want{0, 0, ""}},
		{"gaie_inference_gateway_v1.5.0.json", "llm-d=0.8", want{0, 0, ""}},
		{"gaie_inference_gateway_v1.5.0.json", "", want{7, 6, StatusDeprecated}},
		{"gaie_inference_gateway_v1.5.0.json", "gaie=1.6", want{7, 0, StatusRemoved}},
		// GAIE's alerts: five names; the error-rate ratio has equal windows and groupings.
		{"gaie_alerts_v1.5.0.yaml", "gaie=1.5", want{0, 0, ""}},
		{"gaie_alerts_v1.5.0.yaml", "", want{5, 5, StatusDeprecated}},
		// llm-d-router's dashboard on main between the two 2026 renames: no release ever
		// published llm_d_router_epp_*, so every panel is empty on any release.
		{"llmd_router_dashboard_ff37a5592.json", "", want{7, 7, StatusRemoved}},
		// The same dashboard as v0.9.0 shipped it: clean from 0.9.0 on, ahead of 0.8.
		{"llmd_router_dashboard_v0.9.0.json", "", want{0, 0, ""}},
		{"llmd_router_dashboard_v0.9.0.json", "llm-d=0.8", want{7, 0, StatusUnknown}},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.targets, func(t *testing.T) {
			r := newLinterTargets(t, tt.targets).File(tt.file, read(tt.file))
			fixable := 0
			for _, f := range r.Findings {
				if f.Status != tt.want.status {
					t.Errorf("%s: %s", f.Status, f.Message)
				}
				if f.Fixable() {
					fixable++
				}
			}
			if len(r.Findings) != tt.want.findings || fixable != tt.want.fixable {
				t.Errorf("%d findings, %d fixable; want %d, %d", len(r.Findings), fixable, tt.want.findings, tt.want.fixable)
			}
		})
	}
	// kvcheck's rewrite of the main-branch dashboard is what the llm-d maintainers wrote by
	// hand in PR #1661 for v0.9.0: the same queries, name for name.
	fixed := newLinterTargets(t, "").File("d.json", read("llmd_router_dashboard_ff37a5592.json")).Fixed
	if got, want := exprs(t, fixed), exprs(t, read("llmd_router_dashboard_v0.9.0.json")); !slices.Equal(got, want) {
		t.Errorf("fixed queries differ from v0.9.0's:\n got %q\nwant %q", got, want)
	}
}

func exprs(t *testing.T, b []byte) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, x := range p.Targets {
			out = append(out, x.Expr)
		}
	}
	return out
}

// TestRouterNamesInText: a runbook or a chart's values that name a retired picker metric are
// reported as vLLM's names are; words of the same stem that are no metric are not.
func TestRouterNamesInText(t *testing.T) {
	md := []byte("# Runbook\nWhen `kvcache_index_lookup_hits_total` drops, check the KV-event stream.\nThe inference_pool_name field is not a metric.\n")
	r := newLinterTargets(t, "").File("runbook.md", md)
	if len(r.Findings) != 1 || r.Findings[0].Metric != "kvcache_index_lookup_hits_total" || r.Findings[0].Status != StatusDeprecated {
		t.Errorf("markdown: %+v", r.Findings)
	}
	values := []byte("monitoring:\n  hitMetric: llm_d_router_epp_ready_endpoints\n  poolName: inference_pool_a\n")
	r = newLinterTargets(t, "").File("values.yaml", values)
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusRemoved {
		t.Errorf("values: %+v", r.Findings)
	}
}

// TestJudgedAgainst: the run names the target of every family whose names its files use, in
// the catalog's order, and vLLM's alone when the files use no family's names.
func TestJudgedAgainst(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(ts []FamilyTarget) string {
		var out []string
		for _, x := range ts {
			out = append(out, x.Display+" "+x.Version.String())
		}
		return strings.Join(out, ", ")
	}
	l := newLinterTargets(t, "llm-d=0.9")
	vllm := l.File("r.yaml", rule(`vllm:num_requests_waiting > 10`))
	llmd := l.File("d.json", read("llmd_router_dashboard_v0.9.0.json"))
	// GAIE's names are the llm-d picker's too (deprecated there in 0.9.0): both are judged.
	gaie := l.File("g.yaml", read("gaie_alerts_v1.5.0.yaml"))
	// production-stack's router series: a vllm: name selected with a server label.
	router := l.File("p.yaml", rule(`vllm:num_requests_swapped{server="a"} > 0`))
	other := l.File("o.yaml", rule(`up == 0`))
	vllmNow := l.TargetOf(catalog.VLLM).String()
	tests := []struct {
		files []FileResult
		want  string
	}{
		{[]FileResult{vllm}, "vLLM " + vllmNow},
		{[]FileResult{llmd}, "llm-d-router 0.9.0"},
		{[]FileResult{llmd, vllm}, "vLLM " + vllmNow + ", llm-d-router 0.9.0"},
		{[]FileResult{gaie}, "llm-d-router 0.9.0, Gateway API Inference Extension " + l.TargetOf("gaie").String()},
		{[]FileResult{router}, "production-stack router " + l.TargetOf("production-stack").String()},
		{[]FileResult{other}, "vLLM " + vllmNow},
		{nil, "vLLM " + vllmNow},
	}
	for i, tt := range tests {
		if got := names(l.JudgedAgainst(tt.files)); got != tt.want {
			t.Errorf("%d: judged against %q, want %q", i, got, tt.want)
		}
	}
}

// TestRealSGLangDashboards lints reductions of SGLang's own Grafana dashboard (each file says
// where it comes from): at v0.5.6 in the sglang: spelling, and after PR #15758 in the adapter
// spelling sglang_. Every name it queries is in every release since metrics came (0.3.5), so
// both are clean from 0.3.5 on; at 0.3.4, before metrics, each distinct name of each query is
// one not-yet finding: 3 quantiles + 2 (sum and count) + 1 heatmap for each of the two
// histograms, and 4 gauges, 16 in all.
func TestRealSGLangDashboards(t *testing.T) {
	for _, file := range []string{"sglang_dashboard_7ae368efd.json", "sglang_dashboard_186a56f6e.json"} {
		b, err := os.ReadFile(filepath.Join(fixtures, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			targets  string
			findings int
		}{{"", 0}, {"sglang=0.3.5", 0}, {"sglang=0.3.4", 16}} {
			r := newLinterTargets(t, tt.targets).File(file, b)
			if len(r.Findings) != tt.findings {
				t.Errorf("%s at %q: %d findings, want %d", file, tt.targets, len(r.Findings), tt.findings)
			}
			for _, f := range r.Findings {
				if f.Status != StatusUnknown || !strings.Contains(f.Message, "added in SGLang 0.3.5") {
					t.Errorf("%s at %q: %s", file, tt.targets, f.Message)
				}
			}
			if !slices.Equal(r.Families, []string{"sglang"}) {
				t.Errorf("%s: families %v", file, r.Families)
			}
		}
	}
}

// TestSGLangRename: a rule on the 0.5.2 name sglang:queue_time_s (adapter spelling) is an
// error from 0.5.3 with the exact rewrite in the file's spelling, and clean at 0.5.2; a gauge
// gone since 0.5.3 has a replacement but no rewrite.
func TestSGLangRename(t *testing.T) {
	src := rule(`histogram_quantile(0.9, sum by (le) (rate(sglang_queue_time_s_bucket[5m]))) > 1`)
	r := newLinterTargets(t, "").File("r.yaml", src)
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusRemoved || !r.Findings[0].Fixable() {
		t.Fatalf("at the newest release: %+v", r.Findings)
	}
	if !strings.Contains(string(r.Fixed), "rate(sglang_queue_time_seconds_bucket[5m])") {
		t.Errorf("fix:\n%s", r.Fixed)
	}
	if r := newLinterTargets(t, "sglang=0.5.2").File("r.yaml", src); len(r.Findings) != 0 {
		t.Errorf("at 0.5.2: %+v", r.Findings)
	}
	r = newLinterTargets(t, "").File("r.yaml", rule(`sglang:avg_request_queue_latency > 1`))
	if len(r.Findings) != 1 || r.Findings[0].Fixable() || !strings.Contains(r.Findings[0].Message, "removed in SGLang 0.5.3") {
		t.Errorf("removed gauge: %+v", r.Findings)
	}
}

// TestRealDynamoDashboard lints a reduction of Dynamo's own dashboard before and after PR
// #11497 (each file says where it comes from). Before, its "Inflight vs Queued Requests" panel
// reads dynamo_frontend_inflight_requests, deprecated for dynamo_frontend_active_requests: one
// warning with an exact rewrite, and the rewrite is the query the maintainers wrote in #11497.
// After, the dashboard is clean.
func TestRealDynamoDashboard(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before, after := read("dynamo_dashboard_9c7fabe6e.json"), read("dynamo_dashboard_10b311bac.json")
	r := newLinterTargets(t, "").File("before.json", before)
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusDeprecated || r.Findings[0].Metric != "dynamo_frontend_inflight_requests" || !r.Findings[0].Fixable() {
		t.Fatalf("before #11497: %+v", r.Findings)
	}
	if got, want := exprs(t, r.Fixed), exprs(t, after); !slices.Equal(got, want) {
		t.Errorf("fixed queries differ from #11497's:\n got %q\nwant %q", got, want)
	}
	if r := newLinterTargets(t, "").File("after.json", after); len(r.Findings) != 0 {
		t.Errorf("after #11497: %+v", r.Findings)
	}
	// Before the deprecation (1.1) both are clean: the old gauge is current, the new one
	// not needed.
	if r := newLinterTargets(t, "dynamo=1.1").File("before.json", before); len(r.Findings) != 0 {
		t.Errorf("before at 1.1: %+v", r.Findings)
	}
	if r := newLinterTargets(t, "").File("after.json", after); !slices.Equal(r.Families, []string{"dynamo"}) {
		t.Errorf("families %v", r.Families)
	}
	// Dynamo labels its frontend series by model: no label drift, which is vLLM's (model_name).
	if r := newLinterTargets(t, "").File("r.yaml", rule(`sum by (model) (dynamo_frontend_queued_requests{model="m"}) > 10`)); len(r.Findings) != 0 {
		t.Errorf("model label on a Dynamo series: %+v", r.Findings)
	}
}

// TestRealDynamoRouterDashboard lints a reduction of Dynamo's own dashboard at 2a6da14 (the
// file says where it comes from): its KV-hit-rate, routing-overhead and KV-events panels read
// dynamo_component_router_kv_hit_rate, dynamo_router_overhead_* and
// dynamo_component_kv_cache_events_applied, read from lib/llm/src/kv_router/metrics.rs and
// lib/kv-router/src/indexer/metrics.rs at that commit. Every query there is right (quantiles
// over _bucket by le, rate() of the counters), so it is clean, and it is judged as Dynamo's:
// before these names were catalogued the file matched no family at all. The same names used
// wrongly are found: a raw router counter and a quantile over the histogram's bare name.
func TestRealDynamoRouterDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures, "dynamo_router_dashboard_2a6da14c8.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := newLinterTargets(t, "").File("dynamo.json", b)
	if len(r.Findings) != 0 {
		t.Errorf("Dynamo's router panels: %+v", r.Findings)
	}
	if !slices.Equal(r.Families, []string{"dynamo"}) {
		t.Errorf("families %v, want [dynamo]", r.Families)
	}
	// An autoscaler rule on the router's request counter without rate(): the total since the
	// router started, not a request rate.
	r = newLinterTargets(t, "").File("r.yaml", rule(`sum(dynamo_component_router_requests_total) > 100`))
	if len(r.Findings) != 1 || r.Findings[0].Metric != "dynamo_component_router_requests_total" || r.Findings[0].Status != StatusQuery {
		t.Errorf("raw router counter: %+v", r.Findings)
	}
	// The hit-rate histogram by its bare name matches no series.
	r = newLinterTargets(t, "").File("r.yaml", rule(`histogram_quantile(0.5, sum by (le) (rate(dynamo_component_router_kv_hit_rate[5m]))) < 0.2`))
	if len(r.Findings) == 0 {
		t.Errorf("quantile over the bare histogram name: no finding")
	}
	for _, f := range r.Findings {
		if f.Metric != "dynamo_component_router_kv_hit_rate" {
			t.Errorf("finding on %q, want dynamo_component_router_kv_hit_rate: %+v", f.Metric, f)
		}
	}
	// The names main carried for a day or two in February 2026 (PR #6146's
	// dynamo_routing_overhead_*, PR #6227's dynamo_router_* that PR #6558 moved back), which
	// Dynamo's deprecations page still gives: no release has them, and the rename is exact.
	for _, c := range []struct{ q, metric, want string }{
		{`sum by (router_id) (rate(dynamo_router_requests_total[5m])) > 100`, "dynamo_router_requests_total", "dynamo_component_router_requests_total"},
		{`histogram_quantile(0.9, sum by (le) (rate(dynamo_routing_overhead_total_ms_bucket[5m]))) > 5`, "dynamo_routing_overhead_total_ms_bucket", "dynamo_router_overhead_total_ms_bucket"},
	} {
		r := newLinterTargets(t, "").File("r.yaml", rule(c.q))
		if len(r.Findings) != 1 || r.Findings[0].Status != StatusRemoved || r.Findings[0].Metric != c.metric || !r.Findings[0].Fixable() || !strings.Contains(r.Findings[0].Message, "never in a Dynamo release") {
			t.Errorf("%s: %+v", c.q, r.Findings)
			continue
		}
		if !strings.Contains(string(r.Fixed), c.want) {
			t.Errorf("%s: fixed to\n%s\nwant %s", c.q, r.Fixed, c.want)
		}
	}
	// The indexer's counter is registered without _total and exposed as written: rate() of it is
	// right, and so is the standalone indexer's own name.
	for _, q := range []string{
		`sum(rate(dynamo_component_kv_cache_events_applied{status!="ok"}[5m])) > 0`,
		`sum(rate(dynamo_kvrouter_kv_cache_events_applied{status!="ok"}[5m])) > 0`,
		`histogram_quantile(0.99, sum by (le) (rate(dynamo_router_overhead_total_ms_bucket[5m]))) > 50`,
		`max(dynamo_kvindexer_workers) < 1`,
	} {
		if r := newLinterTargets(t, "").File("r.yaml", rule(q)); len(r.Findings) != 0 || !slices.Equal(r.Families, []string{"dynamo"}) {
			t.Errorf("%s: families %v, findings %+v", q, r.Families, r.Findings)
		}
	}
}

// TestKVOffloadNames: the offloading connector's names read from vLLM's source (PRs #35669,
// #45737, #45958, #47666, #47679) are known, so a panel on them is not a metric-unknown
// warning; the legacy kv_offload_total_bytes is still deprecated.
func TestKVOffloadNames(t *testing.T) {
	for _, q := range []string{
		`max(vllm:kv_offload_cpu_cache_usage_perc) > 0.9`,
		`rate(vllm:kv_offload_allocation_failure_total[5m]) > 0`,
		`histogram_quantile(0.99, sum by (le) (rate(vllm:kv_offload_tiering_lookup_sync_delay_seconds_bucket[5m]))) > 0.1`,
	} {
		if r := newLinterTargets(t, "").File("r.yaml", rule(q)); len(r.Findings) != 0 {
			t.Errorf("%s: %+v", q, r.Findings)
		}
	}
	r := newLinterTargets(t, "").File("r.yaml", rule(`rate(vllm:kv_offload_total_bytes_total[5m]) > 0`))
	if len(r.Findings) != 1 || r.Findings[0].Status != StatusDeprecated {
		t.Errorf("kv_offload_total_bytes: %+v", r.Findings)
	}
}

// TestRealDynamoSGLangDashboard lints a reduction of Dynamo's dashboard for SGLang workers
// (the file says where it comes from), which reads both families: no name is unknown, the
// success rate is a share of a whole (no ratio-mismatch), and the three stat panels that sum
// raw counters (total requests, input and output tokens) are counter-without-rate warnings. At
// Dynamo 1.1, dynamo_frontend_active_requests (1.2.0, inferred) is not there yet.
func TestRealDynamoSGLangDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures, "dynamo_sglang_dashboard_2a6da14c8.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := newLinterTargets(t, "").File("d.json", b)
	var raw []string
	for _, f := range r.Findings {
		if f.Code != CodeCounterRaw {
			t.Errorf("unexpected: %s", f.Message)
			continue
		}
		raw = append(raw, f.Metric)
	}
	want := []string{"dynamo_frontend_requests_total", "dynamo_frontend_input_sequence_tokens_sum", "dynamo_frontend_output_tokens_total"}
	if !slices.Equal(raw, want) {
		t.Errorf("counter-without-rate on %q, want %q", raw, want)
	}
	if !slices.Equal(r.Families, []string{"sglang", "dynamo"}) {
		t.Errorf("families %v", r.Families)
	}
	r = newLinterTargets(t, "dynamo=1.1").File("d.json", b)
	n := 0
	for _, f := range r.Findings {
		if f.Status == StatusUnknown {
			n++
			if f.Metric != "dynamo_frontend_active_requests" {
				t.Errorf("unknown at 1.1: %s", f.Message)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d unknown at 1.1, want 1: %+v", n, r.Findings)
	}
}
