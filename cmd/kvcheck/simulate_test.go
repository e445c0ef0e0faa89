package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

func runSimulateCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"simulate"}, args...), streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
	return code, out.String(), errOut.String()
}

// TestSimulateTokenizeCLI runs --requests --tokenize against the emulated replica: the block
// size comes from /metrics, the trace is labelled exact, and nothing is marked estimated.
func TestSimulateTokenizeCLI(t *testing.T) {
	cases := []struct {
		name    string
		metrics string
		block   int
		note    string
		stderr  string
		// off: the prefix-caching-off finding about the server, as audit and hitrate report it
		off bool
	}{
		{
			name:    "block size from cache_config_info",
			metrics: `vllm:cache_config_info{block_size="32",enable_prefix_caching="True",prefix_caching_hash_algo="sha256"} 1`,
			block:   32,
			note:    "block size: 32, from " + "%s/metrics (vllm:cache_config_info)",
		},
		{
			name:    "prefix caching off is the one finding",
			metrics: `vllm:cache_config_info{block_size="16",enable_prefix_caching="False"} 1`,
			block:   16,
			note:    "block size: 16, from %s/metrics",
			off:     true,
		},
		{
			name:    "no cache_config_info: the default, on stderr and in the notes",
			metrics: `vllm:num_requests_running{model_name="m"} 0`,
			block:   16,
			note:    "block size: 16 assumed: %s/metrics has no vllm:cache_config_info",
			stderr:  "has no vllm:cache_config_info; assuming block size 16",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("/tokenize", fleet.TokenizeHandler(fleet.TokenizeOptions{}))
			mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, tc.metrics) })
			srv := httptest.NewServer(mux)
			defer srv.Close()
			var log strings.Builder
			for i := range 12 {
				fmt.Fprintf(&log, `{"timestamp": %d, "max_tokens": 50, "messages":[{"role":"system","content":"You are the ACME support assistant. Be brief, accurate and polite; cite the help centre when you can."},{"role":"user","content":"question %d"}],"metadata":{"session_id":"s%d"}}`+"\n", 1764496800+i, i%5, i%3)
			}
			code, out, stderr := runSimulateCLI(t, log.String(), "--requests", "-", "--tokenize", srv.URL, "--replicas", "2", "--policies", "round-robin,kv-longest", "-o", "json")
			if code != exitOK {
				t.Fatalf("exit code = %d (stderr %q)", code, stderr)
			}
			if tc.stderr == "" && stderr != "" || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr = %q, want %q", stderr, tc.stderr)
			}
			var doc struct {
				Trace struct {
					Format    string   `json:"format"`
					BlockSize int      `json:"block_size"`
					Tokens    string   `json:"tokens"`
					Estimated bool     `json:"estimated"`
					Requests  int      `json:"requests"`
					Repeats   int      `json:"repeats"`
					Notes     []string `json:"notes"`
				} `json:"trace"`
				Results []struct {
					Policy    string  `json:"policy"`
					HitRate   float64 `json:"hit_rate"`
					Estimated bool    `json:"estimated"`
				} `json:"results"`
				Findings []struct {
					Code    string `json:"code"`
					Subject string `json:"subject"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			tr := doc.Trace
			if tr.Format != "requests" || tr.Tokens != "exact" || tr.Estimated || tr.BlockSize != tc.block || tr.Requests != 12 {
				t.Errorf("trace = %+v; want requests, exact, not estimated, block %d, 12 requests", tr, tc.block)
			}
			if tr.Repeats == 0 {
				t.Error("no repeated block: the shared system prompt should repeat")
			}
			note := tc.note
			if strings.Contains(note, "%s") {
				note = fmt.Sprintf(note, srv.URL)
			}
			if !strings.Contains(strings.Join(tr.Notes, "\n"), note) {
				t.Errorf("notes %q lack %q", tr.Notes, note)
			}
			off := false
			for _, f := range doc.Findings {
				off = off || f.Code == "prefix-caching-off" && f.Subject == srv.URL
			}
			if off != tc.off {
				t.Errorf("findings %+v: prefix-caching-off about %s is %v, want %v", doc.Findings, srv.URL, off, tc.off)
			}
			for _, r := range doc.Results {
				if r.Estimated {
					t.Errorf("%s result marked estimated with exact tokens", r.Policy)
				}
			}
		})
	}
}

// TestSimulateExitCodes checks the exit codes the scripts can only infer.
func TestSimulateExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"usage: no source", nil, exitUsage},
		{"usage: two sources", []string{"--requests", "-", "--recording", "x.rec"}, exitUsage},
		{"runtime: unreachable tokenize server", []string{"--requests", "-", "--tokenize", "http://127.0.0.1:1", "--timeout", "2s"}, exitRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runSimulateCLI(t, `{"prompt": "x"}`, tt.args...)
			if code != tt.want {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.want, stderr)
			}
		})
	}
}

// TestSimulatePlotAllPolicies is issue 27's plot: every idealised policy and every router
// emulation on a request log (so the text-reading routers run too), across three fleet sizes
// and two KV sizes. Every policy that ran is one series in a style no other has, every legend
// entry is whole, and no text leaves the image.
func TestSimulatePlotAllPolicies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "all.svg")
	code, out, stderr := runSimulateCLI(t, "", "--requests", "../../testdata/assess/chat_sessions.jsonl", "--replicas", "2,4,8", "--kv-blocks", "64,1024",
		"--policies", "all,routers", "--plot", path, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Results []struct{ Policy string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, r := range doc.Results {
		ran[r.Policy] = true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg, errs := testutil.CheckSVG(data)
	for _, err := range errs {
		t.Error(err)
	}
	if len(ran) < 20 || len(svg.Series) != len(ran) {
		t.Errorf("%d series drawn for %d policies run; want one each, and the routers among them", len(svg.Series), len(ran))
	}
	for p := range ran {
		if !slices.ContainsFunc(svg.Legend, func(l string) bool { return l == p || strings.HasPrefix(l, p+" (") }) {
			t.Errorf("no whole legend entry for %s in %q", p, svg.Legend)
		}
	}
}
