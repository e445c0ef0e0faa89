package lint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSubstituteVariables checks that placeholders never panic and that every offset of the
// substituted text maps back inside the original.
func FuzzSubstituteVariables(f *testing.F) {
	for _, s := range []string{
		`rate(vllm:x{a="$v"}[$__rate_interval])`, `topk($n, [[m]]{j="${j:csv}"})`, `x offset $__interval`,
		`"unterminated $x`, `[[`, `${`, `$`, `x[5m:$__interval] / $__range_s`, "`raw $x`",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, q string, numeric bool) {
		s := substituteVariables(q, numeric)
		for i := 0; i <= len(s.text); i++ {
			if o := s.orig(i); o < 0 || o > len(q) {
				t.Fatalf("orig(%d) = %d outside [0, %d] for %q -> %q", i, o, len(q), q, s.text)
			}
		}
		if len(s.subs) == 0 && s.text != q {
			t.Fatalf("no substitutions but the text changed: %q -> %q", q, s.text)
		}
	})
}

// FuzzParseJSON compares the offset-keeping parser with encoding/json on validity, and
// checks that every string node's offsets cover its quoted source.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1, "a\"b", {"k": null}]`, `{"a":`, `"\u00e9"`, `[1e5, -0.5, true]`, "\"\xff\"", `{"a" 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseJSON(b)
		if (err == nil) != json.Valid(b) {
			t.Fatalf("parseJSON error %v, but json.Valid = %v for %q", err, json.Valid(b), b)
		}
		if err != nil {
			return
		}
		var walk func(*jsonNode)
		walk = func(n *jsonNode) {
			if n.start < 0 || n.end > len(b) || n.start >= n.end {
				t.Fatalf("node range [%d,%d) outside input of %d bytes", n.start, n.end, len(b))
			}
			if n.kind == 's' {
				var want string
				if err := json.Unmarshal(b[n.start:n.end], &want); err != nil || want != n.str {
					t.Fatalf("string node %q: source %q decodes to %q (%v)", n.str, b[n.start:n.end], want, err)
				}
			}
			for _, k := range n.kids {
				walk(k)
			}
		}
		walk(n)
	})
}

// FuzzFile runs format detection, extraction and checking on arbitrary input: no panic, and
// a rewrite, when there is one, lints again without a further rewrite.
func FuzzFile(f *testing.F) {
	entries, _ := os.ReadDir(fixtures)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(fixtures, e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"panels":[{"targets":[{"expr":"vllm:gpu_cache_usage_perc{a=\"\\u0076\"}"}]}]}`))
	f.Add([]byte("groups:\n- rules:\n  - expr: \"vllm:gpu_prefix_cache_hit_rate{a=\\\"b\\\"}\"\n"))
	f.Add([]byte("kind: ScaledObject\nspec: {triggers: [{metadata: {query: 'vllm:num_preemptions'}}]}\n"))
	l := newLinter(f, "")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := l.File("fuzz", b)
		for _, x := range r.Findings {
			if x.Line < 1 || x.Column < 1 {
				t.Fatalf("finding without a position: %+v", x)
			}
		}
		if r.Fixed == nil {
			return
		}
		if r.Formats[0] == FormatGrafana || r.Formats[0] == FormatGCM || r.Formats[0] == FormatJSON {
			if !json.Valid(r.Fixed) {
				t.Fatalf("rewritten JSON does not parse:\n%q\n->\n%q", b, r.Fixed)
			}
		}
		again := l.File("fuzz", r.Fixed)
		if again.Fixed != nil && !strings.Contains(string(r.Fixed), "\x00") {
			t.Fatalf("a second rewrite changes the file again:\n%q\n->\n%q\n->\n%q", b, r.Fixed, again.Fixed)
		}
	})
}
