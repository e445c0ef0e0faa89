package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// lineOf returns the 1-based line of the first line of src holding s.
func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	i := strings.Index(src, s)
	if i < 0 {
		t.Fatalf("%q not in the source", s)
	}
	return strings.Count(src[:i], "\n") + 1
}

// TestDuplicateKeys: a key written twice in one mapping was read without a finding (yaml.v3's
// Node keeps both pairs) and kvcheck used the first, while Helm and PyYAML keep the last. Now
// every config file kvcheck reads reports each duplicate at the last pair, naming the lines of
// all of them and what the product reading that file does with it, and kvcheck reads the last
// pair: a session routingLogic overridden by roundrobin two lines later no longer asks for a
// session key, and the ranking reads roundrobin.
func TestDuplicateKeys(t *testing.T) {
	prodDup := strings.Replace(prodStackKV, `  routingLogic: "prefixaware"`, "  routingLogic: session\n  routingLogic: roundrobin", 1)
	litellm := "model_list:\n- model_name: m\n  litellm_params: {model: hosted_vllm/m, api_base: http://a:8000/v1}\nrouter_settings:\n  routing_strategy: least-busy\n  num_retries: 0\n  routing_strategy: simple-shuffle\n  routing_strategy: latency-based-routing\n"
	epc := "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: approx-prefix-cache-producer\n  parameters:\n    blockSizeTokens: 64\n    blockSizeTokens: 16\n- type: prefix-cache-scorer\n"
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: epp\ndata:\n  config.yaml: |\n    apiVersion: llm-d.ai/v1alpha1\n    kind: EndpointPickerConfig\n    plugins:\n    - type: queue-scorer\n      type: prefix-cache-scorer\n"
	dgd := strings.Replace(dynamoDGD("kv", "", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556"}`), "      replicas: 1\n", "      replicas: 1\n      replicas: 2\n", 1)
	compose := "services:\n  vllm:\n    image: vllm/vllm-openai:v0.26.0\n    command: [\"--model\", \"m\"]\n    image: vllm/vllm-openai:v0.25.0\n"
	ray := "applications:\n- name: llm\n  deployment_config:\n    request_router_config:\n      request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n      request_router_kwargs:\n        imbalanced_threshold: 10\n        do_eviction: true\n        imbalanced_threshold: 20\n"
	// The branches of an if each write the key once; rendered, there is one.
	template := "routerSpec:\n  {{- if .Values.session }}\n  routingLogic: session\n  sessionKey: x-user\n  {{- else }}\n  routingLogic: roundrobin\n  {{- end }}\nservingEngineSpec:\n  modelSpec:\n  - name: {{ .Values.name }}\n    repository: vllm/vllm-openai\n    tag: v0.26.0\n"
	templateDup := strings.Replace(template, "  sessionKey: x-user\n", "  sessionKey: x-user\n  sessionKey: x-session\n", 1)
	tests := []struct {
		name, file, src string
		want            []string // one message per duplicate, in order (substrings)
	}{
		{"production-stack values", "values.yaml", prodDup, []string{fmt.Sprintf("routerSpec.routingLogic is written twice in one mapping (lines %d and %d): Helm keeps the last pair (line %d), silently, and kvcheck reads that one",
			lineOf(t, prodDup, "routingLogic: session"), lineOf(t, prodDup, "routingLogic: roundrobin"), lineOf(t, prodDup, "routingLogic: roundrobin"))}},
		{"LiteLLM config, three times", "config.yaml", litellm, []string{"router_settings.routing_strategy is written 3 times in one mapping (lines 5, 7 and 8): LiteLLM loads it with PyYAML, which keeps the last pair (line 8)"}},
		{"EndpointPickerConfig", "epc.yaml", epc, []string{"plugins[0].parameters.blockSizeTokens is written twice in one mapping (lines 6 and 7): the llm-d EPP decodes its config strictly and refuses it at start"}},
		{"EndpointPickerConfig held in a ConfigMap", "cm.yaml", configMap, []string{"plugins[0].type is written twice in one mapping (lines 10 and 11): the llm-d EPP"}},
		{"DynamoGraphDeployment", "dgd.yaml", dgd, []string{fmt.Sprintf("spec.services.Frontend.replicas is written twice in one mapping (lines %d and %d): kubectl apply refuses the object", lineOf(t, dgd, "replicas: 1"), lineOf(t, dgd, "replicas: 2"))}},
		{"docker compose", "docker-compose.yaml", compose, []string{"services.vllm.image is written twice in one mapping (lines 3 and 5): docker compose refuses the file"}},
		{"Ray Serve config", "serve.yaml", ray, []string{"request_router_kwargs.imbalanced_threshold is written twice in one mapping (lines 7 and 9): Ray Serve loads it with PyYAML, which keeps the last pair (line 9)"}},
		{"Helm template branches", "router.yaml", template, nil},
		{"Helm template duplicate inside one branch", "router.yaml", templateDup, []string{"routerSpec.sessionKey is written twice in one mapping (lines 4 and 5)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLinter(t, "").File(tt.file, []byte(tt.src))
			var got []Finding
			for _, f := range r.Findings {
				if f.Code == "yaml/duplicate-key" {
					got = append(got, f)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d duplicate-key findings %v, want %d (all: %v)", len(got), got, len(tt.want), r.Findings)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Message, w) || got[i].Severity != finding.Warning {
					t.Errorf("finding %q (%v), want a warning containing %q", got[i].Message, got[i].Severity, w)
				}
			}
		})
	}
	// The last pair is the one read: by the checks (no session-key-missing for the session
	// overridden by roundrobin) and by the ranking's reader.
	rs := newLinter(t, "").File("values.yaml", []byte(prodDup))
	for _, f := range rs.Findings {
		if f.Code == "production-stack/session-key-missing" {
			t.Errorf("the first routingLogic (session) was checked: %v", f)
		}
	}
	dep := DeploymentOf([]FileResult{rs})
	if len(dep.Routers) != 1 || dep.Routers[0].Values["routingLogic"] != "roundrobin" {
		t.Errorf("routers %+v, want production-stack's with the last routingLogic, roundrobin", dep.Routers)
	}
	ll := DeploymentOf([]FileResult{newLinter(t, "").File("config.yaml", []byte(litellm))})
	if len(ll.Routers) != 1 || ll.Routers[0].Values["routing_strategy"] != "latency-based-routing" {
		t.Errorf("routers %+v, want LiteLLM's with the last routing_strategy", ll.Routers)
	}
}

// A Dynamo frontend's router mode the frontend does not know is a warning at the flag, naming
// the modes it knows (and the nearest, for a typo), as production-stack's unknown routing logic
// is; the assess ranking lists such a frontend as not simulated. A value a Helm template fills
// in is not judged (neither is production-stack's).
func TestDynamoUnknownRouterMode(t *testing.T) {
	// Quoted, as a chart writes a value into a list: YAML once its action is masked.
	helmDGD := strings.Replace(dynamoDGD("kv", "", ""), "- kv\n", "- \"{{ .Values.routerMode }}\"\n", 1)
	for _, tc := range []struct {
		name, file, src string
		want            []string
	}{
		{"fancy", "dgd.yaml", dynamoDGD("fancy", "", ""), []string{`router mode "fancy" is not one Dynamo's frontend knows (round-robin, random, power-of-two, kv, direct, least-loaded, device-aware-weighted)`}},
		{"typo", "dgd.yaml", dynamoDGD("roundrobin", "", ""), []string{"did you mean round-robin?"}},
		{"negative: random", "dgd.yaml", dynamoDGD("random", "", ""), nil},
		{"negative: a Helm value", "dgd.yaml", helmDGD, nil},
		{"negative: production-stack's routingLogic from a Helm value", "values.yaml", strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, "routingLogic: {{ .Values.logic }}", 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLinter(t, "").File(tc.file, []byte(tc.src))
			var got []Finding
			for _, f := range r.Findings {
				if f.Code == "dynamo/unknown-router-mode" || f.Code == "production-stack/unknown-routing-logic" {
					got = append(got, f)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Message, w) || got[i].Severity != finding.Warning || got[i].Line != lineOf(t, tc.src, "--router-mode") {
					t.Errorf("finding %s:%d %q (%v), want a warning at the flag's line %d containing %q", got[i].File, got[i].Line, got[i].Message, got[i].Severity, lineOf(t, tc.src, "--router-mode"), w)
				}
			}
		})
	}
}

// An environment variable set twice in one env list was read as the last without a word; the
// container gets the last too, but the API server warns that it hides the earlier one and kubectl
// apply may drop one. A warning at the last definition names the lines; a definition extending
// the earlier one ($(PATH)) is no duplicate, as the API server says.
func TestDuplicateEnv(t *testing.T) {
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.26.0\n        args: [\"--model\", \"m\"]\n        env:\n        - name: PYTHONHASHSEED\n          value: \"0\"\n        - name: PATH\n          value: /opt/bin\n        - name: PYTHONHASHSEED\n          value: \"42\"\n        - name: PATH\n          value: $(PATH):/usr/local/bin\n"
	r := newLinter(t, "").File("deploy.yaml", []byte(dep))
	var got []Finding
	for _, f := range r.Findings {
		if f.Code == "kubernetes/duplicate-env" {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("duplicate-env findings %v, want one (PYTHONHASHSEED; PATH extends itself)", got)
	}
	want := "PYTHONHASHSEED is set twice in spec.template.spec.containers[0].env (lines 14 and 18): the container gets the last (line 18)"
	if f := got[0]; !strings.Contains(f.Message, want) || f.Line != 18 || f.Severity != finding.Warning {
		t.Errorf("%s:%d %q (%v), want a warning at line 18 containing %q", f.File, f.Line, f.Message, f.Severity, want)
	}
}
