package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/kvcheck/kvcheck/internal/cli"
)

// blockedStdin is a pipe nobody writes to, as a producer that has not sent anything yet (or
// a FIFO with its writer stalled): its first Read calls started, then blocks until the test ends.
type blockedStdin struct {
	r       *io.PipeReader
	started chan struct{}
	once    bool
}

func (b *blockedStdin) Read(p []byte) (int, error) {
	if !b.once {
		b.once = true
		close(b.started)
	}
	return b.r.Read(p)
}

// TestStdinReadEndsAtFirstSignal: a command reading standard input that blocks ends at the
// first SIGTERM with exit 143, instead of waiting for input (issue 23: assess ignored the first
// SIGTERM while it spooled stdin), and assess leaves no spool in TMPDIR.
func TestStdinReadEndsAtFirstSignal(t *testing.T) {
	for _, args := range [][]string{
		{"assess", "--requests", "-"},
		{"audit", "--requests", "-"},
		{"simulate", "--requests", "-"},
	} {
		t.Run(args[0], func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			pr, pw := io.Pipe()
			defer pw.Close()
			in := &blockedStdin{r: pr, started: make(chan struct{})}
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				<-in.started
				cancel(cli.Interrupted{Sig: syscall.SIGTERM})
			}()
			var out, errOut bytes.Buffer
			code := run(ctx, args, streams{In: in, Out: &out, ErrOut: &errOut}, nil)
			if code != 143 {
				t.Errorf("exit %d, want 143; stderr:\n%s", code, errOut.String())
			}
			if !strings.Contains(errOut.String(), "interrupted by SIGTERM") {
				t.Errorf("stderr does not say the run was interrupted:\n%s", errOut.String())
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("files left in TMPDIR: %v", left)
			}
		})
	}
}
