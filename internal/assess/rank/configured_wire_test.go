package rank

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// dgdFrontend is a DynamoGraphDeployment whose frontend runs with args (a flow list's items)
// and envs (DYN_* variables, name=value), in the services shape.
func dgdFrontend(args []string, envs ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata:\n  name: qwen\nspec:\n  services:\n    Frontend:\n      componentType: frontend\n")
	if len(envs) > 0 {
		b.WriteString("      envs:\n")
		for _, e := range envs {
			k, v, _ := strings.Cut(e, "=")
			b.WriteString("      - {name: " + k + ", value: \"" + v + "\"}\n")
		}
	}
	b.WriteString("      extraPodSpec:\n        mainContainer:\n          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1\n          command: [python3, -m, dynamo.frontend]\n")
	b.WriteString("          args: [" + strings.Join(args, ", ") + "]\n")
	return b.String()
}

// configuredOf returns the configured settings and changes of the one router of policy the
// files set up.
func configuredOf(t *testing.T, files map[string]string, policy string) (product.Settings, []string) {
	t.Helper()
	f := filesOf(t, files)
	for _, r := range f.Routers {
		if r.Policy == policy {
			var ch []string
			for _, c := range r.Changes {
				ch = append(ch, c.Setting+"="+c.Value)
			}
			return r.Settings, ch
		}
	}
	t.Fatalf("no %s row in %v", policy, f.Routers)
	return nil, nil
}

// TestConfiguredDynamoCost: Dynamo's overlap credit and prefill load scale, from flags and
// their DYN_* twins, and the deprecated overlap weight's precedence (Dynamo's router guide: a
// legacy value wins over the prefill load scale, and a legacy 0 also sets the credit to 0), and
// the deprecated --load-aware (DYN_ROUTER_LOAD_AWARE): credit 0 and KV events off.
// Each row's settings are read off the fragment by hand; shipped: weight 1, credit 1.
func TestConfiguredDynamoCost(t *testing.T) {
	kv := []string{"--router-mode", "kv"}
	tests := []struct {
		name           string
		dgd            string
		weight, credit float64
		changes        []string
	}{
		{"credit flag", dgdFrontend(append(kv, "--router-kv-overlap-score-credit", `"0.5"`)), 1, 0.5,
			[]string{"--router-mode=kv", "--router-kv-overlap-score-credit=0.5"}},
		{"prefill load scale flag", dgdFrontend(append(kv, "--router-prefill-load-scale=2")), 2, 1,
			[]string{"--router-mode=kv", "--router-prefill-load-scale=2"}},
		{"env twins", dgdFrontend(nil, "DYN_ROUTER_MODE=kv", "DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT=0.25", "DYN_ROUTER_PREFILL_LOAD_SCALE=3"), 3, 0.25,
			[]string{"--router-mode=kv", "--router-prefill-load-scale=3", "--router-kv-overlap-score-credit=0.25"}},
		{"legacy weight wins over the scale", dgdFrontend(append(kv, "--router-kv-overlap-score-weight", "2", "--router-prefill-load-scale", "3")), 2, 1,
			[]string{"--router-mode=kv", "--router-kv-overlap-score-weight=2"}},
		{"legacy 0 zeroes the credit", dgdFrontend(append(kv, "--kv-overlap-score-weight", "0", "--router-kv-overlap-score-credit", "0.5")), 0, 0,
			[]string{"--router-mode=kv", "--router-kv-overlap-score-weight=0", "--router-kv-overlap-score-credit=0"}},
		{"legacy env 0", dgdFrontend(kv, "DYN_OVERLAP_SCORE_WEIGHT=0"), 0, 0,
			[]string{"--router-mode=kv", "--router-kv-overlap-score-weight=0", "--router-kv-overlap-score-credit=0"}},
		{"load-aware", dgdFrontend(append(kv, "--load-aware")), 1, 0,
			[]string{"--router-mode=kv", "--load-aware=true"}},
		{"load-aware env", dgdFrontend(kv, "DYN_ROUTER_LOAD_AWARE=true"), 1, 0,
			[]string{"--router-mode=kv", "--load-aware=true"}},
		{"credit 1 is no change", dgdFrontend(append(kv, "--router-kv-overlap-score-credit", "1.0")), 1, 1,
			[]string{"--router-mode=kv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ch := configuredOf(t, map[string]string{"dgd.yaml": tt.dgd}, "dynamo-kv")
			if loadAware := strings.HasPrefix(tt.name, "load-aware"); s.(dynamo.Settings).KVEvents == loadAware {
				t.Errorf("KV events %v: --load-aware turns them off, nothing else does here", s.(dynamo.Settings).KVEvents)
			}
			if s.(dynamo.Settings).OverlapWeight != tt.weight || s.(dynamo.Settings).OverlapCredit != tt.credit {
				t.Errorf("weight %v credit %v, want %v and %v", s.(dynamo.Settings).OverlapWeight, s.(dynamo.Settings).OverlapCredit, tt.weight, tt.credit)
			}
			if d := cmp.Diff(tt.changes, ch); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
		})
	}
}

