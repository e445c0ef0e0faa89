package config

import (
	"bytes"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/textpos"
)

// configFix is the exact rewrite of one config finding: byte edits of the file as read.
type configFix struct {
	f     *Finding
	edits []Edit
}

// scalarSpan returns the file span of a plain scalar as written, when the source holds its
// value verbatim there.
func (fl *File) scalarSpan(n *yaml.Node) (int, int, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style != 0 || n.Value == "" {
		return 0, 0, false
	}
	off := fl.lines.Offset(n.Line, n.Column)
	end := off + len(n.Value)
	if end > len(fl.src) || string(fl.src[off:end]) != n.Value {
		return 0, 0, false
	}
	return off, end, true
}

// ReplaceFix makes text the exact rewrite of f: it replaces the plain scalar n as written.
// Nothing is rewritten in a held document, or where the file does not hold n verbatim.
func (d *Doc) ReplaceFix(f *Finding, n *yaml.Node, text string) {
	if d.idx < 0 {
		return
	}
	if s, e, ok := d.fl.scalarSpan(n); ok {
		d.fl.cfgFixes = append(d.fl.cfgFixes, configFix{f: f, edits: []Edit{{s, e, text}}})
	}
}

// RenameFix makes renaming a mapping key the exact rewrite of f.
func (d *Doc) RenameFix(f *Finding, key *yaml.Node, name string) { d.ReplaceFix(f, key, name) }

// InsertFix makes adding key: value to the block mapping m the exact rewrite of f: on a new
// line after m's first entry, which must be a one-line scalar; keyPath a.b adds the mapping a
// when it is missing.
func (d *Doc) InsertFix(f *Finding, m *yaml.Node, keyPath, value string) {
	fl := d.fl
	if d.idx < 0 || m == nil || m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) < 2 {
		return
	}
	parts := strings.Split(keyPath, ".")
	if len(parts) == 2 {
		if sub := Get(m, parts[0]); sub != nil {
			if sub.Kind == yaml.MappingNode {
				d.InsertFix(f, sub, parts[1], value)
			}
			return
		}
	}
	first, v := m.Content[0], m.Content[1]
	if v.Kind != yaml.ScalarNode || v.Line != first.Line || strings.Contains(v.Value, "\n") {
		return
	}
	// The end of the first entry's line.
	lineEnd := fl.lines.Offset(first.Line+1, 1)
	if first.Line >= fl.lines.Lines() {
		lineEnd = len(fl.src)
	}
	nl := "\n"
	if bytes.Contains(fl.src, []byte("\r\n")) {
		nl = "\r\n"
	}
	indent := strings.Repeat(" ", first.Column-1)
	var b strings.Builder
	prefix := ""
	if lineEnd == len(fl.src) && !bytes.HasSuffix(fl.src, []byte("\n")) {
		prefix = nl
	}
	b.WriteString(prefix)
	for i, p := range parts {
		b.WriteString(indent + strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString(nl)
	}
	text := b.String()
	if prefix != "" {
		text = strings.TrimSuffix(text, nl)
	}
	fl.cfgFixes = append(fl.cfgFixes, configFix{f: f, edits: []Edit{{lineEnd, lineEnd, text}}})
}

// fixConfig applies the config fixes to the file when nothing else rewrote it, then lints the
// result again: every fixed finding must be gone and the file must still parse, or nothing is
// rewritten.
func (fl *File) fixConfig() {
	if len(fl.cfgFixes) == 0 || fl.masks != nil || fl.relint || fl.reparse == nil {
		return
	}
	var edits []Edit
	for _, cf := range fl.cfgFixes {
		edits = append(edits, cf.edits...)
	}
	slices.SortStableFunc(edits, func(a, b Edit) int { return a.Start - b.Start })
	out := make([]byte, 0, len(fl.src)+256)
	last := 0
	for _, e := range edits {
		if e.Start < last || e.End > len(fl.src) {
			return
		}
		out = append(out, fl.src[last:e.Start]...)
		out = append(out, e.Text...)
		last = e.End
	}
	out = append(out, fl.src[last:]...)
	before, err := ParseYAML(fl.src)
	if err != nil {
		return
	}
	after, err := ParseYAML(out)
	if err != nil || len(after) != len(before) {
		return
	}
	docs, err := fl.reparse(out)
	if err != nil {
		return
	}
	again := &File{l: fl.l, path: fl.path, src: out, lines: textpos.New(out), relint: true}
	again.documents(docs)
	// A rewrite that uncovers another (a misspelt block name hid a misspelt key or plugin type
	// inside it) is not made: one --fix must leave a file that a second --fix does not change,
	// and the second rewrite would fix findings the user was never shown.
	if len(again.cfgFixes) > 0 {
		return
	}
	for _, cf := range fl.cfgFixes {
		for _, g := range again.findings {
			if g.Code == cf.f.Code && g.Location == cf.f.Location {
				return
			}
		}
	}
	for _, cf := range fl.cfgFixes {
		cf.f.Exact = true
		cf.f.Rewrite = append(cf.f.Rewrite, cf.edits...)
		if fl.l.o.Rewrite {
			cf.f.Fixed = true
		}
	}
	if fl.l.o.Rewrite {
		fl.fixed = out
	}
}
