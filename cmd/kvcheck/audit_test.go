package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

func runAuditCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"audit"}, args...), streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
	return code, out.String(), errOut.String()
}

// TestAuditExitCodes checks the exact exit codes the scripts can only infer.
func TestAuditExitCodes(t *testing.T) {
	dir := t.TempDir()
	tpl := filepath.Join(dir, "chat.jinja")
	if err := os.WriteFile(tpl, []byte(`Now: {{ strftime_now("%H:%M:%S") }}{% for m in messages %}{{ m.content }}{% endfor %}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"ok", []string{tpl}, exitOK},
		{"findings", []string{tpl, "--fail-on", "error"}, exitFindings},
		{"usage: nothing", nil, exitUsage},
		{"usage: bad flag", []string{tpl, "--concurrency", "0"}, exitUsage},
		{"usage: output", []string{tpl, "-o", "yaml"}, exitUsage},
		{"github annotations", []string{tpl, "-o", "github"}, exitOK},
		{"findings in sarif", []string{tpl, "-o", "sarif", "--fail-on", "error"}, exitFindings},
		{"runtime: missing file", []string{filepath.Join(dir, "nope.jinja")}, exitRuntime},
		{"runtime: unreachable server", []string{"--tokenize", "http://127.0.0.1:1", "--timeout", "2s"}, exitRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runAuditCLI(t, "", tt.args...)
			if code != tt.want {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.want, stderr)
			}
		})
	}
}

// TestAuditCorpusCLI runs the command over the real templates.
func TestAuditCorpusCLI(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	code, out, stderr := runAuditCLI(t, "", filepath.Join(corpus, "templates"), "-o", "json", "--fail-on", "error")
	if code != exitFindings {
		t.Fatalf("exit code = %d, want %d (stderr %q)", code, exitFindings, stderr)
	}
	var doc struct {
		Templates []struct{ File, Verdict string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tp := range doc.Templates {
		got[filepath.Base(tp.File)] = tp.Verdict
	}
	want := map[string]string{
		"langgraph-react-agent_graph.py":                       "breaker",
		"langgraph-react-agent_prompts.py":                     "breaker",
		"meta-llama-models_llama3_system_prompts.py":           "breaker",
		"vllm-examples_template_chatml.jinja":                  "clean",
		"vllm-examples_tool_chat_template_hermes.jinja":        "clean",
		"vllm-examples_tool_chat_template_llama3.1_json.jinja": "breaker",
		"vllm-examples_tool_chat_template_mistral3.jinja":      "early",
	}
	for f, v := range want {
		if got[f] != v {
			t.Errorf("%s: verdict %q, want %q", f, got[f], v)
		}
	}
}

// TestAuditTokenizeCLI runs --tokenize against the emulated replica: the block size comes from
// /metrics, every figure is exact, and the probe finds the server template's date line.
func TestAuditTokenizeCLI(t *testing.T) {
	mux := http.NewServeMux()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	mux.Handle("/tokenize", fleet.TokenizeHandler(fleet.TokenizeOptions{DateLine: true, Now: func() time.Time { return now }}))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `vllm:cache_config_info{block_size="16",enable_prefix_caching="True",prefix_caching_hash_algo="sha256"} 1`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var log strings.Builder
	for i := range 20 {
		fmt.Fprintf(&log, `{"messages":[{"role":"system","content":"You are the ACME support assistant. Be brief, accurate and polite; cite the help centre."},{"role":"user","content":"question %d"}],"metadata":{"session_id":"s%d"}}`+"\n", i%5, i%3)
	}
	code, out, stderr := runAuditCLI(t, log.String(), "--requests", "-", "--tokenize", srv.URL, "--block-size", "32", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit code = %d (stderr %q)", code, stderr)
	}
	if !strings.Contains(stderr, "server's block size is 16, not --block-size 32") {
		t.Errorf("stderr = %q, want the block-size note", stderr)
	}
	var doc struct {
		BlockSize int    `json:"block_size"`
		Tokens    string `json:"tokens"`
		Templates []struct{ File, Verdict string }
		Findings  []struct {
			File      string
			Block     int
			Estimated bool
			Position  string
		}
		Requests struct {
			Estimated       bool  `json:"estimated"`
			Requests        int64 `json:"requests"`
			CacheableTokens int64 `json:"cacheable_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if doc.BlockSize != 16 || doc.Tokens != "exact" || doc.Requests.Estimated || doc.Requests.Requests != 20 || doc.Requests.CacheableTokens == 0 {
		t.Errorf("block size %d, tokens %s, requests %+v: want 16, exact, 20 requests with reuse", doc.BlockSize, doc.Tokens, doc.Requests)
	}
	if len(doc.Templates) != 1 || doc.Templates[0].Verdict != "early" {
		t.Errorf("templates = %+v, want the server template, early (exact block 1)", doc.Templates)
	}
	if len(doc.Findings) != 1 || doc.Findings[0].Estimated || doc.Findings[0].Block != 1 {
		t.Errorf("findings = %+v, want one exact finding at block 1", doc.Findings)
	}
}

// TestAuditTokenizeTemplateFiles: template files are sent to the server for exact positions;
// a server that refuses request templates (vLLM's default, and the emulated replica) leaves them
// estimated with a note on stderr.
func TestAuditTokenizeTemplateFiles(t *testing.T) {
	dir := t.TempDir()
	tpl := filepath.Join(dir, "chat.jinja")
	if err := os.WriteFile(tpl, []byte(`{{ bos_token }}Today Date: {{ date_string }}{% for m in messages %}{{ m.content }}{% endfor %}`), 0o600); err != nil {
		t.Fatal(err)
	}
	toy := fleet.TokenizeHandler(fleet.TokenizeOptions{DateLine: true})
	metrics := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `vllm:cache_config_info{block_size="16",enable_prefix_caching="True"} 1`)
	}
	tests := []struct {
		name        string
		trusting    bool
		wantNote    bool
		wantEntries int
	}{
		{"refusing server", false, true, 2},
		{"trusting server", true, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withTemplate := 0
			mux := http.NewServeMux()
			mux.HandleFunc("/metrics", metrics)
			mux.HandleFunc("/tokenize", func(w http.ResponseWriter, r *http.Request) {
				if tt.trusting {
					// Stands in for a server started with --trust-request-chat-template: it
					// takes the template (and renders its own, which has the same date line).
					var body map[string]any
					if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					if body["chat_template"] != nil {
						withTemplate++
					}
					delete(body, "chat_template")
					b, _ := json.Marshal(body)
					r.Body = io.NopCloser(bytes.NewReader(b))
					r.ContentLength = int64(len(b))
				}
				toy.ServeHTTP(w, r)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			code, out, stderr := runAuditCLI(t, "", tpl, "--tokenize", srv.URL, "-o", "json")
			if code != exitOK {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			if got := strings.Contains(stderr, "--trust-request-chat-template"); got != tt.wantNote {
				t.Errorf("stderr %q: note present = %v, want %v", stderr, got, tt.wantNote)
			}
			var doc struct {
				Templates []struct{ File, Format, Verdict string }
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Templates) != tt.wantEntries {
				t.Errorf("templates = %+v, want %d entries", doc.Templates, tt.wantEntries)
			}
			if tt.trusting && withTemplate != 5 {
				t.Errorf("%d renders carried the file's template, want the probe's 5", withTemplate)
			}
			if tt.trusting && (doc.Templates[1].File != tpl+" (rendered by the server)" || doc.Templates[1].Verdict != "early") {
				t.Errorf("server render of the file = %+v, want an exact early verdict", doc.Templates[1])
			}
		})
	}
}
