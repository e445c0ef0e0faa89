package assess

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Run reads the sources in kvcheck assess's order (metrics, templates, request log, tap
// recordings, trace, config), so the first failing source is the one reported and the later
// sources are not read at all.
func TestRunReadsSourcesInOrder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.kvtap")
	var called []string
	src := Sources{
		TapFrom: []string{missing},
		Trace: func() (*sim.Trace, error) {
			called = append(called, "trace")
			return nil, errors.New("trace read")
		},
		Configs: []string{t.TempDir()},
		Ignore: func() ([]lint.IgnoreRule, error) {
			called = append(called, "ignore")
			return nil, nil
		},
	}
	st := report.NewStatus(io.Discard)
	_, err := Run(context.Background(), st, src, Options{})
	if err == nil || !strings.Contains(err.Error(), "absent.kvtap") {
		t.Fatalf("Run: error %v, want the missing recording named", err)
	}
	if len(called) != 0 {
		t.Errorf("Run read %v after the recordings failed", called)
	}

	// Without the recordings, the trace is read next and its error is the one reported.
	src.TapFrom = nil
	if _, err = Run(context.Background(), st, src, Options{}); err == nil || err.Error() != "trace read" {
		t.Fatalf("Run: error %v, want the trace's", err)
	}
	if want := []string{"trace"}; strings.Join(called, ",") != strings.Join(want, ",") {
		t.Errorf("Run called %v, want %v", called, want)
	}
}

// The request log's tokenize connection gets the block size chosen so far: the one given,
// else (no metrics) the audits' default. Its error ends the run before the log is opened.
func TestRunConnectFallbackBlockSize(t *testing.T) {
	for _, tc := range []struct{ given, want int }{{0, audit.DefaultBlockSize}, {32, 32}} {
		var got int
		src := Sources{
			Requests:  filepath.Join(t.TempDir(), "absent.jsonl"),
			BlockSize: tc.given,
			Connect: func(_ context.Context, fallback int) (audit.Remote, error) {
				got = fallback
				return audit.Remote{}, errors.New("no server")
			},
		}
		_, err := Run(context.Background(), report.NewStatus(io.Discard), src, Options{})
		if err == nil || err.Error() != "no server" {
			t.Fatalf("block size %d: error %v, want the connection's", tc.given, err)
		}
		if got != tc.want {
			t.Errorf("block size %d: Connect got fallback %d, want %d", tc.given, got, tc.want)
		}
	}
}
