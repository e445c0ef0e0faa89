package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// lintSet lints files of one run (name -> content) and returns each file's finding codes, in
// order, as "line:code".
func lintSet(t *testing.T, files map[string]string) map[string][]string {
	t.Helper()
	l := newLinter(t, "")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	var rs []FileResult
	for _, n := range names {
		rs = append(rs, l.File(n, []byte(files[n])))
	}
	rs = l.Finish(rs)
	out := map[string][]string{}
	for _, r := range rs {
		for _, f := range r.Findings {
			if f.Status != StatusConfig && f.Code != CodeYAMLBomb {
				continue
			}
			out[r.Path] = append(out[r.Path], f.Code)
		}
	}
	return out
}

func codes(t *testing.T, files map[string]string) []string {
	t.Helper()
	var all []string
	for _, cs := range lintSet(t, files) {
		all = append(all, cs...)
	}
	slices.Sort(all)
	return all
}

const litellmShuffle = `model_list:
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

// engineDeployment is a vLLM Deployment; events is its --kv-events-config JSON ("" for none).
var engineDeployment = configtest.EngineDeployment

// goodEvents is a --kv-events-config that publishes, binds and names the pod in its topic.
const goodEvents = configtest.GoodEvents

func TestConfigRules(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// Cases across products, and across a product and the engines of the run; each product
		// tests its own rules in its package (internal/router/<product>/config_rules_test.go).
		{"LL-05 api_base is the Dynamo frontend, retries default", map[string]string{
			"config.yaml": "model_list:\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen3-32B\n      api_base: http://qwen-frontend.dynamo:8000/v1\n",
			"dgd.yaml":    dynamoDGD("kv", "", goodEvents)}, []string{"litellm/retries-stacked"}},
		{"LL-05 negative: num_retries 1", map[string]string{
			"config.yaml": "model_list:\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen3-32B\n      api_base: http://qwen-frontend.dynamo:8000/v1\nrouter_settings:\n  num_retries: 1\n",
			"dgd.yaml":    dynamoDGD("kv", "", goodEvents)}, nil},
		{"LL-05 negative: router_settings overrides litellm_settings", map[string]string{
			"config.yaml": "model_list:\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen3-32B\n      api_base: http://qwen-frontend.dynamo:8000/v1\nlitellm_settings:\n  num_retries: 3\nrouter_settings:\n  num_retries: 0\n",
			"dgd.yaml":    dynamoDGD("kv", "", goodEvents)}, nil},
		{"VL-03 prefix caching off behind llm-d", map[string]string{"epc.yaml": eppPrecise, "vllm.yaml": engineDeployment("vllm/vllm-openai:v0.26.0", 1, goodEvents, "--no-enable-prefix-caching")}, []string{"vllm/prefix-caching-off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := codes(t, tt.files)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
		})
	}
}

func prodStack(logic, modelExtra, routerExtra string) string {
	return "servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    repository: vllm/vllm-openai\n    tag: v0.26.0\n    modelURL: Qwen/Qwen3-32B\n    replicaCount: 2\n" +
		modelExtra + "routerSpec:\n  routingLogic: \"" + logic + "\"\n" + routerExtra
}

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

// TestConfigCorpus lints every real config file under $KVCHECK_CORPUS/configs, each on its own
// (each is a separate deployment), against the findings judged right by hand.
func TestConfigCorpus(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	want := map[string][]string{
		// kv mode with --no-kv-events: the old spelling (DY-03) and the approximate mode (DY-04).
		"dynamo/dynamo_examples_vllm_agg_router_kv_approx.yaml": {"28:dynamo/obsolete-flag", "28:dynamo/approximate-mode"},
		// Decode workers run --no-enable-prefix-caching by design (the router scores prefill
		// workers, which publish events): no finding. The frontend is one replica.
		"dynamo/dynamo_recipe_qwen3-32b_disagg-kv-router_deploy.yaml": nil,
		// --no-enable-prefix-caching behind a round-robin frontend: no KV-aware router to defeat
		// (no VL-03 error), but the engine still reuses nothing, not even its own system
		// prompts (VL-03's warning; a benchmark recipe does this on purpose).
		"dynamo/dynamo_recipe_llama3-70b_agg_deploy.yaml": {"44:vllm/prefix-caching-disabled"},
		// dynamo run in=http: the early CLI, whose workers generated their events config.
		"dynamo/dynamo_components_vllm_agg_router_v0-era.yaml": nil,
		// The secondary pool fails open (GI-01, info).
		"gaie/gaie_conformance-resources-base.yaml":  {"297:gaie/fail-open"},
		"gaie/gaie_inferenceobjective_a2447026.yaml": {"1:gaie/deprecated-objective-api", "11:gaie/deprecated-objective-api", "21:gaie/deprecated-objective-api"},
		// extensionRef without failureMode: FailClose.
		"gaie/gke-samples_infw-gw_inference-pool.yaml": nil,
		// os.environ api_base: no provider prefix known until runtime; one group, one deployment.
		"litellm/lanta-llm-hosting_litellm-config.yaml": nil,
		// Every group holds one deployment, so shuffling has nothing to scatter (LL-01 needs two).
		"litellm/local-llm-2x5060ti_litellm-config.yaml": nil,
		"litellm/qwen-stack_litellm_config.yaml":         nil,
		// The old in-scorer pipeline: deprecated (LD-10). Its x-k8s.io apiVersion predates the
		// defaults this kvcheck knows, so no replay finding.
		"llm-d/llmd-guides_gaie-kv-events_values_pod_discovery.yaml": {"26:llm-d/deprecated-plugin"},
		// The current guide: replicas 2 active-active, but with the precise producer (LD-06 is
		// about the approximate one); only the missing replay port (LD-09, info).
		"llm-d/llmd-guides_precise-prefix-cache-routing.values.yaml": {"46:llm-d/no-replay"},
		// Two approximate producers on one EPP replica: nothing.
		"llm-d/llmd-guides_tiered-prefix-cache-cpu.values.yaml":  nil,
		"llm-d/llmd-router_epp-precise-prefix-cache-config.yaml": {"16:llm-d/no-replay"},
		// Alpha plugins in standalone files: the EPP's flags are not visible, so LD-08 cannot
		// be judged (the repo's dev Deployment passes --allow-experimental-plugins).
		"llm-d/llmd-router_epp-burst-prefix-cache-config.yaml": nil,
		"llm-d/llmd-router_pd-topology-epp-config.yaml":        nil,
		"llm-d/llmd-router_perf-precise-prefix.values.yaml":    {"75:llm-d/no-replay", "115:gaie/fail-open"},
		"llm-d/hello-chris-llm-d_epp.yaml":                     nil,
		// Approximate producer at blockSizeTokens 64, one replica: nothing.
		"llm-d/aibrix_llm-d-inference-scheduler-epp.yaml": nil,
		// kvaware: chat requests are matched on the empty prompt (PS-03); the controller is
		// wired on 9000 as PS-04 wants.
		"production-stack/prodstack_values-17-kv-aware.yaml":              {"47:production-stack/kvaware-chat"},
		"production-stack/prodstack_tests-values-06-session-routing.yaml": nil,
		// Kwargs given in code: threshold 5 and eviction on.
		"ray/ray_doc_prefix_aware_example.py":                            nil,
		"ray/ray_release_llama_3dot1_8b_quantized_tp1_prefix_cache.yaml": {"19:ray/imbalanced-threshold", "19:ray/no-eviction"},
		// The Python launcher in PD mode with no policy, eviction or retry flags: detected as an
		// SGLang gateway (TestSGLangCorpusDetected), but SG-02 needs an eviction flag and SG-03
		// another router in the run, and SG-01 is a run-time policy hint: nothing to report.
		"sglang/sglang-fork_ascend_deepseekr1_router.sh": nil,
		// least_request routing: the prefix-cache rules do not apply.
		"aibrix/aibrix_standalone_docker-compose.yml": nil,
		// Connects to a central listener on purpose: VL-07 says the listener must bind. The
		// seed is set and the Deployment has one replica.
		"vllm/llmd-inference-sim_zmq-listener_deploy_vllm.yaml": {"31:vllm/endpoint-connects"},
		// Three replicas publish events for AIBrix's KV sync with no PYTHONHASHSEED (VL-05).
		"vllm/aibrix_semantic-router_qwen3-8b.yaml": {"36:vllm/hash-seed"},
		// PYTHONHASHSEED 42 on all three replicas and no events: nothing.
		"vllm/hello-chris-llm-d_decode-deployment.yaml": nil,
	}
	dir := filepath.Join(root, "configs")
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		w, ok := want[rel]
		if !ok {
			t.Errorf("%s: no findings written down for this corpus file", rel)
			return nil
		}
		l := newLinter(t, "")
		rs, err := l.Paths(context.Background(), []string{p})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range rs[0].Findings {
			if f.Status == StatusConfig {
				got = append(got, itoa10(f.Line)+":"+f.Code)
			}
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", rel, diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range want {
		if !seen[rel] {
			t.Errorf("%s: written down but not in the corpus", rel)
		}
	}
}

func itoa10(n int) string { return strconv.Itoa(n) }

// TestCorpusTextFormats: the corpus's MANIFEST.tsv, whose notes name Ray's
// PrefixCacheAffinityRouter ("request_router_class PrefixCacheAffinityRouter with no
// request_router_kwargs"), is text, not a Ray Serve config (issue 24: it was linted as
// ray-serve-llm-config); Ray's own Python example, which imports the class and sets it as
// request_router_class, still is one.
func TestCorpusTextFormats(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	for rel, want := range map[string]Format{
		"MANIFEST.tsv": FormatText,
		"configs/ray/ray_doc_prefix_aware_example.py": "ray-serve-llm-config",
	} {
		rs, err := newLinter(t, "").Paths(t.Context(), []string{filepath.Join(root, rel)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || !slices.Equal(rs[0].Formats, []Format{want}) {
			t.Errorf("%s: formats %v, want [%s]", rel, rs[0].Formats, want)
		}
		for _, f := range rs[0].Findings {
			if f.Status == StatusConfig {
				t.Errorf("%s: config finding %d:%s %s", rel, f.Line, f.Code, f.Message)
			}
		}
	}
}

// yamlBomb is a billion-laughs document: nine levels of nine aliases, 9^9 nodes expanded.
func yamlBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + strconv.Itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("model_list: *a9\nrouter_settings: {num_retries: 0}\nlitellm_settings: {}\n")
	return b.String()
}

func TestConfigYAMLBombRefused(t *testing.T) {
	r := newLinter(t, "").File("bomb.yaml", []byte(yamlBomb()))
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Code)
		if f.Code == CodeYAMLBomb && !strings.Contains(f.Message, "YAML bomb") {
			t.Errorf("message %q does not say what was refused", f.Message)
		}
	}
	if !slices.Contains(got, CodeYAMLBomb) {
		t.Fatalf("codes %v, want %s", got, CodeYAMLBomb)
	}
	// A few ordinary aliases (compose's x-common anchors) are not a bomb.
	ok := "x-gpu: &gpu\n  deploy: {resources: {}}\nservices:\n  vllm:\n    image: vllm/vllm-openai:v0.26.0\n    <<: *gpu\n    command: --model m --enable-kv-cache-events\n"
	got = codes(t, map[string]string{"docker-compose.yml": ok})
	if diff := cmp.Diff([]string{"vllm/no-such-flag"}, got); diff != "" {
		t.Errorf("compose with anchors (-want +got):\n%s", diff)
	}
}

func TestConfigSuppressions(t *testing.T) {
	src := "model_list:\n" +
		"  # kvcheck:ignore LL-01 the two deployments are one GPU split in two\n" +
		"  - model_name: qwen\n" +
		"    litellm_params: {model: hosted_vllm/q, api_base: http://a:8000/v1}\n" +
		"  - model_name: qwen\n" +
		"    litellm_params: {model: hosted_vllm/q, api_base: http://b:8000/v1}\n" +
		"router_settings:\n" +
		"  optional_pre_call_check: [x]  # kvcheck:ignore litellm/unknown-key wrong code: still reported\n" +
		"  mystery: 1  # kvcheck:ignore litellm/unknown-key,LL-05 our own key\n"
	l := newLinter(t, "")
	rs := l.Finish([]FileResult{l.File("config.yaml", []byte(src))})
	var kept, suppressed []string
	for _, f := range rs[0].Findings {
		kept = append(kept, f.Code)
	}
	for _, s := range rs[0].Suppressed {
		suppressed = append(suppressed, s.Code+" by "+s.By+": "+s.Reason)
	}
	if diff := cmp.Diff([]string{"litellm/key-typo"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	want := []string{
		"litellm/no-affinity by inline: the two deployments are one GPU split in two",
		"litellm/unknown-key by inline: our own key",
	}
	if diff := cmp.Diff(want, suppressed); diff != "" {
		t.Errorf("suppressed (-want +got):\n%s", diff)
	}

	// The ignore file: by rule id and glob, by code everywhere; metric findings too.
	rules, err := ParseIgnore(".kvcheckignore", []byte("# team decisions\nLL-01 deploy/litellm/*  # split GPU\nmetric-removed  # dashboards migrate in Q1\n"))
	if err != nil {
		t.Fatal(err)
	}
	l = New(l.cat, Options{Ignore: rules})
	dash := `{"panels":[{"targets":[{"expr":"rate(vllm:time_per_output_token_seconds_sum[5m])"}]}]}`
	rs = l.Finish([]FileResult{
		l.File("deploy/litellm/config.yaml", []byte(litellmShuffle)),
		l.File("other/config.yaml", []byte(litellmShuffle)),
		l.File("dash.json", []byte(dash)),
	})
	got := map[string][]string{}
	for _, r := range rs {
		for _, f := range r.Findings {
			got[r.Path] = append(got[r.Path], f.Code)
		}
		for _, s := range r.Suppressed {
			got[r.Path] = append(got[r.Path], "suppressed "+s.Code+" by "+s.By)
		}
	}
	wantFiles := map[string][]string{
		"deploy/litellm/config.yaml": {"suppressed litellm/no-affinity by .kvcheckignore:2"},
		"other/config.yaml":          {"litellm/no-affinity"},
		"dash.json":                  {"suppressed metric-removed by .kvcheckignore:3"},
	}
	if diff := cmp.Diff(wantFiles, got); diff != "" {
		t.Errorf("ignore file (-want +got):\n%s", diff)
	}
	if _, err := ParseIgnore("x", []byte("LL-01 a b c\n")); err == nil {
		t.Error("ParseIgnore accepted a line with three words before the reason")
	}
}

func TestConfigFix(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"PS-01 missing key inserted under vllmConfig",
			"servingEngineSpec:\n  modelSpec:\n  - name: qwen   # the main model\n    vllmConfig:\n      maxModelLen: 8000\n      gpuMemoryUtilization: \"0.9\"\n",
			"servingEngineSpec:\n  modelSpec:\n  - name: qwen   # the main model\n    vllmConfig:\n      maxModelLen: 8000\n      enablePrefixCaching: true\n      gpuMemoryUtilization: \"0.9\"\n"},
		{"PS-01 false becomes true",
			"servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    vllmConfig:\n      enablePrefixCaching: false  # why?\n",
			"servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    vllmConfig:\n      enablePrefixCaching: true  # why?\n"},
		{"LD-02 producer name added to the scorer",
			strings.Replace(eppPrecise, "  - type: prefix-cache-scorer\n    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n", "  - type: prefix-cache-scorer\n  - type: queue-scorer\n", 1),
			strings.Replace(eppPrecise, "  - type: prefix-cache-scorer\n    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n", "  - type: prefix-cache-scorer\n    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n  - type: queue-scorer\n", 1)},
		{"typo renamed",
			litellmShuffle + "  optional_pre_call_check: [session_affinity]\n",
			litellmShuffle + "  optional_pre_call_checks: [session_affinity]\n"},
		{"llm-d parameter typo renamed",
			strings.Replace(eppGuide, "blockSizeTokens: 64", "blockSizeToken: 64", 1), eppGuide},
		{"llm-d named plugin's type typo rewritten",
			strings.Replace(eppGuide, "  - type: approx-prefix-cache-producer\n    name: approx\n", "  - type: approx-prefix-cache-produce\n    name: approx\n", 1), eppGuide},
		{"llm-d unnamed plugin's type typo rewritten: the pluginRef entries use the right name",
			strings.Replace(eppGuide, "  - type: queue-scorer\n", "  - type: queue-scorrer\n", 1), eppGuide},
		{"llm-d scorer's misspelt producer name renamed, not added a second time (LD-02 goes with it)",
			strings.Replace(eppGuide, "prefixMatchInfoProducerName:", "prefixMatchInfoProducerNam:", 1), eppGuide},
		{"production-stack misspelt enablePrefixCaching renamed, not added a second time (PS-01 goes with it)",
			strings.Replace(prodStackKV, "      enablePrefixCaching: true\n", "      enablePrefixcaching: true\n", 1), prodStackKV},
		{"production-stack modelSpec key typo renamed",
			strings.Replace(prodStackKV, "    vllmConfig:", "    vllmconfig:", 1), prodStackKV},
		{"CRLF kept",
			"servingEngineSpec:\r\n  modelSpec:\r\n  - name: qwen\r\n    vllmConfig:\r\n      maxModelLen: 8000\r\n",
			"servingEngineSpec:\r\n  modelSpec:\r\n  - name: qwen\r\n    vllmConfig:\r\n      maxModelLen: 8000\r\n      enablePrefixCaching: true\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLinter(t, "").File("f.yaml", []byte(tt.in))
			if diff := cmp.Diff(tt.want, string(r.Fixed)); diff != "" {
				t.Fatalf("fixed (-want +got):\n%s", diff)
			}
			for _, f := range r.Findings {
				// LD-02 (PS-01) next to a misspelt prefixMatchInfoProducerName (enablePrefixCaching)
				// goes away with the rename, which is the key-typo finding's rewrite, not its own.
				renamed := (f.Code == "llm-d/scorer-approximate-producer" || f.Code == "production-stack/prefix-caching-off") &&
					strings.Contains(tt.name, "misspelt")
				if f.Status == StatusConfig && f.Code != "litellm/no-affinity" && !renamed && !f.Fixed {
					t.Errorf("finding %s not marked fixed", f.Code)
				}
			}
			again := newLinter(t, "").File("f.yaml", r.Fixed)
			if again.Fixed != nil {
				t.Errorf("a second --fix changes the file again")
			}
		})
	}
	// A plugin named by its misspelt type that pluginRef entries use: renaming the type would
	// orphan them, so the typo stays a hint that says so.
	r0 := newLinter(t, "").File("f.yaml", []byte(strings.ReplaceAll(eppGuide, "queue-scorer\n", "queue-scorrer\n")))
	if r0.Fixed != nil {
		t.Errorf("plugin typo without a name rewritten:\n%s", r0.Fixed)
	}
	if i := slices.IndexFunc(r0.Findings, func(f Finding) bool { return f.Code == "llm-d/plugin-typo" }); i < 0 || r0.Findings[i].Fixable() || !strings.Contains(r0.Findings[i].Fix, "name: queue-scorrer") {
		t.Errorf("plugin typo without a name: findings %+v; want a hint keeping the name", r0.Findings)
	}
	// A misspelt block hiding a misspelt key: renaming the block would uncover a second
	// rewrite, so neither is made and both stay hints (the first pass reports the block; once
	// it is renamed, the key is reported and renamed).
	for name, src := range map[string]string{
		"litellm":  strings.Replace(litellmShuffle, "router_settings:", "router_setings:", 1) + "  optional_pre_call_check: [session_affinity]\n",
		"llm-d":    "kind: EndpointPickerConfig\nugins:\n- type: efix-cache-scorer\n",
		"outer ok": strings.Replace(litellmShuffle, "router_settings:", "router_setings:", 1),
	} {
		r := newLinter(t, "").File("f.yaml", []byte(src))
		if name == "outer ok" {
			if r.Fixed == nil {
				t.Errorf("%s: the block rename alone was not made", name)
			}
			continue
		}
		if r.Fixed != nil {
			t.Errorf("%s: rewritten although the rewrite uncovers another:\n%s", name, r.Fixed)
		}
	}
	// Not one value: no rewrite, still a fix hint.
	r := newLinter(t, "").File("f.yaml", []byte(prodStack("session", "", "")))
	if r.Fixed != nil || len(r.Findings) != 1 || r.Findings[0].Fixable() || r.Findings[0].Fix == "" {
		t.Errorf("PS-02: fixed %q, findings %+v; want no rewrite and a fix hint", r.Fixed, r.Findings)
	}
}

// TestREADMERules keeps the README's rule list equal to the rule table. Run with
// KVCHECK_UPDATE_README=1 to rewrite the list.
func TestREADMERules(t *testing.T) {
	const begin, end = "<!-- config-rules:begin -->\n", "<!-- config-rules:end -->"
	path := filepath.Join("..", "..", "README.md")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q section", begin, end)
	}
	got, want := s[i+len(begin):j], RulesMarkdown()
	if got == want {
		return
	}
	if os.Getenv("KVCHECK_UPDATE_README") != "" {
		if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's rule list differs from the rule table; run KVCHECK_UPDATE_README=1 go test ./internal/lint -run TestREADMERules\n(-readme +table):\n%s", cmp.Diff(got, want))
}

// TestRuleTable checks each rule's code is system/name under its product's id (or a generic
// system), each table id is one ROUTERS.md uses, and a rule that defeats something is an error.
func TestRuleTable(t *testing.T) {
	idRE := regexp.MustCompile(`^(LL|LD|PS|DY|SG|RY|VL|AB|GI)-\d\d$`)
	for _, r := range Rules() {
		if !strings.Contains(r.Code, "/") || r.Summary == "" || r.Versions == "" || r.Source == "" {
			t.Errorf("rule %+v: want a system/name code, a summary, versions and a source", r)
		}
		if r.Defeats != "" && r.Severity != finding.Error {
			t.Errorf("rule %s defeats %s but is not an error: assess blocks only on errors", r.Code, r.Defeats)
		}
		if r.ID != "" && !idRE.MatchString(r.ID) {
			t.Errorf("rule %s: id %q is not a table id", r.Code, r.ID)
		}
	}
}

// TestConfig100MBRefused: a 100 MB config file (a LiteLLM header, then sparse zeros) is refused
// with an error naming the bound, not parsed: no config finding, and only the bound's bytes read.
func TestConfig100MBRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(litellmShuffle), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 100<<20); err != nil {
		t.Fatal(err)
	}
	rs, err := newLinter(t, "").Paths(t.Context(), []string{p})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Findings) != 1 {
		t.Fatalf("results %+v, want one file with one finding", rs)
	}
	f := rs[0].Findings[0]
	if f.Code != CodeSkipped || f.Severity != finding.Error || !strings.Contains(f.Message, "larger than") {
		t.Errorf("finding %s %s %q, want an error %s saying the file is too large", f.Severity, f.Code, f.Message, CodeSkipped)
	}
}

// TestConfigCrossFindingsBounded: one engine behind many routers gets one finding per code, not
// one per router (a repository of unrelated stacks must not flood the report).
func TestConfigCrossFindingsBounded(t *testing.T) {
	files := map[string]string{"vllm.yaml": engineDeployment("vllm/vllm-openai:v0.26.0", 1, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"kv@x"}`)}
	for i := range 50 {
		files["epc"+strconv.Itoa(i)+".yaml"] = eppPrecise
	}
	rs := lintSet(t, files)
	if diff := cmp.Diff([]string{"llm-d/socket-port"}, rs["vllm.yaml"]); diff != "" {
		t.Errorf("engine findings (-want +got):\n%s", diff)
	}
	l := newLinter(t, "")
	var results []FileResult
	for name, src := range files {
		results = append(results, l.File(name, []byte(src)))
	}
	for _, r := range l.Finish(results) {
		for _, f := range r.Findings {
			if f.Code == "llm-d/socket-port" && !strings.Contains(f.Message, "(and 49 more like it in this run)") {
				t.Errorf("message %q does not count the other 49 routers", f.Message)
			}
		}
	}
}

