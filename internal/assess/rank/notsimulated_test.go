package rank

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
)

// A router the files set up that runs nothing kvcheck emulates gets no row, but is never left
// out without a word: FilesFrom lists it with where and why (an unknown production-stack
// routing logic names the logics the router knows; a mode kvcheck does not emulate says so).
// Before, routingLogic: fancy gave no row, no note and no lint finding.
func TestConfiguredNotSimulated(t *testing.T) {
	values := "servingEngineSpec:\n  modelSpec:\n  - name: qwen\n    repository: vllm/vllm-openai\n    tag: v0.26.0\n    modelURL: Qwen/Qwen3-32B\nrouterSpec:\n  routingLogic: LOGIC\n"
	for _, tc := range []struct {
		logic string
		want  []string
	}{
		{"fancy", []string{`routingLogic "fancy" is not one production-stack's router knows (roundrobin, session, prefixaware, kvaware, loadaware, disaggregated_prefill, disaggregated_prefill_orchestrated)`, "refuses it at start"}},
		{"disaggregated_prefill", []string{"routingLogic disaggregated_prefill: disaggregated prefill is not emulated"}},
	} {
		f := filesOf(t, map[string]string{"values.yaml": strings.Replace(values, "LOGIC", tc.logic, 1)})
		if len(f.Routers) != 0 {
			t.Errorf("%s: rows %+v, want none", tc.logic, f.Routers)
		}
		ns := f.NotSimulatedRouters()
		if len(ns) != 1 || ns[0].Product != prodstack.ID || ns[0].Where != "values.yaml:1" {
			t.Fatalf("%s: not simulated %+v, want one production-stack router at values.yaml:1", tc.logic, ns)
		}
		for _, w := range tc.want {
			if !strings.Contains(ns[0].Reason, w) {
				t.Errorf("%s: reason %q lacks %q", tc.logic, ns[0].Reason, w)
			}
		}
	}
	// Every other kind of router, from its values as lint reads them.
	for _, tc := range []struct {
		kind string
		vals map[string]string
		want string
	}{
		{dynamo.ID, map[string]string{"--router-mode": "random"}, "--router-mode random is not emulated"},
		{dynamo.ID, map[string]string{"--router-mode": "fastest"}, `--router-mode "fastest" is not one Dynamo's frontend knows (round-robin, random, power-of-two, kv, direct, least-loaded, device-aware-weighted)`},
		{prodstack.ID, map[string]string{"sessionKey": "x-user"}, "no --routing-logic: the router requires one"},
		{prodstack.ID, map[string]string{"routingLogic": "{{ .Values.logic }}"}, `routingLogic "{{ .Values.logic }}" is filled in when the chart renders`},
		{dynamo.ID, map[string]string{"--router-mode": "{{ .Values.mode }}"}, `--router-mode "{{ .Values.mode }}" is filled in when the chart renders`},
		{sglang.ID, map[string]string{"--policy": "power_of_two"}, "--policy power_of_two is not emulated"},
		{litellm.ID, map[string]string{"routing_strategy": "least-busy"}, "routing_strategy least-busy without session_affinity or prompt_caching is not emulated"},
	} {
		f := FilesFrom(nil, lint.Deployment{Routers: []lint.RouterFacts{{Kind: tc.kind, File: "f.yaml", Line: 3, Values: tc.vals}}})
		ns := f.NotSimulatedRouters()
		if len(f.Routers) != 0 || len(ns) != 1 || ns[0].Where != "f.yaml:3" || !strings.Contains(ns[0].Reason, tc.want) {
			t.Errorf("%s %v: rows %+v, not simulated %+v; want none and one saying %q", tc.kind, tc.vals, f.Routers, ns, tc.want)
		}
	}
	// A mode it emulates is a row, not a line.
	f := FilesFrom(nil, lint.Deployment{Routers: []lint.RouterFacts{{Kind: dynamo.ID, File: "f.yaml", Line: 3, Values: map[string]string{"--router-mode": "kv"}}}})
	if len(f.Routers) != 1 || len(f.NotSimulatedRouters()) != 0 {
		t.Errorf("kv mode: rows %+v, not simulated %+v", f.Routers, f.NotSimulatedRouters())
	}
}

