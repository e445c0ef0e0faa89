package audit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// hfSource rewrites a chat template into one the engine renders as jinja2 does under
// transformers' settings. The engine's own whitespace handling strips text that is not next
// to the tag ("A: {{ x }}{%- endif %}" loses the space after "A:"), so the rewrite settles
// all whitespace control here, as jinja2's lexer does (newlines normalised, one trailing
// newline dropped, "-" trimming, lstrip_blocks, trim_blocks), and hands the engine no text at
// all: every piece of text becomes a string expression. Inside tags, string literals are
// decoded with Python's rules (the engine knows fewer escapes) and adjacent literals joined
// ("a" "b" is "ab" in Jinja, a parse error in the engine); the tojson filter is renamed to
// kvcheck's, since the engine's filters cannot be replaced.
func hfSource(src string) (string, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	segs, err := hfLex(src)
	if err != nil {
		return "", err
	}
	hfTrim(segs)
	var b strings.Builder
	for _, s := range segs {
		switch s.kind {
		case hfText:
			if s.text != "" {
				b.WriteString("{{ ")
				b.WriteString(pyLiteral(s.text))
				b.WriteString(" }}")
			}
		case hfExpr:
			b.WriteString("{{ ")
			b.WriteString(s.text)
			b.WriteString(" }}")
		case hfStmt:
			b.WriteString("{% ")
			b.WriteString(s.text)
			b.WriteString(" %}")
		}
	}
	return b.String(), nil
}

type hfKind int

const (
	hfText hfKind = iota
	hfExpr
	hfStmt
	hfComment
)

type hfSeg struct {
	kind hfKind
	text string // text, or a tag's rewritten body
	// minusL/minusR: "{%-"/"-%}"; plusL/plusR: "{%+"/"+%}" (no lstrip / trim_blocks).
	minusL, minusR, plusL, plusR bool
	// lineStart: the text starts at the start of a line of the source.
	lineStart bool
}

// hfLex splits a template into text, expressions, statements and comments. Tag bodies end
// at the closer outside string literals and brackets, as jinja2's lexer does; {% raw %}
// bodies are text.
func hfLex(src string) ([]hfSeg, error) {
	var segs []hfSeg
	pos := 0
	for pos < len(src) {
		i := nextTagOpen(src, pos)
		if i < 0 {
			segs = append(segs, hfSeg{kind: hfText, text: src[pos:], lineStart: pos == 0 || src[pos-1] == '\n'})
			break
		}
		if i > pos {
			segs = append(segs, hfSeg{kind: hfText, text: src[pos:i], lineStart: pos == 0 || src[pos-1] == '\n'})
		}
		open := src[i+1]
		j := i + 2
		var s hfSeg
		if j < len(src) && src[j] == '-' {
			s.minusL, j = true, j+1
		} else if j < len(src) && src[j] == '+' {
			s.plusL, j = true, j+1
		}
		switch open {
		case '#':
			end := strings.Index(src[j:], "#}")
			if end < 0 {
				return nil, fmt.Errorf("a comment opened at byte %d is not closed", i)
			}
			body := src[j : j+end]
			s.kind = hfComment
			s.minusR = strings.HasSuffix(body, "-")
			s.plusR = strings.HasSuffix(body, "+")
			segs = append(segs, s)
			pos = j + end + 2
			continue
		case '{':
			s.kind = hfExpr
		case '%':
			s.kind = hfStmt
		}
		closer := "}}"
		if open == '%' {
			closer = "%}"
		}
		body, next, err := tagBody(src, j, closer)
		if err != nil {
			return nil, fmt.Errorf("a tag opened at byte %d: %w", i, err)
		}
		trimmed := strings.TrimRight(body, " \t\n")
		if strings.HasSuffix(trimmed, "-") {
			s.minusR, body = true, strings.TrimSuffix(trimmed, "-")
		} else if strings.HasSuffix(trimmed, "+") && open == '%' {
			s.plusR, body = true, strings.TrimSuffix(trimmed, "+")
		}
		rewritten, err := rewriteTagBody(body)
		if err != nil {
			return nil, fmt.Errorf("a tag opened at byte %d: %w", i, err)
		}
		s.text = rewritten
		segs = append(segs, s)
		pos = next
		if open == '%' && stmtWord(strings.TrimSpace(body)) == "raw" {
			// The body up to {% endraw %} is text, as written.
			k := pos
			for {
				e := strings.Index(src[k:], "{%")
				if e < 0 {
					return nil, fmt.Errorf("{%% raw %%} at byte %d is not closed", i)
				}
				e += k
				inner := strings.TrimSpace(strings.Trim(src[e+2:min(len(src), e+2+strings.Index(src[e+2:], "%}")+1)], "-+%"))
				if inner == "endraw" {
					segs[len(segs)-1] = hfSeg{kind: hfComment, minusL: s.minusL, plusL: s.plusL, minusR: s.minusR, plusR: s.plusR}
					segs = append(segs, hfSeg{kind: hfText, text: src[pos:e], lineStart: src[pos-1] == '\n'})
					endStart := e
					_, after, err := tagBody(src, e+2, "%}")
					if err != nil {
						return nil, err
					}
					end := hfSeg{kind: hfComment}
					end.minusL = strings.HasPrefix(src[endStart+2:], "-")
					end.minusR = strings.HasSuffix(strings.TrimRight(src[endStart:after-2], " \t\n"), "-")
					segs = append(segs, end)
					pos = after
					break
				}
				k = e + 2
			}
		}
	}
	return segs, nil
}