// eppGuide is an EndpointPickerConfig shaped like llm-d-router's precise-prefix-cache example
// (config/.../epp-precise-prefix-cache-config.yaml): every key, type and parameter is one the
// router reads at @ebab687.
const eppGuide = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
featureGates:
  - flowControl
plugins:
  - type: token-producer
    parameters:
      modelName: Qwen/Qwen3-32B
      vllm:
        url: http://qwen-render:8000
        timeout: 5s
  - type: endpoint-notification-source
  - type: metrics-data-source
  - type: core-metrics-extractor
  - type: single-profile-handler
  - type: decode-filter
  - type: precise-prefix-cache-producer
    parameters:
      tokenProcessorConfig:
        blockSize: 64
      speculativeIndexing: true
      kvEventsConfig:
        podDiscoveryConfig:
          socketPort: 5556
          replaySocketPort: 5570
  - type: prefix-cache-scorer
    parameters:
      prefixMatchInfoProducerName: precise-prefix-cache-producer
      matchLengthWeight: 0.5
  - type: approx-prefix-cache-producer
    name: approx
    parameters:
      blockSizeTokens: 64
      lruCapacityPerServer: 31250
  - type: no-hit-lru-scorer
  - type: kv-cache-utilization-scorer
  - type: queue-scorer
  - type: max-score-picker
