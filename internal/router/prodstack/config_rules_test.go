package prodstack

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

func prodStack(logic, modelExtra, routerExtra string) string {
	return "servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    repository: vllm/vllm-openai\n    tag: v0.26.0\n    modelURL: Qwen/Qwen3-32B\n    replicaCount: 2\n" +
		modelExtra + "routerSpec:\n  routingLogic: \"" + logic + "\"\n" + routerExtra
}

// TestConfigRules: production-stack's rules on the chart's values, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// production-stack
		{"PS-01 vllmConfig without enablePrefixCaching", map[string]string{"values.yaml": prodStack("roundrobin", "    vllmConfig:\n      maxModelLen: 8000\n", "")}, []string{"production-stack/prefix-caching-off"}},
		{"PS-01 false", map[string]string{"values.yaml": prodStack("roundrobin", "    vllmConfig:\n      enablePrefixCaching: false\n", "")}, []string{"production-stack/prefix-caching-off"}},
		{"PS-01 negative: true", map[string]string{"values.yaml": prodStack("roundrobin", "    vllmConfig:\n      enablePrefixCaching: true\n", "")}, nil},
		{"PS-01 negative: no vllmConfig at all", map[string]string{"values.yaml": prodStack("roundrobin", "", "")}, nil},
		// The chart's `with $modelSpec.vllmConfig` skips an empty map: no flag is rendered.
		{"PS-01 negative: empty vllmConfig", map[string]string{"values.yaml": prodStack("roundrobin", "    vllmConfig: {}\n", "")}, nil},
		// extraArgs are rendered after the chart's flag, and argparse keeps the last one.
		{"PS-01 negative: re-enabled in extraArgs", map[string]string{"values.yaml": prodStack("roundrobin", "    vllmConfig:\n      extraArgs: [\"--enable-prefix-caching\"]\n", "")}, nil},
		{"PS-02 session without key", map[string]string{"values.yaml": prodStack("session", "", "")}, []string{"production-stack/session-key-missing"}},
		{"PS-02 negative", map[string]string{"values.yaml": prodStack("session", "", "  sessionKey: x-user-id\n")}, nil},
		{"PS-03/04 kvaware without controller", map[string]string{"values.yaml": prodStack("kvaware", "", "")}, []string{"production-stack/kvaware-chat", "production-stack/kvaware-controller"}},
		{"PS-04 negative: controller on the router's port", map[string]string{"values.yaml": prodStack("kvaware", "    lmcacheConfig:\n      enabled: true\n      enableController: true\n      controllerPort: 9000\n", "  lmcacheControllerPort: 9000\n")}, []string{"production-stack/kvaware-chat"}},
		{"PS-04 ports differ", map[string]string{"values.yaml": prodStack("kvaware", "    lmcacheConfig:\n      enabled: true\n      enableController: true\n      controllerPort: 9100\n", "  lmcacheControllerPort: 9000\n")}, []string{"production-stack/kvaware-chat", "production-stack/kvaware-controller"}},
		{"PS-05 prefixaware, 2 routers", map[string]string{"values.yaml": prodStack("prefixaware", "", "  replicaCount: 2\n")}, []string{"production-stack/prefixaware-replicas"}},
		{"PS-05 negative: 1 router", map[string]string{"values.yaml": prodStack("prefixaware", "", "  replicaCount: 1\n")}, nil},
		{"PS-06 min match 100", map[string]string{"values.yaml": prodStack("prefixaware", "", "  prefixMinMatchLength: 100\n")}, []string{"production-stack/prefix-min-match-length"}},
		{"PS-06 negative: 256", map[string]string{"values.yaml": prodStack("prefixaware", "", "  prefixMinMatchLength: 256\n")}, nil},
		{"PS-07 loadaware", map[string]string{"values.yaml": prodStack("loadaware", "    lmcacheConfig:\n      enabled: true\n      enableController: true\n", "")}, []string{"production-stack/kvaware-chat", "production-stack/loadaware-schema"}},
		// routerSpec.extraArgs are rendered after the chart's --routing-logic
		// (templates/deployment-router.yaml @a6c01db:117-140) and argparse keeps the last, so a
		// logic there is the one the router runs: the rules that read the logic judge it, split
		// as two items or joined with "=". The routingLogic key stays what the schema checks.
		{"PS-03/04 kvaware from extraArgs, split", map[string]string{"values.yaml": prodStack("roundrobin", "", "  extraArgs: [\"--routing-logic\", \"kvaware\"]\n")}, []string{"production-stack/kvaware-chat", "production-stack/kvaware-controller"}},
		{"PS-03/04 loadaware from extraArgs, joined", map[string]string{"values.yaml": prodStack("roundrobin", "", "  extraArgs:\n  - --routing-logic=loadaware\n")}, []string{"production-stack/kvaware-chat", "production-stack/kvaware-controller"}},
		{"PS-03/04 negative: extraArgs override kvaware", map[string]string{"values.yaml": prodStack("kvaware", "", "  extraArgs: [\"--routing-logic=prefixaware\"]\n")}, nil},
		{"PS-05 prefixaware from extraArgs, 2 routers", map[string]string{"values.yaml": prodStack("roundrobin", "", "  replicaCount: 2\n  extraArgs: [\"--routing-logic=prefixaware\"]\n")}, []string{"production-stack/prefixaware-replicas"}},
		{"PS-02 session from extraArgs without key", map[string]string{"values.yaml": prodStack("roundrobin", "", "  extraArgs: [\"--routing-logic\", \"session\"]\n")}, []string{"production-stack/session-key-missing"}},
		{"PS-02 negative: key in extraArgs", map[string]string{"values.yaml": prodStack("roundrobin", "", "  extraArgs: [\"--routing-logic\", \"session\", \"--session-key\", \"x-user-id\"]\n")}, nil},
		// The schema refuses routingLogic: loadaware even when extraArgs run another logic.
		{"PS-07 loadaware key, prefixaware in extraArgs", map[string]string{"values.yaml": prodStack("loadaware", "", "  extraArgs: [\"--routing-logic=prefixaware\"]\n")}, []string{"production-stack/loadaware-schema"}},
		{"unknown logic in extraArgs", map[string]string{"values.yaml": prodStack("roundrobin", "", "  extraArgs: [\"--routing-logic=fancy\"]\n")}, []string{"production-stack/unknown-routing-logic"}},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
