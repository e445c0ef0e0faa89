package report

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// LintRun is one kvcheck lint run (lint.Check builds it).
type LintRun = lint.Run

// lintCounts summarises a run.
type lintCounts struct {
	files, filesWithFindings, queries            int
	errors, warnings, infos, fixable, fixed, all int
	suppressed, baselined                        int
}

func countLint(run LintRun) lintCounts {
	var c lintCounts
	for _, f := range run.Files {
		c.files++
		c.queries += f.Queries
		c.suppressed += len(f.Suppressed)
		if slices.ContainsFunc(f.Findings, func(x lint.Finding) bool { return x.Baseline != lint.BaselineUnchanged }) {
			c.filesWithFindings++
		}
		for _, x := range f.Findings {
			if x.Baseline == lint.BaselineUnchanged {
				c.baselined++
				continue
			}
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

// Lint is the result of kvcheck lint. Its findings are the references, each with its panel or
// rule as subject and the metric, status and replacement as properties; with --fix, the ones
// rewritten are resolved and no longer count for --fail-on.
func Lint(run LintRun) Result {
	return Result{Findings: lintFindings(run), Document: func() any { return lintDocument(run) }, Rules: lintRuleList(),
		Text: func(t *Text) error { t.lint(run); return nil }}
}

// LintDiff is the result of kvcheck lint --diff: the unified diff of what --fix would write,
// as it is in every format. Its findings count for --fail-on as without --diff.
func LintDiff(run LintRun, diff string) Result {
	return Result{Findings: lintFindings(run), Verbatim: diff}
}

// lintRules describes each finding code for code-scanning's rule list.
var lintRules = []Rule{
	{Code: lint.CodeRemoved, Description: "A metric (vLLM, llm-d, GAIE) removed at its family's target release, or never in a release", Level: finding.Error},
	{Code: lint.CodeHidden, Description: "A vLLM metric hidden at the target version (only shown with --show-hidden-metrics-for-version)", Level: finding.Error},
	{Code: lint.CodeDeprecated, Description: "A deprecated metric (vLLM, llm-d, GAIE)", Level: finding.Warning},
	{Code: lint.CodeUnknown, Description: "A name no publisher exposes (a typo, a counter without _total, newer than the target or the catalog)", Level: finding.Warning},
	{Code: lint.CodeCounterRaw, Description: "A counter used without rate(), increase() or irate(): a lifetime total since the server started", Level: finding.Warning},
	{Code: lint.CodeRatioMismatch, Description: "A ratio of rates over different windows, or of differently aggregated or selected series", Level: finding.Warning},
	{Code: lint.CodeQuantile, Description: "histogram_quantile over a series that is not _bucket, or aggregated without le", Level: finding.Warning},
	{Code: lint.CodeLabelDrift, Description: "A label vLLM does not set on the metric (model instead of model_name)", Level: finding.Warning},
	{Code: lint.CodeUnparsed, Description: "A query that does not parse and was not checked", Level: finding.Warning},
	{Code: lint.CodeSkipped, Description: "A file that could only be partly checked", Level: finding.Info},
	{Code: lint.CodeYAMLBomb, Description: "A file whose YAML aliases expand past kvcheck's bound (a YAML bomb): refused", Level: finding.Error},
	{Code: lint.CodeAbsent, Description: "A referenced metric with no series on the Prometheus server within the lookback", Level: finding.Warning},
	{Code: lint.CodeStale, Description: "A referenced metric whose series stopped within the lookback", Level: finding.Warning},
}

// configRule is a config check's rule as SARIF describes it: the table's sentence, where it
// holds and where the behaviour was read, and its README row.
func configRule(r lint.Rule) Rule {
	id := ""
	if r.ID != "" {
		id = " (router facts table " + r.ID + ")"
	}
	full := fmt.Sprintf("%s: %s%s. Holds for: %s. Source: %s.", r.System, r.Summary, id, r.Versions, r.Source)
	help := fmt.Sprintf("**%s**%s: %s.\n\n- Holds for: %s\n- Read in: %s\n- The finding's `fix` names the key and value; `kvcheck lint --fix` rewrites it where the fix is one unambiguous value.\n- Suppress one with a `kvcheck:ignore %s reason` comment, or for a path in `.kvcheckignore`.",
		r.System, id, r.Summary, r.Versions, r.Source, r.Code)
	return Rule{Code: r.Code, Description: r.Summary, Level: r.Severity, Full: full, Help: help,
		HelpURI: ReadmeURL + "#" + lint.RuleAnchor(r.Code)}
}

// metricRule completes one of lintRules for SARIF: its README row and what to do.
func metricRule(r Rule) Rule {
	r.Full = r.Description + "."
	r.Help = fmt.Sprintf("%s.\n\n`kvcheck lint` reports it for dashboards, rule files and autoscalers; a finding marked fixable has an exact rewrite (`--diff` shows it, `--fix` writes it). Suppress one with a `kvcheck:ignore %s reason` comment, a line in `.kvcheckignore`, or a `kvcheck:ignore` marker in a Grafana panel's description.", r.Description, r.Code)
	r.HelpURI = ReadmeURL + "#" + lint.RuleAnchor(r.Code)
	return r
}

// LintCodesMarkdown renders the metric checks' codes as the README lists them, each row with
// the anchor SARIF's help links to.
func LintCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | severity | what it reports |\n|---|---|---|\n")
	rs := slices.Clone(lintRules)
	slices.SortFunc(rs, func(a, b Rule) int { return strings.Compare(a.Code, b.Code) })
	for _, r := range rs {
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s |\n", lint.RuleAnchor(r.Code), r.Code, r.Level, strings.ReplaceAll(r.Description, "|", "\\|"))
	}
	return b.String()
}

// lintRuleList is the metric checks' rules sorted by code, then the config rules in the
// order of lint's table.
func lintRuleList() []Rule {
	var out []Rule
	for _, r := range lintRules {
		out = append(out, metricRule(r))
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.Code, b.Code) })
	for _, r := range lint.Rules() {
		out = append(out, configRule(r))
	}
	return out
}

