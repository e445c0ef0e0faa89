package sglang

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// sglangScript is a shell launch of the Python gateway in front of two workers, written as the
// SGLang router docs and the corpus scripts write it; extra goes before the redirection.
func sglangScript(extra string) string {
	return "#!/bin/bash\nnohup \\\npython -u -m sglang_router.launch_router \\\n    --host 0.0.0.0 \\\n    --port 30000 \\\n" +
		"    --worker-urls http://10.0.0.1:8000 http://10.0.0.2:8000 \\\n    --policy cache_aware \\\n" + extra +
		"    --cache-threshold 0.3 \\\n    --balance-abs-threshold 64 \\\n> router.log 2>&1 &\n"
}

// sglangDeployment is a Kubernetes Deployment running the Rust gateway with args.
func sglangDeployment(args ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gateway\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: gateway\n          image: lmsysorg/sgl-model-gateway:v0.3.0\n          command: [\"sgl-model-gateway\"]\n          args:\n")
	for _, a := range args {
		b.WriteString("            - \"" + a + "\"\n")
	}
	return b.String()
}

const sglangCompose = `services:
  router:
    image: lmsysorg/sglang:latest
    command: >
      python3 -m sglang_router.launch_router --host 0.0.0.0 --port 30000
      --worker-urls http://sglang-0:30000 http://sglang-1:30000 %s
`

// TestGatewayRules: SG-02 on one gateway and across gateways of one run (each launcher has its
// own name for the eviction interval and its own default, ROUTERS.md section 5), and flags
// kvcheck does not know left alone. SG-03 against other products' routers is lint's
// TestSGLangGatewayRules.
func TestGatewayRules(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// SG-02: each launcher has its own name for the eviction interval (ROUTERS.md section 5).
		{"SG-02 Rust flag to the Python launcher", map[string]string{"router.sh": sglangScript("    --eviction-interval 120 \\\n")}, []string{"sglang/eviction-flag"}},
		{"SG-02 Rust flag to the Python launcher, --flag=value", map[string]string{"router.sh": sglangScript("    --eviction-interval=120 \\\n")}, []string{"sglang/eviction-flag"}},
		{"SG-02 negative: the Python launcher's own flag", map[string]string{"router.sh": sglangScript("    --eviction-interval-secs 120 \\\n")}, nil},
		{"SG-02 Python flag to the Rust binary", map[string]string{"gw.yaml": sglangDeployment("--worker-urls", "http://qwen-0:8000", "--eviction-interval-secs", "60")}, []string{"sglang/eviction-flag"}},
		{"SG-02 negative: the Rust binary's own flag", map[string]string{"gw.yaml": sglangDeployment("--worker-urls", "http://qwen-0:8000", "--eviction-interval", "60")}, nil},
		{"SG-02 Rust flag in a compose command string", map[string]string{"compose.yaml": strings.Replace(sglangCompose, "%s", "--eviction-interval 30", 1)}, []string{"sglang/eviction-flag"}},
		{"SG-02 negative: compose without eviction flag", map[string]string{"compose.yaml": strings.Replace(sglangCompose, "%s", "--policy cache_aware", 1)}, nil},
		// SG-02 across files: the launchers' eviction defaults differ (60 s vs 120 s), the other
		// cache_aware CLI defaults are the same; each gateway left at a differing default is told.
		{"SG-02 Python and Rust gateways both at their defaults", map[string]string{
			"router.sh": sglangScript(""),
			"gw.yaml":   sglangDeployment("--worker-urls", "http://qwen-0:8000")}, []string{"sglang/eviction-flag", "sglang/eviction-flag"}},
		{"SG-02 Python at its default, Rust set to 30 s", map[string]string{
			"router.sh": sglangScript(""),
			"gw.yaml":   sglangDeployment("--worker-urls", "http://qwen-0:8000", "--eviction-interval", "30")}, []string{"sglang/eviction-flag"}},
		{"SG-02 negative: Python set to the Rust default", map[string]string{
			"router.sh": sglangScript("    --eviction-interval-secs 120 \\\n"),
			"gw.yaml":   sglangDeployment("--worker-urls", "http://qwen-0:8000")}, nil},
		{"SG-02 negative: Rust set to the Python default", map[string]string{
			"router.sh": sglangScript(""),
			"gw.yaml":   sglangDeployment("--worker-urls", "http://qwen-0:8000", "--eviction-interval", "60")}, nil},
		{"SG-02 negative: the Rust gateway is not cache_aware", map[string]string{
			"router.sh": sglangScript(""),
			"gw.yaml":   sglangDeployment("--worker-urls", "http://qwen-0:8000", "--policy", "round_robin")}, nil},
		{"SG-02 negative: two Python gateways", map[string]string{
			"a.sh": sglangScript(""),
			"b.sh": sglangScript("")}, nil},
		// Flags kvcheck does not know are not findings: the gateway gains flags every release.
		{"unknown gateway flags are not errors", map[string]string{"router.sh": sglangScript("    --some-new-flag 7 \\\n    --prometheus-port 29000 \\\n")}, nil},
	}
	for _, tc := range tests {
		configtest.Expect(t, tc.name, []config.Checker{Router{}}, tc.files, tc.want)
	}
}

