package lint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/sglang"
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
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
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
	if !slices.Equal(rs[0].Formats, []Format{Format(sglang.FormatGateway)}) {
		t.Errorf("formats = %v, want %v", rs[0].Formats, []Format{Format(sglang.FormatGateway)})
	}
}
