package litellm

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// An optional_pre_call_checks entry LiteLLM does not know does nothing (the Router adds no
// check for a name it does not know), so a misspelt session_affinity pins nothing; it was read
// without a word. It is a warning at the entry naming the checks LiteLLM knows and the nearest.
// prompt_prefix_affinity stays LL-06's error, and the known checks are passed.
func TestLiteLLMUnknownPreCallCheck(t *testing.T) {
	checkers := []config.Checker{Router{}}
	cfg := func(checks string) string {
		return "model_list:\n- model_name: m\n  litellm_params: {model: hosted_vllm/m, api_base: http://a:8000/v1}\nrouter_settings:\n  optional_pre_call_checks: [" + checks + "]\n  redis_host: r\n"
	}
	for _, tc := range []struct {
		checks string
		want   []string // codes of the pre-call check findings
		msg    string
	}{
		{"session_afinity", []string{"litellm/unknown-pre-call-check"}, `"session_afinity" is not a pre-call check LiteLLM knows (prompt_caching, router_budget_limiting, responses_api_deployment_check, deployment_affinity, session_affinity, forward_client_headers_by_model_group, enforce_model_rate_limits, encrypted_content_affinity)`},
		{"session_affinity, sticky_sessions", []string{"litellm/unknown-pre-call-check"}, `"sticky_sessions" is not a pre-call check LiteLLM knows`},
		{"prompt_prefix_affinity", []string{"litellm/invalid-affinity-flag"}, ""},
		{strings.Join(PreCallChecks(), ", "), nil, ""},
	} {
		src := cfg(tc.checks)
		r := configtest.Findings(t, checkers, "config.yaml", src)
		var got []string
		for _, f := range r {
			if f.Code == "litellm/unknown-pre-call-check" || f.Code == "litellm/invalid-affinity-flag" {
				got = append(got, f.Code)
				if tc.msg != "" && (!strings.Contains(f.Message, tc.msg) || f.Line != configtest.LineOf(t, src, "optional_pre_call_checks") || f.Severity != finding.Warning) {
					t.Errorf("%s: %s at line %d (%v), want a warning at line %d containing %q", tc.checks, f.Message, f.Line, f.Severity, configtest.LineOf(t, src, "optional_pre_call_checks"), tc.msg)
				}
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: findings %v, want %v", tc.checks, got, tc.want)
		}
	}
	if r := configtest.Findings(t, checkers, "config.yaml", cfg("session_afinity")); len(r) == 0 || !strings.Contains(r[0].Message, "did you mean session_affinity?") {
		t.Errorf("a typo names the check meant: %v", r)
	}
}