dataLayer:
  sources:
    - pluginRef: endpoint-notification-source
      extractors:
        - pluginRef: precise-prefix-cache-producer
schedulingProfiles:
  - name: default
    plugins:
      - pluginRef: decode-filter
      - pluginRef: prefix-cache-scorer
        weight: 3
      - pluginRef: queue-scorer
        weight: 2
      - pluginRef: max-score-picker
`

// prodStackKV is production-stack values shaped like the chart's tutorial values-17-kv-aware.yaml
// (LMCache controller wired on 9000, the chat template keys, pdb): keys the chart reads @a6c01db.
const prodStackKV = `servingEngineSpec:
  runtimeClassName: ""
  modelSpec:
  - name: "qwen"
    repository: "lmcache/vllm-openai"
    tag: "v0.3.9post2"
    modelURL: "Qwen/Qwen3-32B"
    replicaCount: 2
    requestCPU: 8
    requestMemory: "128Gi"
    requestGPU: 1
    pvcStorage: "256Gi"
    pdb:
      enabled: true
    chatTemplate: "chat.jinja2"
    vllmConfig:
      enablePrefixCaching: true
      maxModelLen: 8000
    lmcacheConfig:
      enabled: true
      enableController: true
      controllerPort: 9000
    env:
      - name: HF_HOME
        value: "/data"
