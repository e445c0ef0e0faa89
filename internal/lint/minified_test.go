package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// minifiedDashboard is a Grafana dashboard of n panels on one line, as exported by tools
// that minify JSON.
func minifiedDashboard(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"title":"big","schemaVersion":39,"panels":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"type":"timeseries","title":"p%d é","gridPos":{"h":8,"w":12,"x":0,"y":%d},"targets":[{"expr":"rate(vllm:prefix_cache_hits_total{job=\"a%d\"}[5m]) / rate(vllm:gpu_prefix_cache_queries_total[5m])","refId":"A"}]}`, i, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestLintMinifiedLinear: a dashboard on one line costs what the same dashboard pretty-printed
// costs. Positions were found by converting the line up to each finding to characters, and
// inline suppressions by copying the finding's line, so a one-line 20,000-panel dashboard took
// 21 s against 0.3 s pretty-printed. The work is measured as bytes allocated, which is
// deterministic: with 3,000 panels the minified file allocated hundreds of times more.
func TestLintMinifiedLinear(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := New(cat, Options{})
	minified := minifiedDashboard(3000)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, minified, "", "  "); err != nil {
		t.Fatal(err)
	}
	var rm, rp []FileResult
	// Once each first: the files' JSON trees are cut from slabs kept between files
	// (jsonArena), so the first file read pays for slabs the next ones reuse.
	l.File("min.json", minified)
	l.File("pretty.json", pretty.Bytes())
	am := allocated(func() { rm = l.Finish([]FileResult{l.File("min.json", minified)}) })
	ap := allocated(func() { rp = l.Finish([]FileResult{l.File("pretty.json", pretty.Bytes())}) })
	if len(rm[0].Findings) != len(rp[0].Findings) || len(rm[0].Findings) < 3000 {
		t.Fatalf("%d findings minified, %d pretty; want the same, at least 3000", len(rm[0].Findings), len(rp[0].Findings))
	}
	t.Logf("minified %d KiB, pretty %d KiB", am>>10, ap>>10)
	if am > 2*ap {
		t.Errorf("minified allocated %d MiB, pretty-printed %d MiB: want at most twice", am>>20, ap>>20)
	}
	// The last finding is on line 1, at the character column of its byte offset.
	last := rm[0].Findings[len(rm[0].Findings)-1]
	off := bytes.LastIndex(minified, []byte("vllm:gpu_prefix_cache_queries_total"))
	if want := utf8.RuneCount(minified[:off]) + 1; last.Line != 1 || last.Column != want {
		t.Errorf("last finding at %d:%d, want 1:%d", last.Line, last.Column, want)
	}
}
