package promql

import (
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestParseExpositionErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"empty", "", "no vllm: metrics found (the input is empty)"},
		{"html", "<html><body>login</body></html>", "src: line 1:"},
		{"renamed by an adapter", "ray_vllm_kv_cache_usage_perc 0.5\n", "found ray_vllm_kv_cache_usage_perc"},
		{"other exporter", "up 1\n", "1 other metric families, such as up"},
		{"histograms only", "# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 5\nvllm:time_to_first_token_seconds_count 5\nvllm:time_to_first_token_seconds_sum 1.2\n",
			"only vllm: histograms or summaries, such as vllm:time_to_first_token_seconds: "},
		{"utf-16", "\xff\xfe#\x00 \x00T\x00", "saved as UTF-16 text"},
		{"bad value", "vllm:prefix_cache_queries_total{engine=\"0\"} x\n", "src: line 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExposition(strings.NewReader(tt.body), "src")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestParseExpositionCRLF checks that a dump with Windows line ends, and one that also starts
// with a UTF-8 byte order mark (PowerShell's Out-File -Encoding utf8), reads as the same dump.
func TestParseExpositionCRLF(t *testing.T) {
	const lf = "# HELP vllm:prefix_cache_hits_total Hits.\n# TYPE vllm:prefix_cache_hits_total counter\n" +
		"vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 30\n" +
		"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n"
	want, err := ParseExposition(strings.NewReader(lf), "src")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, body string }{
		{"crlf", strings.ReplaceAll(lf, "\n", "\r\n")},
		{"crlf but the last line", strings.TrimSuffix(strings.ReplaceAll(lf, "\n", "\r\n"), "\r\n") + "\n"},
		{"byte order mark and crlf", "\ufeff" + strings.ReplaceAll(lf, "\n", "\r\n")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseExposition(iotest.OneByteReader(strings.NewReader(tt.body)), "src")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("dump (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIncrease(t *testing.T) {
	a := Dump{Samples: []Sample{
		{Name: "vllm:prefix_cache_queries_total", Labels: map[string]string{"engine": "0"}, Value: 100},
		{Name: "vllm:prefix_cache_hits_total", Labels: map[string]string{"engine": "0"}, Value: 60},
		{Name: "vllm:kv_cache_usage_perc", Labels: map[string]string{"engine": "0"}, Value: 0.1},
	}}
	b := Dump{Samples: []Sample{
		{Name: "vllm:prefix_cache_queries_total", Labels: map[string]string{"engine": "0"}, Value: 150},
		{Name: "vllm:prefix_cache_hits_total", Labels: map[string]string{"engine": "0"}, Value: 20},   // restarted
		{Name: "vllm:prefix_cache_queries_total", Labels: map[string]string{"engine": "1"}, Value: 9}, // new series: no rate, kept as fresh
		{Name: "vllm:kv_cache_usage_perc", Labels: map[string]string{"engine": "0"}, Value: 0.7},
	}}
	type pt struct {
		Name          string
		Value, Resets float64
		Fresh         bool
	}
	var got []pt
	for _, p := range increase(a, b) {
		got = append(got, pt{p.name, p.value, p.resets, p.fresh})
	}
	want := []pt{
		{"vllm:prefix_cache_queries_total", 50, 0, false},
		{"vllm:prefix_cache_hits_total", 20, 1, false},
		{"vllm:prefix_cache_queries_total", 0, 0, true},
		{"vllm:kv_cache_usage_perc", 0.7, 0, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("increase (-want +got):\n%s", diff)
	}
}

func TestParseLog(t *testing.T) {
	tests := []struct {
		name    string
		log     string
		want    []figures
		wantErr string
	}{
		{
			name: "two engines, newer fields, noise",
			log: `INFO 11-30 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%, Prefix cache hit rate: 50.0%
some unrelated line
INFO 11-30 10:00:00 [loggers.py:1] Engine 001: Avg prompt throughput: 30.0 tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 4 reqs, Waiting: 1 reqs, GPU KV cache usage: 20.0%, Prefix cache hit rate: 25.0%, External prefix cache hit rate: 5.0%, MM cache hit rate: 0.0%
INFO 11-30 10:00:10 [loggers.py:1] Engine 000: Avg prompt throughput: 20.0 tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 60.0%
`,
			want: []figures{
				{Replica: "x/engine000", HitRate: f(0.6), KVUsage: f(0.12), Running: f(3), Wait: f(0), PromptTokensPerSec: f(20)},
				{Replica: "x/engine001", HitRate: f(0.25), KVUsage: f(0.2), Running: f(4), Wait: f(1), PromptTokensPerSec: f(30)},
			},
		},
		{name: "no stat lines", log: "hello\nworld\n", wantErr: "no vLLM engine stat lines"},
		{name: "garbled only", log: "Engine 000: Avg prompt throughput: lots tokens/s\n", wantErr: "no vLLM engine stat lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseLog(strings.NewReader(tt.log), "x.log")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rep := Analyze(Input{Mode: ModeLog, Observations: st.Observations("x")})
			got := figuresOf(rep)
			for i := range got {
				got[i].Codes = nil
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(approx)); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
			if e := rep.Replicas[1].ExternalHitRate; e == nil || !approx(*e, 0.05) {
				t.Errorf("engine 001 external hit rate = %v, want 0.05", e)
			}
		})
	}
}

// TestParseLogLongLines checks that a line far longer than any stat line (a prompt logged by
// --enable-log-requests) is skipped rather than failing the whole log, and that CRLF line
// ends and a last line without one read the same.
func TestParseLogLongLines(t *testing.T) {
	stat := func(hit string) string {
		return "INFO 11-30 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%, Prefix cache hit rate: " + hit + "%"
	}
	prompt := "INFO 11-30 10:00:01 [logger.py:39] Received request cmpl-1: prompt: '" + strings.Repeat("x", 3<<20) + "'"
	for _, tt := range []struct{ name, log string }{
		{"long line", stat("50.0") + "\n" + prompt + "\n" + stat("60.0") + "\n"},
		{"long line, CRLF, no final line end", stat("50.0") + "\r\n" + prompt + "\r\n" + stat("60.0")},
		{"long last line", stat("60.0") + "\n" + prompt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseLog(strings.NewReader(tt.log), "x.log")
			if err != nil {
				t.Fatal(err)
			}
			obs := st.Observations("x")
			if len(obs) != 1 || obs[0].GaugeHitRate == nil || !approx(*obs[0].GaugeHitRate, 0.6) {
				t.Errorf("observations = %+v, want one engine at hit rate 0.6", obs)
			}
		})
	}
}
