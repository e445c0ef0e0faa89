package promql

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func corpus(t *testing.T, rel string) string {
	t.Helper()
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	return filepath.Join(dir, rel)
}

func f(v float64) *float64 { return &v }

// figures are the per-replica numbers the corpus tests pin down.
type figures struct {
	Replica, Model         string
	Generation             Generation
	HitRate                *float64
	Queries                *float64
	KVUsage, Running, Wait *float64
	CPUHitRate             *float64
	BlockSize              *int
	PrefixCaching          *bool
	PromptTokensPerSec     *float64
	Codes                  []string
}

func figuresOf(rep Report) []figures {
	var out []figures
	for _, r := range rep.Replicas {
		fg := figures{Replica: r.Replica, Model: r.Model, Generation: r.Generation, HitRate: r.HitRate, Queries: r.Queries,
			KVUsage: r.KVUsage, Running: r.Running, Wait: r.Waiting, CPUHitRate: r.CPUHitRate, BlockSize: r.BlockSize,
			PrefixCaching: r.PrefixCaching, PromptTokensPerSec: r.PromptTokensPerSec}
		for _, x := range rep.Findings {
			if x.Subject == r.Replica {
				fg.Codes = append(fg.Codes, x.Code)
			}
		}
		out = append(out, fg)
	}
	return out
}

// TestCorpusDumps reads the real /metrics dumps: a vLLM 0.10.0 V1 excerpt (both name
// generations, partial) and a V0-engine sample.
func TestCorpusDumps(t *testing.T) {
	sixteen, off := 16, false
	tests := []struct {
		file string
		want []figures
	}{
		{
			file: "metrics/vllm-0.10.0-v1-production-stack-issue-617-excerpt.prom",
			// The excerpt stops before vllm:prefix_cache_hits_total, so the hits come from the
			// deprecated name, which vLLM 0.10 exports with the same value.
			want: []figures{{
				Replica: "vllm-0.10.0-v1-production-stack-issue-617-excerpt", Model: "zai-org/GLM-4.5",
				Generation: Deprecated, HitRate: f(0), Queries: f(32), KVUsage: f(9.75010481363281e-06),
				Codes: []string{"old-metric-name", "single-replica"},
			}},
		},
		{
			file: "metrics/vllm-v0engine-aibrix-runtime-docs.prom",
			// The V0 hit-rate gauges read -1 (no data yet); prefix caching is off.
			want: []figures{{
				Replica: "vllm-v0engine-aibrix-runtime-docs", Model: "Qwen/Qwen2.5-Coder-1.5B-Instruct",
				Generation: V0, KVUsage: f(0), Running: f(0), Wait: f(0), BlockSize: &sixteen, PrefixCaching: &off,
				Codes: []string{"prefix-caching-off", "old-metric-name", "v0-gauges-only", "single-replica"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			in, err := FromDumps(context.Background(), []string{corpus(t, tt.file)}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep := Analyze(in)
			if rep.Mode != ModeLifetime {
				t.Errorf("mode = %s, want lifetime", rep.Mode)
			}
			if diff := cmp.Diff(tt.want, figuresOf(rep)); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCorpusLogs reads real engine log lines, V1 and V0.
func TestCorpusLogs(t *testing.T) {
	tests := []struct {
		file string
		// Every figure is the latest stat line's: the prefix-hit-rising log's prompt
		// throughput is 4.0 tok/s there, not the mean of its five lines (312.5).
		want []figures
	}{
		{
			file: "logs/issue_sendnn-inference-pr1030_vllm-v1_prefix-hit-rising.log",
			want: []figures{{
				Replica: "issue_sendnn-inference-pr1030_vllm-v1_prefix-hit-rising/engine000",
				HitRate: f(0.775), KVUsage: f(0.03), Running: f(1), Wait: f(0),
				PromptTokensPerSec: f(4.0), Codes: []string{"single-replica"},
			}},
		},
		{
			file: "logs/issue_vllm-43295_vllm-v1_kv-saturated_queue.log",
			want: []figures{{
				Replica: "issue_vllm-43295_vllm-v1_kv-saturated_queue/engine000",
				HitRate: f(0), KVUsage: f(0.984), Running: f(20), Wait: f(23),
				PromptTokensPerSec: f(0), Codes: []string{"kv-pressure", "single-replica"},
			}},
		},
		{
			file: "logs/issue_vllm-18674_vllm-v0_prefix-hit-gpu-cpu.log",
			want: []figures{{
				Replica: "issue_vllm-18674_vllm-v0_prefix-hit-gpu-cpu",
				HitRate: f(0), CPUHitRate: f(0.9), KVUsage: f(0), Running: f(1), Wait: f(0),
				PromptTokensPerSec: f(0), Codes: []string{"single-replica"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			in, err := FromLogs(context.Background(), []string{corpus(t, tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			rep := Analyze(in)
			if diff := cmp.Diff(tt.want, figuresOf(rep), cmp.Comparer(approx)); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
			if rep.WindowSeconds != nil {
				t.Errorf("window = %v, want none: each row is one stat line", *rep.WindowSeconds)
			}
		})
	}
}

// approx compares figures parsed from percentages, where 98.4/100 is not exactly 0.984.
func approx(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
