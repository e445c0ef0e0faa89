package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/cli"
)

// TestInterruptContextSignal: a real SIGINT sent to the process cancels the context with a cause
// that names it, and run maps it to exit 130 (SIGTERM to 143).
func TestInterruptContextSignal(t *testing.T) {
	ctx, stop := cli.InterruptContext(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not cancel the context")
	}
	in, ok := cli.Interruption(ctx)
	if !ok || in.Sig != syscall.SIGINT {
		t.Fatalf("cause %v, want interrupted by SIGINT", context.Cause(ctx))
	}
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"hitrate", "--file", "../../testdata/hitrate/before.prom"}, streams{Out: &out, ErrOut: &errOut}, nil); code != 130 {
		t.Errorf("exit %d, want 130; stderr %s", code, errOut.String())
	}
	tctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.Interrupted{Sig: syscall.SIGTERM})
	if code := run(tctx, []string{"hitrate", "--file", "../../testdata/hitrate/before.prom"}, streams{Out: &out, ErrOut: &errOut}, nil); code != 143 {
		t.Errorf("SIGTERM: exit %d, want 143", code)
	}
}

// interruptedCtx is a context as a Ctrl-C leaves it.
func interruptedCtx() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.Interrupted{Sig: syscall.SIGINT})
	return ctx
}

// endlessRequests serves request lines without end, and calls stop once it has served n:
// a log that is still being read when Ctrl-C arrives. served is atomic: after the interrupt the
// standard-input reader leaves a read in flight on its own goroutine (cli.StdinUntil), which can
// still count a line while the test reads the count (a race -race found under make test).
type endlessRequests struct {
	n      int64
	served atomic.Int64
	stop   func()
	buf    []byte
}

func (e *endlessRequests) Read(p []byte) (int, error) {
	if len(e.buf) == 0 {
		served := e.served.Add(1)
		if served == e.n {
			e.stop()
		}
		e.buf = fmt.Appendf(nil, `{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant for the shop, answer briefly."},{"role":"user","content":"question %d"}]}`+"\n", served)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

// TestInterruptedRunsArePartial: lint, audit --requests and hitrate --file stop at Ctrl-C, print
// what they have marked partial, and exit 130. Before, they ran to the end and exited 0 or 3
// (audit stopped with exit 1 and printed nothing).
func TestInterruptedRunsArePartial(t *testing.T) {
	t.Run("lint", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run(interruptedCtx(), []string{"lint", "-o", "json", "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil)
		if code != 130 {
			t.Fatalf("exit %d, want 130; stderr %s", code, errOut.String())
		}
		var doc struct {
			Files    []struct{ File string }
			Findings []struct{ Code, Message string }
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		if len(doc.Files) != 1 || len(doc.Findings) != 1 || !strings.Contains(doc.Findings[0].Message, "interrupted") {
			t.Errorf("files %+v, findings %+v; want the path it stopped at, marked interrupted", doc.Files, doc.Findings)
		}
		if !strings.Contains(errOut.String(), "interrupted by SIGINT (Ctrl-C); any output above is partial") {
			t.Errorf("stderr %q, want the interruption named", errOut.String())
		}
	})
	t.Run("audit requests", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		in := &endlessRequests{n: 3000, stop: func() { cancel(cli.Interrupted{Sig: syscall.SIGINT}) }}
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"audit", "--requests", "-"}, streams{In: in, Out: &out, ErrOut: &errOut}, nil)
		if code != 130 {
			t.Fatalf("exit %d, want 130; stderr %s", code, errOut.String())
		}
		if !strings.Contains(out.String(), "partial: the audit was interrupted after") {
			t.Errorf("stdout lacks the partial marker:\n%s", out.String())
		}
		if served := in.served.Load(); served > in.n+1024 {
			t.Errorf("read %d lines after the interrupt at %d", served-in.n, in.n)
		}
	})
	t.Run("hitrate file", func(t *testing.T) {
		// A dump large enough that reading it takes many reads.
		big := filepath.Join(t.TempDir(), "big.prom")
		f, err := os.Create(big)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile("../../testdata/hitrate/before.prom")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(src)
		for i := range 200000 {
			fmt.Fprintf(f, "node_other{i=\"%d\"} 1\n", i)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run(interruptedCtx(), []string{"hitrate", "--file", big}, streams{Out: io.Discard, ErrOut: &errOut}, nil)
		if code != 130 || out.Len() != 0 {
			t.Errorf("exit %d, stdout %q; want 130 and no report from a dump read in part", code, out.String())
		}
	})
}

// TestLintNamedFileLimits: a file the user names is checked or is an error. A binary .json
// passed with "No findings" and a file over the size bound was only a warning, so a CI gate
// on --fail-on error passed both unchecked.
func TestLintNamedFileLimits(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "dashboard.json")
	if err := os.WriteFile(bin, []byte("PK\x03\x04\x00\x00binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	dash, err := os.ReadFile("../../testdata/lint/clean_grafana.json")
	if err != nil {
		t.Fatal(err)
	}
	// The clean dashboard padded with spaces past 1 MiB: valid JSON, no findings when read.
	if err := os.WriteFile(big, append(dash, bytes.Repeat([]byte(" "), 1<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lint", bin}, exitFindings, "binary content"},
		{[]string{"lint", "--max-file-mib", "1", big}, exitFindings, "larger than 1 MiB and was not checked: raise --max-file-mib"},
		{[]string{"lint", "--max-file-mib", "2", big}, exitOK, "No findings"},
		{[]string{"lint", "--max-file-mib", "0", big}, exitUsage, "--max-file-mib 0"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tt.args, streams{Out: &out, ErrOut: &errOut}, nil)
		if code != tt.code || !strings.Contains(out.String()+errOut.String(), tt.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tt.args, code, tt.code, tt.want, out.String(), errOut.String())
		}
	}
}
