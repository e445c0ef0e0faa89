package vllmrouter_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/vllmrouter"
)

// The rules' codes (an external test: production-stack, which the cases need beside vLLM
// Router, imports this package).
const (
	ID                = vllmrouter.ID
	codeUnknownPolicy = "vllm-router/unknown-policy"
	codeRefused       = "vllm-router/cache-aware-refused"
	codeNoMatch       = "vllm-router/cache-threshold-no-match"
	codeAlwaysLoad    = "vllm-router/always-imbalanced"
	codeHashChat      = "vllm-router/hash-chat-one-worker"
	codeCacheChat     = "vllm-router/cache-aware-chat"
	codePowerOfTwo    = "vllm-router/power-of-two-no-load"
)

// routerPod is a Deployment whose container runs command with args (YAML flow lists).
func routerPod(command, args string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: router\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: router\n        image: router:latest\n        command: %s\n        args: %s\n", command, args)
}

// mine keeps the findings of vLLM Router's rules.
func mine(fs []*config.Finding) []string {
	var out []string
	for _, f := range fs {
		if strings.HasPrefix(f.Code, ID+"/") {
			out = append(out, f.Code)
		}
	}
	return out
}

// TestConfigRules: each rule on a hand-written command line, worked from the source lines the
// rule cites (vllm-project/router@e667ebb): clap's value_parser for --policy (main.rs:110), the
// validator's bounds (validation.rs:139-167), the match rate's strict comparison
// (cache_aware.rs:314), the imbalance test (cache_aware.rs:253-254), the routing text of a
// chat (spec.rs:542-557) and power_of_two's /get_load (router.rs:1284-1360).
func TestConfigRules(t *testing.T) {
	both := []config.Checker{prodstack.Router{}, vllmrouter.Router{}}
	chat := []string{codeCacheChat}
	tests := []struct {
		name, file, src string
		want            []string
	}{
		// The default policy is cache_aware: its chat rule alone.
		{"defaults", "router.sh", "#!/bin/sh\nvllm-router --worker-urls http://a:8000 http://b:8000\n", chat},
		{"unknown policy", "router.yaml", routerPod(`["vllm-router"]`, `["--worker-urls", "http://a:8000", "--policy", "least_load"]`), []string{codeUnknownPolicy}},
		{"unknown decode policy", "router.yaml", routerPod(`["vllm-router"]`, `["--policy", "round_robin", "--decode-policy=roundrobin"]`), []string{codeUnknownPolicy}},
		{"negative: policy from the environment", "router.yaml", routerPod(`["vllm-router"]`, `["--policy", "$(POLICY)", "--worker-urls", "http://a:8000"]`), nil},
		// 1.5 > 1.0 is refused; 1.0 is accepted but 1.0 > 1.0 never holds.
		{"threshold 1.5 refused", "router.sh", "vllm-router --policy cache_aware --cache-threshold 1.5 --worker-urls http://a:8000\n", append([]string{codeRefused}, chat...)},
		{"threshold 1 never matches", "router.sh", "vllm-router --policy cache_aware --cache-threshold=1 --worker-urls http://a:8000\n", append([]string{codeNoMatch}, chat...)},
		{"negative: threshold 0.99", "router.sh", "vllm-router --cache-threshold 0.99 --worker-urls http://a:8000\n", chat},
		{"rel 0.5, tree 0 refused", "router.sh", "vllm-router --worker-urls http://a:8000 --balance-rel-threshold 0.5 --max-tree-size 0\n", append([]string{codeRefused, codeRefused}, chat...)},
		{"python launcher eviction 0 refused", "router.sh", "python -m vllm_router.launch_router --worker-urls http://a:8000 --eviction-interval-secs 0\n", append([]string{codeRefused}, chat...)},
		// 0 and 1: max - min > 0 and max > min x 1 whenever the loads differ.
		{"always imbalanced", "router.sh", "vllm-router --worker-urls http://a:8000 --balance-abs-threshold 0 --balance-rel-threshold 1\n", append([]string{codeAlwaysLoad}, chat...)},
		{"negative: abs 0, rel 1.5", "router.sh", "vllm-router --worker-urls http://a:8000 --balance-abs-threshold 0\n", chat},
		{"consistent_hash", "router.yaml", routerPod(`["vllm-router"]`, `["--policy", "consistent_hash", "--worker-urls", "http://a:8000", "http://b:8000"]`), []string{codeHashChat}},
		{"rendezvous_hash", "router.sh", "vllm_router --policy=rendezvous_hash --worker-urls http://a:8000\n", []string{codeHashChat}},
		{"power_of_two", "router.sh", "vllm-router --policy power_of_two --worker-urls http://a:8000\n", []string{codePowerOfTwo}},
		{"negative: round_robin", "router.sh", "vllm-router --policy round_robin --worker-urls http://a:8000\n", nil},
		// production-stack's router, installed as vllm-router too, reads --routing-logic: not
		// vLLM Router's line, whatever else it says.
		{"negative: production-stack's vllm-router", "router.sh", "vllm-router --service-discovery static --static-backends http://a:8000 --routing-logic roundrobin\n", nil},
		{"negative: production-stack's module", "router.yaml", routerPod(`["python", "-m", "vllm_router.app"]`, `["--routing-logic", "session", "--session-key", "x-user-id"]`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mine(configtest.Findings(t, both, tt.file, tt.src))
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("findings %v, want %v", got, want)
			}
		})
	}
}

