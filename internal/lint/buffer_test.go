package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// TestReadKeepsNoBufferText: without --diff or --fix, one worker reads every file into the same
// buffer, and a file's JSON tree shares that buffer's memory (parseJSONIn). If a result kept a
// string of its tree (a name, a place, a rewrite, a query cache key), the next file read would
// overwrite it. So the files are linted through one buffer and compared, result by result, with
// the same files each linted from bytes of its own (KeepText: no buffer is reused): the
// repository's lint fixtures (Grafana, Perses, rule files, autoscalers, router configs),
// generated dashboards each with other titles and queries at the same offsets, a dashboard
// with a query too long for the query cache, and the corpus's dashboards when
// KVCHECK_CORPUS is set. The query cache is made small, so its entries move between
// generations (a moved entry must keep its own copy of the key, not the file's).
func TestReadKeepsNoBufferText(t *testing.T) {
	dir := t.TempDir()
	fixtures, err := filepath.Glob("../../testdata/lint/*")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no lint fixtures: %v", err)
	}
	if c := os.Getenv("KVCHECK_CORPUS"); c != "" {
		more, _ := filepath.Glob(filepath.Join(c, "dashboards", "*.json"))
		fixtures = append(fixtures, more...)
	}
	for i, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Interleaved with the generated dashboards below (read in name order).
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d-%s", i, filepath.Base(f))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := t.TempDir()
	writeDashboards(t, gen, 40)
	names, _ := filepath.Glob(filepath.Join(gen, "*.json"))
	for i, n := range names {
		if err := os.Rename(n, filepath.Join(dir, fmt.Sprintf("f%03d-gen.json", 2*i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// Its finding (a removed name) is near the file's start, which the next file overwrites.
	long := `vllm:gpu_cache_usage_perc{pod="` + strings.Repeat("p", maxCachedQuery) + `"} + vllm:num_requests_running`
	mkfile(t, filepath.Join(dir, "f000-long.json"), fmt.Sprintf(`{"panels": [{"title": "Long", "targets": [{"expr": %q, "refId": "A"}]}]}`, long))

	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	read := func(keep bool) []FileResult {
		l := New(cat, Options{Jobs: 1, KeepText: keep})
		l.queries.max = 4 << 10
		rs, err := l.Paths(context.Background(), []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			rs[i].Original = nil
		}
		return rs
	}
	shared, own := read(false), read(true)
	if len(shared) != len(own) || len(own) < 60 {
		t.Fatalf("%d results through one buffer, %d from each file's own bytes; want the same, at least 60", len(shared), len(own))
	}
	findings := 0
	for i := range own {
		findings += len(own[i].Findings)
		if !reflect.DeepEqual(shared[i], own[i]) {
			t.Errorf("%s: linted through the shared buffer:\n%+v\nfrom its own bytes:\n%+v", own[i].Path, shared[i].Findings, own[i].Findings)
		}
	}
	if findings < 200 {
		t.Errorf("%d findings in all, want at least 200 (the fixtures and generated dashboards have that many)", findings)
	}
}
