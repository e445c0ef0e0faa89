package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
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

// TestHitrateScrapePartlyDown scrapes two emulated replicas and a dead port: the report shows
// the two, names the dead one, and the exit code says the fleet row is incomplete.
func TestHitrateScrapePartlyDown(t *testing.T) {
	f := startFleet(t, fleet.Options{Replicas: fleet.Uniform(2, fleet.Config{WarmupSteps: 100}), Tick: time.Millisecond})
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	args := []string{"hitrate", "--window", "200ms", "--scrape", "a=" + f.URLs()[0], "--scrape", "b=" + f.URLs()[1], "--scrape", "dead=" + dead.URL}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, streams{Out: &out, ErrOut: &errOut}, nil)
	if code != exitRuntime {
		t.Errorf("exit %d, want %d", code, exitRuntime)
	}
	for _, w := range []string{"(?m)^a\t", "(?m)^b\t", "(?m)^ERROR target-down dead: could not read dead: GET "} {
		if !regexp.MustCompile(w).Match(out.Bytes()) {
			t.Errorf("stdout lacks %s:\n%s", w, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "1 of 3 inputs could not be read") {
		t.Errorf("stderr = %q, want the incomplete-fleet error", errOut.String())
	}
}

// TestHitratePrometheusFlags checks the wiring of --prometheus: the bearer token from its file
// reaches the server, --selector reaches the queries, and an empty answer is an error naming
// the server.
func TestHitratePrometheusFlags(t *testing.T) {
	var calls atomic.Int32
	var sawAuth, sawSelector atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_ = r.ParseForm()
		sawAuth.Store(r.Header.Get("Authorization") == "Bearer s3cret")
		if strings.Contains(r.Form.Get("query"), `namespace="prod"`) {
			sawSelector.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"hitrate", "--prometheus", srv.URL, "--bearer-token-file", tok, "--selector", `namespace="prod"`, "--window", "2m"}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, streams{Out: &out, ErrOut: &errOut}, nil)
	if code != exitRuntime {
		t.Errorf("exit %d, want %d; stderr %s", code, exitRuntime, errOut.String())
	}
	want := srv.URL + `: no vLLM engine series over the last 2m (selector: namespace="prod")`
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", errOut.String(), want)
	}
	if calls.Load() != 6 || !sawAuth.Load() || !sawSelector.Load() {
		t.Errorf("calls=%d auth=%v selector=%v, want 6 calls with the token and the selector", calls.Load(), sawAuth.Load(), sawSelector.Load())
	}
}
