package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLintCorpus runs the command over the real dashboards and autoscalers of the shared
// corpus (internal/lint's TestCorpus pins every finding; this checks the CLI's totals, exit
// code and that --fix leaves every file clean of what it can fix).
func TestLintCorpus(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	dash, auto := filepath.Join(dir, "dashboards"), filepath.Join(dir, "autoscaling")
	tests := []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"newest", []string{"lint", dash, auto}, exitFindings, []string{
			"45 findings (39 errors, 6 warnings, 0 info) in 5 of 10 files, judged against vLLM 0.32.0, production-stack router 0.1.12.",
			"32 have an exact rewrite",
		}},
		{"before the V1 renames", []string{"lint", "--target-version", "0.9.1", filepath.Join(dash, "prodstack_vllm-dashboard_pre-rename.json")}, exitFindings, []string{
			"vllm:num_requests_swapped was removed in vLLM 0.9.1",
			// and the three panels that divide lifetime totals (query findings, warnings)
			"7 findings (1 error, 6 warnings, 0 info)",
		}},
		{"clean files", []string{"lint", filepath.Join(dash, "vllm_grafana_7e094105_kv_cache.json"), filepath.Join(dash, "llmd_llm-d-vllm-overview_post-v1-fix.json"), filepath.Join(auto, "prodstack_keda-scaled-object.yaml")}, exitOK, []string{
			"No findings in 3 files",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, streams{Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut.String())
			}
			for _, w := range tt.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
		})
	}

	// --fix on a copy: afterwards only the 7 findings without an exact rewrite remain, and
	// the 6 query warnings (lifetime ratios), which no rename cures.
	tmp := t.TempDir()
	for _, sub := range []string{"dashboards", "autoscaling"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(tmp, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, sub, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"lint", "--fix", tmp}, streams{Out: &out, ErrOut: &errOut}, nil); code != exitFindings {
		t.Fatalf("--fix: exit %d, want %d (unfixable findings remain); stderr:\n%s", code, exitFindings, errOut.String())
	}
	if got := strings.Count(errOut.String(), "rewrote "); got != 5 {
		t.Errorf("--fix rewrote %d files, want 5:\n%s", got, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	run(context.Background(), []string{"lint", tmp}, streams{Out: &out, ErrOut: &errOut}, nil)
	if !strings.Contains(out.String(), "13 findings (7 errors, 6 warnings") || strings.Contains(out.String(), "fixable") {
		t.Errorf("after --fix:\n%s", out.String())
	}
}

// TestLintOnline drives --prometheus through the real client_golang client against a
// stand-in API: one name present now, one last seen two days ago, one never present.
func TestLintOnline(t *testing.T) {
	now := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		q := r.Form.Get("query")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/query" && strings.Contains(q, `"vllm:num_requests_running"`):
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"2"]}]}}`, now.Unix())
		case r.URL.Path == "/api/v1/query":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		case r.URL.Path == "/api/v1/query_range" && strings.Contains(q, `"vllm:kv_cache_usage_perc"`):
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[%d,"1"],[%d,"1"]]}]}}`,
				now.Add(-50*time.Hour).Unix(), now.Add(-48*time.Hour).Unix())
		case r.URL.Path == "/api/v1/query_range":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	dash := filepath.Join(dir, "d.json")
	err := os.WriteFile(dash, []byte(`{"panels": [{"title": "P", "targets": [
  {"expr": "vllm:num_requests_running", "refId": "A"},
  {"expr": "vllm:kv_cache_usage_perc", "refId": "B"},
  {"expr": "rate(vllm:prefix_cache_hits_total[5m])", "refId": "C"}]}]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--prometheus", srv.URL, "--lookback", "3d", "-o", "json", dash},
		streams{Out: &out, ErrOut: &errOut}, nil)
	if code != exitOK {
		t.Fatalf("exit %d, want 0 (warnings only); stderr:\n%s", code, errOut.String())
	}
	for _, w := range []string{
		`"status": "stale"`, `is not present on ` + srv.URL + ` now; last seen 2d ago`,
		`"status": "absent"`, `vllm:prefix_cache_hits_total has never been present on ` + srv.URL + ` in the last 3d`,
		`"prometheus": "` + srv.URL + `"`, `"lookback": "3d"`,
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), `"metric": "vllm:num_requests_running"`) {
		t.Errorf("a present name was reported:\n%s", out.String())
	}
}
