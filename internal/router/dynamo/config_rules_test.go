package dynamo

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// dynamoDGD is a DynamoGraphDeployment with a frontend in mode and one aggregated vLLM worker;
// events is the worker's --kv-events-config ("" for none).
func dynamoDGD(mode, frontendExtra, events string) string {
	w := ""
	if events != "" {
		w = "            - --kv-events-config\n            - '" + events + "'\n"
	}
	return `apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: qwen
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.frontend]
          args:
            - --router-mode
            - ` + mode + "\n" + frontendExtra + `    VllmWorker:
      componentType: worker
      replicas: 2
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.vllm]
          args:
            - --model
            - Qwen/Qwen3-32B
` + w
}

// TestConfigRules: Dynamo's rules on a DynamoGraphDeployment, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// Dynamo
		{"DY-01 kv frontend, worker without events", map[string]string{"dgd.yaml": dynamoDGD("kv", "", "")}, []string{"dynamo/kv-events-missing"}},
		{"DY-01 negative: events on", map[string]string{"dgd.yaml": dynamoDGD("kv", "", configtest.GoodEvents)}, nil},
		{"DY-01 negative: round-robin", map[string]string{"dgd.yaml": dynamoDGD("round-robin", "", "")}, nil},
		{"DY-03/04 --no-kv-events", map[string]string{"dgd.yaml": dynamoDGD("kv", "            - --no-kv-events\n", "")}, []string{"dynamo/approximate-mode", "dynamo/obsolete-flag"}},
		{"DY-04 --no-router-kv-events", map[string]string{"dgd.yaml": dynamoDGD("kv", "            - --no-router-kv-events\n", "")}, []string{"dynamo/approximate-mode"}},
		{"DY-06 prefix caching off on an aggregated worker", map[string]string{"dgd.yaml": strings.Replace(dynamoDGD("kv", "", configtest.GoodEvents), "            - Qwen/Qwen3-32B\n", "            - Qwen/Qwen3-32B\n            - --no-enable-prefix-caching\n", 1)}, []string{"dynamo/prefix-caching-off"}},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}