// lintFindings flattens the run's findings in file order for --fail-on, SARIF and annotations.
func lintFindings(run LintRun) []finding.Finding {
	n := 0
	for _, f := range run.Files {
		n += len(f.Findings)
	}
	out := make([]finding.Finding, 0, n)
	for _, f := range run.Files {
		for _, x := range f.Findings {
			y := x.Finding
			y.Subject = x.Location
			y.Fixable = x.Fixable()
			y.Exempt = (x.Fixed && run.Fix) || x.Baseline == lint.BaselineUnchanged
			if y.Exempt {
				y.Edits = nil // written: the file no longer holds what the edits replace
			}
			y.Properties = map[string]string{"status": x.Status}
			if x.Status != lint.StatusConfig {
				y.Properties["metric"], y.Properties["target_version"] = x.Metric, run.Target
			}
			if x.Since != "" {
				y.Properties["since"] = x.Since
			}
			if x.Replacement != "" {
				y.Properties["replacement"] = x.Replacement
			}
			if x.Location != "" {
				y.Properties["location"] = x.Location
			}
			out = append(out, y)
		}
	}
	return out
}

// lint writes findings grouped by file, then a summary line.
func (t *Text) lint(run LintRun) {
	t.lintFiles(run)
	c := countLint(run)
	notes := func() {
		if c.suppressed > 0 {
			t.Muted("%d suppressed by kvcheck:ignore comments, the ignore file or the kvcheck config.", c.suppressed)
		}
		if c.baselined > 0 {
			t.Muted("%s in the baseline %s not shown: they do not fail the run.", quantity(c.baselined, "finding"), run.Baseline)
		}
		if run.ChangedSince != "" {
			t.Muted("Only the files changed since %s were linted (%d others left out); checks across files saw only these.", run.ChangedSince, run.Unchanged)
		}
		t.lintSkipped(run)
	}
	if c.all == 0 {
		adj := ""
		if run.Baseline != "" {
			adj = "new "
		}
		t.Verdict(fmt.Sprintf("No %sfindings in %s (%s checked) against %s.", adj,
			quantity(c.files, "file"), quantity(c.queries, "query and name", "queries and names"), judgedAgainst(run)))
		notes()
		return
	}
	msg := fmt.Sprintf("%s (%s, %s, %d info) in %d of %s, judged against %s.",
		quantity(c.all, "finding"), quantity(c.errors, "error"), quantity(c.warnings, "warning"), c.infos,
		c.filesWithFindings, quantity(c.files, "file"), judgedAgainst(run))
	t.Verdict(msg)
	notes()
	switch {
	case run.Fix:
		t.Muted("%d rewritten in place; the rest need a person.", c.fixed)
	case c.fixable == 1:
		t.Muted("1 has an exact rewrite: run with --diff to see it, --fix to apply it.")
	case c.fixable > 1:
		t.Muted("%d have an exact rewrite: run with --diff to see it, --fix to apply it.", c.fixable)
	}
}

