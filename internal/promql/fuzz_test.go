package promql

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseExposition feeds arbitrary text to the exposition reader and the analysis: errors are
// fine, panics and impossible hit rates are not.
func FuzzParseExposition(f *testing.F) {
	addSeeds(f, fixture("*.prom"))
	f.Add([]byte("vllm:prefix_cache_queries_total{engine=\"0\"} 10\nvllm:prefix_cache_hits_total{engine=\"0\"} 20\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseExposition(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		rep := Analyze(Input{Mode: ModeLifetime, Observations: assemble(totals(d), grouping{fallback: "f"}, 0).obs})
		checkRates(t, rep)
		rep = Analyze(Input{Mode: ModeRate, Window: 1, Observations: assemble(increase(d, d), grouping{fallback: "f"}, 1).obs})
		checkRates(t, rep)
	})
}

// FuzzParseLog feeds arbitrary lines to the engine-log reader.
func FuzzParseLog(f *testing.F) {
	if dir := os.Getenv("KVCHECK_CORPUS"); dir != "" {
		addSeeds(f, filepath.Join(dir, "logs", "*.log"))
	}
	f.Add([]byte("Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 48.4%\n"))
	f.Add([]byte("INFO 05-25 06:50:29 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseLog(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		checkRates(t, Analyze(Input{Mode: ModeLog, Observations: st.Observations("f")}))
	})
}

func checkRates(t *testing.T, rep Report) {
	t.Helper()
	for _, r := range rep.Replicas {
		if r.HitRate != nil && (*r.HitRate < 0 || *r.HitRate > 1) {
			t.Fatalf("replica %s: hit rate %v outside 0..1", r.Replica, *r.HitRate)
		}
	}
}
