package audit

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// The Python scanner reads prompt modules without running them: it finds the string literals
// that are prompts (by the name they are assigned to, the call they are passed to, or being a
// triple-quoted text that is not a docstring), their placeholders, and the keyword arguments
// and dict entries elsewhere that fill those placeholders with a clock, an id or a random
// value. A directory is audited as a unit, so a prompt in one file and the code filling it in
// another meet.

type pyTokKind int

const (
	pyName pyTokKind = iota
	pyString
	pyOp
	pyNewline
	pyNumber
)

type pyTok struct {
	kind  pyTokKind
	text  string // name, operator, or the string's source
	line  int
	start int // byte offset in the source
	end   int
	// strings
	body   string
	fstr   bool
	raw    bool
	triple bool
}

// pyLex tokenizes Python source loosely: enough for names, strings (all prefixes and quote
// forms), operators and logical line ends. It never fails; unterminated strings run to the end.
func pyLex(src string) []pyTok {
	var toks []pyTok
	line := 1
	depth := 0
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 && len(toks) > 0 && toks[len(toks)-1].kind != pyNewline {
				toks = append(toks, pyTok{kind: pyNewline, line: line, start: i, end: i + 1})
			}
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			line++
			i += 2
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && len(word) <= 3 && strings.Trim(strings.ToLower(word), "rbfu") == "" {
				t, n := lexPyString(src, i, j, line)
				toks = append(toks, t)
				line += strings.Count(src[i:n], "\n")
				i = n
				continue
			}
			toks = append(toks, pyTok{kind: pyName, text: word, line: line, start: i, end: j})
			i = j
		case c == '"' || c == '\'':
			t, n := lexPyString(src, i, i, line)
			toks = append(toks, t)
			line += strings.Count(src[i:n], "\n")
			i = n
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, pyTok{kind: pyNumber, text: src[i:j], line: line, start: i, end: j})
			i = j
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(0, depth-1)
			}
			n := 1
			if i+1 < len(src) && strings.Contains("=!<>*/-+%&|^:", string(c)) && src[i+1] == '=' {
				n = 2
			}
			toks = append(toks, pyTok{kind: pyOp, text: src[i : i+n], line: line, start: i, end: i + n})
			i += n
		}
	}
	return toks
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// lexPyString lexes a string literal whose prefix starts at start and quote at q.
func lexPyString(src string, start, q, line int) (pyTok, int) {
	prefix := strings.ToLower(src[start:q])
	quote := src[q : q+1]
	triple := strings.HasPrefix(src[q:], strings.Repeat(quote, 3))
	delim := quote
	if triple {
		delim = strings.Repeat(quote, 3)
	}
	i := q + len(delim)
	bodyStart := i
	raw := strings.Contains(prefix, "r")
	for i < len(src) {
		if src[i] == '\\' {
			i += 2
			continue
		}
		if !triple && src[i] == '\n' {
			break
		}
		if strings.HasPrefix(src[i:], delim) {
			break
		}
		i++
	}
	bodyEnd := min(i, len(src))
	end := min(len(src), i+len(delim))
	body := src[bodyStart:bodyEnd]
	if !raw {
		body = pyUnescape(body)
	}
	return pyTok{kind: pyString, text: src[start:end], line: line, start: start, end: end, body: body,
		fstr: strings.Contains(prefix, "f"), raw: raw, triple: triple}, end
}

