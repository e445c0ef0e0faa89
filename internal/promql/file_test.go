package promql

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func fixture(name string) string { return filepath.Join("..", "..", "testdata", "hitrate", name) }

// TestTwoDumps reads a federation dump pair with sample timestamps 60 s apart: two engines of
// one replica are summed, a restart is detected, the old names are used where they are the only
// ones, and the router's series are kept apart.
func TestTwoDumps(t *testing.T) {
	in, err := FromDumps(context.Background(), []string{fixture("before.prom"), fixture("after.prom")}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if rep.WindowSeconds == nil || *rep.WindowSeconds != 60 {
		t.Fatalf("window = %v, want 60 (from the sample timestamps)", rep.WindowSeconds)
	}
	type row struct {
		Replica       string
		HitRate, QPS  *float64
		PreemptPerSec *float64
		PreemptPer1k  *float64
		Running       *float64
		Generation    Generation
	}
	var got []row
	for _, r := range rep.Replicas {
		got = append(got, row{r.Replica, r.HitRate, r.QueriesPerSec, r.PreemptionsPerSec, r.PreemptionsPer1k, r.Running, r.Generation})
	}
	want := []row{
		{"10.0.0.1:8000", f(4800.0 / 8000), f(8000.0 / 60), f(6.0 / 60), f(6.0 / 300 * 1000), f(6), Current},
		{"10.0.0.2:8000", f(30.0 / 300), f(300.0 / 60), f(0), f(0), nil, Current},
		{"10.0.0.3:8000", f(0.5), f(6000.0 / 60), f(0), f(0), nil, Deprecated},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
	if got, want := *rep.Fleet.HitRate, (4800.0+30+3000)/(8000+300+6000); got != want {
		t.Errorf("fleet hit rate = %v, want token-weighted %v", got, want)
	}
	if diff := cmp.Diff([]string{"http://10.0.0.1:8000"}, rep.RouterSeries); diff != "" {
		t.Errorf("router series (-want +got):\n%s", diff)
	}
	codes := map[string]string{}
	for _, x := range rep.Findings {
		codes[x.Code] += x.Subject + " "
	}
	for code, replica := range map[string]string{
		"counter-reset": "10.0.0.2:8000 ", "replica-cold": "10.0.0.2:8000 ", "old-metric-name": "10.0.0.3:8000 ",
		"kv-pressure": "10.0.0.1:8000 ", "router-series": " ",
	} {
		if codes[code] != replica {
			t.Errorf("finding %s on %q, want %q", code, codes[code], replica)
		}
	}
}

func TestDumpsByEngine(t *testing.T) {
	in, err := FromDumps(context.Background(), []string{fixture("before.prom"), fixture("after.prom")}, 0, []string{"instance", "engine"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range in.Observations {
		got = append(got, o.Replica)
	}
	want := []string{"10.0.0.1:8000/0", "10.0.0.1:8000/1", "10.0.0.2:8000/0", "10.0.0.3:8000/0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replicas with --by instance,engine (-want +got):\n%s", diff)
	}
}

func TestDumpErrors(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		window  time.Duration
		wantErr string
		is      error
	}{
		{"malformed", []string{fixture("malformed.prom")}, 0, "malformed.prom: line 3:", nil},
		{"not vllm", []string{fixture("not-vllm.prom")}, 0, "found vllm_num_requests_waiting", nil},
		{"missing", []string{fixture("nope.prom")}, 0, "nope.prom: no such file", nil},
		{"no timestamps no window", []string{fixture("caching-off.prom"), fixture("caching-off.prom")}, 0, "", ErrNeedWindow},
		{"reversed", []string{fixture("after.prom"), fixture("before.prom")}, 0, "is not later than", nil},
		{"three", []string{"a", "b", "c"}, 0, "not 3", nil},
		{"the same file twice", []string{fixture("caching-off.prom"), filepath.Join("..", "..", "testdata", "hitrate", ".", "caching-off.prom")}, time.Minute, "are the same file", nil},
		{"different replicas", []string{fixture("before.prom"), fixture("caching-off.prom")}, time.Minute, "share no vllm: counter series", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromDumps(context.Background(), tt.paths, tt.window, nil)
			if err == nil {
				t.Fatal("got nil error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestTwoDumpsWithWindow(t *testing.T) {
	b, err := os.ReadFile(fixture("caching-off.prom"))
	if err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(t.TempDir(), "caching-off.prom") // a second dump with the same values
	if err := os.WriteFile(later, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := FromDumps(context.Background(), []string{fixture("caching-off.prom"), later}, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if len(rep.Findings) == 0 || rep.Findings[0].Code != "prefix-caching-off" || rep.Findings[0].Subject != "caching-off" {
		t.Errorf("findings = %+v, want prefix-caching-off on caching-off first", rep.Findings)
	}
}

// TestRouterStacks: the router products a dump shows by their own metric families (issue 22
// item 1, the stack rule): a federation dump holding the engines' vllm: series, LiteLLM's
// proxy families and llm-d's EPP families (the Gateway API Inference Extension's, published by
// the EPP before v0.9.0) shows LiteLLM and llm-d, each once, named by the first family of it
// seen; production-stack's router shows by its vllm: series with a server label (before.prom);
// the engines alone show none.
func TestRouterStacks(t *testing.T) {
	dir := t.TempDir()
	engines := "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{pod=\"vllm-0\"} 100\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{pod=\"vllm-0\"} 40\n"
	fed := engines +
		"# TYPE litellm_requests_metric_total counter\nlitellm_requests_metric_total{model=\"qwen\"} 7\n" +
		"# TYPE litellm_deployment_state gauge\nlitellm_deployment_state{api_base=\"http://gw\"} 0\n" +
		"# TYPE inference_extension_scheduler_attempts counter\ninference_extension_scheduler_attempts{status=\"success\"} 7\n" +
		"inference_pool_average_kv_cache_utilization{name=\"pool\"} 0.2\n"
	for name, text := range map[string]string{"fed.prom": fed, "engines.prom": engines} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stacks := func(paths ...string) []RouterStack {
		t.Helper()
		in, err := FromDumps(context.Background(), paths, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return Analyze(in).Stacks
	}
	want := []RouterStack{{"litellm", "litellm_requests_metric_total"}, {"llm-d", "inference_extension_scheduler_attempts"}}
	if diff := cmp.Diff(want, stacks(filepath.Join(dir, "fed.prom"))); diff != "" {
		t.Errorf("federation dump (-want +got):\n%s", diff)
	}
	if got := stacks(filepath.Join(dir, "engines.prom")); len(got) != 0 {
		t.Errorf("engines alone: %v, want no router", got)
	}
	want = []RouterStack{{"production-stack", "vllm: series with a server label (the router's per-backend series)"}}
	if diff := cmp.Diff(want, stacks(fixture("before.prom"), fixture("after.prom"))); diff != "" {
		t.Errorf("production-stack's router series (-want +got):\n%s", diff)
	}
}
