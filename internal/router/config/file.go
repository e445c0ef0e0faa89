package config

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Format is the detected kind of a configuration document or file.
type Format string

// The formats of the files the generic checks recognise (products name their own).
const (
	FormatCompose     Format = "docker-compose"
	FormatWorkload    Format = "kubernetes-workload"
	FormatPool        Format = "inference-pool"
	FormatObjective   Format = "inference-objective"
	FormatShellScript Format = "shell-script"
)

// Status values of the findings the config checks make, as lint's JSON carries them.
const (
	// StatusConfig marks a router or engine configuration finding.
	StatusConfig = "config"
	// StatusSkipped marks a file that was not checked (lint's status of the same name).
	StatusSkipped = "skipped"
)

// Finding is one configuration finding: the embedded finding holds the code, severity, message,
// the fix hint and the position; Location names the setting for a person.
type Finding struct {
	finding.Finding
	Location string
	Status   string
	Since    string // the releases the rule holds for
	// Exact says the finding has an exact rewrite (Rewrite), checked by linting the result;
	// Fixed that the rewrite is in File.Fixed (the Linter rewrites).
	Exact, Fixed bool
	Rewrite      []Edit
}

// Edit replaces the bytes [Start, End) of the file as read with Text.
type Edit struct {
	Start, End int
	Text       string
}

// Options configure a Linter.
type Options struct {
	// Checkers are the router products' checks, in the registry's order.
	Checkers []Checker
	// VLLMNewest is the newest vLLM release the metric catalog knows (zero when it knows none);
	// VLLMTarget the release the run judges metric names against.
	VLLMNewest, VLLMTarget catalog.Version
	// Rewrite computes File.Fixed, the file with every exact rewrite applied.
	Rewrite bool
}

// Linter checks router and engine configuration files.
type Linter struct {
	o Options
	// rules are every rule by code: the generic ones and each checker's.
	rules map[string]*Rule
	// launchers are the words that start a product's wrapper of a vLLM engine.
	launchers []string
}

// New returns a Linter over the checkers of o. It panics on a rule code given twice, or on a
// product rule whose code is not its product's (a programming error in a product's table).
func New(o Options) *Linter {
	l := &Linter{o: o, rules: ruleIndex(o.Checkers)}
	for _, c := range o.Checkers {
		if el, ok := c.(EngineLauncher); ok {
			l.launchers = append(l.launchers, el.EngineLaunchers()...)
		}
	}
	return l
}

// NewFile starts checking one file: src is its content as read, lines its index.
func (l *Linter) NewFile(path string, src []byte, lines *textpos.Index) *File {
	return &File{l: l, path: path, src: src, lines: lines}
}

// File is the state of checking one file's configuration: lint makes one per file, hands it
// the file's documents (Documents) or text (Text), asks for the rewrite (Fix), and reads the
// findings and the facts for the checks across files. A product's hooks get it to record
// findings and facts.
type File struct {
	l     *Linter
	path  string
	src   []byte
	lines *textpos.Index
	// orig is the file as read when src is a Helm template with its actions masked (masks
	// are the masked spans).
	orig  []byte
	masks [][2]int
	// findings are the file's findings, in the order found; cfgFixes their rewrites.
	findings []*Finding
	cfgFixes []configFix
	// facts gathers the facts for the checks across files; kept holds the products' state
	// for the file (Keep).
	facts *Facts
	kept  map[any]any
	// relint: linting a rewrite again, which is not rewritten further.
	relint bool
	// reparse reads a rewritten file's documents as Documents was given the original's.
	reparse func([]byte) ([]*yaml.Node, error)
	fixed   []byte
}

// Template says src is a Helm template with its actions masked: orig is the file as written
// and masks the spans masked. Values that hold a masked action are not judged, keys and flags
// written in both branches of an action are not duplicates, and nothing is rewritten.
func (fl *File) Template(orig []byte, masks [][2]int) { fl.orig, fl.masks = orig, masks }

