package lint

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// fileEdit replaces src[start:end] with text.
type fileEdit struct {
	start, end int
	text       string
}

// siteFix is what one site's value becomes.
type siteFix struct {
	site     *site
	spans    []span
	findings []*Finding
}

// fix computes the rewritten file from the findings' exact rewrites, keeping everything else
// byte for byte: JSON strings are replaced by offset, YAML and text are edited in place. The
// result is parsed again; when it does not read back as intended nothing is rewritten.
func (fl *fileLint) fix() {
	if !fl.l.rewrite && fl.masks == nil {
		return
	}
	var order []*site
	bySite := map[*site]*siteFix{}
	for _, f := range fl.findings {
		if f.fix == nil {
			continue
		}
		sf := bySite[f.fix.site]
		if sf == nil {
			sf = &siteFix{site: f.fix.site}
			bySite[f.fix.site] = sf
			order = append(order, f.fix.site)
		}
		sf.spans = append(sf.spans, f.fix.spans...)
		sf.findings = append(sf.findings, f)
	}
	if len(order) == 0 {
		return
	}
	var edits []fileEdit
	want := map[*site]string{}
	for _, s := range order {
		sf := bySite[s]
		spans := nonOverlapping(sf.spans)
		newValue := applySpans(s.value, spans)
		want[s] = newValue
		switch {
		case s.json != nil:
			edits = append(edits, fileEdit{s.json.start, s.json.end, encodeJSONString(newValue)})
			if s.mirror != nil {
				edits = append(edits, fileEdit{s.mirror.start, s.mirror.end, encodeJSONString(newValue)})
			}
		case s.raw:
			for _, sp := range spans {
				edits = append(edits, fileEdit{s.srcStart + sp.start, s.srcStart + sp.end, sp.text})
			}
		case s.yaml != nil:
			es, ok := fl.yamlEdits(s, spans)
			if !ok {
				delete(want, s)
				continue
			}
			edits = append(edits, es...)
		}
		if fl.masks != nil {
			// A rewrite that touches a masked template action would write the mask.
			var es []fileEdit
			if s.raw {
				for _, sp := range spans {
					es = append(es, fileEdit{s.srcStart + sp.start, s.srcStart + sp.end, sp.text})
				}
			} else if s.yaml != nil {
				es, _ = fl.yamlEdits(s, spans)
			}
			for _, e := range es {
				if fl.masked(e.start, e.end) {
					delete(want, s)
					edits = slices.DeleteFunc(edits, func(x fileEdit) bool { return slices.Contains(es, x) })
					for _, f := range sf.findings {
						f.fix = nil // not exact: it would have to guess what the chart fills in
					}
					break
				}
			}
		}
	}
	if !fl.l.rewrite {
		return
	}
	slices.SortFunc(edits, func(a, b fileEdit) int { return a.start - b.start })
	out := make([]byte, 0, len(fl.src)+len(fl.src)/8)
	last := 0
	for _, e := range edits {
		if e.start < last || e.start > e.end || e.end > len(fl.src) {
			return // overlapping edits: something is off, rewrite nothing
		}
		out = append(out, fl.src[last:e.start]...)
		out = append(out, e.text...)
		last = e.end
	}
	out = append(out, fl.src[last:]...)
	if len(want) == 0 || bytes.Equal(out, fl.src) {
		return
	}
	if !fl.verify(out, want) {
		return
	}
	for s := range want {
		for _, f := range bySite[s].findings {
			f.Fixed = true
		}
	}
	if fl.orig != nil {
		// The edits touch no masked action, so they apply to the template as written.
		out = out[:0:0]
		last = 0
		for _, e := range edits {
			out = append(out, fl.orig[last:e.start]...)
			out = append(out, e.text...)
			last = e.end
		}
		out = append(out, fl.orig[last:]...)
	}
	fl.fixed = out
}

// verify parses the rewritten file and checks each rewritten value reads back as intended.
func (fl *fileLint) verify(out []byte, want map[*site]string) bool {
	if len(fl.formats) == 1 && (fl.formats[0] == FormatText || (fl.formats[0] == FormatHelmTemplate && fl.masks == nil)) {
		return true
	}
	if fl.formats[0] == FormatGrafana || fl.formats[0] == FormatGCM || fl.formats[0] == FormatJSON {
		// Whole string tokens were replaced by encoded strings: the structure cannot change.
		// TestFixRelint and FuzzFile hold this to account by parsing the result again.
		return true
	}
	docs, err := parseYAML(out)
	if err != nil {
		return false
	}
	for s, v := range want {
		if s.yamlDoc >= len(docs) || len(docs[s.yamlDoc].Content) == 0 {
			return false
		}
		n := yamlAt(docs[s.yamlDoc].Content[0], s.pointer)
		if n == nil {
			return false
		}
		if s.embedded == "" {
			if n.Value != v {
				return false
			}
			continue
		}
		root, err := parseJSON([]byte(n.Value))
		if err != nil {
			return false
		}
		if j := jsonAt(root, s.embedded); j == nil || j.kind != 's' || j.str != v {
			return false
		}
	}
	return true
}

