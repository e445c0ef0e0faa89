package lint

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestCrossCheckLinear keeps the checks across files linear in the number of files: a run of n
// files, each with a vLLM engine, half of them with an llm-d router that dials the pods, and
// each with a Dynamo frontend, a LiteLLM config and an SGLang gateway whose hosts name no router,
// does at most about 4 times the work at 4n files as at n. Work is counted in heap allocations
// of Finish (the same for the same input on every machine, unlike time): pairing every engine
// with every router allocated once per pair (a key for each), 16 times as much for 4 times the
// files. Every engine's topic disagrees with every router's filter, so each pair has a finding
// to fold.
func TestCrossCheckLinear(t *testing.T) {
	l := newLinter(t, "")
	allocs := func(n int) uint64 {
		var results []FileResult
		for i := range n {
			add := func(name, src string) { results = append(results, l.File(fmt.Sprintf("f%d-%s", i, name), []byte(src))) }
			add("vllm.yaml", configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"other@"}`))
			if i%2 == 0 {
				add("epc.yaml", fmt.Sprintf("apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: token-producer\n    parameters: {modelName: m, vllm: {url: http://render:8000}}\n  - type: precise-prefix-cache-producer\n    parameters:\n      kvEventsConfig:\n        topicFilter: kv%d@\n        podDiscoveryConfig: {socketPort: 5557, replaySocketPort: 5570}\n  - type: prefix-cache-scorer\n    parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n", i))
			}
			add("dgd.yaml", fmt.Sprintf("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata:\n  name: router-%d\nspec:\n  services:\n    Frontend:\n      componentType: frontend\n      extraPodSpec:\n        mainContainer:\n          command: [python3, -m, dynamo.frontend, --router-mode, kv]\n", i))
			add("config.yaml", fmt.Sprintf("model_list:\n  - model_name: g\n    litellm_params: {model: hosted_vllm/m, api_base: http://nothere-%d.svc:8000/v1}\n", i))
			add("gw.sh", fmt.Sprintf("python -m sglang_router.launch_router --worker-urls http://nothere-%d:8000\n", i))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rs := l.Finish(results)
		runtime.ReadMemStats(&after)
		topic := 0
		for _, f := range rs[0].Findings {
			if f.Code == "llm-d/topic-filter" {
				topic++
			}
		}
		if topic != 1 {
			t.Fatalf("%d files: %d topic-filter findings in the first file, want 1: %v", n, topic, rs[0].Findings)
		}
		return after.Mallocs - before.Mallocs
	}
	small, large := allocs(250), allocs(1000)
	if ratio := float64(large) / float64(small); ratio > 5 {
		t.Errorf("checks across 1,000 runs of files allocated %d times, %.1fx the %d of 250: want about 4x (linear), not 16x (every engine with every router)", large, ratio, small)
	}
}
