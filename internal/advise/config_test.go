package advise

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
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

func TestConfigAdvice(t *testing.T) {
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	generic := Decide(Input{Replay: kvWins}, DefaultThresholds()).Advice
	rec := Decide(Input{Replay: kvWins, Config: lintConfig(t, map[string]string{"epc.yaml": epcNoTokenizer})}, DefaultThresholds())
	var llmd []string
	for _, a := range rec.Advice {
		if strings.HasPrefix(a, "llm-d:") {
			llmd = append(llmd, a)
		}
	}
	want := []string{"llm-d: your configuration was checked (kvcheck lint): 1 finding to act on, listed under the fixes"}
	if diff := cmp.Diff(want, llmd); diff != "" {
		t.Errorf("llm-d advice (-want +got):\n%s", diff)
	}
	if len(rec.Advice) != len(generic) {
		t.Errorf("advice has %d lines, the generic advice %d: only the llm-d line should change", len(rec.Advice), len(generic))
	}
	for _, a := range rec.Advice {
		if strings.HasPrefix(a, "Dynamo:") && !slices.Contains(generic, a) {
			t.Errorf("advice for a system not configured changed: %q", a)
		}
	}
}
