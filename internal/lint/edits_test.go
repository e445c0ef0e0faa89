package lint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestTrimEdit(t *testing.T) {
	tests := []struct {
		old, text  string
		start, end int
		want       string
	}{
		{`"vllm:gpu_cache_usage_perc"`, `"vllm:kv_cache_usage_perc"`, 6, 9, "kv"},
		{"abc", "abc", 3, 3, ""},
		{"ab", "aXb", 1, 1, "X"},
		{"aéb", "aèb", 1, 3, "è"}, // é and è share their first byte: the edit keeps whole characters
		{"x", "", 0, 1, ""},
	}
	for _, tt := range tests {
		s, e, text := trimEdit([]byte(tt.old), tt.text)
		if s != tt.start || e != tt.end || text != tt.want {
			t.Errorf("trimEdit(%q, %q) = %d, %d, %q; want %d, %d, %q", tt.old, tt.text, s, e, text, tt.start, tt.end, tt.want)
		}
	}
}

// Every fixable finding's edits, applied together, make the file --fix writes: the per-finding
// rewrites SARIF carries are the same rewrite, cut apart. Over the corpus and the fixtures.
func TestFindingEditsMakeTheFix(t *testing.T) {
	var files []string
	for _, dir := range []string{os.Getenv("KVCHECK_CORPUS"), "../../testdata/lint"} {
		if dir == "" {
			continue
		}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	l := newLinter(t, "")
	checked := 0
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := l.File(p, src)
		if r.Fixed == nil {
			continue
		}
		type e struct {
			start, end int
			text       string
		}
		var es []e
		for _, f := range r.Findings {
			if f.Fixed && len(f.Edits) == 0 {
				t.Errorf("%s: %s %d:%d is rewritten by --fix but has no edits", p, f.Code, f.Line, f.Column)
			}
			for _, x := range f.Edits {
				es = append(es, e{x.Start, x.End, x.Text})
			}
		}
		slices.SortFunc(es, func(a, b e) int { return a.start - b.start })
		es = slices.Compact(es) // a Grafana definition mirrored in two places
		var out []byte
		last := 0
		for _, x := range es {
			if x.start < last {
				t.Fatalf("%s: edits overlap at byte %d", p, x.start)
			}
			out = append(out, src[last:x.start]...)
			out = append(out, x.text...)
			last = x.end
		}
		out = append(out, src[last:]...)
		if string(out) != string(r.Fixed) {
			t.Errorf("%s: the findings' edits do not make --fix's file", p)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no file with a rewrite was checked")
	}
}
