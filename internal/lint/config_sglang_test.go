package lint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func TestSGLangGatewayRules(t *testing.T) {
	goodEvents := `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556","topic":"kv@$(POD_IP):8000@Qwen/Qwen3-32B"}`
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
		// SG-03: the gateway's workers are another router of the run.
		{"SG-03 gateway in front of the Dynamo frontend", map[string]string{
			"gw.yaml":  sglangDeployment("--worker-urls", "http://qwen-frontend.dynamo:8000"),
			"dgd.yaml": dynamoDGD("kv", "", goodEvents)}, []string{"sglang/retries-stacked"}},
		{"SG-03 gateway in front of production-stack's router, in a script", map[string]string{
			"router.sh":   strings.Replace(sglangScript(""), "http://10.0.0.1:8000 http://10.0.0.2:8000", "http://vllm-router-service:80", 1),
			"values.yaml": prodStack("prefixaware", "", "")}, []string{"sglang/retries-stacked"}},
		{"SG-03 negative: --retry-max-retries 1", map[string]string{
			"gw.yaml":  sglangDeployment("--worker-urls", "http://qwen-frontend.dynamo:8000", "--retry-max-retries", "1"),
			"dgd.yaml": dynamoDGD("kv", "", goodEvents)}, nil},
		{"SG-03 negative: --disable-retries", map[string]string{
			"gw.yaml":  sglangDeployment("--worker-urls", "http://qwen-frontend.dynamo:8000", "--disable-retries"),
			"dgd.yaml": dynamoDGD("kv", "", goodEvents)}, nil},
		{"SG-03 negative: workers are engines, not the router", map[string]string{
			"gw.yaml":  sglangDeployment("--worker-urls", "http://qwen-worker-0:8000"),
			"dgd.yaml": dynamoDGD("kv", "", goodEvents)}, nil},
		{"SG-03 negative: no router in the run", map[string]string{"gw.yaml": sglangDeployment("--worker-urls", "http://qwen-frontend.dynamo:8000")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := codes(t, tc.files)
			if !slices.Equal(got, tc.want) {
				t.Errorf("codes = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSGLangFindingPositions: the finding sits on the flag to change, the message names both
// launchers' flags and defaults, and the fix keeps the value given.
func TestSGLangFindingPositions(t *testing.T) {
	l := newLinter(t, "")
	r := l.File("router.sh", []byte(sglangScript("    --eviction-interval 90 \\\n")))
	rs := l.Finish([]FileResult{r})
	if !slices.Equal(rs[0].Formats, []Format{FormatSGLang}) {
		t.Errorf("formats = %v, want %v", rs[0].Formats, []Format{FormatSGLang})
	}
	var n int
	for _, f := range rs[0].Findings {
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

// TestSGLangCorpusDetected: the corpus PD gateway script is recognised as an SGLang gateway,
// not an unknown text file (internal/router/config's TestSGLangCorpusWorkers reads its workers).
func TestSGLangCorpusDetected(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	p := filepath.Join(root, "configs", "sglang", "sglang-fork_ascend_deepseekr1_router.sh")
	l := newLinter(t, "")
	rs, err := l.Paths(context.Background(), []string{p})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rs[0].Formats, []Format{FormatSGLang}) {
		t.Errorf("formats = %v, want %v", rs[0].Formats, []Format{FormatSGLang})
	}
}
