package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustLoad(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestLookup(t *testing.T) {
	c := mustLoad(t)
	type want struct {
		ok      bool
		form    Form
		name    string
		suffix  string
		exposed bool
		engine  string // family name, "" for none
		router  string
	}
	tests := []struct {
		written string
		want    want
	}{
		{"vllm:kv_cache_usage_perc", want{true, Plain, "vllm:kv_cache_usage_perc", "", true, "vllm:kv_cache_usage_perc", ""}},
		{"vllm:prefix_cache_hits_total", want{true, Plain, "vllm:prefix_cache_hits_total", "_total", true, "vllm:prefix_cache_hits", ""}},
		{"vllm:prefix_cache_hits_created", want{true, Plain, "vllm:prefix_cache_hits_created", "_created", true, "vllm:prefix_cache_hits", ""}},
		{"vllm:num_preemptions", want{true, Plain, "vllm:num_preemptions", "", false, "vllm:num_preemptions", ""}},
		{"vllm:time_per_output_token_seconds_bucket", want{true, Plain, "vllm:time_per_output_token_seconds_bucket", "_bucket", true, "vllm:time_per_output_token_seconds", ""}},
		{"vllm:e2e_request_latency_seconds", want{true, Plain, "vllm:e2e_request_latency_seconds", "", false, "vllm:e2e_request_latency_seconds", ""}},
		// A histogram whose family name ends in _total.
		{"vllm:iteration_tokens_total_sum", want{true, Plain, "vllm:iteration_tokens_total_sum", "_sum", true, "vllm:iteration_tokens_total", ""}},
		{"vllm:iteration_tokens_total", want{true, Plain, "vllm:iteration_tokens_total", "", false, "vllm:iteration_tokens_total", ""}},
		// The router's gauge named like the engine's old counter: both families.
		{"vllm:gpu_prefix_cache_hits_total", want{true, Plain, "vllm:gpu_prefix_cache_hits_total", "_total", true, "vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total"}},
		{"vllm:healthy_pods_total", want{true, Plain, "vllm:healthy_pods_total", "", true, "", "vllm:healthy_pods_total"}},
		{"vllm:num_incoming_requests_total", want{true, Plain, "vllm:num_incoming_requests_total", "_total", true, "", "vllm:num_incoming_requests"}},
		{"vllm_num_requests_waiting", want{true, Adapter, "vllm:num_requests_waiting", "", true, "vllm:num_requests_waiting", "vllm:num_requests_waiting"}},
		{"ray_vllm_gpu_cache_usage_perc", want{true, Ray, "vllm:gpu_cache_usage_perc", "", true, "vllm:gpu_cache_usage_perc", ""}},
		{"gpu_cache_usage_perc", want{true, Bare, "vllm:gpu_cache_usage_perc", "", true, "vllm:gpu_cache_usage_perc", ""}},
		{"prometheus.googleapis.com|vllm:gpu_cache_usage_perc|gauge", want{true, GMP, "vllm:gpu_cache_usage_perc", "", true, "vllm:gpu_cache_usage_perc", ""}},
		// A vllm: name nobody publishes is returned so the caller can call it unknown.
		{"vllm:prompt_token_total", want{true, Plain, "vllm:prompt_token_total", "", false, "", ""}},
		// Not vLLM's.
		{"process_cpu_seconds_total", want{}},
		{"vllm_pii_requests_total", want{}},
		{"prometheus.googleapis.com|up|gauge", want{}},
	}
	for _, tt := range tests {
		t.Run(tt.written, func(t *testing.T) {
			m, ok := c.Lookup(tt.written)
			got := want{ok: ok}
			if ok {
				got = want{ok, m.Form, m.Name, m.Suffix, m.Exposed, "", ""}
				if m.Engine != nil {
					got.engine = m.Engine.Name
				}
				if m.Router != nil {
					got.router = m.Router.Name
				}
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Lookup(%q) mismatch (-want +got):\n%s", tt.written, diff)
			}
		})
	}
}

func TestStatusAt(t *testing.T) {
	c := mustLoad(t)
	m, _ := c.Lookup("vllm:gpu_cache_usage_perc")
	tests := []struct {
		version string
		want    Status
		since   string
	}{
		{"0.9.1", Current, ""},
		{"0.9.2", Deprecated, "0.9.2"},
		{"0.10", Deprecated, "0.9.2"},
		{"0.11.0", Hidden, "0.11.0"},
		{"0.12", Removed, "0.12.0"},
		{"0.26.0", Removed, "0.12.0"},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		st, since := m.Engine.StatusAt(v)
		if st != tt.want || since.String() != tt.since {
			t.Errorf("gpu_cache_usage_perc at %s = %s since %q, want %s since %q", tt.version, st, since, tt.want, tt.since)
		}
	}
	added, _ := c.Lookup("vllm:prompt_tokens_by_source_total")
	if st, since := added.Engine.StatusAt(Version{0, 15, 0}); st != NotYet || since.String() != "0.16.0" {
		t.Errorf("prompt_tokens_by_source at 0.15.0 = %s since %s, want not-yet since 0.16.0", st, since)
	}
}

func TestReplacementSeries(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		written, want string
		ok            bool
	}{
		{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", true},
		{"vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total", true},
		{"vllm:gpu_prefix_cache_queries_created", "vllm:prefix_cache_queries_created", true},
		{"vllm:time_per_output_token_seconds_count", "vllm:inter_token_latency_seconds_count", true},
		{"ray_vllm_time_per_output_token_seconds_bucket", "ray_vllm_inter_token_latency_seconds_bucket", true},
		{"vllm_gpu_cache_usage_perc", "vllm_kv_cache_usage_perc", true},
		{"gpu_cache_usage_perc", "kv_cache_usage_perc", true},
		{"prometheus.googleapis.com|vllm:gpu_cache_usage_perc|gauge", "prometheus.googleapis.com|vllm:kv_cache_usage_perc|gauge", true},
		{"vllm:time_per_output_token_seconds", "", false}, // no suffix: which series?
		{"vllm:num_requests_swapped", "", false},
		{"vllm:gpu_prefix_cache_hit_rate", "", false}, // an expression, not a rename
	}
	for _, tt := range tests {
		m, ok := c.Lookup(tt.written)
		if !ok {
			t.Fatalf("Lookup(%q) not found", tt.written)
		}
		got, ok := m.ReplacementSeries()
		if got != tt.want || ok != tt.ok {
			t.Errorf("ReplacementSeries(%q) = %q, %v; want %q, %v", tt.written, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCatalogConsistent checks the data file against itself: every rename points at a
// metric that is current at the newest version, and every SPEC §3.3 row is present.
func TestCatalogConsistent(t *testing.T) {
	c := mustLoad(t)
	for _, m := range c.Metrics {
		if m.Help == "" {
			t.Errorf("%s (%s): no help text", m.Name, m.Source)
		}
		if !m.Deprecated.IsZero() && !m.Removed.IsZero() && m.Removed.Less(m.Deprecated) {
			t.Errorf("%s: removed %s before deprecated %s", m.Name, m.Removed, m.Deprecated)
		}
		if m.Rewrite != RewriteRename {
			continue
		}
		if m.Unreleased && m.Removed.IsZero() {
			t.Errorf("%s: unreleased without removed", m.Name)
		}
		r, ok := c.Lookup(m.Replacement)
		var repl *Metric
		for _, x := range append([]*Metric{r.Engine}, r.Also...) {
			if ok && x != nil && x.Family == m.Family {
				repl = x
			}
		}
		if repl == nil {
			t.Errorf("%s (%s): replacement %s is not in the catalog's %s family", m.Name, m.Family, m.Replacement, m.Family)
			continue
		}
		// The replacement exists in the release that retired the old name.
		when := m.Deprecated
		if when.IsZero() {
			when = m.Hidden
		}
		if when.IsZero() {
			when = m.Removed
		}
		if st, _ := repl.StatusAt(when); st != Current && st != Deprecated {
			t.Errorf("%s: replacement %s is %s at %s, where the old name was retired", m.Name, m.Replacement, st, when)
		}
		if st, _ := repl.StatusAt(c.Family(m.Family).Newest); m.Family == VLLM && st != Current {
			t.Errorf("%s: replacement %s is %s at %s", m.Name, m.Replacement, st, c.Newest)
		}
		if repl.Type != m.Type {
			t.Errorf("%s (%s): replacement %s is a %s", m.Name, m.Type, m.Replacement, repl.Type)
		}
	}
	for _, old := range []string{
		"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total",
		"vllm:gpu_prefix_cache_hit_rate", "vllm:cpu_prefix_cache_hit_rate", "vllm:num_requests_swapped",
		"vllm:cpu_cache_usage_perc", "vllm:time_in_queue_requests_bucket", "vllm:model_forward_time_milliseconds_sum",
		"vllm:model_execute_time_milliseconds_count", "vllm:time_per_output_token_seconds_bucket",
		"vllm:avg_prompt_throughput_toks_per_s", "vllm:avg_generation_throughput_toks_per_s",
		"vllm:prompt_tokens_recomputed_total", "vllm:kv_offload_total_bytes_total", "vllm:kv_offload_size_bucket",
	} {
		m, ok := c.Lookup(old)
		if !ok || m.Engine == nil {
			t.Errorf("%s: missing", old)
			continue
		}
		if st, _ := m.Engine.StatusAt(c.Newest); st == Current {
			t.Errorf("%s: current at %s, want retired", old, c.Newest)
		}
	}
	for _, cur := range []string{
		"vllm:prefix_cache_queries_total", "vllm:external_prefix_cache_hits_total", "vllm:num_preemptions_total",
		"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
		"vllm:prompt_tokens_total", "vllm:prompt_tokens_by_source_total", "vllm:cache_config_info",
		"vllm:inter_token_latency_seconds_bucket", "vllm:request_queue_time_seconds_sum",
	} {
		m, ok := c.Lookup(cur)
		if !ok || m.Engine == nil || !m.Exposed {
			t.Errorf("%s: not a known exposed engine series", cur)
			continue
		}
		if st, _ := m.Engine.StatusAt(c.Newest); st != Current {
			t.Errorf("%s: %s at %s, want current", cur, st, c.Newest)
		}
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want Version
		err  bool
	}{
		{"0.9", Version{0, 9, 0}, false},
		{"v0.10.2", Version{0, 10, 2}, false},
		{" 1.0.0 ", Version{1, 0, 0}, false},
		{"0", Version{}, true},
		{"0.x", Version{}, true},
		{"0.9.2.1", Version{}, true},
		{"-1.0", Version{}, true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseRejectsBadData(t *testing.T) {
	const fam = "families: [{name: vllm, newest: 0.1.0, ref: 'https://example.org/x'}]\n"
	const ref = "'vllm-project/vllm vllm/v1/metrics/loggers.py@v0.1.0'"
	tests := []struct{ name, data, want string }{
		{"no prefix", fam + "metrics: [{name: foo, type: gauge, source: engine, refs: [" + ref + "]}]", "lacks the vllm: prefix"},
		{"bad type", fam + "metrics: [{name: 'vllm:x', type: summary, source: engine, refs: [" + ref + "]}]", "unknown type"},
		{"bad source", fam + "metrics: [{name: 'vllm:x', type: gauge, source: proxy, refs: [" + ref + "]}]", "unknown source"},
		{"duplicate", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, refs: [" + ref + "]}, {name: 'vllm:x', type: gauge, source: engine, refs: [" + ref + "]}]", "listed twice"},
		{"bad version", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, removed: 'soon', refs: [" + ref + "]}]", "write it as X.Y"},
		{"expr without expr", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, rewrite: expr, refs: [" + ref + "]}]", "without expr"},
		// Every entry cites where it was read: an entry without refs, or with a reference that
		// names no repository and revision, does not load.
		{"no source", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine}]", "no source"},
		{"empty source", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, refs: []}]", "no source"},
		{"source without revision", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, refs: ['vllm-project/vllm vllm/v1/metrics/loggers.py']}]", "neither a URL"},
		{"unknown family", fam + "metrics: [{name: 'x', family: sglang, type: gauge, refs: [" + ref + "]}]", "unknown family"},
		{"unreleased without removed", fam + "metrics: [{name: 'vllm:x', type: gauge, source: engine, unreleased: true, refs: [" + ref + "]}]", "unreleased without"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	c := mustLoad(b)
	names := []string{"vllm:time_per_output_token_seconds_bucket", "vllm:kv_cache_usage_perc", "ray_vllm_gpu_cache_usage_perc", "process_cpu_seconds_total"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Lookup(names[i%len(names)])
	}
}

// TestSpecRenames pins every row of SPEC §3.3: deprecated, hidden and removed versions, and
// the replacement the table names.
func TestSpecRenames(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		name                        string
		deprecated, hidden, removed string
		replacement                 string // a part of the catalog's replacement text
	}{
		{"vllm:gpu_cache_usage_perc", "0.9.2", "0.11.0", "0.12.0", "vllm:kv_cache_usage_perc"},
		{"vllm:gpu_prefix_cache_queries_total", "0.9.2", "0.11.0", "0.12.0", "vllm:prefix_cache_queries_total"},
		{"vllm:gpu_prefix_cache_hits_total", "0.9.2", "0.11.0", "0.12.0", "vllm:prefix_cache_hits_total"},
		{"vllm:gpu_prefix_cache_hit_rate", "0.8.0", "0.8.3", "0.9.1", "rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])"},
		{"vllm:cpu_prefix_cache_hit_rate", "0.8.0", "0.8.3", "0.9.1", "rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])"},
		{"vllm:num_requests_swapped", "0.8.0", "0.8.3", "0.9.1", ""},
		{"vllm:cpu_cache_usage_perc", "0.8.0", "0.8.3", "0.9.1", ""},
		{"vllm:time_in_queue_requests", "0.8.0", "0.8.3", "0.9.1", "vllm:request_queue_time_seconds"},
		{"vllm:model_forward_time_milliseconds", "0.8.0", "0.8.3", "0.9.1", "vllm:request_prefill_time_seconds"},
		{"vllm:model_execute_time_milliseconds", "0.8.0", "0.8.3", "0.9.1", "vllm:request_decode_time_seconds"},
		{"vllm:time_per_output_token_seconds", "0.10.2", "0.12.0", "0.15.0", "vllm:inter_token_latency_seconds"},
		{"vllm:avg_prompt_throughput_toks_per_s", "", "", "0.7.0", "rate(vllm:prompt_tokens_total[5m])"},
		{"vllm:avg_generation_throughput_toks_per_s", "", "", "0.7.0", "rate(vllm:generation_tokens_total[5m])"},
		{"vllm:prompt_tokens_recomputed_total", "", "", "0.20.0", "vllm:prompt_tokens_by_source_total"},
		{"vllm:kv_offload_total_bytes_total", "0.26.0", "", "", "vllm:kv_offload_load_bytes"},
		{"vllm:kv_offload_total_time_total", "0.26.0", "", "", "vllm:kv_offload_store_time"},
		{"vllm:kv_offload_size_bucket", "0.26.0", "", "", "vllm:kv_offload_load_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := c.Lookup(tt.name)
			if !ok || m.Engine == nil {
				t.Fatalf("%s: not an engine metric in the catalog", tt.name)
			}
			e := m.Engine
			got := [3]string{e.Deprecated.String(), e.Hidden.String(), e.Removed.String()}
			if want := [3]string{tt.deprecated, tt.hidden, tt.removed}; got != want {
				t.Errorf("deprecated/hidden/removed = %v, want %v", got, want)
			}
			if !strings.Contains(e.Replacement, tt.replacement) {
				t.Errorf("replacement %q lacks %q", e.Replacement, tt.replacement)
			}
		})
	}
	if m, _ := c.Lookup("vllm:prompt_tokens_recomputed_total"); m.Engine == nil || m.Engine.Added.String() != "0.16.0" {
		t.Errorf("prompt_tokens_recomputed: added %v, want 0.16.0", m.Engine)
	}
}

// TestEveryEntryCitesASource: each entry of the embedded catalog names where it was read, as
// "owner/repo path@rev" or a URL; Parse refuses a file where one does not (see
// TestParseRejectsBadData), and this pins that the shipped file has none missing.
func TestEveryEntryCitesASource(t *testing.T) {
	c := mustLoad(t)
	for _, m := range c.Metrics {
		if len(m.Refs) == 0 {
			t.Errorf("%s (%s): no source", m.Name, m.Family)
		}
		for _, r := range m.Refs {
			if !refRE.MatchString(r) {
				t.Errorf("%s (%s): source %q names no repository and revision", m.Name, m.Family, r)
			}
		}
	}
	for _, f := range c.Families {
		if f.Ref == "" || f.Newest.IsZero() {
			t.Errorf("family %s: ref %q, newest %s", f.Name, f.Ref, f.Newest)
		}
	}
}

func TestSeriesAt(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		series, version, want string
		ok                    bool
	}{
		{"vllm:prefix_cache_hits_total", "0.26", "vllm:prefix_cache_hits_total", true},
		{"vllm:prefix_cache_hits_total", "0.9.2", "vllm:prefix_cache_hits_total", true},
		// Before 0.9.2 the V1 counter was the gpu_ one (0.7.3 on).
		{"vllm:prefix_cache_hits_total", "0.8.5", "vllm:gpu_prefix_cache_hits_total", true},
		{"vllm:prefix_cache_queries_created", "0.8.5", "vllm:gpu_prefix_cache_queries_created", true},
		// Before 0.7.3 there was neither.
		{"vllm:prefix_cache_hits_total", "0.7.0", "", false},
		{"vllm:kv_cache_usage_perc", "0.9.0", "vllm:gpu_cache_usage_perc", true},
		{"vllm:inter_token_latency_seconds_bucket", "0.9.0", "vllm:time_per_output_token_seconds_bucket", true},
		{"llm_d_router_epp_kv_cache_index_lookup_hits_total", "0.9.0", "kvcache_index_lookup_hits_total", true},
		{"llm_d_epp_request_total", "0.8.0", "inference_objective_request_total", true},
		// A name gone at the target stands for nothing there.
		{"vllm:gpu_cache_usage_perc", "0.12", "vllm:gpu_cache_usage_perc", false},
	}
	for _, tt := range tests {
		v, _ := ParseVersion(tt.version)
		got, ok := c.SeriesAt(tt.series, v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SeriesAt(%s, %s) = %q, %v; want %q, %v", tt.series, tt.version, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseTargets(t *testing.T) {
	c := mustLoad(t)
	got, err := c.ParseTargets("vllm=0.30, llm-d=0.9.1")
	if err != nil {
		t.Fatal(err)
	}
	if got["vllm"] != (Version{0, 30, 0}) || got["llm-d"] != (Version{0, 9, 1}) || len(got) != 2 {
		t.Errorf("got %v", got)
	}
	if c.TargetOf(got, "gaie") != c.Family("gaie").Newest {
		t.Errorf("a family not named is judged at its newest release")
	}
	for _, bad := range []string{"vllm", "nosuch=0.5", "vllm=0.x", "vllm=0.3,vllm=0.4"} {
		if _, err := c.ParseTargets(bad); err == nil {
			t.Errorf("ParseTargets(%q): no error", bad)
		}
	}
}

// TestOtherFamilyLookup: llm-d and GAIE names, their suffixes, shared names and the GMP form.
func TestOtherFamilyLookup(t *testing.T) {
	c := mustLoad(t)
	m, ok := c.Lookup("inference_objective_request_total")
	if !ok || m.Engine == nil || m.Family != "llm-d" || len(m.Also) != 1 || m.Also[0].Family != "gaie" || m.Suffix != "_total" {
		t.Fatalf("shared name: %+v", m)
	}
	m, ok = c.Lookup("llm_d_epp_request_duration_seconds_bucket")
	if !ok || m.Engine == nil || m.Engine.Type != Histogram || !m.Exposed {
		t.Errorf("histogram bucket: %+v", m)
	}
	m, ok = c.Lookup("llm_d_epp_request")
	if !ok || m.Engine == nil || m.Exposed {
		t.Errorf("counter without _total: %+v", m)
	}
	m, ok = c.Lookup("prometheus.googleapis.com|kvcache_index_lookup_hits_total|counter")
	if !ok || m.Form != GMP || m.Engine == nil || m.Family != "llm-d" {
		t.Errorf("GMP: %+v", m)
	}
	if r, ok := m.ReplacementSeries(); !ok || r != "prometheus.googleapis.com|llm_d_router_epp_kv_cache_index_lookup_hits_total|counter" {
		t.Errorf("GMP replacement %q, %v", r, ok)
	}
	if m, ok := c.Lookup("llm_d_epp_no_such_metric"); !ok || m.Engine != nil || m.Family != "llm-d" {
		t.Errorf("unknown name under an llm-d prefix: %+v, %v", m, ok)
	}
	if _, ok := c.Lookup("process_cpu_seconds_total"); ok {
		t.Errorf("process_cpu_seconds_total is nobody's in the catalog")
	}
}

// TestProductionStackFamily: the router's vllm:-named series keep their place beside vLLM's
// (a server-labelled copy is the router's) and have their own release axis.
func TestProductionStackFamily(t *testing.T) {
	c := mustLoad(t)
	m, ok := c.Lookup("vllm:input_tokens_total")
	if !ok || m.Router == nil || m.Router.Family != "production-stack" || m.Engine != nil {
		t.Fatalf("vllm:input_tokens_total: %+v", m)
	}
	if st, since := m.Router.StatusAt(Version{0, 1, 9}); st != NotYet || since.String() != "0.1.10" {
		t.Errorf("at vllm-stack 0.1.9: %s since %s, want not-yet since 0.1.10", st, since)
	}
	m, _ = c.Lookup("vllm:gpu_prefix_cache_hits_total")
	if m.Engine == nil || m.Router == nil || m.Engine.Family != VLLM || m.Router.Family != "production-stack" {
		t.Errorf("a name both publish: %+v", m)
	}
}

// TestBeyond: a target past the newest known release of its family is named, one at or before
// it is not.
func TestBeyond(t *testing.T) {
	c := mustLoad(t)
	f := c.Family(VLLM)
	next := Version{Major: f.Newest.Major, Minor: f.Newest.Minor + 1}
	if got := c.Beyond(Targets{VLLM: f.Newest}); len(got) != 0 {
		t.Errorf("the newest known release: %q, want nothing", got)
	}
	got := c.Beyond(Targets{VLLM: next})
	if len(got) != 1 || !strings.Contains(got[0], next.String()+" is newer than the metric catalog") {
		t.Errorf("a release past the newest: %q, want one sentence naming %s", got, next)
	}
}

// TestSGLangFamily: SGLang's engine names as written, in prometheus-adapter's spelling and in
// the GMP form; a rename across releases; an unknown name under the sglang: prefix.
func TestSGLangFamily(t *testing.T) {
	c := mustLoad(t)
	f := c.Family("sglang")
	if f == nil || f.Newest != (Version{0, 5, 6}) {
		t.Fatalf("sglang family: %+v", f)
	}
	m, ok := c.Lookup("sglang:num_running_reqs")
	if !ok || m.Engine == nil || m.Family != "sglang" || m.Engine.Type != Gauge || m.Form != Plain {
		t.Errorf("plain gauge: %+v", m)
	}
	m, ok = c.Lookup("sglang_prompt_tokens_total")
	if !ok || m.Engine == nil || m.Engine.Name != "sglang:prompt_tokens" || m.Form != Adapter || m.Suffix != "_total" {
		t.Errorf("adapter counter: %+v", m)
	}
	m, ok = c.Lookup("prometheus.googleapis.com|sglang:time_to_first_token_seconds_bucket|histogram")
	if !ok || m.Engine == nil || m.Form != GMP || m.Family != "sglang" || m.Suffix != "_bucket" {
		t.Errorf("GMP histogram: %+v", m)
	}
	// queue_time_s (0.5.2 only) became queue_time_seconds in 0.5.3 (PR #11123).
	m, _ = c.Lookup("sglang_queue_time_s_bucket")
	if st, since := m.Engine.StatusAt(Version{0, 5, 3}); st != Removed || since != (Version{0, 5, 3}) {
		t.Errorf("queue_time_s at 0.5.3: %s since %s", st, since)
	}
	if r, ok := m.ReplacementSeries(); !ok || r != "sglang_queue_time_seconds_bucket" {
		t.Errorf("adapter replacement %q, %v", r, ok)
	}
	if got, ok := c.SeriesAt("sglang:queue_time_seconds_bucket", Version{0, 5, 2}); !ok || got != "sglang:queue_time_s_bucket" {
		t.Errorf("SeriesAt 0.5.2: %q, %v", got, ok)
	}
	// A counter without _total matches no series; a name nobody registered is SGLang's unknown.
	if m, _ := c.Lookup("sglang:prompt_tokens"); m.Engine == nil || m.Exposed {
		t.Errorf("counter without _total: %+v", m)
	}
	if m, ok := c.Lookup("sglang:no_such_metric"); !ok || m.Engine != nil || m.Family != "sglang" {
		t.Errorf("unknown sglang: name: %+v, %v", m, ok)
	}
	if _, err := c.ParseTargets("sglang=0.4.6"); err != nil {
		t.Errorf("--target sglang=: %v", err)
	}
}

// TestDynamoFamily: the frontend's names, the nv_llm_http_service_ names PR #2176 renamed,
// the 0.5.1-only _total gauges, and the GMP form.
func TestDynamoFamily(t *testing.T) {
	c := mustLoad(t)
	m, ok := c.Lookup("nv_llm_http_service_requests_total")
	if !ok || m.Engine == nil || m.Family != "dynamo" || m.Suffix != "_total" {
		t.Fatalf("legacy counter: %+v", m)
	}
	if r, ok := m.ReplacementSeries(); !ok || r != "dynamo_frontend_requests_total" {
		t.Errorf("legacy replacement %q, %v", r, ok)
	}
	if st, _ := m.Engine.StatusAt(Version{0, 4, 1}); st != Removed {
		t.Errorf("at 0.4.1: %s", st)
	}
	// Before the rename a fix keeps the old name: the new one is not there yet.
	if got, ok := c.SeriesAt("dynamo_frontend_time_to_first_token_seconds_bucket", Version{0, 3, 2}); !ok || got != "nv_llm_http_service_time_to_first_token_seconds_bucket" {
		t.Errorf("SeriesAt 0.3.2: %q, %v", got, ok)
	}
	m, ok = c.Lookup("prometheus.googleapis.com|dynamo_frontend_queued_requests|gauge")
	if !ok || m.Form != GMP || m.Engine == nil || m.Family != "dynamo" {
		t.Errorf("GMP gauge: %+v", m)
	}
	if st, since := m.Engine.StatusAt(Version{0, 5, 1}); st != NotYet || since != (Version{0, 6, 0}) {
		t.Errorf("queued_requests at 0.5.1: %s since %s", st, since)
	}
	// A gauge named _total is exposed as written.
	if m, ok := c.Lookup("dynamo_frontend_queued_requests_total"); !ok || m.Engine == nil || m.Engine.Type != Gauge || !m.Exposed {
		t.Errorf("gauge with _total: %+v", m)
	}
	// Only the retired prefix is claimed: an unknown frontend name is nobody's.
	if _, ok := c.Lookup("dynamo_frontend_pending_requests"); ok {
		t.Errorf("an adapter alias under dynamo_frontend_ is not reported")
	}
	if m, ok := c.Lookup("nv_llm_http_service_no_such"); !ok || m.Engine != nil || m.Family != "dynamo" {
		t.Errorf("unknown legacy name: %+v, %v", m, ok)
	}
}