// Documents checks the file's YAML documents and returns each one's config format, "" where
// it is none. reparse reads the documents of a rewritten file as docs were read (YAML, or JSON
// read as YAML), for checking a rewrite before it is made.
func (fl *File) Documents(docs []*yaml.Node, reparse func([]byte) ([]*yaml.Node, error)) []Format {
	fl.reparse = reparse
	return fl.documents(docs)
}

// Text checks a file that is not YAML (a shell script starting an engine or a router, a Python
// Ray Serve application) and returns its format, "" when it holds no configuration.
func (fl *File) Text() Format { return fl.text() }

// Fix computes the rewrite of the findings that have an exact one, unless rewritten says the
// file was already rewritten for other findings: the rewritten file is linted again, every
// fixed finding must be gone and the file must still parse, or nothing is rewritten.
func (fl *File) Fix(rewritten bool) {
	if rewritten {
		return
	}
	fl.fixConfig()
}

// Findings returns the file's findings so far, in the order found.
func (fl *File) Findings() []*Finding { return fl.findings }

// Fixed returns the rewritten file; nil when nothing was rewritten.
func (fl *File) Fixed() []byte { return fl.fixed }

// Facts returns what the file tells the checks across files; nil when it told nothing.
func (fl *File) Facts() *Facts { return fl.facts }

// Path is the file's path.
func (fl *File) Path() string { return fl.path }

// Src is the file's content as checked (a Helm template with its actions masked).
func (fl *File) Src() []byte { return fl.src }

// PosOf returns the line and column of a byte offset of Src.
func (fl *File) PosOf(off int) Pos {
	l, c := fl.lines.Pos(off)
	return Pos{l, c}
}

// Add records a finding of a rule at a position: msg says what is wrong, hint names the key
// and the value that fix it, location names the setting. The code must be a rule's.
func (fl *File) Add(code string, at Pos, location, msg, hint string) *Finding {
	r, ok := fl.l.rules[code]
	if !ok {
		panic("config: finding with no rule " + code) // a programming error: every code is in a table
	}
	f := &Finding{
		Finding: finding.Finding{Severity: r.Severity, Code: r.Code, Message: msg, Subject: fl.path, Fix: hint,
			File: fl.path, Line: max(at.Line, 1), Column: max(at.Col, 1), Rule: r.ID},
		Location: location,
		Status:   StatusConfig,
		Since:    r.Versions,
	}
	fl.findings = append(fl.findings, f)
	return f
}

// addFile records a finding about the whole file.
func (fl *File) addFile(sev finding.Severity, code, status, msg string) {
	fl.findings = append(fl.findings, &Finding{Finding: finding.Finding{Severity: sev, Code: code, Message: msg, Subject: fl.path, File: fl.path, Line: 1, Column: 1}, Status: status})
}

// Keep stores a product's state for the rest of the file under key (a value of a type of the
// product's own, so that no two products meet); Kept returns it, nil when none was kept.
func (fl *File) Keep(key, v any) {
	if fl.kept == nil {
		fl.kept = map[any]any{}
	}
	fl.kept[key] = v
}

// Kept returns what Keep stored under key, nil when nothing.
func (fl *File) Kept(key any) any { return fl.kept[key] }

// TemplateValue reports whether a value is (or holds) a template action the chart fills in: a
// {{ }} left as it is in a file that parses as YAML (a quoted action), or a masked one in a Helm
// template (masking fills a value's action with x's, and no routing logic or mode kvcheck
// judges holds two x's in a row). What the chart fills in there is not known, so it is not
// judged.
func (fl *File) TemplateValue(v string) bool {
	return strings.Contains(v, "{{") || fl.masks != nil && strings.Contains(v, "xx")
}

// masked reports whether the file span [start, end) touches a masked template action.
func (fl *File) masked(start, end int) bool {
	for _, m := range fl.masks {
		if start < m[1] && m[0] < end {
			return true
		}
	}
	return false
}

// TemplatedBetween reports whether a masked Helm action lies between two places of the file: a
// flag written in each branch of an {{ if }} ... {{ else }} is given once when rendered.
func (fl *File) TemplatedBetween(first, last Pos) bool {
	if fl.masks == nil {
		return false
	}
	return fl.masked(fl.lines.Offset(first.Line, first.Col), fl.lines.Offset(last.Line, last.Col))
}