// TestSGLangFindingPositions: the finding sits on the flag to change, the message names both
// launchers' flags and defaults, and the fix keeps the value given.
func TestSGLangFindingPositions(t *testing.T) {
	r := configtest.Lint(t, []config.Checker{Router{}}, map[string]string{"router.sh": sglangScript("    --eviction-interval 90 \\\n")})["router.sh"]
	if !slices.Equal(r.Formats, []config.Format{FormatGateway}) {
		t.Errorf("formats = %v, want %v", r.Formats, []config.Format{FormatGateway})
	}
	var n int
	for _, f := range r.Findings {
		if f.Code != "sglang/eviction-flag" {
			continue
		}
		n++
		// Line 8: shebang, nohup, python, --host, --port, --worker-urls, --policy, then the flag.
		if f.Line != 8 || f.Column != 5 || f.Rule != "SG-02" {
			t.Errorf("at %d:%d rule %s, want 8:5 SG-02", f.Line, f.Column, f.Rule)
		}
		for _, s := range []string{"--eviction-interval-secs", "60 s", "120 s"} {
			if !strings.Contains(f.Message, s) {
				t.Errorf("message %q does not name %s", f.Message, s)
			}
		}
		if f.Fix != "write --eviction-interval-secs 90" {
			t.Errorf("fix = %q", f.Fix)
		}
	}
	if n != 1 {
		t.Errorf("%d eviction findings, want 1", n)
	}
}

// TestSGLangCorpusWorkers: the corpus PD gateway script's prefill and decode URLs read as
// workers, and the bootstrap port after the prefill URL is not taken for one.
func TestSGLangCorpusWorkers(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	p := filepath.Join(root, "configs", "sglang", "sglang-fork_ascend_deepseekr1_router.sh")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var gws []*sglangGateway
	for _, c := range config.ShellCommands(src) {
		if g := sglangFrom(p, c.Argv); g != nil {
			gws = append(gws, g)
		}
	}
	if len(gws) != 1 {
		t.Fatalf("%d gateways, want 1", len(gws))
	}
	var hosts []string
	for _, w := range gws[0].workers {
		hosts = append(hosts, workerHost(w.Text))
	}
	if want := []string{"192.168.0.184", "", "192.168.0.60"}; !slices.Equal(hosts, want) {
		t.Errorf("worker hosts = %q, want %q", hosts, want)
	}
	if gws[0].rust || gws[0].at.Line != 4 {
		t.Errorf("gateway rust=%v at line %d, want the Python launcher at line 4", gws[0].rust, gws[0].at.Line)
	}
}
