package ray

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestConfigRules: Ray Serve's rules, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// Ray
		{"RY-01/02 no kwargs", map[string]string{"serve.yaml": "deployment_config:\n  request_router_config:\n    request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n"}, []string{"ray/imbalanced-threshold", "ray/no-eviction"}},
		{"RY negative: kwargs set", map[string]string{"serve.yaml": "deployment_config:\n  request_router_config:\n    request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n    request_router_kwargs:\n      imbalanced_threshold: 5\n      do_eviction: true\n"}, nil},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
