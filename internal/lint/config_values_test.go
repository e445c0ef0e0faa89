package lint

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func deploymentOf(t *testing.T, files map[string]string) Deployment {
	t.Helper()
	l := newLinter(t, "")
	var rs []FileResult
	for _, n := range []string{"epc.yaml", "epc-typo.yaml", "values.yaml", "dgd.yaml", "sglang.sh", "ray.yaml", "litellm.yaml", "engine.yaml"} {
		if src, ok := files[n]; ok {
			rs = append(rs, l.File(n, []byte(src)))
		}
	}
	return DeploymentOf(l.Finish(rs))
}

// TestDeploymentOf reads each router's values as the user wrote them; the wanted values are
// read off the files by hand.
func TestDeploymentOf(t *testing.T) {
	files := map[string]string{
		// The precise producer named by the scorer, a vLLM tokenizer, weights 1 (no weight), 3, 5.
		"epc.yaml": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: token-producer
  parameters:
    modelName: Qwen/Qwen3-32B
    vllm: {url: "http://localhost:8000"}
- type: precise-prefix-cache-producer
  parameters:
    tokenProcessorConfig: {blockSize: 64, hashSeed: "42"}
- type: prefix-cache-scorer
  parameters:
    prefixMatchInfoProducerName: precise-prefix-cache-producer
- type: queue-scorer
- type: kv-cache-utilization-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
  - pluginRef: kv-cache-utilization-scorer
    weight: 3
  - pluginRef: prefix-cache-scorer
    weight: 5
`,
		// The precise producer present but the scorer names none: the scorer reads the
		// approximate producer; no profile, so no weights are read.
		"epc-typo.yaml": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: precise-prefix-cache-producer
- type: prefix-cache-scorer
- type: approx-prefix-cache-producer
  parameters:
    blockSizeTokens: 32
    autoTune: false
    maxPrefixTokensToMatch: 4096
`,
		"values.yaml": `servingEngineSpec:
  modelSpec:
  - name: qwen
    repository: lmcache/vllm-openai
    tag: v0.3.5
    vllmConfig:
      enablePrefixCaching: true
    lmcacheConfig:
      enabled: true
      enableController: true
routerSpec:
  routingLogic: session
  sessionKey: x-user-id
  extraArgs: ["--kv-aware-threshold=500"]
`,
		"dgd.yaml": dynamoDGD("kv", "            - --router-kv-overlap-score-credit-decay\n            - \"0.25\"\n            - --no-router-kv-events\n"+
			"            - --router-kv-overlap-score-credit\n            - \"0.5\"\n            - --router-prefill-load-scale=2\n", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}`),
		"sglang.sh": "#!/bin/sh\npython -m sglang_router.launch_router --worker-urls http://a:8000 http://b:8000 --policy cache_aware --max-tree-size 100000 --balance-abs-threshold 16\n",
		"ray.yaml": `applications:
- name: llm
  deployments:
  - name: LLMServer
    deployment_config:
      request_router_config:
        request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter
        request_router_kwargs:
          imbalanced_threshold: 5
          do_eviction: true
`,
		"litellm.yaml": `model_list:
- model_name: qwen
  litellm_params: {model: hosted_vllm/qwen, api_base: http://a:8000/v1}
router_settings:
  routing_strategy: simple-shuffle
  optional_pre_call_checks: [session_affinity, prompt_caching]
  deployment_affinity_ttl_seconds: 600
  redis_host: os.environ/REDIS_HOST
`,
	}
	dep := deploymentOf(t, files)
	got := map[string]map[string]string{}
	for _, r := range dep.Routers {
		got[r.File] = r.Values
	}
	want := map[string]map[string]string{
		"epc.yaml": {"producer": "precise", "tokenizer": "vllm", "queue-scorer": "1", "kv-cache-utilization-scorer": "3", "prefix-cache-scorer": "5",
			"tokenProcessorConfig.blockSize": "64"},
		"epc-typo.yaml": {"producer": "approx", "tokenizer": "estimate", "blockSizeTokens": "32", "autoTune": "false", "maxPrefixTokensToMatch": "4096"},
		"values.yaml":   {"routingLogic": "session", "sessionKey": "x-user-id", "--kv-aware-threshold": "500"},
		"dgd.yaml": {"--router-mode": "kv", "--router-kv-overlap-score-credit-decay": "0.25", "--router-kv-events": "false",
			"--router-kv-overlap-score-credit": "0.5", "--router-prefill-load-scale": "2"},
		"sglang.sh": {"launcher": "python", "--worker-urls": "http://a:8000", "--policy": "cache_aware", "--max-tree-size": "100000", "--balance-abs-threshold": "16"},
		"ray.yaml":  {"imbalanced_threshold": "5", "do_eviction": "true"},
		"litellm.yaml": {"routing_strategy": "simple-shuffle", "optional_pre_call_checks": "session_affinity,prompt_caching",
			"deployment_affinity_ttl_seconds": "600", "redis": "true"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("router values (-want +got):\n%s", d)
	}
	// The DGD's worker publishes events; the production-stack engine runs LMCache with its
	// controller.
	var engines []EngineFacts
	for _, e := range dep.Engines {
		engines = append(engines, EngineFacts{File: e.File, KVEvents: e.KVEvents, LMCache: e.LMCache, LMCacheController: e.LMCacheController})
	}
	wantEngines := []EngineFacts{{File: "values.yaml", LMCache: true, LMCacheController: true}, {File: "dgd.yaml", KVEvents: true}}
	if d := cmp.Diff(wantEngines, engines); d != "" {
		t.Errorf("engines (-want +got):\n%s", d)
	}
	var kinds []string
	for _, o := range dep.Objects {
		kinds = append(kinds, o.Kind)
	}
	if d := cmp.Diff([]string{"EndpointPickerConfig", "EndpointPickerConfig", "DynamoGraphDeployment"}, kinds); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}

// TestDeploymentOfDynamoEnv: the DYN_* twins of the overlap credit, the prefill load scale and
// the legacy overlap weight are read as their flags; the deprecated precise-prefix-cache-scorer
// carries the producer's tokenProcessorConfig, both block-size spellings kept as written.
func TestDeploymentOfDynamoEnv(t *testing.T) {
	dep := deploymentOf(t, map[string]string{
		"dgd.yaml": `apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: qwen}
spec:
  services:
    Frontend:
      componentType: frontend
      envs:
      - {name: DYN_ROUTER_MODE, value: kv}
      - {name: DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT, value: "0.5"}
      - {name: DYN_ROUTER_PREFILL_LOAD_SCALE, value: "2"}
      - {name: DYN_OVERLAP_SCORE_WEIGHT, value: "0"}
`,
		"epc.yaml": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: precise-prefix-cache-scorer
  parameters:
    tokenProcessorConfig: {blockSizeTokens: 32, blockSize: 64}
`,
	})
	got := map[string]map[string]string{}
	for _, r := range dep.Routers {
		got[r.File] = r.Values
	}
	want := map[string]map[string]string{
		"dgd.yaml": {"--router-mode": "kv", "--router-kv-overlap-score-credit": "0.5", "--router-prefill-load-scale": "2", "--router-kv-overlap-score-weight": "0"},
		"epc.yaml": {"producer": "precise", "tokenizer": "estimate", "tokenProcessorConfig.blockSizeTokens": "32", "tokenProcessorConfig.blockSize": "64"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("router values (-want +got):\n%s", d)
	}
}