// nextTagOpen finds the next "{{", "{%" or "{#" at or after pos.
func nextTagOpen(src string, pos int) int {
	for {
		i := strings.IndexByte(src[pos:], '{')
		if i < 0 || pos+i+1 >= len(src) {
			return -1
		}
		i += pos
		if c := src[i+1]; c == '{' || c == '%' || c == '#' {
			return i
		}
		pos = i + 1
	}
}

// tagBody reads a tag's body from j up to the closer outside strings and brackets, and
// returns the body and the index after the closer.
func tagBody(src string, j int, closer string) (string, int, error) {
	depth := 0
	for k := j; k < len(src); k++ {
		c := src[k]
		switch {
		case c == '"' || c == '\'':
			end := literalEnd(src, k)
			if end < 0 {
				return "", 0, fmt.Errorf("a string literal at byte %d is not closed", k)
			}
			k = end - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case depth == 0 && strings.HasPrefix(src[k:], closer):
			return src[j:k], k + len(closer), nil
		}
	}
	return "", 0, fmt.Errorf("not closed by %s", closer)
}

// literalEnd returns the index after the string literal starting at src[k], or -1.
func literalEnd(src string, k int) int {
	q := src[k]
	for i := k + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			return i + 1
		}
	}
	return -1
}

// rewriteTagBody decodes each string literal with Python's rules, joins adjacent ones and
// renames the tojson filter.
func rewriteTagBody(body string) (string, error) {
	var b strings.Builder
	var pending *strings.Builder // the decoded text of the literals being joined
	pendingGap := ""
	flush := func() {
		if pending != nil {
			b.WriteString(pyLiteral(pending.String()))
			pending = nil
		}
		b.WriteString(pendingGap)
		pendingGap = ""
	}
	for k := 0; k < len(body); {
		c := body[k]
		switch {
		case c == '"' || c == '\'':
			end := literalEnd(body, k)
			if end < 0 {
				return "", fmt.Errorf("a string literal is not closed")
			}
			s, err := pyUnquote(body[k:end])
			if err != nil {
				return "", err
			}
			if pending == nil {
				b.WriteString(pendingGap)
				pendingGap = ""
				pending = &strings.Builder{}
			} else {
				pendingGap = "" // whitespace between two literals joins them
			}
			pending.WriteString(s)
			k = end
		case c == ' ' || c == '\t' || c == '\n':
			pendingGap += string(c)
			k++
		default:
			flush()
			if c == '|' {
				// A filter: "| tojson" becomes kvcheck's.
				j := k + 1
				for j < len(body) && (body[j] == ' ' || body[j] == '\t' || body[j] == '\n') {
					j++
				}
				if strings.HasPrefix(body[j:], "tojson") && (j+6 == len(body) || !isIdentPart(body[j+6])) {
					b.WriteString(body[k:j])
					b.WriteString(tojsonFilter)
					k = j + 6
					continue
				}
			}
			b.WriteByte(c)
			k++
		}
	}
	flush()
	return b.String(), nil
}

// tojsonFilter is the name kvcheck's tojson is registered under.
const tojsonFilter = "kvcheck_tojson"

// pyUnquote decodes a Jinja string literal as Python does (\n, \t, \r, \xNN, \uNNNN,
// \UNNNNNNNN, \N is left alone; an unknown escape keeps its backslash).
func pyUnquote(lit string) (string, error) {
	if len(lit) < 2 {
		return "", fmt.Errorf("bad string literal %s", lit)
	}
	body := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := body[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'a':
			b.WriteByte('\a')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
			// a line continuation
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n < len(body)+0 && i+1+n <= len(body) {
				if v, err := strconv.ParseUint(body[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

// pyLiteral writes s as a literal the engine reads back as s: it knows the escapes \\ and
// \" and takes every other character as it stands.
func pyLiteral(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// hfTrim applies jinja2's whitespace control to the text segments: "-" strips all
// whitespace on its side; lstrip_blocks strips the spaces and tabs between the start of a
// line and a block or comment tag; trim_blocks drops the first newline after one.
func hfTrim(segs []hfSeg) {
	for i := range segs {
		s := &segs[i]
		if s.kind != hfText {
			continue
		}
		if i+1 < len(segs) {
			next := segs[i+1]
			switch {
			case next.minusL:
				s.text = strings.TrimRight(s.text, " \t\n")
			case (next.kind == hfStmt || next.kind == hfComment) && !next.plusL:
				l := strings.LastIndexByte(s.text, '\n') + 1
				if (l > 0 || s.lineStart) && strings.Trim(s.text[l:], " \t") == "" {
					s.text = s.text[:l]
				}
			}
		}
		if i > 0 {
			prev := segs[i-1]
			switch {
			case prev.minusR:
				s.text = strings.TrimLeft(s.text, " \t\n")
			case (prev.kind == hfStmt || prev.kind == hfComment) && !prev.plusR:
				s.text = strings.TrimPrefix(s.text, "\n")
			}
		}
	}
}
