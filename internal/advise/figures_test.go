package advise

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFiguresForPeople: evidence figures use the units a person reads, and a figure with
// nothing in it is left out rather than written as zeros.
func TestFiguresForPeople(t *testing.T) {
	figures := func(in Input) map[string]string {
		out := map[string]string{}
		for _, e := range Decide(in, DefaultThresholds()).Evidence {
			out[e.ID] = e.Figure
		}
		return out
	}
	tests := []struct {
		name string
		in   Input
		want map[string]string // id -> figure; "" for a line that must be absent
	}{
		{
			// 80 unrelated requests: no session clause, no share of the shareable (nothing is
			// shareable), 0 of 80 first blocks unique reads "none of".
			name: "no sessions, nothing shareable",
			in:   Input{Requests: &Requests{Input: "a.jsonl", Requests: 80, WithBlock: 80, PromptTokens: 161_000, Estimated: true}},
			want: map[string]string{
				"requests.count":        "80 requests, 161k prompt tokens (estimated)",
				"requests.cross":        "0.0% of prompt tokens",
				"requests.unique_first": "none of 80 requests",
			},
		},
		{
			// Every request shorter than a block: no first block to share, no line.
			name: "no blocks",
			in:   Input{Requests: &Requests{Input: "a.jsonl", Requests: 3, PromptTokens: 30}},
			want: map[string]string{"requests.count": "3 requests, 30 prompt tokens", "requests.unique_first": ""},
		},
		{
			// 120 requests in 30 conversations of four; 12 of 120 first blocks unique is 10%.
			name: "sessions",
			in: Input{Requests: &Requests{Input: "a.jsonl", Requests: 120, InSessions: 120, RepeatedSessions: 30, WithBlock: 120, UniqueFirstBlock: 12,
				PromptTokens: 29371, CacheableTokens: 16653, WithinSessionTokens: 16653}},
			want: map[string]string{
				"requests.count":        "120 requests, all in 30 sessions of two or more, 29371 prompt tokens",
				"requests.within":       "56.7% of prompt tokens, 100.0% of the shareable",
				"requests.unique_first": "10.0% (12 of 120 requests)",
			},
		},
		{
			// Caching unknown everywhere: no "on in 0 of 2"; the fleet's size in the first part.
			name: "caching unknown",
			in:   Input{Metrics: &Metrics{Source: "file", Mode: "lifetime", Replicas: []Replica{{Name: "a"}, {Name: "b"}}}},
			want: map[string]string{"hitrate.replicas": "2 replicas", "hitrate.caching": "unknown in 2 of 2 replicas (no vllm:cache_config_info)"},
		},
		{
			name: "caching off everywhere",
			in:   Input{Metrics: &Metrics{Source: "file", Mode: "lifetime", Replicas: []Replica{{Name: "a", PrefixCaching: ptr(false)}}}},
			want: map[string]string{"hitrate.replicas": "1 replica", "hitrate.caching": "off in 1 of 1 replica: a"},
		},
		{
			// 8 replicas of 1 Mi tokens (1,048,576 = 1.0M); 2000 requests over 2000 s = 33 min;
			// 2,000,000 prompt tokens = 2.0M; round-robin's TTFT p99 of 1 s.
			name: "replay",
			in:   Input{Replay: replay(0.1, 2, false, pol("kv-load", 0.4, 1.1))},
			want: map[string]string{
				"replay.fleet":   "8 replicas (metrics) x 1.0M tokens of KV (flag)",
				"replay.traffic": "2000 requests over 33 min, 2.0M prompt tokens; no sessions",
				"replay.warmup":  "the first 1000 of 2000 requests (up to 17 min)",
				"replay.today":   "hit 10.0% after warm-up (10.0% over the whole replay), TTFT p99 1.0 s",
				// A working set of 2 Mi tokens on replicas of 1 Mi: 2.1M tokens, 2.0x.
				"replay.working_set": "2.1M tokens = 2.0x",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := figures(tt.in)
			for id, want := range tt.want {
				if diff := cmp.Diff(want, got[id]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", id, diff)
				}
			}
		})
	}
}