// The precise producer with the deprecated udsTokenizerConfig backend (the model's own
// tokenizer in a sidecar): the lint's LD-01 counts it as a real tokenizer, but the ranking read
// it as the estimate, whose keys never match the engine's blocks, and simulated a precise
// producer that could never hit. It now runs on the engine's tokens, as the vllm backend, and
// says where that came from; the estimate backend stays the estimate.
func TestConfiguredUDSTokenizer(t *testing.T) {
	epc := func(tokenizer string) string {
		return "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: precise-prefix-cache-producer\n" +
			"- type: token-producer\n  parameters:\n    " + tokenizer + "\n" +
			"- type: prefix-cache-scorer\n  parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n"
	}
	for _, tc := range []struct {
		params, want string
		changes      []string
	}{
		{"udsTokenizerConfig: {socketFile: /tmp/tokenizer/tokenizer-uds.socket}", "vllm", []string{"token-producer=udsTokenizerConfig"}},
		{"estimate: {}", "estimate", nil},
		{"modelName: Qwen/Qwen3-32B", "vllm", []string{"tokenizer=vllm"}},
	} {
		s, ch := configuredOf(t, map[string]string{"epc.yaml": epc(tc.params)}, "llmd-precise")
		if s.(llmd.Settings).Tokenizer != tc.want {
			t.Errorf("%s: tokenizer %q, want %q", tc.params, s.(llmd.Settings).Tokenizer, tc.want)
		}
		if strings.Join(ch, ";") != strings.Join(tc.changes, ";") {
			t.Errorf("%s: changes %q, want %q", tc.params, ch, tc.changes)
		}
	}
}

// LiteLLM pre-call checks the ranking does not emulate are said on the row, not dropped: one
// LiteLLM does not know does nothing (the row runs without it, as LiteLLM does), and the pins by
// API key, previous response or encrypted content are not emulated.
func TestConfiguredLiteLLMChecksNotEmulated(t *testing.T) {
	for _, tc := range []struct {
		checks, policy, note string
	}{
		{"session_afinity", "litellm-simple-shuffle", `optional_pre_call_checks "session_afinity" in f.yaml:3 is not a check LiteLLM knows`},
		{"session_affinity,deployment_affinity", "litellm-session-affinity", "optional_pre_call_checks deployment_affinity in f.yaml:3 pins requests kvcheck cannot tell apart"},
	} {
		f := FilesFrom(nil, lint.Deployment{Routers: []lint.RouterFacts{{Kind: litellm.ID, File: "f.yaml", Line: 3,
			Values: map[string]string{"optional_pre_call_checks": tc.checks, "redis": "false"}}}})
		if len(f.Routers) != 1 || f.Routers[0].Policy != tc.policy || len(f.Routers[0].Notes) != 1 || !strings.HasPrefix(f.Routers[0].Notes[0], tc.note) {
			t.Errorf("%s: rows %+v, want one %s row noting %q", tc.checks, f.Routers, tc.policy, tc.note)
		}
	}
}

// A router listed as configured, not simulated keeps the notes on the values kvcheck could not
// read (a threshold that is not a number, Dynamo's legacy weight that is not one): before, the
// notes were made and dropped with the row, so an unreadable value went unsaid. A router with
// no unreadable value has no notes, and nothing says it was simulated with a shipped value.
func TestNotSimulatedKeepsUnreadNotes(t *testing.T) {
	for _, tc := range []struct {
		kind string
		vals map[string]string
		want []string
	}{
		{prodstack.ID, map[string]string{"routingLogic": "disaggregated_prefill", "--kv-aware-threshold": "lots"},
			[]string{`--kv-aware-threshold "lots" in f.yaml:3 is not a whole number: kvcheck could not read it; fix the value`}},
		{dynamo.ID, map[string]string{"--router-mode": "random", "--router-kv-overlap-score-weight": "heavy", "--router-temperature": "warm"},
			[]string{`--router-kv-overlap-score-weight "heavy" in f.yaml:3 is not a number: kvcheck could not read it; fix the value`,
				`--router-temperature "warm" in f.yaml:3 is not a number: kvcheck could not read it; fix the value`}},
		{dynamo.ID, map[string]string{"--router-mode": "random", "--router-temperature": "0.5"}, nil},
	} {
		f := FilesFrom(nil, lint.Deployment{Routers: []lint.RouterFacts{{Kind: tc.kind, File: "f.yaml", Line: 3, Values: tc.vals}}})
		ns := f.NotSimulatedRouters()
		if len(f.Routers) != 0 || len(ns) != 1 {
			t.Fatalf("%v: rows %+v, not simulated %+v; want one line", tc.vals, f.Routers, ns)
		}
		if !slices.Equal(ns[0].Notes, tc.want) {
			t.Errorf("%v: notes %q, want %q", tc.vals, ns[0].Notes, tc.want)
		}
	}
}