// yamlEdits maps rewrites of a quoted or block YAML scalar onto its source: each replaced
// text is found (escaped as the scalar's style escapes it) at the same occurrence index.
func (fl *fileLint) yamlEdits(s *site, spans []span) ([]fileEdit, bool) {
	styleEsc := func(t string) string { return t }
	switch s.yaml.Style {
	case yaml.DoubleQuotedStyle:
		styleEsc = func(t string) string { return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(t) }
	case yaml.SingleQuotedStyle:
		styleEsc = func(t string) string { return strings.ReplaceAll(t, "'", "''") }
	}
	esc := styleEsc
	if s.embedded != "" {
		// Inside a JSON string inside the scalar: escaped for JSON, then for YAML.
		esc = func(t string) string {
			j := encodeJSONString(t)
			return styleEsc(j[1 : len(j)-1])
		}
	}
	var out []fileEdit
	for _, sp := range spans {
		old := s.value[sp.start:sp.end]
		if strings.Contains(old, "\n") || strings.Contains(sp.text, "\n") {
			return nil, false
		}
		k := strings.Count(s.value[:sp.start], old)
		src := esc(old)
		at := s.srcStart
		found := -1
		for i := 0; i <= k; i++ {
			j := strings.Index(string(fl.src[at:]), src)
			if j < 0 {
				return nil, false
			}
			found = at + j
			at = found + len(src)
		}
		out = append(out, fileEdit{found, found + len(src), esc(sp.text)})
	}
	return out, true
}

func applySpans(v string, spans []span) string {
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(v[last:sp.start])
		b.WriteString(sp.text)
		last = sp.end
	}
	b.WriteString(v[last:])
	return b.String()
}

// nonOverlapping sorts spans and drops any that overlap an earlier one.
func nonOverlapping(spans []span) []span {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b span) int { return a.start - b.start })
	out := s[:0]
	end := -1
	for _, sp := range s {
		if sp.start < end {
			continue
		}
		out = append(out, sp)
		end = sp.end
	}
	return out
}

// jsonAt resolves a JSON pointer.
func jsonAt(n *jsonNode, ptr string) *jsonNode {
	for _, tok := range splitPointer(ptr) {
		switch n.kind {
		case 'o':
			n = n.get(tok)
		case 'a':
			i, err := parseIndex(tok, len(n.kids))
			if err != nil {
				return nil
			}
			n = n.kids[i]
		default:
			return nil
		}
		if n == nil {
			return nil
		}
	}
	return n
}

// yamlAt resolves a JSON pointer in a YAML node tree.
func yamlAt(n *yaml.Node, ptr string) *yaml.Node {
	for _, tok := range splitPointer(ptr) {
		switch n.Kind {
		case yaml.MappingNode:
			n = mapGet(n, tok)
		case yaml.SequenceNode:
			i, err := parseIndex(tok, len(n.Content))
			if err != nil {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
		if n == nil {
			return nil
		}
	}
	return n
}

func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	r := strings.NewReplacer("~1", "/", "~0", "~")
	for i, p := range parts {
		parts[i] = r.Replace(p)
	}
	return parts
}

func parseIndex(tok string, n int) (int, error) {
	var i int
	if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("index %q out of range", tok)
	}
	return i, nil
}

// labelsRegex builds a __name__ regex matcher, as Grafana's metrics(regex) applies it.
func labelsRegex(re string) (*labels.Matcher, error) {
	return labels.NewMatcher(labels.MatchRegexp, model.MetricNameLabel, re)
}

// findingEdits is a fixable finding's own rewrite as edits of the file as read, for SARIF's
// fixes: its spans alone applied to its site (or its config edits), each edit cut to the bytes
// it changes, so the rewrites of two names in one query do not overlap. Nil when the finding
// has no exact rewrite.
func (fl *fileLint) findingEdits(f *Finding, cfg []fileEdit) []finding.Edit {
	var es []fileEdit
	switch {
	case f.fix != nil:
		s, spans := f.fix.site, nonOverlapping(f.fix.spans)
		switch {
		case s.json != nil:
			v := encodeJSONString(applySpans(s.value, spans))
			es = append(es, fileEdit{s.json.start, s.json.end, v})
			if s.mirror != nil {
				es = append(es, fileEdit{s.mirror.start, s.mirror.end, v})
			}
		case s.raw:
			for _, sp := range spans {
				es = append(es, fileEdit{s.srcStart + sp.start, s.srcStart + sp.end, sp.text})
			}
		case s.yaml != nil:
			var ok bool
			if es, ok = fl.yamlEdits(s, spans); !ok {
				return nil
			}
		}
	case f.cfgFix:
		es = cfg
	}
	out := make([]finding.Edit, 0, len(es))
	for _, e := range es {
		if e.start < 0 || e.start > e.end || e.end > len(fl.src) {
			return nil
		}
		start, end, text := trimEdit(fl.src[e.start:e.end], e.text)
		start += e.start
		end += e.start
		if start == end && text == "" {
			continue
		}
		sl, sc := fl.lines.pos(start)
		el, ec := fl.lines.pos(end)
		out = append(out, finding.Edit{Start: start, End: end, StartLine: sl, StartColumn: sc, EndLine: el, EndColumn: ec, Text: text})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// trimEdit cuts the common prefix and suffix off a replacement of old by text, at UTF-8
// character boundaries: what is left is the span of old that changes (offsets into old) and
// what it becomes.
func trimEdit(old []byte, text string) (int, int, string) {
	p := 0
	for p < len(old) && p < len(text) && old[p] == text[p] {
		p++
	}
	for p > 0 && p < len(old) && !startsChar(old[p]) {
		p--
	}
	q := 0
	for q < len(old)-p && q < len(text)-p && old[len(old)-1-q] == text[len(text)-1-q] {
		q++
	}
	for q > 0 && len(old)-q < len(old) && !startsChar(old[len(old)-q]) {
		q--
	}
	return p, len(old) - q, text[p : len(text)-q]
}
