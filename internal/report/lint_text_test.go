package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// manyFiles is a run of n files made of the fixtures' real results (fixable findings among
// them) and findings that take every turn of the text: a character to escape, a tab, a
// credential in a URL, a config rule with and without its id, a fixed one, one the baseline
// holds, no location, a path a workflow command could be read in.
func manyFiles(t *testing.T, n int) LintRun {
	t.Helper()
	base := lintRun(t)
	run := base
	run.Files = nil
	for i := range n {
		f := base.Files[i%len(base.Files)]
		f.Path = fmt.Sprintf("team-%02d/%s", i%7, f.Path)
		f.Findings = append([]lint.Finding(nil), f.Findings...)
		add := func(x lint.Finding) {
			x.File, x.Line, x.Column = f.Path, 1+i%50, 1+i%9
			f.Findings = append(f.Findings, x)
		}
		switch i % 9 {
		case 0:
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Warning, Code: lint.CodeUnknown, Message: "odd \x1b[31mname\x1b[0m\there"}, Location: "panel \"a\tb\""})
		case 1:
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Error, Code: "LL-02", Rule: "LL-02", Message: "router at http://u:secret@h:4000/ routes at random",
				Fix: "set routing_strategy: simple-shuffle"}, Status: lint.StatusConfig})
		case 2:
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Info, Code: "PS-03", Message: "the command sets --api-key=sk-live-1 inline"}, Status: lint.StatusConfig})
		case 3:
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Error, Code: lint.CodeRemoved, Message: "gone", Fix: "take vllm:x"}, Fixed: true})
		case 4:
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Error, Code: lint.CodeRemoved, Message: "known", Baseline: lint.BaselineUnchanged}})
		case 5:
			f.Path = "::warning::" + f.Path
			add(lint.Finding{Finding: finding.Finding{Severity: finding.Warning, Code: lint.CodeStale, Message: "##[error] stopped"}, Location: "rule \u2028x"})
		}
		run.Files = append(run.Files, f)
	}
	run.Fix = true
	return run
}

// TestLintTextAnyJobs: the report of a run is the same text whether its files' lines are
// written by one goroutine or several (more files than one block holds), and whether a line
// goes through lintLine's appends or through Line and Muted, which format, escape and style
// it: a Text with a width no line reaches takes the second way and must write the same bytes.
func TestLintTextAnyJobs(t *testing.T) {
	run := manyFiles(t, 3*lintBlock+17)
	text := func(jobs int, slow bool) string {
		var b bytes.Buffer
		r := run
		r.Jobs = jobs
		tx := NewText(&b, false)
		if slow {
			tx.width = 1 << 30
		}
		tx.lint(r)
		return b.String()
	}
	want := text(1, true)
	for _, c := range []struct {
		jobs int
		slow bool
	}{{1, false}, {2, false}, {3, false}, {8, false}, {4, true}} {
		if got := text(c.jobs, c.slow); got != want {
			t.Errorf("jobs %d, slow path %v: the text differs from one writer's through Line:\n%s", c.jobs, c.slow, cmp.Diff(want, got))
		}
	}
	// The text is what the findings say, escaped, masked and guarded: checked on the slow
	// path's text, which the others equal.
	for _, s := range []string{`odd \x1b[31mname\x1b[0m\there`, `at http://u:xxxxx@h:4000/`, "--api-key=xxxxx inline [PS-03]", "random [LL-02 LL-02]\n", "  ERROR 4:4: gone [fixed]\n",
		`\::warning::team-`, `##\[error] stopped`, "      fix: set routing_strategy: simple-shuffle"} {
		if !strings.Contains(want, s) {
			t.Errorf("the report lacks %q", s)
		}
	}
	if strings.Contains(want, "secret") || strings.Contains(want, "sk-live-1") || strings.Contains(want, ": known") {
		t.Error("a credential or a finding the baseline holds is in the report")
	}
}
