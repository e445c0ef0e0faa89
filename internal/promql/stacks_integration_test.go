package promql

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPrometheusRouterStacks: --prometheus reads the router products the user runs from their
// own metric families, as a dump or a scrape does (issue 22, the stack rule). A real Prometheus
// scrapes an engine (vLLM's prefix-cache counters), a LiteLLM proxy (its Prometheus callback's
// litellm_* families), a Dynamo frontend (dynamo_frontend_*) and, in another namespace, an
// llm-d EPP (llm_d_epp_*). Worked by hand:
//   - without --selector the families of all three routers are held: dynamo (dynamo_frontend_
//     requests_total), litellm (litellm_deployment_state, before litellm_requests_metric_total
//     in name order) and llm-d (llm_d_epp_request_total), in the families' name order;
//   - with --selector namespace="team-a" (the engine, LiteLLM's and Dynamo's targets) the EPP
//     in namespace team-b is not read: dynamo and litellm only;
//   - the engine alone (--selector instance="<its address>") shows none.
func TestPrometheusRouterStacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	serve := func(text string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte(text))
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	engine := serve("# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000\n" +
		"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 400\n")
	litellm := serve("# TYPE litellm_requests_metric_total counter\nlitellm_requests_metric_total{model=\"qwen\"} 7\n" +
		"# TYPE litellm_deployment_state gauge\nlitellm_deployment_state{api_base=\"http://vllm-0:8000/v1\"} 0\n")
	dynamo := serve("# TYPE dynamo_frontend_requests_total counter\ndynamo_frontend_requests_total{model=\"m\"} 3\n")
	epp := serve("# TYPE llm_d_epp_request_total counter\nllm_d_epp_request_total{model_name=\"m\"} 5\n")
	ps := startPrometheus(t, ctx, []targetGroup{
		{targets: []string{engine, litellm, dynamo}, labels: map[string]string{"namespace": "team-a"}},
		{targets: []string{epp}, labels: map[string]string{"namespace": "team-b"}},
	}, nil)
	// Two scrapes of every target: the engine's counters then have a rate over the window.
	waitFor(t, ctx, "prometheus to hold two samples of every target", func() (bool, error) {
		got, err := ps.values(ctx, `count_over_time(up[1m]) >= 2`, time.Now())
		return len(got) == 4, err
	})
	stacks := func(sel string) []RouterStack {
		t.Helper()
		in, err := Prometheus{API: ps.api, URL: ps.url, Window: time.Minute, Timeout: 10 * time.Second, Selector: sel}.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return Analyze(in).Stacks
	}
	want := []RouterStack{{"dynamo", "dynamo_frontend_requests_total"}, {"litellm", "litellm_deployment_state"}, {"llm-d", "llm_d_epp_request_total"}}
	if diff := cmp.Diff(want, stacks("")); diff != "" {
		t.Errorf("no selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:2], stacks(`namespace="team-a"`)); diff != "" {
		t.Errorf("namespace team-a (-want +got):\n%s", diff)
	}
	if got := stacks(`instance="` + engine + `"`); len(got) != 0 {
		t.Errorf("the engine alone: %v", got)
	}
}
