package promql

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
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
	// One family of each fixture a seed, not whole files: under coverage a whole dump makes
	// every execution and every minimisation slow (the run spent its time minimising).
	files, _ := filepath.Glob(fixture("*.prom"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, fam := range bytes.Split(b, []byte("\n# HELP ")) {
			f.Add(fam[:min(len(fam), 512)])
		}
	}
	f.Add([]byte("# TYPE vllm:x histogram\nvllm:x_bucket{le=\"1\"} 1\nvllm:x_sum 1\nvllm:x_count 1\n"))
	f.Add([]byte("{\"vllm:quoted\",engine=\"0\"} 1 1700000000000\r\n# comment\n\nup 1\n"))
	f.Add([]byte("vllm:prefix_cache_queries_total{engine=\"0\"} 10\nvllm:prefix_cache_hits_total{engine=\"0\"} 20\n"))
	f.Add([]byte("vllm:cache_config_info{vllm_version=\"0.10.1\"} 1\nvllm:gpu_prefix_cache_queries_total{version=\"v0.8.4rc1\"} 10\nvllm:gpu_prefix_cache_hits_total 5\nvllm:kv_cache_usage_perc 0.99\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseExposition(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		rep := Analyze(Input{Mode: ModeLifetime, Observations: assemble(slices.Values(totals(d)), grouping{fallback: "f"}, 0).obs})
		checkRates(t, rep)
		rep = Analyze(Input{Mode: ModeRate, Window: 1, Observations: assemble(slices.Values(increase(d, d)), grouping{fallback: "f"}, 1).obs})
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

// FuzzParseVersion feeds arbitrary version strings (from /version and series labels): a version
// read is never zero and prints as a string that reads back the same.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"0.10.1", "v0.11.0rc1", "0.10.1.1+cu126", "0.9", "main", "", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseVersion(s)
		if !ok {
			return
		}
		if v.IsZero() {
			t.Fatalf("parseVersion(%q) = zero with ok", s)
		}
		if w, ok := parseVersion(v.String()); !ok || w != v {
			t.Fatalf("parseVersion(%q) = %v, which reads back as %v, %v", s, v, w, ok)
		}
	})
}

// FuzzDecodeAnswer feeds arbitrary bytes to the streaming decoder of an instant query's answer
// (streamQuerier): errors are fine, panics are not, and a vector it returns holds no nil
// sample or label map.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1,"2"]}]},"warnings":["w"]}`,
		`{"status":"success","data":{"result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1","buckets":[[0,"0","1","1"]]}]}],"resultType":"vector"}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":null}`,
		`<html>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnswer(bytes.NewReader(b))
		if err != nil {
			return
		}
		if vec, ok := a.value.(model.Vector); ok {
			for _, s := range vec {
				if s == nil || s.Metric == nil {
					t.Fatalf("a nil sample or label map in %q", b)
				}
			}
		}
	})
}