var pyEscapes = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\"`, `"`, `\'`, `'`, "\\\n", "")

func pyUnescape(s string) string { return pyEscapes.Replace(s) }

// pyPrompt is a prompt string found in a module, with its placeholders.
type pyPrompt struct {
	file  string
	line  int
	text  string // the text as the model would get it, placeholders included
	holds []pyHold
}

// pyHold is one placeholder in a prompt.
type pyHold struct {
	expr   string // as written inside the placeholder
	name   string // the variable it names, "" for an f-string expression
	line   int
	before int // static tokens before it
	after  int // static tokens after it
	input  bool
	// lead is the static text just before it, to find it again in requests.
	lead string
}

// pyFiller is a keyword argument or dict entry that gives a placeholder name a dynamic value.
type pyFiller struct {
	file, name, expr string
	line             int
	kind             Kind
	freq             Frequency
	ev               Evidence
	// call is the function the value is passed to (format, PromptTemplate, ...).
	call string
	// module is set for a module constant (NAME = datetime.now().strftime(...)); local for
	// an assignment inside a function or a field's default (agent_name: str = "Aria").
	module, local bool
	// alias is the module constant a keyword argument passes on (date=CURRENT_DATE), resolved
	// against the unit's constants; viaLocal says it resolved to a local or a field.
	alias    string
	viaLocal bool
	// why says, for a clock, which clock pair and format decided its frequency.
	why string
	// unseen is set for a keyword argument that passes on a name whose value is not in view:
	// it says where the value comes from and settles nothing.
	unseen bool
}

var (
	rePromptName = regexp.MustCompile(`(?i)prompt|template|system|instruction|persona|preamble|message|context|content`)
	rePromptCall = regexp.MustCompile(`(?i)dedent|prompt|template|message|from_messages|format|render`)
	rePromptKey  = regexp.MustCompile(`(?i)^(content|system|prompt|instructions?|template|system_prompt|text)$`)
	reFillCall   = regexp.MustCompile(`(?i)format|prompt|template|render|invoke|partial|substitute|messages`)
)

// pyScan finds the prompts and the dynamic fillers of one module.
func pyScan(file, src string) ([]pyPrompt, []pyFiller) {
	toks := pyLex(src)
	var prompts []pyPrompt
	var fillers []pyFiller
	var stack []pyOpen
	stmtStart := 0
	// skip is the end of a concatenation already read as one prompt.
	skip := 0
	for i, t := range toks {
		if i < skip && t.kind == pyString {
			continue
		}
		switch t.kind {
		case pyNewline:
			stmtStart = i + 1
			continue
		case pyOp:
			switch t.text {
			case "(":
				call := ""
				if i > 0 && toks[i-1].kind == pyName {
					call = toks[i-1].text
				}
				stack = append(stack, pyOpen{'(', call})
			case "[", "{":
				stack = append(stack, pyOpen{t.text[0], ""})
			case ")", "]", "}":
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			case "=":
				// module constant: NAME = value, a statement at column 0; the same inside a
				// function is a local (today = date.today() ... .format(date=today)); a
				// field with a default, NAME: type = value, is a config constant.
				if len(stack) == 0 && i == stmtStart+1 && toks[i-1].kind == pyName {
					if f, ok := pyFill(file, toks, i+1, toks[i-1].text, ""); ok && f.alias == "" {
						f.module = toks[i-1].start == 0 || src[toks[i-1].start-1] == '\n'
						f.local = !f.module
						fillers = append(fillers, f)
					}
				}
				if len(stack) == 0 && i > stmtStart+2 && toks[stmtStart].kind == pyName && toks[stmtStart+1].kind == pyOp && toks[stmtStart+1].text == ":" {
					if f, ok := pyFill(file, toks, i+1, toks[stmtStart].text, ""); ok && f.alias == "" {
						f.local = true
						fillers = append(fillers, f)
					}
				}
				// keyword argument: ( ... name = value
				if len(stack) > 0 && stack[len(stack)-1].kind == '(' && i > 0 && toks[i-1].kind == pyName {
					if f, ok := pyFill(file, toks, i+1, toks[i-1].text, callOf(stack)); ok {
						fillers = append(fillers, f)
					}
				}
			case ":":
				// dict entry: { "name": value
				if len(stack) > 0 && stack[len(stack)-1].kind == '{' && i > 0 && toks[i-1].kind == pyString && !toks[i-1].fstr {
					if f, ok := pyFill(file, toks, i+1, toks[i-1].body, callOf(stack)); ok {
						fillers = append(fillers, f)
					}
				}
			}
			continue
		case pyString:
		default:
			continue
		}
		// A string expression statement (a docstring or a bare string) is not a prompt.
		if i == stmtStart && (i+1 >= len(toks) || toks[i+1].kind == pyNewline) {
			continue
		}
		if !pyIsPrompt(toks, i, stmtStart, stack) {
			continue
		}
		text, line := t.body, t.line
		if t.triple {
			d := dedent(text)
			text = strings.TrimLeft(d, "\n")
			line += len(d) - len(text)
		}
		fstr := t.fstr
		if joined, end, ok := pyConcat(toks, i); ok {
			text, fstr, skip = joined, true, end
		}
		prompts = append(prompts, pyPrompt{file: file, line: line, text: text, holds: placeholders(text, line, fstr)})
	}
	return prompts, fillers
}

// pyConcat reads a concatenation that starts with the string toks[i] ("You are X. Time: " +
// time.strftime("%H:%M") + "...") as one f-string: each operand that is not a string becomes a
// placeholder {expr}; braces of plain strings are doubled so that they stay text. It reports
// false when no operand but strings follows, and returns the index after the last operand.
func pyConcat(toks []pyTok, i int) (string, int, bool) {
	var b strings.Builder
	esc := func(t pyTok) string {
		if t.fstr {
			return t.body
		}
		return strings.NewReplacer("{", "{{", "}", "}}").Replace(t.body)
	}
	b.WriteString(esc(toks[i]))
	dynamic := false
	k := i + 1
	for k+1 < len(toks) && toks[k].kind == pyOp && toks[k].text == "+" {
		k++
		if toks[k].kind == pyString && (k+1 >= len(toks) || toks[k+1].kind != pyOp || toks[k+1].text != ".") {
			b.WriteString(esc(toks[k]))
			k++
			continue
		}
		// An expression operand: up to the next + , or closing bracket at its own depth.
		var expr strings.Builder
		depth := 0
	operand:
		for ; k < len(toks); k++ {
			t := toks[k]
			switch {
			case t.kind == pyNewline && depth == 0:
				break operand
			case t.kind == pyOp && (t.text == "(" || t.text == "[" || t.text == "{"):
				depth++
			case t.kind == pyOp && (t.text == ")" || t.text == "]" || t.text == "}"):
				if depth == 0 {
					break operand
				}
				depth--
			case t.kind == pyOp && (t.text == "+" || t.text == ",") && depth == 0:
				break operand
			}
			if expr.Len() > 0 && t.kind == pyName && toks[k-1].kind == pyName {
				expr.WriteByte(' ')
			}
			expr.WriteString(t.text)
		}
		if expr.Len() == 0 {
			break
		}
		dynamic = true
		b.WriteString("{" + expr.String() + "}")
	}
	return b.String(), k, dynamic
}

// pyOpen is an open bracket: its kind and, for a call, the name called.
type pyOpen struct {
	kind byte
	call string
}

// callOf returns the innermost function being called.
func callOf(stack []pyOpen) string {
	for k := len(stack) - 1; k >= 0; k-- {
		if stack[k].kind == '(' {
			return stack[k].call
		}
	}
	return ""
}

// pyIsPrompt decides whether the string at toks[i] is prompt text.
func pyIsPrompt(toks []pyTok, i, stmtStart int, stack []pyOpen) bool {
	t := toks[i]
	if t.triple {
		return true
	}
	// "...{name}...".format(...): the string is the template the call fills.
	if i+2 < len(toks) && toks[i+1].kind == pyOp && toks[i+1].text == "." && toks[i+2].kind == pyName && toks[i+2].text == "format" {
		return true
	}
	// assigned to a prompt-like name: NAME = "..." or self.NAME = "..."
	for k := stmtStart; k < i; k++ {
		if toks[k].kind == pyOp && toks[k].text == "=" && k > stmtStart && toks[k-1].kind == pyName && len(stack) == 0 {
			if rePromptName.MatchString(toks[k-1].text) {
				return true
			}
		}
	}
	for _, s := range stack {
		if s.kind == '(' && rePromptCall.MatchString(s.call) {
			return true
		}
	}
	if i >= 2 && toks[i-1].kind == pyOp {
		switch toks[i-1].text {
		case "=":
			if toks[i-2].kind == pyName && rePromptKey.MatchString(toks[i-2].text) {
				return true
			}
		case ":":
			if toks[i-2].kind == pyString && rePromptKey.MatchString(toks[i-2].body) {
				return true
			}
		}
	}
	return false
}

// pyFill reads the value expression starting at toks[j] (up to the next comma or closing
// bracket at its level) and keeps it when it is a clock, id or random call.
func pyFill(file string, toks []pyTok, j int, name, call string) (pyFiller, bool) {
	if j >= len(toks) {
		return pyFiller{}, false
	}
	depth := 0
	var b strings.Builder
	k := j
	for ; k < len(toks); k++ {
		t := toks[k]
		if t.kind == pyOp {
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth == 0 {
					goto done
				}
				depth--
			case ",":
				if depth == 0 {
					goto done
				}
			}
		}
		if t.kind == pyNewline && depth == 0 {
			break
		}
		if b.Len() > 0 && t.kind == pyName && k > j && toks[k-1].kind == pyName {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
done:
	expr := b.String()
	f := pyFiller{file: file, name: name, expr: expr, line: toks[j].line, call: call}
	switch {
	case dynamicCall(expr):
		f.kind, f.freq, _ = classifyExpr(expr)
		f.ev = EvidenceCode
		if f.kind == KindClock {
			f.why = clockWhy(expr)
		}
	case reRequestValue.MatchString(expr):
		// A value read from the request or the user: per user or per session, as the name
		// says; an unnamed one is per call.
		f.kind, f.freq = classifyName(name)
		if f.kind == KindVariable || f.kind == KindDate {
			f.kind, f.freq = KindUser, PerUser
		}
		f.ev = EvidenceRequest
	case reBareName.MatchString(expr) && call != "":
		f.alias = expr
	case reAttrName.MatchString(expr) && call != "":
		// configuration.agent_name: the field of that name, wherever it is set.
		f.alias = expr[strings.LastIndexByte(expr, '.')+1:]
	case k-j == 1 && (toks[j].kind == pyString && !toks[j].fstr || toks[j].kind == pyNumber):
		// A literal: set once in the code, fixed per deployment.
		f.kind, f.freq, f.ev = KindVariable, Fixed, EvidenceCode
	default:
		return pyFiller{}, false
	}
	return f, true
}

var (
	// reRequestValue matches an expression that reads the request or the user: a web
	// framework's request, the user object, LangGraph's per-invocation config.
	reRequestValue = regexp.MustCompile(`^(?:self\.)?(?:request|req|http_request|user|current_user|session|headers)\b\s*[.\[]|\bconfig\s*\[\s*["']configurable["']\s*\]`)
	reBareName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reAttrName     = regexp.MustCompile(`^(?:self\.)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
)

// resolveAliases gives keyword arguments that pass on a module constant (date=CURRENT_DATE)
// the constant's value, and marks unseen those whose name has no value in view.
func resolveAliases(fillers []pyFiller) []pyFiller {
	consts := map[string]pyFiller{}
	for _, f := range fillers {
		if f.module || f.local {
			if _, seen := consts[f.name]; !seen || f.module {
				consts[f.name] = f
			}
		}
	}
	out := fillers[:0]
	for _, f := range fillers {
		if f.alias != "" {
			c, ok := consts[f.alias]
			if !ok {
				// Passed on from a name whose value is not in view (configuration.agent_name
				// of a module not given): kept as where the value comes from, settling nothing.
				f.freq, f.unseen = Unknown, true
				out = append(out, f)
				continue
			}
			f.kind, f.freq, f.ev, f.why = c.kind, c.freq, c.ev, c.why
			f.viaLocal = c.local
			f.expr = fmt.Sprintf("%s (%s:%d %s)", f.expr, filepath.Base(c.file), c.line, c.expr)
		}
		out = append(out, f)
	}
	return out
}

// dynamicCall reports whether an expression calls a clock, an id generator or a random source.
func dynamicCall(expr string) bool {
	return reUUIDCall.MatchString(expr) || reRandCall.MatchString(expr) || reStrftime.MatchString(expr) || reClockCall.MatchString(expr)
}

// dedent removes the common leading whitespace of the non-blank lines, as textwrap.dedent.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return s
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = l[common:]
		} else {
			lines[i] = strings.TrimLeft(l, " \t")
		}
	}
	return strings.Join(lines, "\n")
}

var (
	reJinjaTag  = regexp.MustCompile(`(?s)\{%-?\s*(.*?)\s*-?%\}|\{#.*?#\}`)
	reJinjaExpr = regexp.MustCompile(`(?s)\{\{-?\s*(.*?)\s*-?\}\}`)
	reFormat    = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]{}]*\])*)(?:![rsa])?(?::[^{}]*)?\}`)
	rePercent   = regexp.MustCompile(`%\(([A-Za-z_][A-Za-z0-9_]*)\)[-#0 +]*\d*(?:\.\d+)?[sdifr]`)
	reDollar    = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
	reFExpr     = regexp.MustCompile(`\{([^{}]+)\}`)
)

