package lint

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// TestQueryCheckedOnce: 60 dashboards each repeat the same five queries (in two panels) and
// have one query of their own; linted by four workers, each distinct query is parsed and
// checked once (5 + 60 = 65 checks for 60 x 11 = 660 queries), and every file gets the
// findings its own queries give: one removed metric in a shared query, one in its own.
func TestQueryCheckedOnce(t *testing.T) {
	shared := []string{
		"sum(rate(vllm:prompt_tokens_total[5m]))",
		"vllm:gpu_cache_usage_perc",
		"histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))",
		"sum(vllm:num_requests_running)",
		"sum(vllm:num_requests_waiting)",
	}
	dir := t.TempDir()
	for i := range 60 {
		var targets []string
		for _, q := range append(append(shared, shared...), fmt.Sprintf("vllm:gpu_prefix_cache_hits_total{pod=\"p%d\"}", i)) {
			targets = append(targets, fmt.Sprintf(`{"expr": %q, "refId": "A"}`, q))
		}
		mkfile(t, filepath.Join(dir, fmt.Sprintf("d%02d.json", i)), `{"panels": [{"title": "t", "targets": [`+strings.Join(targets, ", ")+`]}]}`)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := New(cat, Options{Jobs: 4})
	rs, err := l.Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if l.queries.checks != 65 {
		t.Errorf("%d queries checked, want 65 (5 shared, 60 of their own)", l.queries.checks)
	}
	for _, r := range rs {
		// gpu_cache_usage_perc twice (two panels' targets), and the file's own query.
		removed := 0
		for _, f := range r.Findings {
			if f.Code == CodeRemoved {
				removed++
			}
		}
		if r.Queries != 11 || removed != 3 {
			t.Errorf("%s: %d queries, %d removed metrics; want 11 and 3", r.Path, r.Queries, removed)
		}
	}
}

// TestQueryCacheBounded: the cache holds at most about twice its bound, however many queries
// a run checks, and keeps a query used again in each generation.
func TestQueryCacheBounded(t *testing.T) {
	c := newQueryCache()
	c.max = 64 << 10
	checked := func(q string) *queryResult { return &queryResult{textLen: len(q)} }
	keep := queryKey{text: "sum(vllm:num_requests_running)"}
	for i := range 20000 {
		c.get(queryKey{text: fmt.Sprintf("rate(vllm:prompt_tokens_total{pod=%q}[5m])", fmt.Sprint(i))}, checked)
		if i%100 == 0 {
			c.get(keep, checked)
		}
	}
	held := 0
	for _, m := range []map[queryKey]*queryEntry{c.cur, c.prev} {
		for k, e := range m {
			held += entryBytes(k.text) + resultBytes(e.res)
		}
	}
	if held > 2*c.max+1024 {
		t.Errorf("the cache holds %d bytes, want at most twice its bound of %d", held, c.max)
	}
	if c.checks != 20001 {
		t.Errorf("%d queries checked, want 20001 (the one used again once)", c.checks)
	}
}

// TestQueryCacheKeepsItsKeys: an entry the cache moves from its previous generation to the
// current one is keyed by the cache's copy of the query, not by the string the caller looked
// it up with, which is a file's (its read buffer's memory, which the next file overwrites).
func TestQueryCacheKeepsItsKeys(t *testing.T) {
	c := newQueryCache()
	c.max = 1 // every entry added starts a new generation
	buf := []byte("up == 1")
	q := unsafe.String(unsafe.SliceData(buf), len(buf))
	check := func(text string) *queryResult { return &queryResult{textLen: len(text)} }
	c.get(queryKey{text: q}, check)       // in the current generation
	c.get(queryKey{text: "other"}, check) // which becomes the previous one
	c.get(queryKey{text: q}, check)       // moved back into the current one
	copy(buf, "xx != 2")                  // the next file read into the buffer
	for k, e := range c.cur {
		if k.text != e.text {
			t.Errorf("an entry for %q is keyed %q: its key is the caller's string, not the cache's copy", e.text, k.text)
		}
	}
	if len(c.cur) != 1 || c.checks != 2 {
		t.Errorf("%d entries in the current generation and %d checks, want 1 (the query moved back) and 2", len(c.cur), c.checks)
	}
}
