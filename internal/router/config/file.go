package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Format is the detected kind of a configuration document or file.
type Format string

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
	// VLLMNewest is the newest vLLM release the metric catalog knows (zero when it knows none);
	// VLLMTarget the release the run judges metric names against.
	VLLMNewest, VLLMTarget catalog.Version
	// Rewrite computes File.Fixed, the file with every exact rewrite applied.
	Rewrite bool
}

// Linter checks router and engine configuration files.
type Linter struct {
	o Options
}

// New returns a Linter.
func New(o Options) *Linter { return &Linter{o: o} }

// NewFile starts checking one file: src is its content as read, lines its index.
func (l *Linter) NewFile(path string, src []byte, lines *textpos.Index) *File {
	return &File{l: l, path: path, src: src, lines: lines}
}

// File is the state of checking one file's configuration.

type File struct {
	l     *Linter
	path  string
	src   []byte
	lines *textpos.Index
	// orig is the file as read when src is a Helm template with its actions masked (masks
	// are the masked spans); rewrites would apply to orig.
	orig  []byte
	masks [][2]int
	// findings are the file's findings, in the order found; fixes their rewrites.
	findings []*Finding
	cfgFixes []configFix
	// config gathers the facts for the checks across files; epp are the EPP's flags when the
	// file shows them.
	config *Facts
	epp    eppFlags
	relint bool // linting a rewrite again: no further rewrites
	// reparse reads a rewritten file's documents as Documents was given the original's.
	reparse func([]byte) ([]*yaml.Node, error)
	fixed   []byte
}

// Template says src is a Helm template with its actions masked (maskTemplate's masks): orig is
// the file as written. Values that hold a masked action are not judged, keys and flags
// written in both branches of an action are not duplicates, and nothing is rewritten.
func (fl *File) Template(orig []byte, masks [][2]int) { fl.orig, fl.masks = orig, masks }

// Documents checks the file's YAML documents and returns each one's config format, "" where
// it is none. reparse reads the documents of a rewritten file as docs were read (YAML, or JSON
// read as YAML), for checking a rewrite before it is made.
func (fl *File) Documents(docs []*yaml.Node, reparse func([]byte) ([]*yaml.Node, error)) []Format {
	fl.reparse = reparse
	return fl.configDocs(docs)
}

// Text checks a file that is not YAML (a shell script starting an engine or a router, a Python
// Ray Serve application) and returns its format, "" when it holds no configuration.
func (fl *File) Text() Format { return fl.configText() }

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
func (fl *File) Facts() *Facts { return fl.config }

// addFile records a finding about the whole file.
func (fl *File) addFile(sev finding.Severity, code, status, msg string) {
	fl.findings = append(fl.findings, &Finding{Finding: finding.Finding{Severity: sev, Code: code, Message: msg, Subject: fl.path, File: fl.path, Line: 1, Column: 1}, Status: status})
}

// MaxYAMLDocs bounds the documents of one YAML stream.
const MaxYAMLDocs = 10000

// ErrTooManyDocs refuses a YAML stream past MaxYAMLDocs. The whole file is refused: checking
// the first documents and dropping the rest would pass a trap in the one after.
var ErrTooManyDocs = fmt.Errorf("more than %d YAML documents in one file", MaxYAMLDocs)

// ParseYAML reads every document of a YAML stream, refusing one of more than MaxYAMLDocs.
func ParseYAML(src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if len(docs) == MaxYAMLDocs {
			return nil, ErrTooManyDocs
		}
		if err != nil {
			return docs, fmt.Errorf("yaml: %w", err)
		}
		docs = append(docs, &n)
	}
}

// mapGet returns a mapping's value for key; for a key written twice, the last pair's, which
// Helm, PyYAML and the Kubernetes API server keep (dupes.go).
func mapGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := len(n.Content)&^1 - 2; i >= 0; i -= 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
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

// templateValue reports whether a value is (or holds) a template action the chart fills in: a
// {{ }} left as it is in a file that parses as YAML (a quoted action), or a masked one in a Helm
// template (masking fills a value's action with x's, and no routing logic or mode kvcheck
// judges holds two x's in a row). What the chart fills in there is not known, so it is not
// judged.
func (fl *File) templateValue(v string) bool {
	return strings.Contains(v, "{{") || fl.masks != nil && strings.Contains(v, "xx")
}
