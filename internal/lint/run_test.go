package lint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// TestCheckFix: with Fix, Check rewrites the removed name vLLM renamed and says which file it
// wrote; interrupted before it starts, it writes nothing and reports no fix.
func TestCheckFix(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	const rules = "groups:\n- name: kv\n  rules:\n  - alert: KVFull\n    expr: vllm:gpu_cache_usage_perc > 0.9\n"
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write := func() {
		if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := RunOptions{Options: Options{Rewrite: true}, Fix: true}

	write()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var wrote []string
	run, err := Check(ctx, cat, opts, []string{path}, func(p string) { wrote = append(wrote, p) })
	if err != nil || run.Fix || len(wrote) != 0 {
		t.Errorf("interrupted: fix %v, wrote %v, err %v; want nothing written", run.Fix, wrote, err)
	}
	if b, _ := os.ReadFile(path); string(b) != rules {
		t.Errorf("interrupted run changed the file:\n%s", b)
	}

	run, err = Check(context.Background(), cat, opts, []string{path}, func(p string) { wrote = append(wrote, p) })
	if err != nil || !run.Fix || len(wrote) != 1 || wrote[0] != path {
		t.Fatalf("fix: fix %v, wrote %v, err %v; want %s written", run.Fix, wrote, err, path)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "vllm:kv_cache_usage_perc > 0.9") || strings.Contains(string(b), "gpu_cache_usage_perc") {
		t.Errorf("rewritten file:\n%s", b)
	}
}
