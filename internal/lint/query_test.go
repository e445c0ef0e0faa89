package lint

import (
	"strings"
	"testing"
)

// TestQueryChecks: each query is a situation whose right answer follows from what the series
// are (a counter's value is its total since the server started; a ratio of rates compares
// two windows; histogram_quantile interpolates within le buckets).
func TestQueryChecks(t *testing.T) {
	tests := []struct {
		expr string
		want []string // codes, in order; nil: no query finding
		msg  string   // a part of the first finding's message
	}{
		// A panel plotting a counter as it is.
		{`vllm:prefix_cache_hits_total`, []string{CodeCounterRaw}, "total since the server last started"},
		{`sum by (model_name) (vllm:request_success_total{finished_reason="stop"})`, []string{CodeCounterRaw}, ""},
		{`llm_d_epp_request_total > 100`, []string{CodeCounterRaw}, ""},
		// Through rate, increase, irate, or a range function: fine.
		{`rate(vllm:prefix_cache_hits_total[5m])`, nil, ""},
		{`sum(increase(vllm:num_preemptions_total[1h]))`, nil, ""},
		{`irate(vllm:generation_tokens_total[$__rate_interval])`, nil, ""},
		{`max_over_time(vllm:prompt_tokens_total[10m:1m])`, nil, ""},
		// Existence and counting read the instant value on purpose.
		{`absent(vllm:request_success_total)`, nil, ""},
		{`count(vllm:prompt_tokens_total) by (pod)`, nil, ""},
		// Gauges, the router's server-labelled gauge copy, histogram buckets summed by le.
		{`vllm:num_requests_running`, nil, ""},
		{`vllm:gpu_prefix_cache_hits_total{server="http://a:8000"}`, nil, ""},
		{`sum by (le) (vllm:e2e_request_latency_seconds_bucket)`, nil, ""},
		// A ratio of lifetime totals: the hit rate since start, not now.
		{`vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total`, []string{CodeCounterRaw, CodeCounterRaw}, "ratio of lifetime totals"},
		// The hit rate done right, in Grafana or not.
		{`sum(rate(vllm:prefix_cache_hits_total[5m])) / sum(rate(vllm:prefix_cache_queries_total[5m]))`, nil, ""},
		{`sum by (pod) (rate(vllm:prefix_cache_hits_total[$__rate_interval])) / sum by (pod) (rate(vllm:prefix_cache_queries_total[$__rate_interval]))`, nil, ""},
		// Different windows: 5m of hits over 1m of queries can exceed 1.
		{`rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[1m])`, []string{CodeRatioMismatch}, "different windows ([5m] over [1m])"},
		// Aggregated by different labels: no series match, the panel is empty.
		{`sum by (pod) (rate(vllm:prefix_cache_hits_total[5m])) / sum by (model_name) (rate(vllm:prefix_cache_queries_total[5m]))`, []string{CodeRatioMismatch}, "aggregated differently"},
		// One model's hits over every model's queries.
		{`sum(rate(vllm:prefix_cache_hits_total{model_name="a"}[5m])) / sum(rate(vllm:prefix_cache_queries_total[5m]))`, []string{CodeRatioMismatch}, "different series"},
		// A share of a whole (Dynamo's own SGLang dashboard, dev/observability/grafana_dashboards/
		// sglang.json@2a6da14): the numerator is a subset of the same series on purpose.
		{`100 * sum(rate(dynamo_frontend_requests_total{status="success"}[5m])) / sum(rate(dynamo_frontend_requests_total[5m]))`, nil, ""},
		{`sum(rate(vllm:request_success_total{finished_reason="stop",model_name="a"}[5m])) / sum(rate(vllm:request_success_total{model_name="a"}[5m]))`, nil, ""},
		// Not a share: the sides select disjoint series, or the denominator is the narrower.
		{`sum(rate(vllm:request_success_total{model_name="a"}[5m])) / sum(rate(vllm:request_success_total{model_name="b"}[5m]))`, []string{CodeRatioMismatch}, "different series"},
		{`sum(rate(vllm:request_success_total[5m])) / sum(rate(vllm:request_success_total{model_name="b"}[5m]))`, []string{CodeRatioMismatch}, "different series"},
		// The author chose the matching: not second-guessed.
		{`sum by (pod) (rate(vllm:prefix_cache_hits_total[5m])) / on (pod) group_left sum by (pod, model_name) (rate(vllm:prefix_cache_queries_total[5m]))`, nil, ""},
		// Not counters on both sides: a rate over a gauge's average, not a ratio of rates.
		{`rate(vllm:prompt_tokens_total[5m]) / avg_over_time(vllm:num_requests_running[1m])`, nil, ""},
		// histogram_quantile needs _bucket, aggregated with le kept.
		{`histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`, nil, ""},
		{`histogram_quantile(0.9, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`, nil, ""},
		{`histogram_quantile(0.9, rate(vllm:time_to_first_token_seconds_bucket[5m]))`, nil, ""},
		{`histogram_quantile(0.9, sum without (pod) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`, nil, ""},
		{`histogram_quantile(0.9, sum(rate(vllm:time_to_first_token_seconds_bucket[5m])))`, []string{CodeQuantile}, "drops the le label"},
		{`histogram_quantile(0.9, sum by (model_name) (rate(llm_d_epp_request_duration_seconds_bucket[5m])))`, []string{CodeQuantile}, "by (model_name)"},
		{`histogram_quantile(0.9, sum without (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))`, []string{CodeQuantile}, "without (le)"},
		{`histogram_quantile(0.99, rate(vllm:e2e_request_latency_seconds_sum[5m]))`, []string{CodeQuantile}, "has no le buckets"},
		// A histogram kvcheck does not know, by its _bucket name.
		{`histogram_quantile(0.5, sum by (pod) (rate(http_request_duration_seconds_bucket[5m])))`, []string{CodeQuantile}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			r := newLinterTargets(t, "").File("r.yaml", rule(tt.expr))
			var codes []string
			var first string
			for _, f := range r.Findings {
				if f.Status != StatusQuery {
					continue
				}
				if first == "" {
					first = f.Message
				}
				codes = append(codes, f.Code)
			}
			if strings.Join(codes, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("codes %v, want %v: %+v", codes, tt.want, r.Findings)
			}
			if !strings.Contains(first, tt.msg) {
				t.Errorf("message %q lacks %q", first, tt.msg)
			}
		})
	}
}

// TestQueryChecksSkipTemplates: a Grafana variable's label_values(counter, label) lists label
// values; the counter's value is not used.
func TestQueryChecksSkipTemplates(t *testing.T) {
	src := []byte(`{"panels": [], "templating": {"list": [{"name": "model", "type": "query",
  "query": "label_values(vllm:generation_tokens_total, model_name)"}]}, "schemaVersion": 39}`)
	for _, f := range newLinterTargets(t, "").File("d.json", src).Findings {
		if f.Status == StatusQuery {
			t.Errorf("template variable reported: %+v", f)
		}
	}
}