// placeholders finds the placeholders of a prompt text in every common style: Jinja
// {{ expr }}, str.format {name}, printf %(name)s, $name / ${name}, and f-string {expr}. Jinja
// tags are not text; names bound by {% for %} and {% set %} inside the text are derived from
// tools and the like and are not reported unless their source is a clock.
func placeholders(text string, line int, fstr bool) []pyHold {
	type hit struct {
		start, end int
		expr, name string
	}
	var hits []hit
	bound := map[string]bool{}
	// Remove tags (keeping their length out of the static text) and note bound names.
	masked := []byte(text)
	for _, m := range reJinjaTag.FindAllStringSubmatchIndex(text, -1) {
		if m[2] >= 0 {
			body := text[m[2]:m[3]]
			w := stmtWord(body)
			rest := strings.TrimSpace(strings.TrimPrefix(body, w))
			switch w {
			case "for":
				if target, _, ok := strings.Cut(rest, " in "); ok {
					for _, v := range strings.Split(target, ",") {
						bound[strings.TrimSpace(v)] = true
					}
				}
			case "set":
				if name, val, ok := strings.Cut(rest, "="); ok && !dynamicCall(val) {
					bound[strings.TrimSpace(name)] = true
				}
			}
		}
		for k := m[0]; k < m[1]; k++ {
			masked[k] = 0
		}
	}
	ms := string(masked)
	if fstr {
		for _, m := range reFExpr.FindAllStringSubmatchIndex(ms, -1) {
			if m[0] > 0 && ms[m[0]-1] == '{' {
				continue
			}
			expr := ms[m[2]:m[3]]
			name := ""
			if reBareName.MatchString(strings.TrimSpace(expr)) {
				// {CURRENT_DATE}: a name the unit's constants and arguments can fill.
				name = strings.TrimSpace(expr)
			}
			hits = append(hits, hit{m[0], m[1], expr, name})
		}
	} else {
		for _, m := range reJinjaExpr.FindAllStringSubmatchIndex(ms, -1) {
			expr := strings.TrimSpace(ms[m[2]:m[3]])
			hits = append(hits, hit{m[0], m[1], expr, reIdent.FindString(expr)})
		}
		covered := func(a, b int) bool {
			for _, h := range hits {
				if a < h.end && b > h.start {
					return true
				}
			}
			return false
		}
		for _, re := range []*regexp.Regexp{reFormat, rePercent, reDollar} {
			for _, m := range re.FindAllStringSubmatchIndex(ms, -1) {
				if covered(m[0], m[1]) {
					continue
				}
				if re == reFormat && (m[0] > 0 && ms[m[0]-1] == '{' || m[1] < len(ms) && ms[m[1]] == '}') {
					continue
				}
				name := ""
				for g := 2; g+1 < len(m); g += 2 {
					if m[g] >= 0 {
						name = ms[m[g]:m[g+1]]
						break
					}
				}
				hits = append(hits, hit{m[0], m[1], ms[m[0]:m[1]], name})
			}
		}
	}
	// Order by position and measure the static text around each.
	for a := 1; a < len(hits); a++ {
		for b := a; b > 0 && hits[b].start < hits[b-1].start; b-- {
			hits[b], hits[b-1] = hits[b-1], hits[b]
		}
	}
	static := func(s string) int {
		s = strings.ReplaceAll(s, "\x00", "")
		return estimateStatic(s)
	}
	var out []pyHold
	prev := 0
	before := 0
	for _, h := range hits {
		before += static(ms[prev:h.start])
		prev = h.end
		root := h.name
		if root == "" {
			root = reIdent.FindString(h.expr)
		}
		input := bound[root] || reInputName.MatchString(root)
		lead := strings.ReplaceAll(ms[max(0, h.start-32):h.start], "\x00", "")
		out = append(out, pyHold{expr: h.expr, name: h.name, line: line + strings.Count(text[:h.start], "\n"), before: before, input: input, lead: lead})
	}
	total := before + static(ms[prev:])
	for i := range out {
		out[i].after = total - out[i].before
	}
	return out
}
