package assess

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Run reads the sources in kvcheck assess's order (metrics, templates, request log, tap
// recordings, trace, config), so the first failing source is the one reported and the later
// sources are not read at all. Each source here is a file that does not exist, so each read
// fails naming its own file; taking the failing sources away one by one shows the order.
func TestRunReadsSourcesInOrder(t *testing.T) {
	dir := t.TempDir()
	src := Sources{
		TapFrom:    []string{filepath.Join(dir, "absent.kvtap")},
		Trace:      filepath.Join(dir, "absent.jsonl"),
		Configs:    []string{dir},
		IgnoreFile: filepath.Join(dir, "absent.kvcheckignore"),
	}
	st := report.NewStatus(io.Discard)
	for _, want := range []string{"absent.kvtap", "absent.jsonl", "absent.kvcheckignore"} {
		_, _, err := Run(context.Background(), st, src, Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Run: error %v, want the first failing source %s named", err, want)
		}
		switch want {
		case "absent.kvtap":
			src.TapFrom = nil
		case "absent.jsonl":
			src.Trace = ""
		}
	}
}

// The request log's tokenize connection gets the block size chosen so far as its fallback:
// the one given, else (no metrics) the audits' default. The server here has no
// vllm:cache_config_info, so the fallback is the block size used, and the note says which.
// Connecting comes before the log is opened: a server that cannot be read ends the run.
func TestRunConnectFallbackBlockSize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0")
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ given, want int }{{0, audit.DefaultBlockSize}, {32, 32}} {
		var stderr bytes.Buffer
		src := Sources{
			Requests:  filepath.Join(t.TempDir(), "absent.jsonl"),
			BlockSize: tc.given,
			Tokenize:  audit.Tokenize{URL: srv.URL, Concurrency: 1, Timeout: 5 * time.Second},
		}
		_, _, err := Run(context.Background(), report.NewStatus(&stderr), src, Options{})
		if err == nil || !strings.Contains(err.Error(), "absent.jsonl") {
			t.Fatalf("block size %d: error %v, want the missing log named", tc.given, err)
		}
		if want := fmt.Sprintf("assuming block size %d", tc.want); !strings.Contains(stderr.String(), want) {
			t.Errorf("block size %d: stderr %q, want %q", tc.given, stderr.String(), want)
		}
	}
	srv.Close()
	src := Sources{Requests: filepath.Join(t.TempDir(), "absent.jsonl"), Tokenize: audit.Tokenize{URL: srv.URL, Concurrency: 1, Timeout: time.Second}}
	if _, _, err := Run(context.Background(), report.NewStatus(io.Discard), src, Options{}); err == nil || !strings.Contains(err.Error(), "check --tokenize") {
		t.Errorf("closed server: error %v, want the connection's (check --tokenize)", err)
	}
}

// TestCheck holds kvcheck assess's usage errors, each with the flag it names, and that a
// valid combination passes.
func TestCheck(t *testing.T) {
	seed := "0"
	ok := Options{Thresholds: advise.DefaultThresholds()}
	trace := Sources{Trace: "t.jsonl", Tokenize: audit.DefaultTokenize}
	tests := []struct {
		name          string
		src           Sources
		o             Options
		replicasGiven bool
		want          string // "" passes
	}{
		{"a trace", trace, ok, false, ""},
		{"nothing", Sources{Tokenize: audit.DefaultTokenize}, ok, false, "nothing to assess"},
		{"tokenize without requests", Sources{Trace: "t.jsonl", Tokenize: audit.Tokenize{URL: "http://x", Concurrency: 1, Timeout: time.Second}}, ok, false, "--tokenize applies to --requests"},
		{"hash seed without recordings", Sources{Trace: "t.jsonl", HashSeed: &seed, Tokenize: audit.DefaultTokenize}, ok, false, "--hash-seed applies to --tap-from"},
		{"replicas 0 unset", trace, ok, false, ""},
		{"replicas 0 given", trace, ok, true, "--replicas 0: want 1 to"},
		{"replicas negative", trace, Options{Thresholds: ok.Thresholds, Replicas: -1}, false, "--replicas -1"},
		{"blocks and tokens", trace, Options{Thresholds: ok.Thresholds, KVBlocks: 8, KVTokens: 128}, false, "not both"},
		{"negative trace block size", Sources{Trace: "t.jsonl", TraceBlockSize: -1, Tokenize: audit.DefaultTokenize}, ok, false, "must be positive"},
		{"min gain 0", trace, Options{}, false, "--min-gain"},
		{"min gain 1", trace, Options{Thresholds: advise.Thresholds{MinGain: 1}}, false, "--min-gain"},
		{"unknown today", trace, Options{Thresholds: ok.Thresholds, Today: "fastest"}, false, `--today "fastest": want an idealised policy`},
		{"bad concurrency", Sources{Trace: "t.jsonl"}, ok, false, "--concurrency 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.src, tt.o, tt.replicasGiven)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tt.want == "":
			case err == nil || !strings.Contains(err.Error(), tt.want) || !usage.Is(err):
				t.Fatalf("Check: %v, want a usage error containing %q", err, tt.want)
			}
		})
	}
}
