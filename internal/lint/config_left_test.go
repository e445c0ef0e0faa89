package lint

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// lineOf returns the 1-based line of the first line of src holding s.
func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	i := strings.Index(src, s)
	if i < 0 {
		t.Fatalf("%q not in the source", s)
	}
	return strings.Count(src[:i], "\n") + 1
}

// A routing logic production-stack's router does not know is a warning at its file:line that
// names every logic kvcheck knows (and the nearest one, for a typo): at a6c01db the router
// refuses it at start, and it was read without a word before. Every known logic, and one given
// in routerSpec.extraArgs (rendered after the chart's, so argparse keeps it), is judged too.
func TestProdStackUnknownRoutingLogic(t *testing.T) {
	fancy := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, `routingLogic: "fancy"`, 1)
	typo := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, `routingLogic: kvawre`, 1)
	extra := prodStackKV + "  extraArgs:\n  - --routing-logic=fancy\n"
	extraSplit := prodStackKV + "  extraArgs: [\"--routing-logic\", \"kvaware\"]\n"
	tests := []struct {
		name, src string
		line      int
		want      []string // substrings of the message; none means no finding
	}{
		{"fancy", fancy, lineOf(t, fancy, "routingLogic:"), []string{`routing logic "fancy"`, "roundrobin, session, prefixaware, kvaware, loadaware, disaggregated_prefill, disaggregated_prefill_orchestrated", "refuses it at start"}},
		{"typo", typo, lineOf(t, typo, "routingLogic:"), []string{`"kvawre"`, "did you mean kvaware?"}},
		{"extraArgs", extra, lineOf(t, extra, "--routing-logic=fancy"), []string{`routing logic "fancy"`}},
		{"extraArgs negative: known", extraSplit, 0, nil},
	}
	for _, logic := range ProdStackRoutingLogics() {
		src := strings.Replace(prodStackKV, `routingLogic: "prefixaware"`, "routingLogic: "+logic, 1)
		tests = append(tests, struct {
			name, src string
			line      int
			want      []string
		}{"negative: " + logic, src, 0, nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLinter(t, "").File("values.yaml", []byte(tt.src))
			var got []Finding
			for _, f := range r.Findings {
				if f.Code == "production-stack/unknown-routing-logic" {
					got = append(got, f)
				}
			}
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d unknown-routing-logic findings, want 1 (all: %v)", len(got), r.Findings)
			}
			f := got[0]
			if f.File != "values.yaml" || f.Line != tt.line || f.Severity != finding.Warning {
				t.Errorf("at %s:%d as %v, want values.yaml:%d as a warning", f.File, f.Line, f.Severity, tt.line)
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
		})
	}
}