routerSpec:
  repository: "lmcache/lmstack-router"
  tag: "latest"
  resources:
    requests:
      cpu: "1"
  routingLogic: "prefixaware"
  lmcacheControllerPort: 9000
  lmcacheControllerReplyPort: 9001
  sessionKey: "x-user-id"
`

// TestConfigUnknownNames covers gap "unknown keys of a known file kind" for llm-d and
// production-stack: a name kvcheck does not know is info; one or two edits from a known name is
// a warning that names it (and, where the rename is safe, --fix applies it).
func TestConfigUnknownNames(t *testing.T) {
	type want struct{ code, msg string }
	tests := []struct {
		name string
		src  string
		want []want // the name findings (unknown-key, key-typo, unknown-plugin, plugin-typo) and any other finding
	}{
		{"llm-d negative: the guide's config", eppGuide, nil},
		{"llm-d top-level typo", strings.Replace(eppGuide, "schedulingProfiles:", "schedulingProfile:", 1),
			[]want{{"llm-d/key-typo", "did you mean schedulingProfiles?"}}},
		{"llm-d unknown top-level key", eppGuide + "teamNotes: owned by infra\n",
			[]want{{"llm-d/unknown-key", "teamNotes is not a key this kvcheck knows"}}},
		{"llm-d plugin type typo", strings.Replace(eppGuide, "  - type: queue-scorer\n", "  - type: queue-scorrer\n", 1),
			[]want{{"llm-d/plugin-typo", "did you mean queue-scorer?"}}},
		{"llm-d unknown plugin type", strings.Replace(eppGuide, "  - type: queue-scorer\n", "  - type: queue-scorer\n  - type: acme-gpu-thermal-scorer\n", 1),
			[]want{{"llm-d/unknown-plugin", "acme-gpu-thermal-scorer is not one this kvcheck knows"}}},
		{"llm-d approximate producer parameter typo", strings.Replace(eppGuide, "blockSizeTokens: 64", "blockSizeToken: 64", 1),
			[]want{{"llm-d/key-typo", "plugins approx.parameters.blockSizeToken is not a key llm-d reads: did you mean blockSizeTokens?"}}},
		{"llm-d precise producer parameter typo", strings.Replace(eppGuide, "speculativeIndexing: true", "speculativeIndexng: true", 1),
			[]want{{"llm-d/key-typo", "did you mean speculativeIndexing?"}}},
		{"llm-d scorer parameter typo also loses the producer (LD-02)", strings.Replace(eppGuide, "prefixMatchInfoProducerName:", "prefixMatchInfoProducerNam:", 1),
			[]want{{"llm-d/scorer-approximate-producer", ""}, {"llm-d/key-typo", "did you mean prefixMatchInfoProducerName?"}}},
		{"llm-d token-producer vllm field typo", strings.Replace(eppGuide, "timeout: 5s", "timout: 5s", 1),
			[]want{{"llm-d/key-typo", "plugins token-producer.parameters.vllm.timout is not a key llm-d reads: did you mean timeout?"}}},
		{"llm-d unknown parameter of a known plugin", strings.Replace(eppGuide, "matchLengthWeight: 0.5", "matchLengthWeight: 0.5\n      experimentalBoost: 2", 1),
			[]want{{"llm-d/unknown-key", "plugins prefix-cache-scorer.parameters.experimentalBoost is not a key"}}},
		// The x-k8s.io era's in-scorer pipeline (hello-chris-llm-d_epp.yaml in the corpus) had
		// other parameters: kvcheck has not read them, so it does not judge them.
		{"llm-d negative: old API parameters are not judged",
			"apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: prefix-cache-scorer\n  parameters:\n    mode: cache_tracking\n    hashBlockSize: 16\n    maxPrefixBlocksToMatch: 256\n- type: max-score-picker\nschedulingProfiles:\n- name: default\n  plugins:\n  - pluginRef: prefix-cache-scorer\n  - pluginRef: max-score-picker\n",
			nil},
		{"production-stack negative: tutorial-shaped values", prodStackKV, nil},
		{"production-stack routerSpec typo", strings.Replace(prodStackKV, "  sessionKey:", "  sesionKey:", 1),
			[]want{{"production-stack/key-typo", "routerSpec.sesionKey is not a key production-stack reads: did you mean sessionKey?"}}},
		{"production-stack routerSpec typo hides the session key (PS-02)",
			strings.Replace(strings.Replace(prodStackKV, "  sessionKey:", "  session_key:", 1), `"prefixaware"`, `"session"`, 1),
			[]want{{"production-stack/session-key-missing", ""}, {"production-stack/key-typo", "did you mean sessionKey?"}}},
		{"production-stack modelSpec typo", strings.Replace(prodStackKV, "    vllmConfig:", "    vllmconfig:", 1),
			[]want{{"production-stack/key-typo", "servingEngineSpec.modelSpec[0] qwen.vllmconfig is not a key production-stack reads: did you mean vllmConfig?"}}},
		// The costly one: the chart reads no enablePrefixCaching, so it renders
		// --no-enable-prefix-caching (PS-01), and the warning says which key was meant.
		{"production-stack vllmConfig typo turns caching off (PS-01)", strings.Replace(prodStackKV, "      enablePrefixCaching: true\n", "      enablePrefixcaching: true\n", 1),
			[]want{{"production-stack/prefix-caching-off", ""}, {"production-stack/key-typo", "servingEngineSpec.modelSpec[0] qwen.vllmConfig.enablePrefixcaching is not a key production-stack reads: did you mean enablePrefixCaching?"}}},
		{"production-stack unknown vllmConfig key", strings.Replace(prodStackKV, "      maxModelLen: 8000\n", "      maxModelLen: 8000\n      speculativeConfig: ngram\n", 1),
			[]want{{"production-stack/unknown-key", "qwen.vllmConfig.speculativeConfig is not a key this kvcheck knows"}}},
		{"production-stack unknown routerSpec key", strings.Replace(prodStackKV, "  lmcacheControllerPort: 9000\n", "  lmcacheControllerPort: 9000\n  canaryWeight: 10\n", 1),
			[]want{{"production-stack/unknown-key", "routerSpec.canaryWeight is not a key this kvcheck knows"}}},
		{"production-stack unknown modelSpec key", strings.Replace(prodStackKV, "    replicaCount: 2\n", "    replicaCount: 2\n    gpuVendor: amd\n", 1),
			[]want{{"production-stack/unknown-key", "servingEngineSpec.modelSpec[0] qwen.gpuVendor is not a key this kvcheck knows"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLinter(t, "").File("config.yaml", []byte(tt.src))
			var got []want
			for _, f := range r.Findings {
				if f.Status != StatusConfig || f.Code == "llm-d/no-replay" {
					continue // LD-09 is info on every producer without replay; not what this test is about
				}
				got = append(got, want{f.Code, f.Message})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			for i, w := range tt.want {
				if got[i].code != w.code || !strings.Contains(got[i].msg, w.msg) {
					t.Errorf("finding %d: %s %q, want %s containing %q", i, got[i].code, got[i].msg, w.code, w.msg)
				}
			}
			for _, f := range r.Findings {
				if strings.HasSuffix(f.Code, "unknown-key") || strings.HasSuffix(f.Code, "unknown-plugin") {
					if f.Severity != finding.Info {
						t.Errorf("%s is %v, want info", f.Code, f.Severity)
					}
				}
				if strings.HasSuffix(f.Code, "-typo") && f.Severity != finding.Warning {
					t.Errorf("%s is %v, want warning", f.Code, f.Severity)
				}
			}
		})
	}
}

// TestConfigFixNeedsAValue holds --fix to issue 11's "one unambiguous value": LD-01's
// tokenizer backend needs the served model's name (token-producer requires modelName, and the
// EndpointPickerConfig does not say which model the pool serves) and a render URL (the default
// http://localhost:8000 is the EPP's own pod), and LL-05's num_retries is judged across files
// (the router's file says the api_base is a KV-aware router) with 1 or 0 both right. Neither is
// rewritten; both keep a hint naming the keys.
func TestConfigFixNeedsAValue(t *testing.T) {
	noTokenizer := strings.Replace(eppPrecise, "  - type: token-producer\n    parameters:\n      modelName: Qwen/Qwen3-32B\n      vllm:\n        url: http://render:8000\n", "", 1)
	estimate := strings.Replace(eppPrecise, "      modelName: Qwen/Qwen3-32B\n      vllm:\n        url: http://render:8000\n", "      estimate: {}\n", 1)
	for name, src := range map[string]string{"no token-producer": noTokenizer, "estimate backend": estimate} {
		r := newLinter(t, "").File("epc.yaml", []byte(src))
		i := slices.IndexFunc(r.Findings, func(f Finding) bool { return f.Code == "llm-d/estimate-tokenizer" })
		if i < 0 {
			t.Fatalf("%s: no LD-01 finding in %+v", name, r.Findings)
		}
		f := r.Findings[i]
		if r.Fixed != nil || f.Fixable() || !strings.Contains(f.Fix, "parameters.modelName") || !strings.Contains(f.Fix, "parameters.vllm.url") {
			t.Errorf("%s: fixed %q, fixable %v, hint %q; want no rewrite and a hint naming modelName and vllm.url", name, r.Fixed, f.Fixable(), f.Fix)
		}
	}
	l := newLinter(t, "")
	gw := "model_list:\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen3-32B\n      api_base: http://qwen-frontend.dynamo:8000/v1\nrouter_settings:\n  num_retries: 3\n"
	rs := l.Finish([]FileResult{l.File("config.yaml", []byte(gw)), l.File("dgd.yaml", []byte(dynamoDGD("kv", "", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556"}`)))})
	found := false
	for _, r := range rs {
		for _, f := range r.Findings {
			if f.Code != "litellm/retries-stacked" {
				continue
			}
			found = true
			if r.Fixed != nil || f.Fixable() || !strings.Contains(f.Fix, "num_retries: 1") {
				t.Errorf("LL-05: fixed %q, fixable %v, hint %q; want no rewrite and a num_retries hint", r.Fixed, f.Fixable(), f.Fix)
			}
		}
	}
	if !found {
		t.Fatalf("LL-05 not reported for num_retries 3 in front of a Dynamo kv frontend: %+v", rs)
	}
}

