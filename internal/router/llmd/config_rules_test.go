package llmd

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

const eppPrecise = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
  - type: token-producer
    parameters:
      modelName: Qwen/Qwen3-32B
      vllm:
        url: http://render:8000
  - type: precise-prefix-cache-producer
    parameters:
      kvEventsConfig:
        podDiscoveryConfig:
          socketPort: 5556
          replaySocketPort: 5570
  - type: prefix-cache-scorer
    parameters:
      prefixMatchInfoProducerName: precise-prefix-cache-producer
`

// TestConfigRules: llm-d's rules, alone and against the engines of the run, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// llm-d
		{"LD-01 precise without a vllm token-producer", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "  - type: token-producer\n    parameters:\n      modelName: Qwen/Qwen3-32B\n      vllm:\n        url: http://render:8000\n", "", 1)}, []string{"llm-d/estimate-tokenizer"}},
		{"LD-01/LD-02 negative: the reference pipeline", map[string]string{"epc.yaml": eppPrecise}, nil},
		{"LD-02 scorer without producer name", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n", "", 1)}, []string{"llm-d/scorer-approximate-producer"}},
		{"LD-06 approximate producer, two active-active replicas", map[string]string{"values.yaml": "router:\n  epp:\n    replicas: 2\n    flags:\n      ha-enable-leader-election: false\n    pluginsCustomConfig:\n      p.yaml: |\n        apiVersion: llm-d.ai/v1alpha1\n        kind: EndpointPickerConfig\n        plugins:\n          - type: prefix-cache-scorer\n          - type: queue-scorer\n"}, []string{"llm-d/approximate-active-active"}},
		{"LD-06 negative: leader election on (active-passive)", map[string]string{"values.yaml": "router:\n  epp:\n    replicas: 2\n    pluginsCustomConfig:\n      p.yaml: |\n        apiVersion: llm-d.ai/v1alpha1\n        kind: EndpointPickerConfig\n        plugins:\n          - type: prefix-cache-scorer\n"}, nil},
		{"LD-07 approx block size 16", map[string]string{"epc.yaml": "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: approx-prefix-cache-producer\n    parameters:\n      blockSizeTokens: 16\n  - type: prefix-cache-scorer\n"}, []string{"llm-d/approximate-block-size"}},
		{"LD-07 negative: 64", map[string]string{"epc.yaml": "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: approx-prefix-cache-producer\n    parameters:\n      blockSizeTokens: 64\n"}, nil},
		{"LD-08 alpha plugin, flags visible without experimental", map[string]string{"values.yaml": "router:\n  epp:\n    flags:\n      v: 2\n    pluginsCustomConfig:\n      p.yaml: |\n        apiVersion: llm-d.ai/v1alpha1\n        kind: EndpointPickerConfig\n        plugins:\n          - type: burst-prefix-cache-producer\n"}, []string{"llm-d/experimental-plugin"}},
		{"LD-08 negative: allowed", map[string]string{"values.yaml": "router:\n  epp:\n    flags:\n      allow-experimental-plugins: true\n    pluginsCustomConfig:\n      p.yaml: |\n        apiVersion: llm-d.ai/v1alpha1\n        kind: EndpointPickerConfig\n        plugins:\n          - type: burst-prefix-cache-producer\n"}, nil},
		{"LD-09 no replay port", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "          replaySocketPort: 5570\n", "", 1)}, []string{"llm-d/no-replay"}},
		{"LD-10 deprecated tokenizer type", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "type: token-producer", "type: tokenizer", 1)}, []string{"llm-d/deprecated-plugin"}},
		{"LD-03 engine topic empty", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556"}`)}, []string{"llm-d/topic-filter"}},
		{"LD-03/04/05 negative: the guide's engine", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, configtest.GoodEvents)}, nil},
		{"LD-05 blockSize 32 vs the engine's 64", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "      kvEventsConfig:\n", "      tokenProcessorConfig: {blockSize: 32}\n      kvEventsConfig:\n", 1),
			"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, configtest.GoodEvents, "--block-size=64")}, []string{"llm-d/block-size-differs"}},
		// blockSizeTokens is the current name, and wins over the deprecated blockSize.
		{"LD-05 blockSizeTokens 32 vs the engine's 64", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "      kvEventsConfig:\n", "      tokenProcessorConfig: {blockSizeTokens: 32}\n      kvEventsConfig:\n", 1),
			"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, configtest.GoodEvents, "--block-size=64")}, []string{"llm-d/block-size-differs"}},
		{"LD-05 negative: blockSizeTokens 64 over blockSize 32", map[string]string{"epc.yaml": strings.Replace(eppPrecise, "      kvEventsConfig:\n", "      tokenProcessorConfig: {blockSizeTokens: 64, blockSize: 32}\n      kvEventsConfig:\n", 1),
			"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, configtest.GoodEvents, "--block-size=64")}, nil},
		{"LD-04 default port 5557 vs socketPort 5556", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv@x"}`)}, []string{"llm-d/socket-port"}},
		{"LD-05 engine connects", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://epp:5556","topic":"kv@x"}`)}, []string{"llm-d/engine-connects"}},
		{"replay on vLLM 0.25", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.25.1", 1, configtest.GoodEvents)}, []string{"vllm/replay-needs-0.26"}},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
