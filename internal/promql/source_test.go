package promql

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenSpecErrors: every spec that cannot work is a *SpecError naming the flag, before any
// input is read.
func TestOpenSpecErrors(t *testing.T) {
	dump := "../../testdata/hitrate/before.prom"
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"nothing", Spec{}, "give one source"},
		{"two sources", Spec{Files: []string{dump}, Logs: []string{"x.log"}}, "give exactly one source, not --file and --log"},
		{"zero window", Spec{Files: []string{dump}, WindowSet: true}, "--window 0s: must be positive"},
		{"by with logs", Spec{Logs: []string{"x.log"}, By: []string{"pod"}}, "--by applies to metrics"},
		{"bad label", Spec{Files: []string{dump}, By: []string{"pod-name"}}, `--by "pod-name": not a label name`},
		{"selector without prometheus", Spec{Files: []string{dump}, Selector: `a="b"`}, "--selector applies to --prometheus only"},
		{"time without prometheus", Spec{Files: []string{dump}, Time: "0"}, "--time applies to --prometheus only"},
		{"three dumps", Spec{Files: []string{dump, dump, dump}}, "--file given 3 times"},
		{"bad prometheus URL", Spec{Conn: Conn{URL: "prometheus:9090"}}, "give the base URL"},
		{"bad selector", Spec{Conn: Conn{URL: "http://127.0.0.1:1"}, Selector: "namespace=prod"}, "--selector"},
		{"bad time", Spec{Conn: Conn{URL: "http://127.0.0.1:1"}, Time: "yesterday"}, `--time "yesterday"`},
		{"half basic auth", Spec{Conn: Conn{URL: "http://127.0.0.1:1", BasicAuthUser: "u"}}, "basic auth needs both"},
		{"bad header", Spec{Scrape: []string{"127.0.0.1:1"}, Conn: Conn{Headers: []string{"novalue"}}}, `--header "novalue"`},
		{"negative response cap", Spec{Scrape: []string{"127.0.0.1:1"}, Conn: Conn{MaxResponseMiB: -1}}, "--max-response-mib -1"},
	} {
		_, err := Open(context.Background(), tc.spec)
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a SpecError with %q", tc.name, err, tc.want)
		}
	}
}

// TestOpenSources: each source opens through the one entry point, and what is not a spec
// problem (a missing file) is not a SpecError.
func TestOpenSources(t *testing.T) {
	ctx := context.Background()
	in, err := Open(ctx, Spec{Files: []string{"../../testdata/hitrate/before.prom", "../../testdata/hitrate/after.prom"}})
	if err != nil || in.Source != SourceFile || len(in.Observations) != 3 {
		t.Errorf("two dumps: source %q, %d replicas, %v; want file, 3", in.Source, len(in.Observations), err)
	}
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(targets, []byte("# none here\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var se *SpecError
	if _, err := Open(ctx, Spec{TargetsFile: targets}); !errors.As(err, &se) || !strings.Contains(err.Error(), "no targets in the file") {
		t.Errorf("empty targets file: %v, want a SpecError", err)
	}
	if _, err := Open(ctx, Spec{Files: []string{filepath.Join(dir, "missing.prom")}}); err == nil || errors.As(err, &se) {
		t.Errorf("missing dump: %v, want a runtime error", err)
	}
	if tm, err := ParseTime("1764496800.5"); err != nil || !tm.Equal(time.UnixMilli(1764496800500)) {
		t.Errorf("ParseTime(unix) = %v, %v", tm, err)
	}
}