// TestDeploymentOfVLLMRouters: a vllm-router line is read for the product its flags name:
// vLLM Router's --policy and --worker-urls (the URLs joined with spaces), or production-stack's
// --routing-logic under the chart's names; never for both.
func TestDeploymentOfVLLMRouters(t *testing.T) {
	l := newLinter(t, "")
	dep := DeploymentOf(l.Finish([]FileResult{
		l.File("vr.sh", []byte("#!/bin/sh\nvllm-router --worker-urls http://a:8000 http://b:8000 --policy cache_aware --cache-threshold 0.5\n")),
		l.File("ps.sh", []byte("#!/bin/sh\nvllm-router --service-discovery static --static-backends http://a:8000 --routing-logic prefixaware\n")),
	}))
	got := map[string]string{}
	for _, r := range dep.Routers {
		got[r.File] = r.Kind + fmt.Sprint(r.Values)
	}
	want := map[string]string{
		"vr.sh": "vllm-router" + fmt.Sprint(map[string]string{"--worker-urls": "http://a:8000 http://b:8000", "--policy": "cache_aware", "--cache-threshold": "0.5"}),
		"ps.sh": "production-stack" + fmt.Sprint(map[string]string{"routingLogic": "prefixaware"}),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("routers (-want +got):\n%s", d)
	}
}

// FuzzDeploymentOf: reading the routers' values never panics, on YAML or on text.
func FuzzDeploymentOf(f *testing.F) {
	for _, s := range []string{eppPrecise, litellmShuffle, prodStack("session", "", "  sessionKey: x\n"), dynamoDGD("kv", "", ""),
		"python -m sglang_router.launch_router --policy cache_aware --max-tree-size\n",
		"vllm-router --worker-urls http://a:8000 --worker-urls=http://b:8000 --policy\nvllm_router --routing-logic x --policy y\n", "request_router_class='PrefixCacheAffinityRouter', imbalanced_threshold=float('inf')"} {
		f.Add([]byte(s))
	}
	l := newLinter(f, "")
	f.Fuzz(func(t *testing.T, b []byte) {
		dep := DeploymentOf(l.Finish([]FileResult{l.File("a.yaml", b), l.File("b.sh", b)}))
		for _, r := range dep.Routers {
			if r.Values == nil || r.Kind == "" {
				t.Fatalf("router without values or kind: %+v", r)
			}
		}
	})
}
