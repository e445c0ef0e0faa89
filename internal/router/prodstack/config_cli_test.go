package prodstack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// prodStackKV is kvaware-era chart values with prefixaware routing.
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

// routerDeployment is a Deployment of replicas pods whose container starts production-stack's
// router with command and args as given (YAML flow lists or block text).
func routerDeployment(replicas int, command, args string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: router\nspec:\n  replicas: %d\n  template:\n    spec:\n      containers:\n      - name: router\n        image: lmcache/lmstack-router:latest\n        command: %s\n        args: %s\n",
		replicas, command, args)
}

// TestProdStackCommandLine: production-stack's router started from a command line (a
// container's command/args, sh -c text, a compose service, a script) had no lint finding while
// assess listed it as not simulated: lint read only routerSpec. Its flags now go through the
// same rules as routerSpec's, at the file:line of the value. Each case is worked from the
// router's parser (argparse keeps the last --routing-logic) and routing_logic.py: a logic the
// router does not know, session without a key, kvaware on chat traffic, prefixaware on two
// pods, a minimum match off the 128-character chunks.
func TestProdStackCommandLine(t *testing.T) {
	checkers := []config.Checker{Router{}}
	type want struct {
		code string
		line int
		msg  string
	}
	split := routerDeployment(1, `["vllm_router"]`, "\n        - --port\n        - \"8000\"\n        - --routing-logic\n        - fancy\n")
	eq := routerDeployment(1, `["python3", "-m", "vllm_router.app"]`, `["--routing-logic=kvawre", "--service-discovery", "k8s"]`)
	shell := routerDeployment(1, `["/bin/sh", "-c"]`, "\n        - |\n          echo starting\n          vllm-router --port 8000 \\\n            --routing-logic session\n")
	pods := routerDeployment(3, `["vllm_router"]`, `["--routing-logic", "prefixaware", "--prefix-min-match-length", "100"]`)
	kv := routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "kvaware"]`)
	compose := "services:\n  router:\n    image: lmcache/lmstack-router:latest\n    entrypoint: [\"vllm_router\"]\n    command: [\"--routing-logic\", \"fancy\"]\n"
	script := "#!/bin/sh\nset -e\nvllm_router --port 8001 \\\n  --routing-logic roundrobin --routing-logic fancy\n"
	tests := []struct {
		name, file, src string
		want            []want
	}{
		{"split args", "router.yaml", split, []want{{"production-stack/unknown-routing-logic", configtest.LineOf(t, split, "- fancy"), `routing logic "fancy" is not one production-stack's router knows`}}},
		{"--flag=value, python -m", "router.yaml", eq, []want{{"production-stack/unknown-routing-logic", configtest.LineOf(t, eq, "kvawre"), "did you mean kvaware?"}}},
		{"sh -c text", "router.yaml", shell, []want{{"production-stack/session-key-missing", configtest.LineOf(t, shell, "--routing-logic session"), "--routing-logic session without --session-key"}}},
		{"prefixaware on 3 pods, min match 100", "router.yaml", pods, []want{
			{"production-stack/prefixaware-replicas", configtest.LineOf(t, pods, "prefixaware"), "prefixaware on 3 router replicas"},
			{"production-stack/prefix-min-match-length", configtest.LineOf(t, pods, "prefixaware"), "--prefix-min-match-length 100 is not a multiple of 128"}}},
		{"kvaware", "router.yaml", kv, []want{{"production-stack/kvaware-chat", configtest.LineOf(t, kv, "kvaware"), "kvaware tokenizes only the request's prompt field"}}},
		{"compose", "docker-compose.yaml", compose, []want{{"production-stack/unknown-routing-logic", 5, `routing logic "fancy"`}}},
		{"script, last logic wins", "router.sh", script, []want{{"production-stack/unknown-routing-logic", 4, `routing logic "fancy"`}}},
		{"negative: session with a key", "router.yaml", routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "session", "--session-key", "x-user-id"]`), nil},
		{"negative: prefixaware on one pod, min match 256", "router.yaml", routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "prefixaware", "--prefix-min-match-length", "256"]`), nil},
		{"negative: logic from the environment", "router.yaml", routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "$(LOGIC)"]`), nil},
		{"negative: disaggregated prefill", "router.yaml", routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "disaggregated_prefill"]`), nil},
		{"negative: not the router", "router.yaml", routerDeployment(1, `["other"]`, `["--routing-logic", "fancy"]`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := configtest.Findings(t, checkers, tt.file, tt.src)
			var got []*config.Finding
			for _, f := range r {
				if strings.HasPrefix(f.Code, "production-stack/") {
					got = append(got, f)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("production-stack findings %v, want %d (all: %v)", got, len(tt.want), r)
			}
			for _, w := range tt.want {
				i := slices.IndexFunc(got, func(f *config.Finding) bool { return f.Code == w.code })
				if i < 0 {
					t.Errorf("no %s in %v", w.code, got)
					continue
				}
				if f := got[i]; f.File != tt.file || f.Line != w.line || !strings.Contains(f.Message, w.msg) {
					t.Errorf("%s at %s:%d %q, want %s:%d containing %q", w.code, f.File, f.Line, f.Message, tt.file, w.line, w.msg)
				}
			}
		})
	}
}

// A routing logic production-stack's router does not know is a warning at its file:line that
// names every logic kvcheck knows (and the nearest one, for a typo): at a6c01db the router
// refuses it at start, and it was read without a word before. Every known logic, and one given
// in routerSpec.extraArgs (rendered after the chart's, so argparse keeps it), is judged too.
func TestProdStackUnknownRoutingLogic(t *testing.T) {
	checkers := []config.Checker{Router{}}
	fancy := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, `routingLogic: "fancy"`, 1)
	typo := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, `routingLogic: kvawre`, 1)
	extra := prodStackKV + "  extraArgs:\n  - --routing-logic=fancy\n"
	extraSplit := prodStackKV + "  extraArgs: [\"--routing-logic\", \"kvaware\"]\n"
	tests := []struct {
		name, src string
		line      int
		want      []string // substrings of the message; none means no finding
	}{
		{"fancy", fancy, configtest.LineOf(t, fancy, "routingLogic:"), []string{`routing logic "fancy"`, "roundrobin, session, prefixaware, kvaware, loadaware, disaggregated_prefill, disaggregated_prefill_orchestrated", "refuses it at start"}},
		{"typo", typo, configtest.LineOf(t, typo, "routingLogic:"), []string{`"kvawre"`, "did you mean kvaware?"}},
		{"extraArgs", extra, configtest.LineOf(t, extra, "--routing-logic=fancy"), []string{`routing logic "fancy"`}},
		{"extraArgs negative: known", extraSplit, 0, nil},
	}
	for _, logic := range RoutingLogics() {
		src := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, "routingLogic: "+logic, 1)
		tests = append(tests, struct {
			name, src string
			line      int
			want      []string
		}{"negative: " + logic, src, 0, nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := configtest.Findings(t, checkers, "values.yaml", tt.src)
			var got []*config.Finding
			for _, f := range r {
				if f.Code == "production-stack/unknown-routing-logic" {
					got = append(got, f)
				}
			}
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d unknown-routing-logic findings, want 1 (all: %v)", len(got), r)
			}
			f := got[0]
			if f.File != "values.yaml" || f.Line != tt.line || f.Severity != finding.Warning {
				t.Errorf("at %s:%d as %v, want values.yaml:%d as a warning", f.File, f.Line, f.Severity, tt.line)
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
		})
	}
}
