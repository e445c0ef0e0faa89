package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// LintRun is everything `kvcheck lint` reports.
type LintRun struct {
	Target string // the vLLM version findings are judged against
	Files  []lint.FileResult
	// Fix says the fixes were written; findings marked Fixed are then resolved.
	Fix bool
	// Prometheus is the server the online check asked, if any.
	Prometheus string
	Lookback   string
}

// lintCounts summarises a run.
type lintCounts struct {
	files, filesWithFindings, queries            int
	errors, warnings, infos, fixable, fixed, all int
	suppressed                                   int
}

func countLint(run LintRun) lintCounts {
	var c lintCounts
	for _, f := range run.Files {
		c.files++
		c.queries += f.Queries
		c.suppressed += len(f.Suppressed)
		if len(f.Findings) > 0 {
			c.filesWithFindings++
		}
		for _, x := range f.Findings {
			c.all++
			switch x.Severity {
			case finding.Error:
				c.errors++
			case finding.Warning:
				c.warnings++
			default:
				c.infos++
			}
			if x.Fixable() {
				c.fixable++
			}
			if x.Fixed && run.Fix {
				c.fixed++
			}
		}
	}
	return c
}

// LintText writes findings grouped by file, then a summary line.
func LintText(t *Text, run LintRun) {
	for _, f := range run.Files {
		if len(f.Findings) == 0 {
			continue
		}
		formats := make([]string, len(f.Formats))
		for i, x := range f.Formats {
			formats[i] = string(x)
		}
		t.Heading(fmt.Sprintf("%s (%s)", f.Path, strings.Join(dedupe(formats), ", ")))
		for _, x := range f.Findings {
			where := ""
			if x.Location != "" {
				where = " " + x.Location
			}
			mark := ""
			switch {
			case x.Fixed && run.Fix:
				mark = " [fixed]"
			case x.Fixable():
				mark = " [fixable]"
			}
			rule := ""
			if x.Status == lint.StatusConfig {
				rule = " [" + x.Code + "]"
				if x.Rule != "" {
					rule = " [" + x.Rule + " " + x.Code + "]"
				}
			}
			t.Line("  %s %d:%d%s: %s%s%s", t.Badge(x.Severity), x.Line, x.Column, where, x.Message, rule, mark)
			if x.Fix != "" {
				t.Muted("      fix: %s", x.Fix)
			}
		}
	}
	c := countLint(run)
	if c.all == 0 {
		t.Verdict(fmt.Sprintf("No findings in %s (%s checked) against vLLM %s.",
			quantity(c.files, "file"), quantity(c.queries, "query and name", "queries and names"), run.Target))
		if c.suppressed > 0 {
			t.Muted("%d suppressed by kvcheck:ignore comments or the ignore file.", c.suppressed)
		}
		return
	}
	msg := fmt.Sprintf("%s (%s, %s, %d info) in %d of %s, judged against vLLM %s.",
		quantity(c.all, "finding"), quantity(c.errors, "error"), quantity(c.warnings, "warning"), c.infos,
		c.filesWithFindings, quantity(c.files, "file"), run.Target)
	t.Verdict(msg)
	if c.suppressed > 0 {
		t.Muted("%d suppressed by kvcheck:ignore comments or the ignore file.", c.suppressed)
	}
	switch {
	case run.Fix:
		t.Muted("%d rewritten in place; the rest need a person.", c.fixed)
	case c.fixable == 1:
		t.Muted("1 has an exact rewrite: run with --diff to see it, --fix to apply it.")
	case c.fixable > 1:
		t.Muted("%d have an exact rewrite: run with --diff to see it, --fix to apply it.", c.fixable)
	}
}

// quantity writes a count with its noun: 1 file, 2 files; forms gives the singular and, when
// it is not the singular plus s, the plural.
func quantity(n int, forms ...string) string {
	if n == 1 {
		return "1 " + forms[0]
	}
	if len(forms) > 1 {
		return fmt.Sprintf("%d %s", n, forms[1])
	}
	return fmt.Sprintf("%d %ss", n, forms[0])
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}

type lintDoc struct {
	SchemaVersion int            `json:"schema_version"`
	Target        string         `json:"target_version"`
	Prometheus    string         `json:"prometheus,omitempty"`
	Lookback      string         `json:"lookback,omitempty"`
	Files         []lintFileDoc  `json:"files"`
	Findings      []lintFinding  `json:"findings"`
	Suppressed    []lintFinding  `json:"suppressed"`
	Summary       lintSummaryDoc `json:"summary"`
}

