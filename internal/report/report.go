// Package report turns what a command found into output: one Result per run (the findings that
// --fail-on, SARIF and GitHub annotations read, the JSON document with its schema_version, and
// the text rendering for people), written by Write in one of the formats, one file per format
// (text.go, json.go, sarif.go, github.go). Each command's result is built here too, one file per
// command (Hitrate, Lint, Metrics, Audit, Tap, Simulation, Assess, Demo). It is the only package
// that writes a command's output; Status writes the progress and warning lines on stderr.
package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/secret"
)

// SchemaVersion is the version of every JSON document kvcheck writes. It changes only when a
// field changes meaning or disappears; new fields do not change it.
const SchemaVersion = 1

// Format is an output format name.
type Format string

// The output formats. Every command writes text and JSON; commands with findings also SARIF and
// GitHub annotations.
const (
	FormatText   Format = "text"
	FormatJSON   Format = "json"
	FormatSARIF  Format = "sarif"
	FormatGitHub Format = "github"
)

// writer is one output format: its file registers it (register, from an init function) with
// the function that writes a Result in it. Findings-only formats (SARIF, annotations) are
// offered by the commands that have findings.
type writer struct {
	format       Format
	order        int // its place in --output's list
	findingsOnly bool
	write        func(w io.Writer, r Result, o Options) error
}

var writers []writer

// register adds an output format; each format's file calls it once, from init.
func register(w writer) {
	writers = append(writers, w)
	slices.SortStableFunc(writers, func(a, b writer) int { return a.order - b.order })
}

// Formats lists the formats a command offers: every format when it has findings, else those
// that are not findings-only (text and JSON).
func Formats(findings bool) []Format {
	var out []Format
	for _, w := range writers {
		if findings || !w.findingsOnly {
			out = append(out, w.format)
		}
	}
	return out
}

// ParseFormat checks a --output value against the formats a command offers.
func ParseFormat(s string, offered []Format) (Format, error) {
	f := Format(strings.ToLower(s))
	if slices.Contains(offered, f) {
		return f, nil
	}
	names := make([]string, len(offered))
	for i, a := range offered {
		names[i] = string(a)
	}
	return "", fmt.Errorf("--output %q is not supported by this command: use one of %s", s, strings.Join(names, ", "))
}

// Result is what one run of a command reports.
type Result struct {
	// Findings are what --fail-on counts and what SARIF and GitHub annotations show.
	Findings []finding.Finding
	// Document is the JSON document; its first field is schema_version. A func() any builds
	// it when JSON is written, so that a run written as text never holds it.
	Document any
	// Text renders the result for people; without it the findings are listed.
	Text func(*Text) error
	// Verbatim is written as it is, as text and as JSON, by a result with neither a document
	// nor a text rendering (lint --diff's unified diff); the findings formats (SARIF,
	// annotations) still write its findings.
	Verbatim string
	// Streamed says the command wrote its output as it ran (hitrate --watch's refreshes):
	// Write writes nothing more, and the findings still decide --fail-on.
	Streamed bool
	// Rules describe the finding codes for SARIF's rule list; a code without one is described
	// by its name.
	Rules []Rule
	// Command names the command for SARIF rules without a description of their own ("kvcheck
	// hitrate"): their help points at its README section. Run sets it from the command line.
	Command string
	// Artifact is the input a finding with no file of its own (a replica, a publisher, the
	// fleet) is located at in SARIF: a dump, a trace, a server's URL. GitHub code scanning
	// refuses a whole SARIF file in which one result has no physical location. Empty: such
	// findings are located at "kvcheck".
	Artifact string
}

// Rule describes one finding code.
type Rule struct {
	Code        string
	Description string // one sentence: SARIF's short description
	Level       finding.Severity
	// Full is the longer description, Help the same in Markdown with what to do, HelpURI the
	// README's anchor for the rule; each defaults to the one before.
	Full, Help, HelpURI string
}

// Empty reports whether the result has nothing to write (the command failed before any).
func (r Result) Empty() bool {
	return r.Document == nil && r.Text == nil && r.Findings == nil && r.Verbatim == ""
}

// Options are how Write draws: colour for text on a terminal, every table column unwrapped
// (Wide) instead of fitting the terminal's width, every figure (All), the tool's version for
// SARIF.
type Options struct {
	Color bool
	Wide  bool
	// All shows every figure in full where a text view is brief by default (assess
	// --evidence all).
	All     bool
	Version string
	// SrcRoot is the git work tree's top level (absolute) that SARIF paths are relative to
	// (%SRCROOT%), WorkDir the directory relative paths were given in; empty SrcRoot writes
	// paths as given.
	SrcRoot, WorkDir string
	// Actions says the run is a GitHub Actions step (GITHUB_ACTIONS=true), whose runner reads
	// workflow commands from the lines of its output.
	Actions bool
}

// Write writes the result in the format.
func Write(w io.Writer, format Format, r Result, o Options) error {
	if r.Streamed {
		return nil
	}
	if format == "" {
		format = FormatText
	}
	for _, x := range writers {
		if x.format != format {
			continue
		}
		if r.Document == nil && r.Text == nil && r.Verbatim != "" && !x.findingsOnly {
			// lint --diff: context lines show the file around a rewrite, credentials included.
			return writeVerbatim(w, secret.Mask(r.Verbatim), o)
		}
		return x.write(w, r, o)
	}
	return fmt.Errorf("unknown output format %q", format)
}

// nonNilFindings makes a result with no findings still one that has findings (an empty list).
func nonNilFindings(fs []finding.Finding) []finding.Finding {
	if fs == nil {
		return []finding.Finding{}
	}
	return fs
}
