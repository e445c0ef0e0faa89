package config

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// CodeYAMLBomb is the code of the error on a file whose YAML aliases expand past the bound.
const CodeYAMLBomb = "yaml-aliases"

// Doc is one YAML document being checked: a document of the file, or one held in a scalar of
// it (an EndpointPickerConfig in a ConfigMap or in Helm values, Doc.Held), whose positions it
// shifts to the file's.
type Doc struct {
	fl  *File
	idx int // the file's document index; -1 for a document held in a scalar
	// line and col shift a held document's positions to the file's: a literal block's line
	// L, column C is the file's line line+L, column col+C-1.
	line, col int
	host      *yaml.Node // the scalar holding the document, for positions that cannot be shifted
	// recognised: a whole-document check (generic or a product's) recognised the document.
	recognised bool
}

// File is the file the document is in.
func (d *Doc) File() *File { return d.fl }

// Recognised reports whether a whole-document check recognised the document (a product's
// DocumentChecker, an InferencePool, a compose file), as a NestedChecker asks.
func (d *Doc) Recognised() bool { return d.recognised }

// Pos is the file position of a node of the document (1:1 for none; the holding scalar's for
// a held document whose lines cannot be shifted).
func (d *Doc) Pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{1, 1}
	}
	if d.idx >= 0 {
		return Pos{n.Line, n.Column}
	}
	if d.line == 0 {
		return Pos{d.host.Line, d.host.Column}
	}
	return Pos{d.line + n.Line, d.col + n.Column - 1}
}

// Add records a finding at a node of the document (File.Add).
func (d *Doc) Add(code string, at *yaml.Node, location, msg, hint string) *Finding {
	return d.fl.Add(code, d.Pos(at), location, msg, hint)
}

// Held returns the document held in the scalar n of this document (parsed from n.Value), whose
// positions are shifted to the file's when n is a literal block, else all at n. Rewrites are
// never made in a held document.
func (d *Doc) Held(n *yaml.Node) *Doc {
	held := &Doc{fl: d.fl, idx: -1, host: n}
	if n.Style == yaml.LiteralStyle {
		held.line, held.col = n.Line, d.fl.blockIndent(n)
	}
	return held
}

// blockIndent returns the 1-based column where a literal block scalar's content starts.
func (fl *File) blockIndent(n *yaml.Node) int {
	off := fl.lines.Offset(n.Line+1, 1)
	col := 1
	for off < len(fl.src) && (fl.src[off] == ' ' || fl.src[off] == '\t') {
		off++
		col++
	}
	return col
}

// documents runs the config checks over a file's YAML documents and returns each document's
// config format, or "" where it is none.
func (fl *File) documents(docs []*yaml.Node) []Format {
	out := make([]Format, len(docs))
	if aliasBomb(docs) {
		fl.addFile(finding.Error, CodeYAMLBomb, StatusSkipped,
			fmt.Sprintf("refused: the YAML aliases of this file expand to more than %d nodes (a YAML bomb?); expand the anchors or split the file", maxAliasNodes))
		return out
	}
	for _, c := range fl.l.o.Checkers {
		if fc, ok := c.(FileChecker); ok {
			fc.BeginFile(fl, docs)
		}
	}
	for i, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		doc := &Doc{fl: fl, idx: i}
		root := d.Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		var ld Loader
		out[i], ld = doc.check(root)
		if out[i] != FormatPool {
			doc.failOpenValues(root)
		}
		if out[i] != "" {
			doc.DuplicateKeys(root, doc.loaderOf(root, out[i], ld))
		}
	}
	return out
}

// owner returns the checker that owns a kind (DocumentChecker.ConfigKinds).
func (l *Linter) owner(kind string) Checker {
	if kind == "" {
		return nil
	}
	for _, c := range l.o.Checkers {
		if dc, ok := c.(DocumentChecker); ok && slices.Contains(dc.ConfigKinds(), kind) {
			return c
		}
	}
	return nil
}

// check tells one document's format by content and runs its checks: the generic kinds, the
// product that owns its kind or recognises its keys, a compose file; else the workloads in it;
// then what the products keep inside any document.
func (d *Doc) check(root *yaml.Node) (Format, Loader) {
	kind, _ := Str(root, "kind")
	api, _ := Str(root, "apiVersion")
	var f Format
	var ld Loader
	switch kind {
	case "InferencePool":
		d.checkPool(root)
		f = FormatPool
	case "InferenceObjective":
		d.checkObjective(root, api)
		f = FormatObjective
	}
	if f == "" {
		if c := d.fl.l.owner(kind); c != nil {
			f, ld = c.(DocumentChecker).CheckDocument(d, root)
		} else {
			for _, c := range d.fl.l.o.Checkers {
				if dc, ok := c.(DocumentChecker); ok {
					if f, ld = dc.CheckDocument(d, root); f != "" {
						break
					}
				}
			}
		}
	}
	if f == "" && composeFile(root) {
		d.checkCompose(root)
		f = FormatCompose
	}
	d.recognised = f != ""
	if f == "" && d.workloads(root) {
		// Engines and routers inside any workload: Deployments, StatefulSets,
		// LeaderWorkerSets, Helm values with containers.
		f = FormatWorkload
	}
	for _, c := range d.fl.l.o.Checkers {
		if nc, ok := c.(NestedChecker); ok {
			if g, gl := nc.CheckNested(d, root); g != "" && f == "" {
				f, ld = g, gl
			}
		}
	}
	return f, ld
}

// text checks a file that is not YAML: a shell script that starts an engine or a router, a
// Python Ray Serve application.
func (fl *File) text() Format {
	src := fl.src
	if fl.orig != nil {
		src = fl.orig
	}
	var f Format
	cmds := ShellCommands(src)
	for _, cmd := range cmds {
		e := fl.l.engineFrom(fl.path, cmd.Argv, cmd.At, false)
		if e == nil {
			continue
		}
		e.Name = "script"
		fl.CheckEngine(e)
		f = FormatShellScript
	}
	for _, c := range fl.l.o.Checkers {
		if cc, ok := c.(CommandChecker); ok {
			for _, cmd := range cmds {
				if g := cc.CheckCommand(fl, cmd.Argv, 1); g != "" && f == "" {
					f = g
				}
			}
		}
	}
	for _, c := range fl.l.o.Checkers {
		if tc, ok := c.(TextChecker); ok {
			if g := tc.CheckText(fl); g != "" && f == "" {
				f = g
			}
		}
	}
	return f
}
