package rank

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// filesOf lints files as assess --config does and returns what the ranking reads of them.
func filesOf(t *testing.T, files map[string]string) *Files {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := lint.New(cat, lint.Options{})
	var rs []lint.FileResult
	var paths []string
	for _, n := range []string{"dgd.yaml", "epc.yaml", "values.yaml", "gateway.yaml", "litellm.yaml"} {
		if src, ok := files[n]; ok {
			rs = append(rs, l.File(n, []byte(src)))
			paths = append(paths, n)
		}
	}
	return FilesFrom(paths, lint.DeploymentOf(l.Finish(rs)))
}

const dgdApprox = `apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: qwen
spec:
  services:
    Frontend:
      componentType: frontend
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.frontend]
          args: [--router-mode, kv, --no-router-kv-events, --router-ttl-secs, "5"]
    VllmWorker:
      componentType: worker
      replicas: 2
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-32B]
`

// TestConfiguredRowDiffers: a Dynamo frontend configured in the approximate mode with a 5 s
// TTL, on 16 requests 10 s apart that share 10 blocks (then one of their own), on 2 replicas.
// Each request ends long before the next arrives, so none is live when the next is routed.
// Worked by hand:
//   - shipped (KV events), with workers that publish them: the first request ties everywhere
//     and goes to one replica, which then holds the 10 blocks; every later request costs 1 + 11
//     there (one block to prefill, 11 decode blocks) against 11 + 11 elsewhere, so all 16 go to
//     it: load max/mean 2.00, but each request ends long before the next arrives, so none
//     waits: no hot spot at this load (sim.Load), ranked; 15 requests hit 10 blocks each
//     (150/176).
//   - shipped, with dgdApprox's worker, which has no --kv-events-config: the router's tree
//     stays empty (load-only), every request costs 11 + 11 everywhere, a tie, and goes to a
//     replica drawn at random, as under the configured row below: no hot spot, ranked, but
//     behind the configured row (one requirement missing against none); 14 requests hit when
//     both replicas get one (140/176): the events-less row loses one request's 10 blocks.
//   - configured (--no-router-kv-events --router-ttl-secs 5): the router's record of a
//     request expires 5 s later, before the next one arrives 10 s later, so every request
//     sees no overlap anywhere, every cost ties, and each goes to a replica drawn at random:
//     about half each, no hot spot. A request misses the 10 blocks only the first time each
//     replica gets one: 14 hit at least.
//
// So the configured row needs no KV events from the engines (it does not read them), and the
// shipped row, given them, piles every request on one replica.
func TestConfiguredRowDiffers(t *testing.T) {
	files := filesOf(t, map[string]string{"dgd.yaml": dgdApprox})
	tr := &sim.Trace{Name: "spaced", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 16 {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(10 * i), Blocks: blocks(1, 10, uint64(i)), InputTokens: 176, OutputTokens: 10})
	}
	cands := Candidates(infos("dynamo-kv"), product.TrafficOf(tr, 2, 16000, false), files)
	var variants []string
	for _, c := range cands {
		variants = append(variants, c.Variant)
	}
	if d := cmp.Diff([]string{Shipped, Configured}, variants); d != "" {
		t.Fatalf("rows (-want +got):\n%s", d)
	}
	conf := cands[1]
	if conf.Settings.(dynamo.Settings).KVEvents || conf.Settings.(dynamo.Settings).TTLSecs != 5 || conf.Label != "dgd.yaml:8" {
		t.Errorf("configured: %+v at %s", conf.Settings.(dynamo.Settings), conf.Label)
	}
	var changed []string
	for _, c := range conf.Changes {
		changed = append(changed, c.Setting+"="+c.Value)
	}
	if d := cmp.Diff([]string{"--router-mode=kv", "--router-kv-events=false", "--router-ttl-secs=5"}, changed); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	rk, err := Run(context.Background(), tr, setup(2, -1), cands)
	if err != nil {
		t.Fatal(err)
	}
	byVariant := map[string]Row{}
	for _, r := range rk.Rows {
		byVariant[r.Variant] = r
	}
	shipped, configured := byVariant[Shipped], byVariant[Configured]
	if shipped.LoadMaxOverMean >= 2 || shipped.Rank != 2 || shipped.HitRate != 140.0/176 {
		t.Errorf("shipped without engine events: load %v rank %d hit %v", shipped.LoadMaxOverMean, shipped.Rank, shipped.HitRate)
	}
	if !shipped.Settings.(dynamo.Settings).NoEngineEvents || len(shipped.Notes) != 1 || !strings.Contains(shipped.Notes[0], "load-only") || !strings.Contains(shipped.Notes[0], "dgd.yaml:") {
		t.Errorf("shipped without engine events: %+v, notes %q", shipped.Settings.(dynamo.Settings), shipped.Notes)
	}
	if configured.Settings.(dynamo.Settings).NoEngineEvents || len(configured.Notes) != 0 {
		t.Errorf("the approximate mode reads no engine events: %+v, notes %q", configured.Settings.(dynamo.Settings), configured.Notes)
	}
	// The same worker publishing its events: the shipped row reads them and piles on one
	// replica, which no request waits for at this load.
	withEvents := filesOf(t, map[string]string{"dgd.yaml": strings.Replace(dgdApprox, "args: [--model, Qwen/Qwen3-32B]",
		`args: [--model, Qwen/Qwen3-32B, --kv-events-config, '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:20080"}']`, 1)})
	cands = Candidates(infos("dynamo-kv"), product.TrafficOf(tr, 2, 16000, false), withEvents)
	if q := cands[0].Requirements; len(q) != 2 || q[1].Name != ReqKVEvents || q[1].Status != Met {
		t.Fatalf("shipped requirements with the worker's events %+v", q)
	}
	rk2, err := Run(context.Background(), tr, setup(2, -1), cands[:1])
	if err != nil {
		t.Fatal(err)
	}
	if r := rk2.Rows[0]; r.LoadMaxOverMean != 2 || r.Rank != 1 || r.HitRate != 150.0/176 || len(r.Notes) != 0 {
		t.Errorf("shipped with engine events: load %v rank %d hit %v notes %q", r.LoadMaxOverMean, r.Rank, r.HitRate, r.Notes)
	}
	if configured.Rank != 1 || configured.LoadMaxOverMean >= 2 || configured.HitRate < 140.0/176 {
		t.Errorf("configured: load %v rank %d hit %v", configured.LoadMaxOverMean, configured.Rank, configured.HitRate)
	}
	for _, q := range configured.Requirements {
		if q.Name == ReqKVEvents {
			t.Errorf("the approximate mode needs no KV events: %+v", q)
		}
	}
	// The frontend shows Dynamo is deployed; the file names no engine with events.
	if q := shipped.Requirements; len(q) != 2 || q[0].Status != Met || q[1].Name != ReqKVEvents || q[1].Status != Missing {
		t.Errorf("shipped requirements %+v", q)
	}
}

