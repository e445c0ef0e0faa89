package assess

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestOpenRequestLogStdin: standard input is read once into a file that every later Open reads
// from the start; the file is gone from the directory as soon as it is open, so no exit leaves
// it (issue 23: the spool stayed behind); the tokenize server's caching finding is the log's.
func TestOpenRequestLogStdin(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const log = `{"prompt": "a"}` + "\n" + `{"prompt": "b"}` + "\n"
	off := &finding.Finding{Code: "prefix-caching-off"}
	remote := &audit.Remote{BlockSize: 32, CachingOff: off}
	rl, cleanup, err := OpenRequestLog(t.Context(), "-", strings.NewReader(log), 16, remote, audit.SourceOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if rl.Name != "standard input" || rl.BlockSize != 32 {
		t.Errorf("name %q, block size %d; want standard input and the server's 32", rl.Name, rl.BlockSize)
	}
	if len(rl.Findings) != 1 || rl.Findings[0].Source != "requests" || off.Source != "" {
		t.Errorf("findings %+v (server's %+v): want the server's finding, sourced to the requests", rl.Findings, off)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("files in TMPDIR while the log is open: %v, want none", left)
	}
	for range 3 {
		r, err := rl.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || string(b) != log {
			t.Fatalf("Open read %q (%v), want the log", b, err)
		}
	}
}

// TestOpenRequestLogSpoolBound: standard input past --max-spool-mib is refused with an error
// naming the bound and what to do, and leaves nothing in TMPDIR; the copy stops once the
// context ends. A 1 MiB bound takes 1 MiB and not a byte more.
func TestOpenRequestLogSpoolBound(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	line := `{"prompt": "` + strings.Repeat("x", 1000) + `"}` + "\n"
	exact := strings.Repeat("y", 1<<20)
	if _, cleanup, err := OpenRequestLog(t.Context(), "-", strings.NewReader(exact), 16, nil, audit.SourceOptions{}, 1); err != nil {
		t.Errorf("exactly 1 MiB with a 1 MiB bound: %v", err)
	} else {
		cleanup()
	}
	_, _, err := OpenRequestLog(t.Context(), "-", strings.NewReader(exact+"z"), 16, nil, audit.SourceOptions{}, 1)
	if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB (--max-spool-mib)") || !strings.Contains(err.Error(), "give the log as a file") {
		t.Errorf("1 MiB and a byte: %v, want the bound's error", err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("interrupted by SIGTERM"))
	_, _, err = OpenRequestLog(ctx, "-", strings.NewReader(strings.Repeat(line, 10)), 16, nil, audit.SourceOptions{}, 0)
	if err == nil || !strings.Contains(err.Error(), "interrupted by SIGTERM") {
		t.Errorf("cancelled: %v, want the cause", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("files left in TMPDIR: %v, want none", left)
	}
}

// TestOpenRequestLogFile: a named log is read in place, in the block size given.
func TestOpenRequestLogFile(t *testing.T) {
	path := t.TempDir() + "/log.jsonl"
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rl, cleanup, err := OpenRequestLog(t.Context(), path, nil, 16, nil, audit.SourceOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if rl.Name != path || rl.BlockSize != 16 || rl.Tokenizer != nil || len(rl.Findings) != 0 {
		t.Errorf("got %+v, want the file by its name, 16-token blocks, estimated tokens", rl)
	}
	r, err := rl.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if src, ok := r.(*audit.Source); !ok || src.Name != path || src.Format != audit.LogJSONL {
		t.Errorf("Open read %v, want %s itself, as JSONL", r, path)
	}
}

// TestReadLogLimitNamesAssessFlags: a request log past --max-trace-requests is refused with
// advice that assess can follow: the flag that raises the limit, and a way to read a part of
// the log. The advice was simulate's "--max-requests N", a flag assess does not have.
func TestReadLogLimitNamesAssessFlags(t *testing.T) {
	line := `{"model": "m", "messages": [{"role": "user", "content": "hello there"}]}` + "\n"
	log := strings.Repeat(line, 3)
	rl := &RequestLog{Name: "r.jsonl", BlockSize: 16, MaxTraceRequests: 2,
		Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil }}
	_, err := readLog(t.Context(), rl, nil)
	if err == nil || !strings.Contains(err.Error(), "more than 2 requests") || !strings.Contains(err.Error(), "--max-trace-requests") {
		t.Fatalf("readLog = %v, want the request limit's error naming --max-trace-requests", err)
	}
	if strings.Contains(err.Error(), "--max-requests") {
		t.Errorf("readLog = %v: it names --max-requests, which assess does not have", err)
	}
}
