package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// StepSummaryLimit is the most a step summary takes: GitHub refuses a step's summary over
// 1 MiB, so the table stops short of it and says how many rows it left out.
const StepSummaryLimit = 1000 << 10

// WriteStepSummary appends a Markdown table of every finding to a GitHub Actions step summary
// ($GITHUB_STEP_SUMMARY), headed by the command: annotations show GitHub's first ten errors
// and ten warnings of a step, the summary shows all of them. A finding that does not count for
// --fail-on (rewritten by --fix, or in the baseline) says so.
func WriteStepSummary(path, command string, r Result) error {
	if r.Streamed && r.Findings == nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	var shown []finding.Finding
	baselined := 0
	for _, x := range r.Findings {
		if x.Baseline == "unchanged" {
			baselined++
			continue
		}
		shown = append(shown, x)
	}
	werr := stepSummary(f, command, shown, StepSummaryLimit)
	if werr == nil && baselined > 0 {
		_, werr = fmt.Fprintf(f, "%s in the baseline not shown: they do not fail the run.\n\n", quantity(baselined, "finding"))
	}
	if err := f.Close(); werr == nil && err != nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, werr)
	}
	return nil
}

func stepSummary(w io.Writer, command string, fs []finding.Finding, limit int) error {
	var b strings.Builder
	var errs, warns, infos, exempt int
	for _, f := range fs {
		switch f.Severity {
		case finding.Error:
			errs++
		case finding.Warning:
			warns++
		default:
			infos++
		}
		if f.Exempt {
			exempt++
		}
	}
	fmt.Fprintf(&b, "### %s\n\n", mdEscape(command))
	if len(fs) == 0 {
		b.WriteString("No findings.\n\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%s: %s, %s, %d info", quantity(len(fs), "finding"), quantity(errs, "error"), quantity(warns, "warning"), infos)
	if exempt > 0 {
		fmt.Fprintf(&b, " (%d of them do not count for --fail-on)", exempt)
	}
	b.WriteString(".\n\n| severity | code | where | message |\n|---|---|---|---|\n")
	left := 0
	for i, f := range fs {
		row := summaryRow(f)
		if b.Len()+len(row) > limit-200 {
			left = len(fs) - i
			break
		}
		b.WriteString(row)
	}
	if left > 0 {
		fmt.Fprintf(&b, "\n%s not shown: a step summary holds 1 MiB. The SARIF or JSON output has every finding.\n", quantity(left, "more finding"))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func summaryRow(f finding.Finding) string {
	where := f.Subject
	if f.File != "" {
		where = fmt.Sprintf("%s:%d:%d", filepath.ToSlash(f.File), max(f.Line, 1), max(f.Column, 1))
		if f.Subject != "" && f.Subject != f.File {
			where += " " + f.Subject
		}
	}
	code := f.Code
	if f.Rule != "" {
		code = f.Rule + " " + code
	}
	msg := f.Message
	if f.Fix != "" {
		msg += "\nfix: " + f.Fix
	}
	sev := f.Severity.String()
	if f.Exempt {
		sev += " (does not count)"
	}
	return fmt.Sprintf("| %s | %s | %s | %s |\n", sev, mdEscape(code), mdEscape(where), mdEscape(msg))
}

// mdEscape makes text one Markdown table cell that renders as written: HTML and Markdown's
// inline marks are escaped, a pipe cannot end the cell and a newline becomes a line break.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '|', '\\', '`', '*', '_', '[', ']', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString("<br>")
		case '\r':
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, "&#%d;", r)
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