type lintFileDoc struct {
	File     string   `json:"file"`
	Formats  []string `json:"formats"`
	Queries  int      `json:"queries"`
	Findings int      `json:"findings"`
	Fixed    bool     `json:"fixed"`
}

type lintFinding struct {
	File        string           `json:"file"`
	Line        int              `json:"line"`
	Column      int              `json:"column"`
	Pointer     string           `json:"pointer,omitempty"`
	Location    string           `json:"location"`
	Metric      string           `json:"metric"`
	Status      string           `json:"status"`
	Since       string           `json:"since"`
	Replacement string           `json:"replacement"`
	Severity    finding.Severity `json:"severity"`
	Code        string           `json:"code"`
	Message     string           `json:"message"`
	Fixable     bool             `json:"fixable"`
	Fixed       bool             `json:"fixed"`
	// Rule is the router facts table's id of a config finding; Fix names the key and value.
	Rule string `json:"rule,omitempty"`
	Fix  string `json:"fix,omitempty"`
	// SuppressedBy and Reason say which comment or ignore-file line silenced a finding.
	SuppressedBy string `json:"suppressed_by,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

type lintSummaryDoc struct {
	Files      int `json:"files"`
	Queries    int `json:"queries"`
	Findings   int `json:"findings"`
	Errors     int `json:"errors"`
	Warnings   int `json:"warnings"`
	Info       int `json:"info"`
	Fixable    int `json:"fixable"`
	Fixed      int `json:"fixed"`
	Suppressed int `json:"suppressed"`
}

// LintJSON writes the run as one JSON document.
func LintJSON(w io.Writer, run LintRun) error {
	c := countLint(run)
	doc := lintDoc{SchemaVersion: SchemaVersion, Target: run.Target, Prometheus: run.Prometheus, Lookback: run.Lookback,
		Files: []lintFileDoc{}, Findings: []lintFinding{}, Suppressed: []lintFinding{},
		Summary: lintSummaryDoc{Files: c.files, Queries: c.queries, Findings: c.all, Errors: c.errors,
			Warnings: c.warnings, Info: c.infos, Fixable: c.fixable, Fixed: c.fixed, Suppressed: c.suppressed}}
	for _, f := range run.Files {
		formats := make([]string, len(f.Formats))
		for i, x := range f.Formats {
			formats[i] = string(x)
		}
		doc.Files = append(doc.Files, lintFileDoc{File: f.Path, Formats: formats, Queries: f.Queries,
			Findings: len(f.Findings), Fixed: run.Fix && f.Fixed != nil})
		for _, x := range f.Findings {
			doc.Findings = append(doc.Findings, lintFinding{File: x.File, Line: x.Line, Column: x.Column,
				Pointer: x.Pointer, Location: x.Location, Metric: x.Metric, Status: x.Status, Since: x.Since,
				Replacement: x.Replacement, Severity: x.Severity, Code: x.Code, Message: x.Message,
				Fixable: x.Fixable(), Fixed: x.Fixed && run.Fix, Rule: x.Rule, Fix: x.Fix})
		}
		for _, s := range f.Suppressed {
			x := s.Finding
			doc.Suppressed = append(doc.Suppressed, lintFinding{File: x.File, Line: x.Line, Column: x.Column,
				Pointer: x.Pointer, Location: x.Location, Metric: x.Metric, Status: x.Status, Since: x.Since,
				Replacement: x.Replacement, Severity: x.Severity, Code: x.Code, Message: x.Message,
				Rule: x.Rule, Fix: x.Fix, SuppressedBy: s.By, Reason: s.Reason})
		}
	}
	return JSON(w, doc)
}

// LintGitHub writes GitHub Actions workflow commands, one annotation per finding.
func LintGitHub(w io.Writer, run LintRun) error {
	for _, f := range run.Files {
		for _, x := range f.Findings {
			level := "notice"
			switch x.Severity {
			case finding.Error:
				level = "error"
			case finding.Warning:
				level = "warning"
			}
			msg := x.Message
			if x.Location != "" {
				msg = x.Location + ": " + msg
			}
			if x.Rule != "" {
				msg = x.Rule + " " + msg
			}
			if x.Fix != "" {
				msg += "\nfix: " + x.Fix
			}
			_, err := fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,title=%s::%s\n", level,
				ghProperty(filepath.ToSlash(x.File)), x.Line, x.Column, ghProperty("kvcheck "+x.Code), ghData(msg))
			if err != nil {
				return fmt.Errorf("write annotations: %w", err)
			}
		}
	}
	return nil
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