// TestDisambiguation: a vllm-router line goes to one product, by its flags. vLLM Router's
// (--policy, --worker-urls) gets none of production-stack's findings, and production-stack's
// (--routing-logic, --service-discovery, --static-backends) none of vLLM Router's; python -m
// vllm_router.launch_router is vLLM Router's, python -m vllm_router.app production-stack's.
func TestDisambiguation(t *testing.T) {
	both := []config.Checker{prodstack.Router{}, vllmrouter.Router{}}
	for _, tt := range []struct {
		name, src, want string
	}{
		{"vLLM Router", "vllm-router --policy least_load --worker-urls http://a:8000 http://b:8000\n", ID},
		{"vLLM Router, python launcher", "python -m vllm_router.launch_router --policy least_load\n", ID},
		{"production-stack", "vllm-router --routing-logic fancy --service-discovery static --static-backends http://a:8000\n", prodstack.ID},
		// A line with both kinds of flags is production-stack's: vLLM Router's clap refuses
		// --routing-logic, so such a line never starts it.
		{"both kinds: production-stack", "vllm_router --routing-logic fancy --policy least_load\n", prodstack.ID},
		{"production-stack, module", "python3 -m vllm_router.app --routing-logic fancy --policy least_load\n", prodstack.ID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var products []string
			for _, f := range configtest.Findings(t, both, "router.sh", tt.src) {
				p, _, _ := strings.Cut(f.Code, "/")
				if p == ID || p == prodstack.ID {
					products = append(products, p)
				}
			}
			products = slices.Compact(products)
			if !slices.Equal(products, []string{tt.want}) {
				t.Errorf("findings of %v, want of %s alone", products, tt.want)
			}
		})
	}
}

// TestConfigRulesOnUpstreamManifest: the router's own Kubernetes example
// (testdata/llm-d_vllm-router-deployment.yaml, vllm-project/router@e667ebb
// scripts/k8s/llama3/llm-d/vllm-router-deployment.yaml) runs --policy consistent_hash: its
// chats without a session header all go to one decode worker. It is vLLM Router's line, not
// production-stack's.
func TestConfigRulesOnUpstreamManifest(t *testing.T) {
	src, err := os.ReadFile("testdata/llm-d_vllm-router-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs := configtest.Findings(t, []config.Checker{prodstack.Router{}, vllmrouter.Router{}}, "vllm-router-deployment.yaml", string(src))
	if got := mine(fs); !slices.Equal(got, []string{codeHashChat}) {
		t.Fatalf("findings %v, want %s", got, codeHashChat)
	}
	for _, f := range fs {
		if f.Code == codeHashChat && f.Line != configtest.LineOf(t, string(src), "- consistent_hash") {
			t.Errorf("at line %d, want the policy's value", f.Line)
		}
		if strings.HasPrefix(f.Code, prodstack.ID+"/") {
			t.Errorf("production-stack finding %s on vLLM Router's manifest", f.Code)
		}
	}
}
