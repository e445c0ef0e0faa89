package config

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzDuplicateJSONKeys reads arbitrary flag values: no panic; every offset a finding names is
// the opening quote of that key in the value; and the same JSON without duplicates (decoded and
// written again, which keeps one of each key) gives no finding.
func FuzzDuplicateJSONKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1, "c":2}]},"a":3}`, ` { "x" : [ ] , "x" : { } } `, `{"a":`, `[{"a":1,"a":1}]`, `{"\u0061":1,"a":2}`, `{}`} {
		f.Add(s)
	}
	offsets := regexp.MustCompile(`at characters ([0-9, and]+) of the value`)
	f.Fuzz(func(t *testing.T, v string) {
		l := New(Options{})
		fl := l.NewFile("fuzz", nil, nil)
		u := FlagUse{Dest: "--kv-events-config", Name: Token{Text: "--kv-events-config", At: Pos{1, 1}}, Val: Token{Text: v, At: Pos{1, 20}}, HasVal: true}
		fl.duplicateJSONKeys(u, "vLLM", "fuzz")
		trimmed := strings.TrimLeft(v, " \t\r\n")
		lead := len(v) - len(trimmed)
		for _, x := range fl.findings {
			m := offsets.FindStringSubmatch(x.Message)
			if m == nil {
				t.Fatalf("finding without offsets: %q", x.Message)
			}
			for _, o := range strings.FieldsFunc(m[1], func(r rune) bool { return r < '0' || r > '9' }) {
				n, _ := strconv.Atoi(o)
				// Offsets count in the value as trimmed of leading blanks.
				if n < 1 || lead+n-1 >= len(v) || v[lead+n-1] != '"' {
					t.Fatalf("offset %d is not a key's opening quote in %q (%q)", n, v, x.Message)
				}
			}
		}
		var decoded any
		if json.Unmarshal([]byte(v), &decoded) != nil {
			return
		}
		clean, err := json.Marshal(decoded)
		if err != nil {
			return
		}
		fl = l.NewFile("fuzz", nil, nil)
		u.Val.Text = string(clean)
		fl.duplicateJSONKeys(u, "vLLM", "fuzz")
		if len(fl.findings) != 0 {
			t.Fatalf("%q has no duplicate key, but: %v", clean, fl.findings)
		}
	})
}