// lintFiles writes each file's findings, in the run's order. With more than one job
// (run.Jobs), blocks of lintBlock files are written into buffers by that many goroutines and
// the buffers copied out in order, at most 2 x jobs + 1 blocks of text held at once: the text is
// the same as one writer's, line for line (each line goes through the same masking and
// guard), and a tree of dashboards' report (34,000 findings, 9.7 MB) is written on every core
// instead of one, after the files were linted on every core.
func (t *Text) lintFiles(run LintRun) {
	files, jobs := run.Files, max(run.Jobs, 1)
	if jobs == 1 || len(files) <= lintBlock {
		for _, f := range files {
			t.lintFile(f, run.Fix)
		}
		return
	}
	type part struct {
		buf  *bytes.Buffer
		done chan struct{}
	}
	parts := make(chan *part, 2*jobs) // started, in order
	free := make(chan *bytes.Buffer, 2*jobs+1)
	for range cap(free) {
		free <- new(bytes.Buffer)
	}
	running := make(chan struct{}, jobs)
	go func() {
		defer close(parts)
		for i := 0; i < len(files); i += lintBlock {
			p := &part{buf: <-free, done: make(chan struct{})}
			parts <- p
			running <- struct{}{}
			go func(fs []lint.FileResult) {
				defer func() { <-running; close(p.done) }()
				sub := t.into(p.buf)
				for _, f := range fs {
					sub.lintFile(f, run.Fix)
				}
			}(files[i:min(i+lintBlock, len(files))])
		}
	}()
	for p := range parts {
		<-p.done
		_, _ = t.out.Write(p.buf.Bytes()) // a write error is the writer's to keep (bufio), as for every line
		p.buf.Reset()
		free <- p.buf
	}
}

// lintBlock is how many files' findings one goroutine writes at a time (lintFiles).
const lintBlock = 256

