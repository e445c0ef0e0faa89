package fleet

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestWorkloadShapes(t *testing.T) {
	cold := DefaultWorkload
	cold.SharedFraction = 0.2
	cold.SharedPrefixes = 64
	heavy := DefaultWorkload
	heavy.ArrivalsPerStep = 2
	tests := []struct {
		name          string
		cfg           Config
		minHR, maxHR  float64
		wantPreempted bool
	}{
		{"default reuses shared prefixes", Config{}, 0.5, 0.9, false},
		{"cold workload hits less", Config{Workload: cold}, 0.0, 0.3, false},
		{"prefix caching off never hits", Config{PrefixCaching: new(false)}, 0, 0, false},
		{"small cache under load preempts", Config{Workload: heavy, KVBlocks: 160}, 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(Options{Replicas: []Config{tt.cfg}})
			if err != nil {
				t.Fatal(err)
			}
			r := f.Replicas()[0]
			r.Step(3000)
			got := r.Totals()
			if got.Queries == 0 || got.Requests == 0 {
				t.Fatalf("totals = %+v, want queries and requests", got)
			}
			hr := got.Hits / got.Queries
			if hr < tt.minHR || hr > tt.maxHR {
				t.Errorf("hit rate = %.3f, want in [%.2f, %.2f]", hr, tt.minHR, tt.maxHR)
			}
			if (got.Preemptions > 0) != tt.wantPreempted {
				t.Errorf("preemptions = %v, want preempted %v", got.Preemptions, tt.wantPreempted)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	run := func() Totals {
		f, err := New(Options{Replicas: []Config{{Seed: 7}}})
		if err != nil {
			t.Fatal(err)
		}
		f.Step(500)
		return f.Replicas()[0].Totals()
	}
	if diff := cmp.Diff(run(), run()); diff != "" {
		t.Errorf("same seed, different totals (-first +second):\n%s", diff)
	}
}

// TestMetricNames checks which names each emulated version exports (SPEC §3.3).
func TestMetricNames(t *testing.T) {
	tests := []struct {
		version     string
		want, avoid []string
	}{
		{"0.25.1", []string{"vllm:prefix_cache_queries_total", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_by_source_total", "vllm:prefix_cache_hits_created"}, []string{"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_cache_usage_perc"}},
		{"0.10.0", []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"}, []string{"vllm:prompt_tokens_by_source_total"}},
		{"0.9.1", []string{"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_cache_usage_perc"}, []string{"vllm:prefix_cache_hits_total", "vllm:kv_cache_usage_perc"}},
		{"0.7.3", []string{"vllm:gpu_prefix_cache_hit_rate", "vllm:num_requests_swapped"}, []string{"vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			f, err := New(Options{Replicas: []Config{{Version: tt.version, WarmupSteps: 50}}})
			if err != nil {
				t.Fatal(err)
			}
			body, err := f.Replicas()[0].Metrics()
			if err != nil {
				t.Fatal(err)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("parse own exposition: %v", err)
			}
			for _, n := range tt.want {
				if fams[n] == nil {
					t.Errorf("missing %s", n)
				}
			}
			for _, n := range tt.avoid {
				if fams[n] != nil {
					t.Errorf("unexpected %s", n)
				}
			}
		})
	}
}

func TestFleetServes(t *testing.T) {
	f, err := New(Options{Replicas: Uniform(2, Config{WarmupSteps: 10})})
	if err != nil {
		t.Fatal(err)
	}
	f.Replicas()[0].Handle("GET /extra", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFleet(t, f) })
	for i, tg := range f.Targets() {
		if want := f.Replicas()[i].Name() + "=" + f.URLs()[i]; tg != want {
			t.Errorf("Targets()[%d] = %q, want %q", i, tg, want)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{
		{f.URLs()[0] + "/metrics", `vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"}`},
		{f.URLs()[1] + "/version", `"version":"0.25.1"`},
		{f.URLs()[1] + "/v1/models", `"id":"meta-llama/Llama-3.1-8B-Instruct"`},
		{f.URLs()[0] + "/extra", "ok"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("GET %s: body lacks %s:\n%s", tc.url, tc.want, b)
		}
	}
	if got := f.Replicas()[1].Name(); got != "replica-1" {
		t.Errorf("name = %q, want replica-1", got)
	}
}

// Every replica serves POST /tokenize with its own model name and chat template settings.
func TestReplicaTokenize(t *testing.T) {
	day := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	f, err := New(Options{Replicas: []Config{
		{Name: "plain", Model: "org/plain"},
		{Name: "dated", Model: "org/dated", BlockSize: 64, DateLine: true, Now: func() time.Time { return day }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFleet(t, f) })
	chat := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`
	tests := []struct {
		name, url, body string
		status          int
		want, avoid     string
	}{
		{"prompt", f.URLs()[0], `{"prompt":"Hello world"}`, http.StatusOK, `"token_strs":["\u003c|begin_of_text|\u003e","Hello"," world"]`, ""},
		{"own model", f.URLs()[0], `{"model":"org/plain","prompt":"x"}`, http.StatusOK, `"count":2`, ""},
		{"other model", f.URLs()[0], `{"model":"org/dated","prompt":"x"}`, http.StatusNotFound, "The model `org/dated` does not exist.", ""},
		{"no date line", f.URLs()[0], chat, http.StatusOK, `"max_model_len":32768`, "Today"},
		{"date line", f.URLs()[1], chat, http.StatusOK, `"Today"," Date",":"," ","30"," Nov"`, ""},
		{"GET", f.URLs()[0], "", http.StatusMethodNotAllowed, `"type":"MethodNotAllowed"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodPost
			if tt.body == "" {
				method = http.MethodGet
			}
			req, _ := http.NewRequestWithContext(context.Background(), method, tt.url+"/tokenize", strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("body lacks %s:\n%s", tt.want, b)
			}
			if tt.avoid != "" && strings.Contains(string(b), tt.avoid) {
				t.Errorf("body has %s:\n%s", tt.avoid, b)
			}
		})
	}
}

// closeFleet stops a test fleet and fails the test when a server does not close.
func closeFleet(t testing.TB, f *Fleet) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}
