package advise

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// lintConfig lints files (name -> content) in one run, as assess --config does.
func lintConfig(t *testing.T, files map[string]string) *Config {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := lint.New(cat, lint.Options{})
	var rs []lint.FileResult
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		rs = append(rs, l.File(n, []byte(files[n])))
	}
	return FromConfig(l.Finish(rs), names)
}

const (
	epcNoTokenizer = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: precise-prefix-cache-producer\n    parameters:\n      kvEventsConfig:\n        podDiscoveryConfig: {socketPort: 5557, replaySocketPort: 5559}\n  - type: prefix-cache-scorer\n    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n"
	cachingOff     = "servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    vllmConfig:\n      enablePrefixCaching: false\nrouterSpec:\n  routingLogic: roundrobin\n"
	sessionNoKey   = "routerSpec:\n  routingLogic: session\n"
	// A vLLM Deployment alone (no router in the files) with prefix caching switched off: lint
	// grades it a warning (vllm/prefix-caching-disabled; behind a KV-aware router it is the
	// error vllm/prefix-caching-off), but for assess it answers the question the same way: no
	// option gains anything on an engine that caches nothing.
	engineOff = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  replicas: 4\n  template:\n    spec:\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.25.1\n        args: [\"--model\", \"Qwen/Qwen3-8B\", \"--no-enable-prefix-caching\"]\n"
)

func TestConfigDecides(t *testing.T) {
	// A KV-aware router wins the replay (the TestDecide case: +30 points over today, session
	// affinity makes a hot spot); session affinity wins when only sessions reuse.
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	sessionWins := replay(0.30, 10, true, pol("chash-bounded", 0.55, 1.2), pol("session", 0.56, 1.3), pol("kv-load", 0.57, 1.07))
	tests := []struct {
		name   string
		files  map[string]string
		in     Input
		route  Verdict // what the evidence alone recommends
		blocks string  // the config blocker's rule, or "" when the finding does not block
		fix    string
	}{
		// The evidence recommends a KV-aware router, and the llm-d config runs the exact producer
		// on the estimate tokenizer: fix that first.
		{"estimate tokenizer blocks a KV-aware router", map[string]string{"epc.yaml": epcNoTokenizer}, Input{Replay: kvWins}, KVAwareRouter, "config-defeats-kv-router", "error llm-d/estimate-tokenizer"},
		// The same finding when session affinity is recommended: worth fixing, not a blocker.
		{"estimate tokenizer does not block session affinity", map[string]string{"epc.yaml": epcNoTokenizer}, Input{Replay: sessionWins}, SessionAffinity, "", "error llm-d/estimate-tokenizer"},
		// Prefix caching off defeats every option, whatever the evidence.
		{"prefix caching off blocks a KV-aware router", map[string]string{"values.yaml": cachingOff}, Input{Replay: kvWins}, KVAwareRouter, "config-defeats-caching", "error production-stack/prefix-caching-off"},
		{"prefix caching off blocks session affinity", map[string]string{"values.yaml": cachingOff}, Input{Replay: sessionWins}, SessionAffinity, "config-defeats-caching", "error production-stack/prefix-caching-off"},
		{"prefix caching off on an engine without a router blocks session affinity", map[string]string{"deploy.yaml": engineOff}, Input{Replay: sessionWins}, SessionAffinity, "config-defeats-caching", "error vllm/prefix-caching-disabled"},
		{"a session router without its key blocks session affinity", map[string]string{"values.yaml": sessionNoKey}, Input{Replay: sessionWins}, SessionAffinity, "config-defeats-session", "error production-stack/session-key-missing"},
		{"a session router without its key does not block a KV-aware router", map[string]string{"values.yaml": sessionNoKey}, Input{Replay: kvWins}, KVAwareRouter, "", "error production-stack/session-key-missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := Decide(tt.in, DefaultThresholds())
			if base.Verdict != tt.route {
				t.Fatalf("without --config the verdict is %s, want %s: the test's evidence is off", base.Verdict, tt.route)
			}
			in := tt.in
			in.Config = lintConfig(t, tt.files)
			got := summarize(Decide(in, DefaultThresholds()))
			want := summarize(base)
			want.Fixes = append(want.Fixes, tt.fix)
			if tt.blocks != "" {
				want.Verdict, want.Then, want.Confidence = FixFirst, tt.route, High
				want.Rules = append([]string{tt.blocks}, want.Rules...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigAdvice: with the user's llm-d configuration, the advice for a KV-aware router names
// llm-d and what the checks found in it (its one finding, with its rule id), keeps the lines
// about no product in particular (the exact routers' hash parity, naive longest-prefix
// routing), and leaves out the lines about the routers the user does not run (Dynamo,
// production-stack, SGLang, Ray, LiteLLM): 8 lines become 3 (issue 22, failure 6: the advice
// talked about production-stack to a LiteLLM user). Without a router in the files (an engine
// Deployment alone) every line stays.
func TestConfigAdvice(t *testing.T) {
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	generic := Decide(Input{Replay: kvWins}, DefaultThresholds()).Advice
	rec := Decide(Input{Replay: kvWins, Config: lintConfig(t, map[string]string{"epc.yaml": epcNoTokenizer})}, DefaultThresholds())
	want := []string{generic[0], "llm-d: your configuration was checked (kvcheck lint): 1 finding listed under the fixes: LD-01 llm-d/estimate-tokenizer", generic[len(generic)-1]}
	if len(generic) != 8 || !strings.HasPrefix(want[0], "exact KV-aware routers") || !strings.HasPrefix(want[2], "naive longest-prefix routing") {
		t.Fatalf("the generic advice changed: %q", generic)
	}
	if diff := cmp.Diff(want, rec.Advice); diff != "" {
		t.Errorf("advice (-want +got):\n%s", diff)
	}
	rec = Decide(Input{Replay: kvWins, Config: lintConfig(t, map[string]string{"deploy.yaml": engineOff})}, DefaultThresholds())
	if len(rec.Advice) != len(generic) {
		t.Errorf("no router in the files: %d lines of advice, want the %d generic ones", len(rec.Advice), len(generic))
	}
}

// TestConfigInfoFindings: issue 22, failure 6. A LiteLLM config whose only affinity is prompt
// caching: kvcheck lint reports LL-03 (an info), which assess left out of its fixes and its
// evidence ("0 errors, 0 warnings"), and whose advice said none of the router-trap rules had
// fired. Every finding of the user's files is a fix, the evidence names its rule id, and the
// LiteLLM advice line says what was found.
func TestConfigInfoFindings(t *testing.T) {
	const litellm = "model_list:\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct\n      api_base: http://vllm-0:8000/v1\n  - model_name: qwen\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct\n      api_base: http://vllm-1:8000/v1\nrouter_settings:\n  routing_strategy: simple-shuffle\n  optional_pre_call_checks: [\"prompt_caching\"]\n"
	sessionWins := replay(0.30, 10, true, pol("chash-bounded", 0.55, 1.2), pol("session", 0.56, 1.3), pol("kv-load", 0.57, 1.07))
	rec := Decide(Input{Replay: sessionWins, Config: lintConfig(t, map[string]string{"litellm.yaml": litellm})}, DefaultThresholds())
	if !slices.ContainsFunc(rec.Fixes, func(f finding.Finding) bool {
		return f.Code == "litellm/prompt-caching-only" && f.Properties["rule"] == "LL-03"
	}) {
		t.Errorf("no LL-03 fix in %+v", rec.Fixes)
	}
	if !slices.ContainsFunc(rec.Evidence, func(e Evidence) bool {
		return e.ID == "config.findings" && e.Figure == "0 errors, 0 warnings, 1 info in 1 file: LL-03 litellm/prompt-caching-only"
	}) {
		t.Errorf("evidence %+v", rec.Evidence)
	}
	want := "LiteLLM: your configuration was checked (kvcheck lint): 1 finding listed under the fixes: LL-03 litellm/prompt-caching-only"
	if !slices.Contains(rec.Advice, want) || slices.ContainsFunc(rec.Advice, func(a string) bool { return strings.HasPrefix(a, "vLLM production-stack") }) {
		t.Errorf("advice %q, want %q and no production-stack line", rec.Advice, want)
	}
}