// TestConfiguredLLMDProducers: the approximate producer's autoTune and maxPrefixTokensToMatch,
// and the precise producer's tokenProcessorConfig block size as NewChunkedTokenDatabase
// resolves it (blockSizeTokens when above 0, else the deprecated blockSize, else 16).
func TestConfiguredLLMDProducers(t *testing.T) {
	epc := func(plugin string) string {
		return "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + plugin +
			"- type: prefix-cache-scorer\n  parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n"
	}
	s, ch := configuredOf(t, map[string]string{"epc.yaml": epc("- type: approx-prefix-cache-producer\n  parameters: {autoTune: false, maxPrefixTokensToMatch: 4096, lruCapacityPerServer: 500}\n")}, "llmd-approx")
	want := llmd.Shipped()
	want.AutoTune, want.MaxPrefixTokensToMatch, want.LRUCapacityPerServer = false, 4096, 500
	if s.(llmd.Settings) != want {
		t.Errorf("approx: %+v, want %+v", s.(llmd.Settings), want)
	}
	if d := cmp.Diff([]string{"autoTune=false", "lruCapacityPerServer=500", "maxPrefixTokensToMatch=4096"}, ch); d != "" {
		t.Errorf("approx changes (-want +got):\n%s", d)
	}
	for _, tt := range []struct {
		params  string
		want    int
		changes []string
	}{
		{"{tokenProcessorConfig: {blockSizeTokens: 64}}", 64, []string{"tokenProcessorConfig.blockSizeTokens=64"}},
		{"{tokenProcessorConfig: {blockSize: 32}}", 32, []string{"tokenProcessorConfig.blockSize=32"}},
		{"{tokenProcessorConfig: {blockSizeTokens: 0, blockSize: 32}}", 32, []string{"tokenProcessorConfig.blockSize=32"}},
		{"{tokenProcessorConfig: {blockSizeTokens: 64, blockSize: 32}}", 64, []string{"tokenProcessorConfig.blockSizeTokens=64"}},
		{"{tokenProcessorConfig: {hashSeed: '1'}}", 16, nil},
	} {
		s, ch := configuredOf(t, map[string]string{"epc.yaml": epc("- type: precise-prefix-cache-producer\n  parameters: " + tt.params + "\n")}, "llmd-precise")
		if s.(llmd.Settings).PreciseBlockSizeTokens != tt.want {
			t.Errorf("%s: precise block size %d, want %d", tt.params, s.(llmd.Settings).PreciseBlockSizeTokens, tt.want)
		}
		if d := cmp.Diff(tt.changes, ch); d != "" {
			t.Errorf("%s: changes (-want +got):\n%s", tt.params, d)
		}
	}
}

// spacedTrace: 16 requests 10 s apart on 16-token blocks, each 10 shared blocks then one of its
// own (176 tokens), each done long before the next arrives (10 output tokens).
func spacedTrace() *sim.Trace {
	tr := &sim.Trace{Name: "spaced", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 16 {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(10 * i), Blocks: blocks(1, 10, uint64(i)), InputTokens: 176, OutputTokens: 10})
	}
	return tr
}

// rowsByVariant ranks the candidates of policy on the spaced trace over 2 replicas.
func rowsByVariant(t *testing.T, policy string, files *Files) map[string]Row {
	t.Helper()
	tr := spacedTrace()
	rk, err := Run(context.Background(), tr, setup(2, -1), Candidates(infos(policy), product.TrafficOf(tr, 2, 16000, false), files))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Row{}
	for _, r := range rk.Rows {
		out[r.Variant] = r
	}
	return out
}

// TestConfiguredRowOverlapCredit: a Dynamo KV router configured with
// --router-kv-overlap-score-credit 0, on the spaced trace over 2 replicas. Worked by hand:
//   - shipped (credit 1): the first request goes to one replica, which then holds the 10 shared
//     blocks; every later one costs max(11 - 10, 0) = 1 there against 11 elsewhere (no request in
//     flight: no decode blocks), so all 16 go to it: load max/mean 2.00; no request waits (each
//     ends long before the next), so no hot spot at this load (sim.Load): ranked.
//   - configured (credit 0): nothing is taken off the 11 prefill blocks, every replica costs 11,
//     and each request goes to a replica drawn at random: about half each. A request misses the
//     shared blocks only the first time each replica gets one, so at least 14 of 16 hit 160 of
//     their 176 tokens.
//
// So the credit, read from the file, spreads the requests the shipped row piles on one replica.
func TestConfiguredRowOverlapCredit(t *testing.T) {
	files := filesOf(t, map[string]string{"dgd.yaml": dgdFrontend([]string{"--router-mode", "kv", "--router-kv-overlap-score-credit", "0"})})
	rows := rowsByVariant(t, "dynamo-kv", files)
	shipped, configured := rows[Shipped], rows[Configured]
	if shipped.LoadMaxOverMean != 2 || shipped.Excluded != "" {
		t.Errorf("shipped: load %v excluded %q, want 2.00 and ranked (no request waits)", shipped.LoadMaxOverMean, shipped.Excluded)
	}
	if configured.Settings.(dynamo.Settings).OverlapCredit != 0 || configured.Rank == 0 || configured.LoadMaxOverMean >= 2 || configured.HitRate < 140.0/176 {
		t.Errorf("configured: credit %v load %v rank %d hit %v", configured.Settings.(dynamo.Settings).OverlapCredit, configured.LoadMaxOverMean, configured.Rank, configured.HitRate)
	}
}

