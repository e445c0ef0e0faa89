package lint

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonNode is a JSON value with the byte range it occupies in the source, so that string
// values can be rewritten in place and findings carry a line, a column and a JSON pointer.
type jsonNode struct {
	kind       byte // 'o' object, 'a' array, 's' string, 'v' other scalar
	start, end int  // byte offsets of the value in the source; for strings, the quotes included
	str        string
	keys       []string // object keys, parallel to kids
	keyAt      []int    // byte offsets of the keys' opening quotes, parallel to keys
	kids       []*jsonNode
}

// get returns the value of an object's key, or nil.
func (n *jsonNode) get(key string) *jsonNode {
	if n == nil || n.kind != 'o' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.kids[i]
		}
	}
	return nil
}

// text returns the string value of an object's key, or "".
func (n *jsonNode) text(key string) string {
	if v := n.get(key); v != nil && v.kind == 's' {
		return v.str
	}
	return ""
}

// maxJSONDepth bounds nesting so that a hostile file cannot exhaust the stack.
const maxJSONDepth = 512

// parseJSON parses a whole JSON document, keeping offsets.
func parseJSON(src []byte) (*jsonNode, error) {
	p := &jsonParser{src: src}
	if len(src) >= 3 && string(src[:3]) == "\xef\xbb\xbf" {
		p.pos = 3
	}
	p.ws()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(src) {
		return nil, p.errf("unexpected data after the top-level value")
	}
	return n, nil
}

type jsonParser struct {
	src    []byte
	pos    int
	intern map[string]string // short strings (keys, types) repeat in every panel
}

func (p *jsonParser) errf(format string, args ...any) error {
	line, col := lineCol(p.src, p.pos)
	return fmt.Errorf("json: line %d column %d: %s", line, col, fmt.Sprintf(format, args...))
}

func (p *jsonParser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, p.errf("nested deeper than %d levels", maxJSONDepth)
	}
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end of input")
	}
	switch p.src[p.pos] {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		return p.string()
	default:
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte(",]} \t\r\n", p.src[p.pos]) < 0 {
			p.pos++
		}
		lit := string(p.src[start:p.pos])
		switch lit {
		case "true", "false", "null":
		default:
			if !jsonNumber(lit) {
				p.pos = start
				return nil, p.errf("invalid value %q", truncate(lit, 20))
			}
		}
		return &jsonNode{kind: 'v', start: start, end: p.pos, str: lit}, nil
	}
}

func (p *jsonParser) object(depth int) (*jsonNode, error) {
	n := &jsonNode{kind: 'o', start: p.pos}
	p.pos++
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errf("expected an object key")
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errf("expected ':' after key %q", truncate(k.str, 40))
		}
		p.pos++
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, k.str)
		n.keyAt = append(n.keyAt, k.start)
		n.kids = append(n.kids, v)
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end of input in an object")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (*jsonNode, error) {
	n := &jsonNode{kind: 'a', start: p.pos}
	p.pos++
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, v)
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end of input in an array")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) string() (*jsonNode, error) {
	start := p.pos
	p.pos++
	escaped := false
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\\':
			escaped = true
			p.pos += 2
			continue
		case c == '"':
			p.pos++
			raw := p.src[start:p.pos]
			n := &jsonNode{kind: 's', start: start, end: p.pos}
			if !escaped && utf8.Valid(raw) {
				body := raw[1 : len(raw)-1]
				if len(body) > 32 {
					n.str = string(body)
					return n, nil
				}
				if v, ok := p.intern[string(body)]; ok {
					n.str = v
					return n, nil
				}
				if p.intern == nil {
					p.intern = map[string]string{}
				}
				n.str = string(body)
				p.intern[n.str] = n.str
				return n, nil
			}
			if utf8.Valid(raw) {
				if v, ok := unescapeJSON(raw[1 : len(raw)-1]); ok {
					n.str = v
					return n, nil
				}
			}
			// Invalid UTF-8 or escapes, which encoding/json turns into U+FFFD as Grafana's
			// own reader would.
			if err := json.Unmarshal(raw, &n.str); err != nil {
				p.pos = start
				return nil, p.errf("invalid string: %v", err)
			}
			return n, nil
		case c < 0x20:
			return nil, p.errf("control character in a string")
		}
		p.pos++
	}
	p.pos = start
	return nil, p.errf("unterminated string")
}

// unescapeJSON decodes the body of a JSON string with escapes. ok is false for what it
// leaves to encoding/json: a malformed escape or a lone surrogate.
func unescapeJSON(b []byte) (string, bool) {
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out.WriteByte(c)
			continue
		}
		i++
		if i >= len(b) {
			return "", false
		}
		switch b[i] {
		case '"', '\\', '/':
			out.WriteByte(b[i])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			if i+4 >= len(b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return "", false
			}
			out.WriteRune(rune(r))
			i += 4
		default:
			return "", false
		}
	}
	return out.String(), true
}

// jsonNumber reports whether s is a number in JSON's grammar (RFC 8259 §6), which is
// stricter than strconv: no leading zeros, no "+", no hex, no underscores.
func jsonNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// encodeJSONString writes s as a JSON string the way Grafana does: no HTML escaping.
func encodeJSONString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// pointerToken escapes one JSON pointer reference token (RFC 6901).
func pointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// joinPointer builds a JSON pointer from unescaped reference tokens.
func joinPointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(pointerToken(p))
	}
	return b.String()
}

// lineCol converts a byte offset to a 1-based line and a 1-based column counted in characters.
func lineCol(src []byte, off int) (int, int) {
	off = min(max(off, 0), len(src))
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCount(src[lineStart:off]) + 1
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
