package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestHitrateCorpus runs the command on the real dumps and logs of the shared corpus and
// checks the figures a user would read. (testscript has no condition on an environment
// variable, so this lives here rather than in a script.)
func TestHitrateCorpus(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	tests := []struct {
		name string
		args []string
		want []string // regular expressions, each must match stdout
	}{
		{"v1 0.10.0 excerpt", []string{"--file", "metrics/vllm-0.10.0-v1-production-stack-issue-617-excerpt.prom"}, []string{
			`(?m)^vllm-0.10.0-v1-production-stack-issue-617-excerpt\tzai-org/GLM-4.5\t0.0%\t32\t.*\tdeprecated$`,
			`WARNING old-metric-name .*vllm:gpu_prefix_cache_hits_total`,
		}},
		{"v0 engine dump", []string{"-o", "json", "--file", "metrics/vllm-v0engine-aibrix-runtime-docs.prom"}, []string{
			`"model": "Qwen/Qwen2.5-Coder-1.5B-Instruct"`, `"metric_generation": "v0"`, `"block_size": 16`,
			`"code": "prefix-caching-off"`, `"code": "v0-gauges-only"`,
		}},
		{"v1 log rising", []string{"--log", "logs/issue_sendnn-inference-pr1030_vllm-v1_prefix-hit-rising.log"}, []string{
			`/engine000\t-\t77.5%\t`,
		}},
		{"v1 log saturated", []string{"--log", "logs/issue_vllm-43295_vllm-v1_kv-saturated_queue.log"}, []string{
			`/engine000\t-\t0.0%\t.*\t98.4%\t20\t23\t`, `WARNING kv-pressure`,
		}},
		{"v0 log", []string{"-o", "json", "--log", "logs/issue_vllm-18674_vllm-v0_prefix-hit-gpu-cpu.log"}, []string{
			`"cpu_hit_rate": 0.9`, `"hit_rate": 0,`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"hitrate"}, tt.args...)
			args[len(args)-1] = filepath.Join(dir, args[len(args)-1])
			var out, errOut bytes.Buffer
			if code := run(context.Background(), args, streams{Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"}); code != exitOK {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, errOut.String())
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).Match(out.Bytes()) {
					t.Errorf("stdout lacks %s:\n%s", w, out.String())
				}
			}
		})
	}
}
