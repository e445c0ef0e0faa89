package promql

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestHybridModel: a hybrid model caches whole blocks of hundreds of tokens, so a 0% hit rate
// with caching on is what shared prefixes shorter than a block give (vLLM #40696: block 528,
// a 480-token shared prefix, 0% hits). The finding names the block a prefix must fill.
func TestHybridModel(t *testing.T) {
	cfg := map[string]string{"instance": "h:1", "block_size": "528", "enable_prefix_caching": "True",
		"mamba_block_size": "528", "mamba_cache_mode": "align"}
	plain := map[string]string{"instance": "p:1", "block_size": "16", "enable_prefix_caching": "True",
		"mamba_block_size": "None", "mamba_cache_mode": "none"}
	var points []point
	for _, c := range []map[string]string{cfg, plain} {
		l := map[string]string{"instance": c["instance"], "engine": "0", "model_name": "m"}
		points = append(points, point{name: configInfo, labels: c, value: 1},
			point{name: "vllm:prefix_cache_queries_total", labels: l, value: 4800},
			point{name: "vllm:prefix_cache_hits_total", labels: l, value: 0})
	}
	rep := Analyze(Input{Mode: ModeRate, Observations: assemble(slices.Values(points), grouping{by: []string{"instance"}}, 60).obs})
	var hybrid []finding.Finding
	for _, f := range rep.Findings {
		if f.Code == "hybrid-model" {
			hybrid = append(hybrid, f)
		}
	}
	if len(hybrid) != 1 || hybrid[0].Subject != "h:1" || hybrid[0].Severity != finding.Warning {
		t.Fatalf("want one hybrid-model warning for h:1 (p:1 is a plain model: mamba_block_size None): %+v", rep.Findings)
	}
	for _, want := range []string{"hit rate 0.0%", "blocks of 528 tokens", "shorter than 528 tokens never hits", "about 1056 tokens"} {
		if !strings.Contains(hybrid[0].Message, want) {
			t.Errorf("message lacks %q: %s", want, hybrid[0].Message)
		}
	}
	// With hits, the same configuration is worth knowing, not a warning.
	points[2].value = 2400
	rep = Analyze(Input{Mode: ModeRate, Observations: assemble(slices.Values(points), grouping{by: []string{"instance"}}, 60).obs})
	for _, f := range rep.Findings {
		if f.Code == "hybrid-model" && f.Severity != finding.Info {
			t.Errorf("with a 50%% hit rate: %+v", f)
		}
	}
}

// TestHybridFromLog: the start-up line of a hybrid model gives the block size when there is no
// cache_config_info (a log is all there is).
func TestHybridFromLog(t *testing.T) {
	log := `INFO 04-23 10:00:00 [config.py:281] Setting attention block size to 2048 tokens to ensure that attention page size is >= mamba page size.
INFO 04-23 10:00:10 [loggers.py:257] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%
`
	st, err := ParseLog(strings.NewReader(log), "v.log")
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(Input{Mode: ModeLog, Observations: st.Observations("v.log")})
	found := false
	for _, f := range rep.Findings {
		if f.Code == "hybrid-model" {
			found = true
			if !strings.Contains(f.Message, "blocks of 2048 tokens") || f.Severity != finding.Warning {
				t.Errorf("%+v", f)
			}
		}
	}
	if !found {
		t.Errorf("no hybrid-model finding: %+v", rep.Findings)
	}
}

// TestMissingCounterNamesBothGenerations: a replica with hits but no queries (or the reverse)
// keeps its finding, and the counter a release renamed is named by both its names.
func TestMissingCounterNamesBothGenerations(t *testing.T) {
	newHits := counters("n", 1000, 500)
	newHits.Queries, newHits.QueriesName = nil, ""
	oldQueries := counters("o", 1000, 500)
	oldQueries.Hits, oldQueries.HitsName = nil, ""
	oldQueries.QueriesName, oldQueries.Generation = "vllm:gpu_prefix_cache_queries_total", Deprecated
	tests := []struct {
		o    Observation
		want string
	}{
		{newHits, "vllm:prefix_cache_hits_total (vllm:gpu_prefix_cache_hits_total before vLLM 0.9.2) is exported but not vllm:prefix_cache_queries_total (vllm:gpu_prefix_cache_queries_total before vLLM 0.9.2)"},
		{oldQueries, "vllm:gpu_prefix_cache_queries_total (renamed vllm:prefix_cache_queries_total in vLLM 0.9.2) is exported but not vllm:prefix_cache_hits_total (vllm:gpu_prefix_cache_hits_total before vLLM 0.9.2)"},
	}
	for _, tt := range tests {
		rep := Analyze(Input{Mode: ModeRate, Observations: []Observation{tt.o, counters("h", 1000, 500)}})
		var msg string
		for _, f := range rep.Findings {
			if f.Code == "missing-counter" && f.Subject == tt.o.Replica {
				msg = f.Message
			}
		}
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: message %q lacks %q", tt.o.Replica, msg, tt.want)
		}
	}
}
