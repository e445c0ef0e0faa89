package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/usage"
)

type notes struct{ warned, noted []string }

func (n *notes) Warn(format string, args ...any) {
	n.warned = append(n.warned, fmt.Sprintf(format, args...))
}
func (n *notes) Note(format string, args ...any) {
	n.noted = append(n.noted, fmt.Sprintf(format, args...))
}

// TestCheckFlags: the flags' usage errors, each naming its flag, and a --fix run on a rule
// file that queries a removed name: the file is rewritten to the replacement and noted.
func TestCheckFlags(t *testing.T) {
	ctx := context.Background()
	ok := Flags{MaxFileMiB: 16, Lookback: DefaultLookback}
	for _, c := range []struct {
		name string
		f    func(*Flags)
		want string
	}{
		{"fix and diff", func(f *Flags) { f.Fix, f.Diff = true, true }, "--fix and --diff: choose one"},
		{"bad target", func(f *Flags) { f.Target = "zero" }, "--target-version: "},
		{"lookback", func(f *Flags) { f.Prom.URL, f.Lookback = "http://127.0.0.1:9", 0 }, "--lookback must be positive"},
		{"max file", func(f *Flags) { f.MaxFileMiB = 0 }, "--max-file-mib 0"},
	} {
		f := ok
		c.f(&f)
		if _, err := CheckFlags(ctx, &notes{}, f, []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), c.want) || !usage.Is(err) {
			t.Errorf("%s: %v, want a usage error containing %q", c.name, err, c.want)
		}
	}
	f := ok
	f.IgnoreFile = filepath.Join(t.TempDir(), "absent")
	if _, err := CheckFlags(ctx, &notes{}, f, []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "--ignore-file") {
		t.Errorf("a missing --ignore-file: %v, want an error naming it", err)
	}
	f = ok
	f.Prom = promql.Conn{URL: "ftp://x"}
	if _, err := CheckFlags(ctx, &notes{}, f, []string{t.TempDir()}); err == nil {
		t.Error("an ftp --prometheus URL: no error")
	}

	// vllm:gpu_cache_usage_perc was removed in vLLM 0.12.0; its replacement is
	// vllm:kv_cache_usage_perc, an exact rename --fix writes.
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	src := "groups:\n- name: vllm\n  rules:\n  - alert: KVFull\n    expr: vllm:gpu_cache_usage_perc > 0.9\n"
	if err := os.WriteFile(rules, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f = ok
	f.Fix, f.Target = true, "0.12"
	var n notes
	run, err := CheckFlags(ctx, &n, f, []string{rules})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(rules)
	if !run.Fix || !strings.Contains(string(got), "vllm:kv_cache_usage_perc > 0.9") || len(n.noted) != 1 || n.noted[0] != "rewrote "+rules {
		t.Errorf("--fix: fix %v, notes %q, file now:\n%s\nwant the rename written and one note", run.Fix, n.noted, got)
	}
}
