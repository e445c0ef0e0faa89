package assess

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// TestStackSeen: the product the user runs, for the ranking's stack rule (issue 22 item 1):
// --today names it when it names a product; else the router the --config files configure;
// else one they set up; else one whose own metric families the metrics hold (llm-d's EPP
// before LiteLLM when both show: LiteLLM in front of the inference gateway routes to the
// gateway, and the EPP picks the replica); else none.
func TestStackSeen(t *testing.T) {
	fed := &promql.Report{Stacks: []promql.RouterStack{{Product: "litellm", Family: "litellm_requests_metric_total"}, {Product: "llm-d", Family: "inference_extension_scheduler_attempts"}}}
	files := &product.Files{Routers: []product.Configured{{Policy: "litellm-prompt-caching", Where: "litellm.yaml:12"}}}
	cases := []struct {
		name  string
		in    Inputs
		today string
		want  rank.Stack
	}{
		{"--today names a product", Inputs{Files: files, Metrics: fed}, "dynamo-kv", rank.Stack{Product: "dynamo", From: "--today dynamo-kv"}},
		{"the files configure LiteLLM", Inputs{Files: files, Metrics: fed}, DefaultToday, rank.Stack{Product: "litellm", From: "configured in litellm.yaml:12"}},
		{"the files configure vLLM Router", Inputs{Files: &product.Files{Routers: []product.Configured{{Policy: "vllm-router-consistent-hash", Where: "router.yaml:9"}}}}, DefaultToday, rank.Stack{Product: "vllm-router", From: "configured in router.yaml:9"}},
		{"the files set up a gateway", Inputs{Files: &product.Files{Systems: map[string]string{"litellm": "gw.yaml:3"}}}, DefaultToday, rank.Stack{Product: "litellm", From: "set up in gw.yaml:3"}},
		{"the metrics alone", Inputs{Metrics: fed}, DefaultToday, rank.Stack{Product: "llm-d", From: "the metrics hold inference_extension_scheduler_attempts"}},
		{"nothing shows one", Inputs{Metrics: &promql.Report{}}, DefaultToday, rank.Stack{}},
	}
	for _, c := range cases {
		o := Options{Today: c.today, stack: stackSeen(c.in)}
		if got := stackOf(o); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