// TestImageNewerThanCatalog: a vllm/vllm-openai tag past the catalog's newest vLLM release is
// an info finding at the image line naming both releases and the one the metric checks use;
// a tag the catalog knows, or another vendor's image, is not.
func TestImageNewerThanCatalog(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	newest := cat.Family(catalog.VLLM).Newest
	past := fmt.Sprintf("%d.%d.1", newest.Major, newest.Minor+13)
	src := []byte(engineDeployment("vllm/vllm-openai:v"+past, 1, ""))
	find := func(l *Linter, src []byte) []Finding {
		var out []Finding
		for _, f := range l.File("d.yaml", src).Findings {
			if f.Code == "vllm/newer-than-catalog" {
				out = append(out, f)
			}
		}
		return out
	}
	got := find(newLinterTargets(t, ""), src)
	if len(got) != 1 {
		t.Fatalf("findings %+v, want one", got)
	}
	f := got[0]
	want := fmt.Sprintf("is vLLM %s, newer than this kvcheck's metric catalog knows (up to vLLM %s): metric names are checked against vLLM %s", past, newest, newest)
	if f.Severity != finding.Info || f.Line != 11 || !strings.Contains(f.Message, want) {
		t.Errorf("got %s %d: %s\nwant a line-11 info containing %q", f.Severity, f.Line, f.Message, want)
	}
	// The checks name the release the run targets.
	if got := find(newLinterTargets(t, "vllm=0.30"), src); len(got) != 1 || !strings.Contains(got[0].Message, "checked against vLLM 0.30.0") {
		t.Errorf("at vllm=0.30: %+v", got)
	}
	for _, image := range []string{"vllm/vllm-openai:v" + newest.String(), "vllm/vllm-openai:latest", "lmcache/vllm-openai:v0.99.0"} {
		if got := find(newLinterTargets(t, ""), []byte(engineDeployment(image, 1, ""))); len(got) != 0 {
			t.Errorf("%s: %+v", image, got)
		}
	}
}
