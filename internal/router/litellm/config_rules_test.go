package litellm

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

const shuffleConfig = `model_list:
  - model_name: qwen
    litellm_params:
      model: hosted_vllm/Qwen/Qwen3-32B
      api_base: http://vllm-0.vllm:8000/v1
  - model_name: qwen
    litellm_params:
      model: hosted_vllm/Qwen/Qwen3-32B
      api_base: http://vllm-1.vllm:8000/v1
router_settings:
  routing_strategy: simple-shuffle
`

// TestConfigRules: LiteLLM's rules, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// LiteLLM
		{"LL-01 two vLLM deployments, shuffle", map[string]string{"config.yaml": shuffleConfig}, []string{"litellm/no-affinity"}},
		{"LL-01 negative: session affinity", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [session_affinity]\n"}, nil},
		{"LL-01 negative: group override pins", map[string]string{"config.yaml": shuffleConfig + "  model_group_affinity_config:\n    qwen: [deployment_affinity]\n"}, nil},
		{"LL-01 negative: one deployment per group", map[string]string{"config.yaml": "model_list:\n  - model_name: a\n    litellm_params: {model: hosted_vllm/a, api_base: http://a:8000/v1}\n  - model_name: b\n    litellm_params: {model: hosted_vllm/a, api_base: http://a:8000/v1}\n"}, nil},
		{"LL-02 prompt caching with anthropic auto-caching", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [prompt_caching, session_affinity]\nlitellm_settings:\n  enable_anthropic_prompt_caching: true\n"}, []string{"litellm/prompt-caching-last-turn"}},
		{"LL-02 negative: auto-caching off", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [prompt_caching, session_affinity]\nlitellm_settings:\n  enable_anthropic_prompt_caching: false\n"}, nil},
		{"LL-03 prompt caching alone", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [prompt_caching]\n"}, []string{"litellm/prompt-caching-only"}},
		{"LL-04 session affinity without Redis on 3 proxy pods", map[string]string{
			"config.yaml": shuffleConfig + "  optional_pre_call_checks: [session_affinity]\n",
			"proxy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n        - name: litellm\n          image: ghcr.io/berriai/litellm:main-v1.80.0\n          args: [--config, /app/config.yaml]\n"}, []string{"litellm/affinity-per-pod"}},
		{"LL-04 in the litellm-helm chart's values", map[string]string{"values.yaml": "replicaCount: 2\nproxy_config:\n" + configtest.Indent(shuffleConfig+"  optional_pre_call_checks: [deployment_affinity]\n", "  ")}, []string{"litellm/affinity-per-pod"}},
		{"LL-04 negative: Redis shared", map[string]string{"values.yaml": "replicaCount: 2\nproxy_config:\n" + configtest.Indent(shuffleConfig+"  optional_pre_call_checks: [deployment_affinity]\n  redis_host: os.environ/REDIS_HOST\n", "  ")}, nil},
		{"LL-04 negative: one proxy pod", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [session_affinity]\n"}, nil},
		{"LL-06 prompt_prefix_affinity", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [prompt_prefix_affinity, session_affinity]\n"}, []string{"litellm/invalid-affinity-flag"}},
		{"LL-06 bad group flag", map[string]string{"config.yaml": shuffleConfig + "  model_group_affinity_config:\n    qwen: [session_affinity, prompt_caching]\n"}, []string{"litellm/invalid-affinity-flag"}},
		{"typo: optional_pre_call_check", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_check: [session_affinity]\n"}, []string{"litellm/key-typo", "litellm/no-affinity"}},
		// router_setings is two edits from router_settings: LiteLLM ignores the block.
		{"typo in a top-level block", map[string]string{"config.yaml": strings.Replace(shuffleConfig, "router_settings:", "router_setings:", 1)}, []string{"litellm/key-typo", "litellm/no-affinity"}},
		{"unknown router_settings key", map[string]string{"config.yaml": shuffleConfig + "  optional_pre_call_checks: [session_affinity]\n  my_custom_thing: 3\n"}, []string{"litellm/unknown-key"}},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
