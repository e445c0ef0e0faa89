package aibrix

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestConfigRules: AIBrix's rules, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Checker{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// AIBrix, GAIE
		{"AB-01/02 prefix-cache with sync but no remote tokenizer", map[string]string{"gw.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: gateway-plugin\n          image: aibrix/gateway-plugins:v0.4.0\n          env:\n            - name: ROUTING_ALGORITHM\n              value: prefix-cache\n            - name: AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED\n              value: \"true\"\n"}, []string{"aibrix/character-tokenizer", "aibrix/kv-sync-incomplete"}},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
