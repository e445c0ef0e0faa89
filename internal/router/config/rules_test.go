package config_test

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestConfigRules: the generic rules (vLLM engines, the Gateway API Inference Extension) with no product, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	var checkers []config.Checker
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// vLLM
		{"VL-01 events not enabled", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"publisher":"zmq","endpoint":"tcp://*:5557"}`)}, []string{"vllm/kv-events-disabled"}},
		{"VL-02 0.10.2 without publisher", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.10.2", 1, `{"enable_kv_cache_events":true,"endpoint":"tcp://*:5557"}`)}, []string{"vllm/publisher-null"}},
		{"VL-02 negative: 0.11.1", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.11.1", 1, `{"enable_kv_cache_events":true,"endpoint":"tcp://*:5557"}`)}, nil},
		{"VL-03 an engine alone: a warning", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, "", "--no-enable-prefix-caching")}, []string{"vllm/prefix-caching-disabled"}},
		{"VL-03 negative: caching on", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, "", "--enable-prefix-caching")}, nil},
		{"VL-04 replay port inside the DP ranks", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5558"}`, "--data-parallel-size", "\"2\"")}, []string{"vllm/replay-port-collision"}},
		// Rank 1 replays on 5556+1 = 5557, rank 0's event port.
		{"VL-04 replay port just below the endpoint", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5556"}`, "--data-parallel-size", "\"2\"")}, []string{"vllm/replay-port-collision"}},
		{"VL-04 same port, one rank", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5557"}`)}, []string{"vllm/replay-port-collision"}},
		{"VL-04 negative: replay above the ranks", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5559"}`, "--data-parallel-size", "\"2\"")}, nil},
		{"VL-05 seed unset on 3 replicas", map[string]string{"vllm.yaml": strings.Replace(configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 3, `{"enable_kv_cache_events":true,"publisher":"zmq"}`), "PYTHONHASHSEED", "OTHER", 1)}, []string{"vllm/hash-seed"}},
		{"VL-05 negative: seed set", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 3, `{"enable_kv_cache_events":true,"publisher":"zmq"}`)}, nil},
		{"VL-05 hash algo differs across files", map[string]string{
			"a.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, "", "--prefix-caching-hash-algo", "xxhash"),
			"b.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, "")}, []string{"vllm/hash-algo", "vllm/hash-algo"}},
		{"VL-06 no such flags", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, "", "--enable-kv-cache-events", "--kv-events-publisher=zmq")}, []string{"vllm/no-such-flag", "vllm/no-such-flag"}},
		{"VL-07 engine connects, no llm-d", map[string]string{"vllm.yaml": configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://listener:5557"}`)}, []string{"vllm/endpoint-connects"}},
		{"shell script: vllm serve with dotted events config", map[string]string{"run.sh": "#!/bin/sh\nexec vllm serve Qwen/Qwen3-32B \\\n  --kv-events-config.publisher zmq \\\n  --port 8000\n"}, []string{"vllm/kv-events-disabled"}},
		{"GI-01 FailOpen", map[string]string{"pool.yaml": "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nspec:\n  endpointPickerRef:\n    name: epp\n    port: {number: 9002}\n    failureMode: FailOpen\n"}, []string{"gaie/fail-open"}},
		{"GI-01 negative: FailClose", map[string]string{"pool.yaml": "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nspec:\n  endpointPickerRef:\n    name: epp\n    failureMode: FailClose\n"}, nil},
		{"GI-02 old objective group", map[string]string{"obj.yaml": "apiVersion: inference.networking.x-k8s.io/v1alpha2\nkind: InferenceObjective\nspec:\n  priority: 1\n"}, []string{"gaie/deprecated-objective-api"}},
		{"GI-02 negative", map[string]string{"obj.yaml": "apiVersion: llm-d.ai/v1alpha2\nkind: InferenceObjective\nspec:\n  priority: 1\n"}, nil},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