// lintFile writes one file's findings: a heading naming it and its formats, a line each (but
// those the baseline holds), and the fix under a finding that has one.
func (t *Text) lintFile(f lint.FileResult, fix bool) {
	if !slices.ContainsFunc(f.Findings, func(x lint.Finding) bool { return x.Baseline != lint.BaselineUnchanged }) {
		return
	}
	formats := make([]string, len(f.Formats))
	for i, x := range f.Formats {
		formats[i] = string(x)
	}
	t.Heading(fmt.Sprintf("%s (%s)", f.Path, strings.Join(dedupe(formats), ", ")))
	plain := t.plain()
	for _, x := range f.Findings {
		if x.Baseline == lint.BaselineUnchanged {
			continue
		}
		if plain && !hasHidden(x.Location) && !hasHidden(x.Message) && !hasHidden(x.Fix) && !hasHidden(x.Code) && !hasHidden(x.Rule) {
			t.lintLine(x, fix)
			continue
		}
		where := ""
		if x.Location != "" {
			where = " " + x.Location
		}
		mark := ""
		switch {
		case x.Fixed && fix:
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

// lintLine writes one finding's lines as lintFile's Line and Muted calls write them, for a Text
// that writes lines as they are (plain) and a finding with nothing to escape: appended into one
// buffer the Text keeps, without the formatting's copies (a report on a tree of dashboards has
// 70,000 such lines).
func (t *Text) lintLine(x lint.Finding, fix bool) {
	b := append(t.line[:0], "  "...)
	b = append(b, strings.ToUpper(x.Severity.String())...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(x.Line), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(x.Column), 10)
	if x.Location != "" {
		b = append(append(b, ' '), x.Location...)
	}
	b = append(append(b, ": "...), x.Message...)
	if x.Status == lint.StatusConfig {
		b = append(b, " ["...)
		if x.Rule != "" {
			b = append(append(b, x.Rule...), ' ')
		}
		b = append(append(b, x.Code...), ']')
	}
	switch {
	case x.Fixed && fix:
		b = append(b, " [fixed]"...)
	case x.Fixable():
		b = append(b, " [fixable]"...)
	}
	_, _ = t.w.Write(append(b, '\n'))
	if x.Fix != "" {
		b = append(append(append(b[:0], "      fix: "...), x.Fix...), '\n')
		_, _ = t.w.Write(b)
	}
	t.line = b
}

// lintSkipped counts what the run met and did not check, by class: "Not checked: hidden
// directories 1, binary files 2 (each listed under skipped in -o json)."
func (t *Text) lintSkipped(run LintRun) {
	if len(run.Skipped) == 0 {
		return
	}
	var order []string
	n := map[string]int{}
	for _, s := range run.Skipped {
		if n[s.What] == 0 {
			order = append(order, s.What)
		}
		n[s.What]++
	}
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%s %d", w, n[w])
	}
	t.Muted("Not checked: %s (each listed under skipped in -o json).", strings.Join(parts, ", "))
}

// judgedAgainst names the release of every family whose names the run's files use:
// "vLLM 0.32.0, llm-d-router 0.10.0"; vLLM's target when the run carries no families.
func judgedAgainst(run LintRun) string {
	if len(run.Targets) == 0 {
		return "vLLM " + run.Target
	}
	parts := make([]string, len(run.Targets))
	for i, t := range run.Targets {
		parts[i] = t.Display + " " + t.Version.String()
	}
	return strings.Join(parts, ", ")
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
	SchemaVersion int    `json:"schema_version"`
	Target        string `json:"target_version"`
	// Targets are the releases of the families the files' names belong to, by family.
	Targets    map[string]string `json:"targets"`
	Prometheus string            `json:"prometheus,omitempty"`
	Lookback   string            `json:"lookback,omitempty"`
	// Baseline and ChangedSince are the run's --baseline file and --changed-since revision.
	Baseline     string        `json:"baseline,omitempty"`
	ChangedSince string        `json:"changed_since,omitempty"`
	Files        []lintFileDoc `json:"files"`
	Findings     []lintFinding `json:"findings"`
	Suppressed   []lintFinding `json:"suppressed"`
	// Skipped is what the run met and did not check, each with its class and reason.
	Skipped []lintSkippedDoc `json:"skipped"`
	Summary lintSummaryDoc   `json:"summary"`
}

type lintSkippedDoc struct {
	Path   string `json:"path"`
	What   string `json:"what"`
	Reason string `json:"reason"`
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
	// Baseline is new or unchanged with --baseline.
	Baseline string `json:"baseline,omitempty"`
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
	// Baselined counts the findings in the baseline, not in Findings' counts.
	Baselined int `json:"baselined"`
	Skipped   int `json:"skipped"`
}

// lintDocument is the run as one JSON document.
func lintDocument(run LintRun) lintDoc {
	c := countLint(run)
	targets := map[string]string{}
	for _, t := range run.Targets {
		targets[t.Family] = t.Version.String()
	}
	if len(targets) == 0 {
		targets["vllm"] = run.Target
	}
	doc := lintDoc{SchemaVersion: SchemaVersion, Target: run.Target, Targets: targets, Prometheus: run.Prometheus, Lookback: run.Lookback,
		Baseline: run.Baseline, ChangedSince: run.ChangedSince,
		Files: []lintFileDoc{}, Findings: []lintFinding{}, Suppressed: []lintFinding{}, Skipped: []lintSkippedDoc{},
		Summary: lintSummaryDoc{Files: c.files, Queries: c.queries, Findings: c.all, Errors: c.errors,
			Warnings: c.warnings, Info: c.infos, Fixable: c.fixable, Fixed: c.fixed, Suppressed: c.suppressed, Baselined: c.baselined, Skipped: len(run.Skipped)}}
	for _, s := range run.Skipped {
		doc.Skipped = append(doc.Skipped, lintSkippedDoc{Path: s.Path, What: s.What, Reason: s.Reason})
	}
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
				Fixable: x.Fixable(), Fixed: x.Fixed && run.Fix, Rule: x.Rule, Fix: x.Fix, Baseline: x.Baseline})
		}
		for _, s := range f.Suppressed {
			x := s.Finding
			doc.Suppressed = append(doc.Suppressed, lintFinding{File: x.File, Line: x.Line, Column: x.Column,
				Pointer: x.Pointer, Location: x.Location, Metric: x.Metric, Status: x.Status, Since: x.Since,
				Replacement: x.Replacement, Severity: x.Severity, Code: x.Code, Message: x.Message,
				Rule: x.Rule, Fix: x.Fix, SuppressedBy: s.By, Reason: s.Reason})
		}
	}
	return doc
}
