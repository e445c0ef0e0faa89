package lint

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// startPrometheus runs the real Prometheus server on a free loopback port over a TSDB
// backfilled from an OpenMetrics text with promtool, and returns its URL.
func startPrometheus(t *testing.T, openMetrics string) string {
	t.Helper()
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (scripts/install-deps.sh installs it)")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (scripts/install-deps.sh installs it)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	input := filepath.Join(dir, "input.om")
	if err := os.WriteFile(input, []byte(openMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", input, data).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=30d")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus on %s not ready within 60s; its log:\n%s", addr, logs.String())
		case <-tick.C:
		}
	}
}

// TestOnline checks "never present" against "last seen 3d ago" on a real server.
func TestOnline(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	var om strings.Builder
	// Present now: samples up to 30 s ago.
	om.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for ts := now.Add(-20 * time.Minute); !ts.After(now.Add(-30 * time.Second)); ts = ts.Add(30 * time.Second) {
		fmt.Fprintf(&om, "vllm:num_requests_running{model_name=\"m\"} 3 %d\n", ts.Unix())
	}
	// Stopped three days ago.
	om.WriteString("# TYPE vllm:kv_cache_usage_perc gauge\n")
	stop := now.Add(-72 * time.Hour)
	for ts := stop.Add(-time.Hour); !ts.After(stop); ts = ts.Add(30 * time.Second) {
		fmt.Fprintf(&om, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5 %d\n", ts.Unix())
	}
	om.WriteString("# EOF\n")
	url := startPrometheus(t, om.String())

	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	dash := `{"panels": [{"title": "Load", "targets": [
  {"expr": "sum(vllm:num_requests_running)", "refId": "A"},
  {"expr": "max(vllm:kv_cache_usage_perc)", "refId": "B"},
  {"expr": "sum(rate(vllm:prefix_cache_hits_total[5m]))", "refId": "C"},
  {"expr": "vllm:gpu_cache_usage_perc", "refId": "D"}
]}]}`
	l := newLinter(t, "")
	results := []FileResult{l.File("dash.json", []byte(dash))}
	names := Names(results)
	wantNames := []string{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:prefix_cache_hits_total"}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("Names = %v, want %v", names, wantNames)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lookback := 7 * 24 * time.Hour
	pres, err := Presences(ctx, promv1.NewAPI(client), names, lookback, now)
	if err != nil {
		t.Fatal(err)
	}
	if p := pres["vllm:num_requests_running"]; !p.Now {
		t.Errorf("num_requests_running: %+v, want present now", p)
	}
	if p := pres["vllm:kv_cache_usage_perc"]; p.Now || p.LastSeen.IsZero() || now.Sub(p.LastSeen) < 71*time.Hour || now.Sub(p.LastSeen) > 74*time.Hour {
		t.Errorf("kv_cache_usage_perc: %+v, want last seen about 72h before %s", p, now)
	}
	if p := pres["vllm:prefix_cache_hits_total"]; p.Now || !p.LastSeen.IsZero() {
		t.Errorf("prefix_cache_hits_total: %+v, want never present", p)
	}

	AddOnline(results, pres, url, lookback, now)
	var gotv []string
	for _, f := range results[0].Findings {
		gotv = append(gotv, f.Status+" "+f.Metric)
		if f.Status == StatusStale && !strings.Contains(f.Message, "last seen 3d ago") {
			t.Errorf("stale message %q, want it to say last seen 3d ago", f.Message)
		}
	}
	// gpu_cache_usage_perc is absent too, but already reported as removed.
	want := []string{"stale vllm:kv_cache_usage_perc", "absent vllm:prefix_cache_hits_total", "removed vllm:gpu_cache_usage_perc"}
	if strings.Join(gotv, "; ") != strings.Join(want, "; ") {
		t.Errorf("findings = %v, want %v", gotv, want)
	}
}