// TestConfiguredValues: each product's values as the user wrote them become its settings, and
// a mode kvcheck does not emulate gives no row (the system is still present).
func TestConfiguredValues(t *testing.T) {
	f := filesOf(t, map[string]string{
		"epc.yaml": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: approx-prefix-cache-producer
  parameters: {blockSizeTokens: 64, lruCapacityPerServer: 1000}
- type: prefix-cache-scorer
- type: queue-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: prefix-cache-scorer
    weight: 5
  - pluginRef: queue-scorer
`,
		"values.yaml": "servingEngineSpec:\n  modelSpec:\n  - name: m\n    repository: vllm/vllm-openai\n    tag: v0.11.0\n    vllmConfig:\n      enablePrefixCaching: true\nrouterSpec:\n  routingLogic: disaggregated_prefill\n",
		"litellm.yaml": `model_list:
- model_name: m
  litellm_params: {model: hosted_vllm/m, api_base: http://a:8000/v1}
router_settings:
  optional_pre_call_checks: [session_affinity]
  deployment_affinity_ttl_seconds: 600
litellm_settings: {}
`,
	})
	got := map[string]product.Settings{}
	for _, r := range f.Routers {
		got[r.Policy] = r.Settings
	}
	if len(got) != 2 {
		t.Fatalf("rows for %v, want llmd-approx and litellm-session-affinity only", got)
	}
	// A listed scorer without weight is 1, one not listed (kv-cache-utilization) 0.
	l := got["llmd-approx"].(llmd.Settings)
	if l.PrefixWeight != 5 || l.QueueWeight != 1 || l.KVUtilWeight != 0 || l.BlockSizeTokens != 64 || l.LRUCapacityPerServer != 1000 || l.Tokenizer != "estimate" {
		t.Errorf("llm-d: %+v", l)
	}
	if ll := got["litellm-session-affinity"].(litellm.Settings); ll.AffinityTTLSecs != 600 || ll.Redis || strings.Join(ll.PreCallChecks, ",") != "session_affinity" {
		t.Errorf("litellm: %+v", ll)
	}
	if f.Systems[ProdStack] == "" || f.Engines[0].Version != "0.11.0" {
		t.Errorf("production-stack present %q, engine %+v", f.Systems[ProdStack], f.Engines)
	}
}

// TestDynamoWithoutFrontend: a DynamoGraphDeployment whose components hold no frontend shows
// the frontend missing, not unknown: the file is the deployment and it has none.
func TestDynamoWithoutFrontend(t *testing.T) {
	noFrontend := strings.Replace(strings.Replace(dgdApprox, "componentType: frontend", "componentType: main", 1), "    Frontend:", "    Router:", 1)
	noFrontend = strings.Replace(noFrontend, "command: [python3, -m, dynamo.frontend]", "command: [python3, -m, my.router]", 1)
	f := filesOf(t, map[string]string{"dgd.yaml": noFrontend})
	c := Candidates(infos("dynamo-round-robin"), Traffic{Format: "mooncake"}, f)[0]
	if q := c.Requirements[0]; q.Name != ReqDynamo || q.Status != Missing || !strings.Contains(q.Detail, "dgd.yaml:1 has no frontend") {
		t.Errorf("%+v", q)
	}
	// With the frontend: met.
	f = filesOf(t, map[string]string{"dgd.yaml": dgdApprox})
	if q := Candidates(infos("dynamo-round-robin"), Traffic{Format: "mooncake"}, f)[0].Requirements[0]; q.Status != Met {
		t.Errorf("%+v", q)
	}
}
