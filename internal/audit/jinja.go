package audit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// The Jinja scanner does not run templates: it follows the order in which a chat template
// writes its output, counts the static text it is sure to write, and tracks which variables
// hold a clock value, so that it can say where each dynamic value lands. Branches count only
// the text common to all of them; loops over tools count nothing (they may be empty); a loop
// over the messages is where the conversation starts.

type jSegKind int

const (
	jText jSegKind = iota
	jExpr
	jStmt
)

type jSeg struct {
	kind jSegKind
	text string
	line int
}

// jLex splits a template into text, {{ expression }} and {% statement %} segments, applying
// whitespace control ({%- -%}) and the trim_blocks/lstrip_blocks settings Hugging Face uses for
// chat templates. Comments are dropped. An unterminated tag becomes text.
func jLex(src string) []jSeg {
	var segs []jSeg
	line := 1
	trimNext := false
	for len(src) > 0 {
		i := strings.Index(src, "{")
		for i >= 0 && i+1 < len(src) && !strings.ContainsRune("{%#", rune(src[i+1])) {
			j := strings.Index(src[i+1:], "{")
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 || i+1 >= len(src) {
			segs = jAddText(segs, src, line, trimNext)
			break
		}
		opener := src[i+1]
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[opener]
		end := strings.Index(src[i+2:], closer)
		if end < 0 {
			segs = jAddText(segs, src, line, trimNext)
			break
		}
		text := src[:i]
		body := src[i+2 : i+2+end]
		trimLeft := strings.HasPrefix(body, "-")
		trimRight := strings.HasSuffix(body, "-")
		if trimLeft {
			text = strings.TrimRight(text, " \t\r\n")
		} else if opener != '{' {
			// lstrip_blocks: spaces before a block tag on its line go.
			if k := strings.LastIndexByte(text, '\n'); strings.TrimLeft(text[k+1:], " \t") == "" {
				text = text[:k+1]
			}
		}
		segs = jAddText(segs, text, line, trimNext)
		line += strings.Count(src[:i], "\n")
		body = strings.TrimSuffix(strings.TrimPrefix(body, "-"), "-")
		body = strings.TrimSuffix(strings.TrimPrefix(body, "+"), "+")
		switch opener {
		case '{':
			segs = append(segs, jSeg{kind: jExpr, text: strings.TrimSpace(body), line: line})
		case '%':
			segs = append(segs, jSeg{kind: jStmt, text: strings.TrimSpace(body), line: line})
		}
		consumed := i + 2 + end + 2
		line += strings.Count(src[i:consumed], "\n")
		src = src[consumed:]
		trimNext = trimRight
		if !trimRight && opener != '{' && strings.HasPrefix(src, "\n") {
			// trim_blocks: the first newline after a block tag goes.
			src = src[1:]
			line++
		}
	}
	return segs
}

func jAddText(segs []jSeg, text string, line int, trimLeft bool) []jSeg {
	if trimLeft {
		trimmed := strings.TrimLeft(text, " \t\r\n")
		line += strings.Count(text[:len(text)-len(trimmed)], "\n")
		text = trimmed
	}
	if text == "" {
		return segs
	}
	return append(segs, jSeg{kind: jText, text: text, line: line})
}

// jNode is a parsed template node.
type jNode struct {
	kind     string // text, expr, if, for, set, skip
	text     string // text, expression, set value, or loop iterable
	name     string // set target or loop variable(s)
	line     int
	branches []jBranch // if
	body     []jNode   // for
}

type jBranch struct {
	cond string // "" for else
	body []jNode
}

// jParse builds the node tree. Unknown statements are skipped; macro and call bodies are
// skipped whole (they are only text when called, and their callers are tool loops).
func jParse(segs []jSeg) []jNode {
	p := &jParser{segs: segs}
	return p.block(nil)
}

type jParser struct {
	segs []jSeg
	i    int
}

func stmtWord(s string) string {
	if i := strings.IndexAny(s, " \t\n("); i >= 0 {
		return s[:i]
	}
	return s
}

// block parses until one of the given end words and leaves the parser on it.
func (p *jParser) block(ends []string) []jNode {
	var out []jNode
	for p.i < len(p.segs) {
		s := p.segs[p.i]
		switch s.kind {
		case jText:
			out = append(out, jNode{kind: "text", text: s.text, line: s.line})
			p.i++
		case jExpr:
			out = append(out, jNode{kind: "expr", text: s.text, line: s.line})
			p.i++
		case jStmt:
			w := stmtWord(s.text)
			for _, e := range ends {
				if w == e {
					return out
				}
			}
			p.i++
			rest := strings.TrimSpace(strings.TrimPrefix(s.text, w))
			switch w {
			case "if":
				n := jNode{kind: "if", line: s.line}
				cond := rest
				for {
					body := p.block([]string{"elif", "else", "endif"})
					n.branches = append(n.branches, jBranch{cond: cond, body: body})
					if p.i >= len(p.segs) {
						break
					}
					t := p.segs[p.i]
					p.i++
					tw := stmtWord(t.text)
					if tw == "endif" {
						break
					}
					cond = ""
					if tw == "elif" {
						cond = strings.TrimSpace(strings.TrimPrefix(t.text, "elif"))
					}
				}
				out = append(out, n)
			case "for":
				n := jNode{kind: "for", line: s.line}
				if target, iter, ok := strings.Cut(rest, " in "); ok {
					n.name = strings.TrimSpace(target)
					n.text = strings.TrimSpace(iter)
				}
				n.body = p.block([]string{"else", "endfor"})
				if p.i < len(p.segs) && stmtWord(p.segs[p.i].text) == "else" {
					p.i++
					p.block([]string{"endfor"})
				}
				p.i++
				out = append(out, n)
			case "set":
				if name, val, ok := strings.Cut(rest, "="); ok && !strings.HasPrefix(val, "=") {
					out = append(out, jNode{kind: "set", name: strings.TrimSpace(name), text: strings.TrimSpace(val), line: s.line})
				} else {
					// {% set x %}...{% endset %}: a captured block, treated as opaque.
					p.block([]string{"endset"})
					p.i++
				}
			case "macro", "call", "filter", "raw":
				p.block([]string{"end" + w})
				p.i++
			}
		}
	}
	return out
}

// jPart is one piece of a value: static text, the conversation, a request input (tools) of
// unknown length, or a dynamic element.
type jPart struct {
	kind string // static, conv, input, dyn
	text string // static text
	dyn  *jDyn
}

type jDyn struct {
	expr   string
	kind   Kind
	freq   Frequency
	line   int
	conds  []string
	origin string
	ev     Evidence
}

type jValue struct {
	parts []jPart
	conds []string
}

func (v jValue) dynamic() bool {
	for _, p := range v.parts {
		if p.kind == "dyn" {
			return true
		}
	}
	return false
}

// jWalker follows a template's output order.
type jWalker struct {
	file     string
	bs       int
	vars     map[string]jValue
	loopVars map[string]string // loop variable -> conv or input
	findings []Finding
	seen     map[string]bool
}

type jState struct {
	pos   int
	conv  bool
	conds []string
}

func (w *jWalker) walk(nodes []jNode, st *jState) {
	for _, n := range nodes {
		switch n.kind {
		case "text":
			if st.conv {
				continue
			}
			st.pos += estimateStatic(n.text)
		case "expr":
			w.emit(w.eval(n.text, n.line), n, st)
		case "set":
			v := w.eval(n.text, n.line)
			v.conds = append(append([]string(nil), st.conds...), v.conds...)
			for i, p := range v.parts {
				if p.kind == "dyn" {
					d := *p.dyn
					d.conds = append(append([]string(nil), v.conds...), d.conds...)
					v.parts[i].dyn = &d
				}
			}
			names := strings.Split(n.name, ",")
			name := strings.TrimSpace(names[0])
			if old, ok := w.vars[name]; ok && old.dynamic() && !v.dynamic() {
				// Keep the assignment that can carry a clock: the question is whether the
				// value can change, not which branch runs.
				continue
			}
			if old, ok := w.vars[name]; ok && old.dynamic() && v.dynamic() && len(old.conds) <= len(v.conds) {
				continue
			}
			w.vars[name] = v
		case "if":
			base := *st
			minPos := -1
			conv := st.conv
			hasElse := false
			for i, b := range n.branches {
				cond := b.cond
				if cond == "" {
					hasElse = true
					prev := n.branches[max(0, i-1)].cond
					cond = "not (" + prev + ")"
				}
				bs := jState{pos: base.pos, conv: base.conv, conds: append(append([]string(nil), base.conds...), cond)}
				w.walk(b.body, &bs)
				if minPos < 0 || bs.pos < minPos {
					minPos = bs.pos
				}
				conv = conv || bs.conv
			}
			if !hasElse || minPos < 0 {
				minPos = base.pos
			}
			st.pos = minPos
			st.conv = conv
		case "for":
			role := "input"
			if jMentions(n.text, w.convRoots()) {
				role = "conv"
			}
			for _, v := range strings.Split(n.name, ",") {
				w.loopVars[strings.TrimSpace(strings.Trim(v, "()"))] = role
			}
			bs := jState{pos: st.pos, conv: st.conv, conds: append(append([]string(nil), st.conds...), "the loop over "+n.text+" runs")}
			if role == "conv" {
				bs.conv = true
				bs.conds = st.conds
			}
			w.walk(n.body, &bs)
			if role == "conv" {
				st.conv = true
			}
		}
	}
}

// emit accounts an output expression at the current position.
func (w *jWalker) emit(v jValue, n jNode, st *jState) {
	for _, p := range v.parts {
		switch p.kind {
		case "static":
			if !st.conv {
				st.pos += estimateStatic(p.text)
			}
		case "conv":
			st.conv = true
		case "dyn":
			w.report(p.dyn, n, st, v.conds)
		}
	}
}

func (w *jWalker) report(d *jDyn, n jNode, st *jState, valueConds []string) {
	key := fmt.Sprintf("%d:%s", n.line, d.expr)
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	pos, block := place(st.pos, w.bs, true, st.conv)
	var conds []string
	for _, c := range append(append(append([]string(nil), st.conds...), valueConds...), d.conds...) {
		if !strings.Contains(c, "is defined") && !strings.Contains(c, "is not defined") {
			conds = append(conds, c)
		}
	}
	origin := d.origin
	if d.line != n.line && origin == "" {
		origin = fmt.Sprintf("line %d", d.line)
	}
	cond := strings.Join(dedupe(conds), " and ")
	w.findings = append(w.findings, Finding{Finding: finding.Finding{File: w.file, Line: n.line}, Expression: d.expr, Kind: d.kind, Position: pos, Block: block,
		TokensBefore: st.pos, Frequency: d.freq, Estimated: true, Condition: cond, Origin: origin, Evidence: d.ev})
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (w *jWalker) convRoots() []string {
	roots := []string{"messages", "message", "loop_messages"}
	for k, v := range w.loopVars {
		if v == "conv" {
			roots = append(roots, k)
		}
	}
	for k, v := range w.vars {
		for _, p := range v.parts {
			if p.kind == "conv" {
				roots = append(roots, k)
				break
			}
		}
	}
	return roots
}

var reIdent = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// jMentions reports whether expr uses any of the names as a variable (not as an attribute or a
// string).
func jMentions(expr string, names []string) bool {
	bare := stripStrings(expr)
	for _, loc := range reIdent.FindAllStringIndex(bare, -1) {
		if loc[0] > 0 && bare[loc[0]-1] == '.' {
			continue
		}
		id := bare[loc[0]:loc[1]]
		for _, n := range names {
			if id == n {
				return true
			}
		}
	}
	return false
}

// stripStrings blanks out string literals so that their contents are not read as names.
func stripStrings(s string) string {
	b := []byte(s)
	var q byte
	for i := 0; i < len(b); i++ {
		switch {
		case q == 0 && (b[i] == '"' || b[i] == '\''):
			q = b[i]
		case q != 0 && b[i] == '\\':
			b[i] = ' '
			if i+1 < len(b) {
				b[i+1] = ' '
				i++
			}
			continue
		case q != 0 && b[i] == q:
			q = 0
		case q != 0:
			b[i] = ' '
		}
	}
	return string(b)
}

// splitTop splits s at sep where it is outside strings and brackets.
func splitTop(s string, seps string) []string {
	var out []string
	depth := 0
	var q byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			switch c {
			case '\\':
				i++
			case q:
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && strings.IndexByte(seps, c) >= 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// eval reads an output or set expression as a concatenation of parts.
func (w *jWalker) eval(expr string, line int) jValue {
	var v jValue
	// A conditional expression "a if c else b": take the part that can carry a clock.
	if parts := splitKeyword(expr, " if "); len(parts) == 2 {
		yes := w.eval(parts[0], line)
		if _, no, ok := strings.Cut(parts[1], " else "); ok {
			alt := w.eval(no, line)
			if alt.dynamic() && !yes.dynamic() {
				return alt
			}
		}
		return yes
	}
	for _, op := range splitTop(expr, "+~") {
		op = strings.TrimSpace(op)
		if op == "" {
			continue
		}
		base := strings.TrimSpace(splitTop(op, "|")[0])
		v.parts = append(v.parts, w.operand(base, op, line)...)
	}
	return v
}

func splitKeyword(expr, kw string) []string {
	bare := stripStrings(expr)
	depth := 0
	for i := 0; i+len(kw) <= len(bare); i++ {
		switch bare[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		if depth == 0 && bare[i:i+len(kw)] == kw {
			return []string{expr[:i], expr[i+len(kw):]}
		}
	}
	return []string{expr}
}

func (w *jWalker) operand(base, full string, line int) []jPart {
	if base == "" {
		return nil
	}
	if base[0] == '"' || base[0] == '\'' {
		if s, err := unquoteJinja(base); err == nil {
			return []jPart{{kind: "static", text: s}}
		}
		return nil
	}
	if base[0] >= '0' && base[0] <= '9' {
		return []jPart{{kind: "static", text: base}}
	}
	if base[0] == '(' && strings.HasSuffix(base, ")") {
		return w.eval(base[1:len(base)-1], line).parts
	}
	root := reIdent.FindString(base)
	switch root {
	case "bos_token", "eos_token":
		return []jPart{{kind: "static", text: "<s>"}}
	case "raise_exception", "range", "namespace", "none", "None", "true", "false", "True", "False", "loop":
		return nil
	}
	if v, ok := w.vars[root]; ok && base == root {
		return v.parts
	}
	if jMentions(full, w.convRoots()) {
		return []jPart{{kind: "conv"}}
	}
	if dynamicCall(base) {
		k, f, _ := classifyExpr(base)
		return []jPart{{kind: "dyn", dyn: &jDyn{expr: base, kind: k, freq: f, line: line, ev: EvidenceCode}}}
	}
	if v, ok := w.vars[root]; ok {
		// An attribute or item of a set variable: dynamic when the variable is.
		for _, p := range v.parts {
			if p.kind == "dyn" {
				return []jPart{p}
			}
		}
		return []jPart{{kind: "input"}}
	}
	if _, ok := w.loopVars[root]; ok || reInputName.MatchString(root) || strings.Contains(base, "(") {
		return []jPart{{kind: "input"}}
	}
	// A variable the template does not set: a chat_template_kwargs value or a caller's
	// variable, judged by its name.
	k, f := classifyName(root)
	if k == KindVariable {
		return []jPart{{kind: "input"}}
	}
	return []jPart{{kind: "dyn", dyn: &jDyn{expr: base, kind: k, freq: f, line: line, origin: "a template variable the caller passes", ev: EvidenceName}}}
}

func unquoteJinja(s string) (string, error) {
	if len(s) < 2 || s[len(s)-1] != s[0] {
		return "", fmt.Errorf("not a string literal: %s", s)
	}
	body := s[1 : len(s)-1]
	if s[0] == '\'' {
		body = strings.ReplaceAll(body, `\'`, `'`)
		body = strings.ReplaceAll(body, `"`, `\"`)
	}
	out, err := strconv.Unquote(`"` + body + `"`)
	if err != nil {
		// Jinja accepts raw newlines inside literals; keep the text as written.
		return body, nil
	}
	return out, nil
}

// scanJinja audits a chat template.
func scanJinja(file, src string, blockSize int) []Finding {
	w := &jWalker{file: file, bs: blockSize, vars: map[string]jValue{}, loopVars: map[string]string{}, seen: map[string]bool{}}
	w.walk(jParse(jLex(src)), &jState{})
	return w.findings
}
