package promql

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestQueriesConstant checks that every query parses and that their number does not depend
// on anything but the code.
func TestQueriesConstant(t *testing.T) {
	for _, p := range []Prometheus{
		{Window: 5 * time.Minute},
		{Window: 30 * time.Second, Selector: `namespace="prod"`, By: []string{"pod", "engine"}},
	} {
		qs := p.Queries()
		if len(qs) != 6 {
			t.Errorf("%d queries, want 6", len(qs))
		}
		for _, q := range qs {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.expr); err != nil {
				t.Errorf("query %s does not parse: %v\n%s", q.name, err, q.expr)
			}
			if p.Selector != "" && !strings.Contains(q.expr, p.Selector) {
				t.Errorf("query %s lacks the selector", q.name)
			}
		}
	}
}

func TestNormalizeSelector(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{`namespace="prod"`, `namespace="prod"`, ""},
		{`{job=~"vllm.*", namespace!="dev"}`, `job=~"vllm.*",namespace!="dev"`, ""},
		{``, ``, ""},
		{`namespace=prod`, "", "selector"},
		{`__name__="x"`, "", "metric name"},
	}
	for _, tt := range tests {
		got, err := NormalizeSelector(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("NormalizeSelector(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeSelector(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// fakeProm answers /api/v1/query like Prometheus, by recognising which of the fixed queries
// it got.
type fakeProm struct {
	status  int
	answers map[string][]map[string]any // query name -> vector
	calls   atomic.Int32
	block   chan struct{} // when set, requests hang until it is closed
	// by is the --by the test's client uses.
	by []string
	// html answers every request with a web page, as a UI or a login page does.
	html bool
	// warnings go with every successful answer, as Thanos's partial responses do.
	warnings []string
}

func (fp *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fp.calls.Add(1)
	if fp.block != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-fp.block:
		}
		return
	}
	if fp.html {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><html><body>Sign in</body></html>"))
		return
	}
	if fp.status != 0 {
		w.WriteHeader(fp.status)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"forced"}`))
		return
	}
	_ = r.ParseForm()
	q := r.Form.Get("query")
	name := "gauges"
	switch {
	case strings.HasPrefix(q, "count by (server)"):
		name = "routers"
	case strings.HasPrefix(q, "count by (__name__)"):
		name = "stacks"
	case strings.Contains(q, "cache_config_info"):
		name = "config"
	case strings.Contains(q, "resets("):
		name = "resets"
	case strings.Contains(q, "rate("):
		name = "counters"
	}
	res := fp.answers[name]
	if res == nil {
		res = []map[string]any{}
	}
	ts := float64(time.Now().Unix())
	for _, s := range res {
		s["value"] = []any{ts, s["v"]}
	}
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": res}}
	if fp.warnings != nil {
		body["warnings"] = fp.warnings
	}
	_ = json.NewEncoder(w).Encode(body)
}

func series(tag string, v string, labels ...string) map[string]any {
	m := map[string]string{}
	if tag != "" {
		m[tagLabel] = tag
	}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	return map[string]any{"metric": m, "v": v}
}

func newProm(t *testing.T, fp *fakeProm) Prometheus {
	t.Helper()
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return Prometheus{API: promv1.NewAPI(c), URL: srv.URL, Window: time.Minute, Timeout: 5 * time.Second}
}

func TestPrometheusCollect(t *testing.T) {
	fp := &fakeProm{answers: map[string][]map[string]any{
		"counters": {
			series("vllm:prefix_cache_queries_total", "100", "pod", "a", "engine", "0", "model_name", "m"),
			series("vllm:prefix_cache_queries_total", "100", "pod", "a", "engine", "1", "model_name", "m"),
			series("vllm:prefix_cache_hits_total", "50", "pod", "a", "engine", "0", "model_name", "m"),
			series("vllm:prefix_cache_hits_total", "30", "pod", "a", "engine", "1", "model_name", "m"),
			series("vllm:gpu_prefix_cache_queries_total", "10", "instance", "10.0.0.2:8000", "model_name", "m"),
			series("vllm:gpu_prefix_cache_hits_total", "1", "instance", "10.0.0.2:8000", "model_name", "m"),
		},
		"resets": {
			series("vllm:gpu_prefix_cache_queries_total", "1", "instance", "10.0.0.2:8000", "model_name", "m"),
		},
		"gauges": {
			series("vllm:kv_cache_usage_perc", "0.5", "pod", "a", "engine", "0", "model_name", "m"),
			series("vllm:kv_cache_usage_perc", "0.7", "pod", "a", "engine", "1", "model_name", "m"),
			series("vllm:num_requests_waiting", "NaN", "pod", "a", "engine", "1", "model_name", "m"),
		},
		"config":  {series("", "1", "pod", "a", "engine", "0", "block_size", "32", "enable_prefix_caching", "True")},
		"routers": {series("", "12", "server", "http://r:80")},
		"stacks": {series("", "3", "__name__", "litellm_requests_metric_total"),
			series("", "1", "__name__", "llm_d_epp_request_total"),
			series("", "2", "__name__", "litellm_deployment_state"),
			series("", "1", "__name__", "inference_extension_scheduler_attempts")},
	}}
	p := newProm(t, fp)
	in, err := p.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := fp.calls.Load(); got != 6 {
		t.Errorf("%d API calls, want 6", got)
	}
	rep := Analyze(in)
	type row struct {
		Replica    string
		HitRate    float64
		QPS        float64
		KV         *float64
		Block      *int
		Generation Generation
	}
	var got []row
	for _, r := range rep.Replicas {
		got = append(got, row{r.Replica, *r.HitRate, *r.QueriesPerSec, r.KVUsage, r.BlockSize, r.Generation})
	}
	b32 := 32
	want := []row{
		{"10.0.0.2:8000", 0.1, 10, nil, nil, Deprecated},
		{"a", 80.0 / 200, 200, f(0.6), &b32, Current},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"http://r:80"}, rep.RouterSeries); diff != "" {
		t.Errorf("routers (-want +got):\n%s", diff)
	}
	var gotCodes []string
	for _, x := range rep.Findings {
		gotCodes = append(gotCodes, x.Code+"@"+x.Subject)
	}
	for _, w := range []string{"counter-reset@10.0.0.2:8000", "bad-value@a", "old-metric-name@10.0.0.2:8000", "router-series@"} {
		if !strings.Contains(strings.Join(gotCodes, " "), w) {
			t.Errorf("findings %v lack %s", gotCodes, w)
		}
	}
	if len(in.Queries) != 6 {
		t.Errorf("%d query stats, want 6", len(in.Queries))
	}
	// The routers' own families, one series a name in whatever order the server gives them:
	// each product once, named by its first family in name order; production-stack by the
	// router's vllm: series with a server label.
	// In name order: inference_extension_scheduler_attempts (llm-d), litellm_deployment_state
	// (LiteLLM; litellm_requests_metric_total after it), llm_d_epp_request_total (llm-d again).
	wantStacks := []RouterStack{{"llm-d", "inference_extension_scheduler_attempts"}, {"litellm", "litellm_deployment_state"}, {"production-stack", "vllm: series with a server label (the router's per-backend series)"}}
	if diff := cmp.Diff(wantStacks, rep.Stacks); diff != "" {
		t.Errorf("stacks (-want +got):\n%s", diff)
	}
}

func TestPrometheusErrors(t *testing.T) {
	tests := []struct {
		name string
		fp   *fakeProm
		want string
	}{
		{"unauthorized", &fakeProm{status: http.StatusUnauthorized}, "check --bearer-token-file"},
		{"bad query", &fakeProm{status: http.StatusBadRequest}, "check --selector and --by"},
		{"empty", &fakeProm{}, "no vLLM engine series over the last 1m (selector: none)"},
		{"only routers", &fakeProm{answers: map[string][]map[string]any{"routers": {series("", "3", "server", "r")}}}, "only production-stack router series"},
		{"timeout", &fakeProm{block: make(chan struct{})}, "query-timeout"},
		{"by a label no series has", &fakeProm{by: []string{"namespace"}, answers: map[string][]map[string]any{"counters": {
			series("vllm:prefix_cache_queries_total", "100", "pod", "a", "model_name", "m"),
			series("vllm:prefix_cache_queries_total", "100", "pod", "b", "model_name", "m"),
		}}}, "--by namespace: no vLLM series carries these labels"},
		{"not found", &fakeProm{status: http.StatusNotFound}, "no Prometheus query API at this URL"},
		{"html", &fakeProm{html: true}, "not the Prometheus API's JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProm(t, tt.fp)
			p.By = tt.fp.by
			if tt.fp.block != nil {
				p.Timeout = 50 * time.Millisecond
				t.Cleanup(func() { close(tt.fp.block) }) // runs before the server closes
			}
			_, err := p.Collect(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestPrometheusPartialResponse checks that a warning the server sends with a successful answer
// (Thanos and Mimir say "partial response" when a store did not answer) becomes a finding, once
// per distinct text, rather than being dropped.
func TestPrometheusPartialResponse(t *testing.T) {
	const partial = "partial response: store gateway eu-1 unavailable"
	fp := &fakeProm{
		warnings: []string{partial},
		answers: map[string][]map[string]any{"counters": {
			series("vllm:prefix_cache_queries_total", "100", "pod", "a", "model_name", "m"),
			series("vllm:prefix_cache_hits_total", "50", "pod", "a", "model_name", "m"),
		}},
	}
	p := newProm(t, fp)
	in, err := p.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerWarning{{Warning: partial, Queries: []string{"counters", "resets", "gauges", "config", "routers", "stacks"}}}
	if diff := cmp.Diff(want, in.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	var got []finding.Finding
	for _, f := range Analyze(in).Findings {
		if f.Code == "server-warning" {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Severity != finding.Warning || !strings.Contains(got[0].Message, partial) || !strings.Contains(got[0].Message, p.URL) {
		t.Errorf("server-warning findings = %+v, want one warning naming %s and quoting %q", got, p.URL, partial)
	}
}

// TestPrometheusUnreachable checks the message when nothing listens at the address.
func TestPrometheusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // the port is now free: nothing answers there
	c, err := api.NewClient(api.Config{Address: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	p := Prometheus{API: promv1.NewAPI(c), URL: "http://" + addr, Window: time.Minute, Timeout: 5 * time.Second}
	_, err = p.Collect(context.Background())
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "is the server running") {
		t.Errorf("error = %v, want it to name %s and ask whether the server runs", err, addr)
	}
}

// TestPrometheusGoneAndNew: the gauges query also says which prefix-cache counters have a
// sample at the end of the window. Pod a has a rate and a sample: up. Pod b has a rate but no
// sample at the end: it stopped inside the window (its row stays, covering the time it was
// up). Pod c has a sample but no rate: it started too late in the window for two samples, so it
// is new, not a replica without prefix-cache metrics.
func TestPrometheusGoneAndNew(t *testing.T) {
	present := func(name, pod string) map[string]any {
		s := series(presentTag, "1", "pod", pod, "model_name", "m")
		s["metric"].(map[string]string)["__name__"] = name
		return s
	}
	fp := &fakeProm{answers: map[string][]map[string]any{
		"counters": {
			series("vllm:prefix_cache_queries_total", "10", "pod", "a", "model_name", "m"),
			series("vllm:prefix_cache_hits_total", "5", "pod", "a", "model_name", "m"),
			series("vllm:prefix_cache_queries_total", "10", "pod", "b", "model_name", "m"),
			series("vllm:prefix_cache_hits_total", "2", "pod", "b", "model_name", "m"),
		},
		"gauges": {
			present("vllm:prefix_cache_queries_total", "a"),
			present("vllm:prefix_cache_hits_total", "a"),
			present("vllm:prefix_cache_queries_total", "c"),
			present("vllm:prefix_cache_hits_total", "c"),
			series("vllm:num_requests_running", "2", "pod", "c", "model_name", "m"),
		},
	}}
	in, err := newProm(t, fp).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	var rows []string
	for _, r := range rep.Replicas {
		rows = append(rows, r.Replica)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, rows); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	if c := rep.Replicas[2]; c.HitRate != nil || c.Generation != Current || c.Model != "m" {
		t.Errorf("c: hit rate %v, generation %q, model %q; want none, current, m", c.HitRate, c.Generation, c.Model)
	}
	got := map[string][]string{}
	for _, x := range rep.Findings {
		got[x.Subject] = append(got[x.Subject], x.Code)
	}
	want := map[string][]string{"b": {"replica-gone"}, "c": {"replica-new"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings by replica (-want +got):\n%s", diff)
	}
}