// TestConfiguredRowAutoTune: llm-d's approximate producer with autoTune false and
// lruCapacityPerServer 2, on the spaced trace over 2 replicas. Its blocks are 64 tokens (16
// raised to 64), so a request has 3 keys: k1 (tokens 0-63) and k2 (64-127) shared, k3 (to
// token 176) its own. Worked by hand:
//   - shipped (autoTune on): the engine's block count (1000) is the capacity, so the replica that
//     got the first request keeps k1 and k2 and scores 2/3 on every later one against 0: prefix
//     weight 3 x 2/3 = 2 wins while both replicas are idle (queue and KV use 0), all 16 go to it:
//     load max/mean 2.00, and no request waits: ranked (no hot spot at this load).
//   - configured: k1, k2, k3 are added in turn to an LRU of 2, which drops k1; no replica ever
//     holds k1, the match stops there at 0 everywhere, every score ties and each request goes to
//     a replica drawn at random: about half each, at least 14 of 16 hitting 160 of 176 tokens.
//
// Without reading autoTune the user's lruCapacityPerServer would be ignored (autoTune replaces
// it), and the configured row would pile on one replica as the shipped one does.
func TestConfiguredRowAutoTune(t *testing.T) {
	files := filesOf(t, map[string]string{"epc.yaml": "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" +
		"- type: approx-prefix-cache-producer\n  parameters: {autoTune: false, lruCapacityPerServer: 2}\n" +
		"- type: prefix-cache-scorer\n- type: queue-scorer\n- type: kv-cache-utilization-scorer\n" +
		"schedulingProfiles:\n- name: default\n  plugins:\n  - {pluginRef: queue-scorer, weight: 2}\n  - {pluginRef: kv-cache-utilization-scorer, weight: 2}\n  - {pluginRef: prefix-cache-scorer, weight: 3}\n"})
	rows := rowsByVariant(t, "llmd-approx", files)
	shipped, configured := rows[Shipped], rows[Configured]
	if shipped.LoadMaxOverMean != 2 || shipped.Excluded != "" {
		t.Errorf("shipped: load %v excluded %q, want 2.00 and ranked (no request waits)", shipped.LoadMaxOverMean, shipped.Excluded)
	}
	if configured.Settings.(llmd.Settings).AutoTune || configured.Rank == 0 || configured.LoadMaxOverMean >= 2 || configured.HitRate < 140.0/176 {
		t.Errorf("configured: autoTune %v load %v rank %d hit %v", configured.Settings.(llmd.Settings).AutoTune, configured.LoadMaxOverMean, configured.Rank, configured.HitRate)
	}
}

// TestConfiguredSnippetRoundTrip: the configuration kvcheck writes for a configured row with
// these values reads back as the same settings, so applying it runs the router as ranked.
func TestConfiguredSnippetRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		policy, file, src string
	}{
		{"dynamo-kv", "dgd.yaml", dgdFrontend([]string{"--router-mode", "kv", "--router-kv-overlap-score-credit", "0.5", "--router-prefill-load-scale", "2"})},
		{"dynamo-kv", "dgd.yaml", dgdFrontend([]string{"--router-mode", "kv"}, "DYN_OVERLAP_SCORE_WEIGHT=0")},
		{"llmd-approx", "epc.yaml", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: approx-prefix-cache-producer\n  parameters: {autoTune: false, maxPrefixTokensToMatch: 4096, blockSizeTokens: 128, lruCapacityPerServer: 500}\n"},
		{"llmd-precise", "epc.yaml", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: token-producer\n  parameters: {modelName: m, vllm: {url: 'http://a:8000'}}\n- type: precise-prefix-cache-producer\n  parameters: {tokenProcessorConfig: {blockSize: 64}}\n- type: prefix-cache-scorer\n  parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n"},
	} {
		want, _ := configuredOf(t, map[string]string{tc.file: tc.src}, tc.policy)
		sn := SnippetFor(Row{Candidate: Candidate{Policy: tc.policy, Product: productOf(tc.policy), Variant: Configured, Settings: want}})
		back, _ := configuredOf(t, map[string]string{snippetSlot(sn.File): sn.Text}, tc.policy)
		if d := cmp.Diff(want, back); d != "" {
			t.Errorf("%s: the snippet reads back otherwise (-want +got):\n%s\n%s", tc.policy, d, sn.Text)
		}
	}
}
