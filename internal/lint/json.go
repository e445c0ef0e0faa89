package lint

import (
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// jsonNode is a JSON value with the byte range it occupies in the source, so that string
// values can be rewritten in place and findings carry a line, a column and a JSON pointer.
//
// A parse allocates its nodes and their child lists in slabs, and a string without escapes
// shares the source's memory (parseJSONIn): a tree costs a few allocations per thousand values
// and no copy of the file. What outlives the file's lint (findings, names) is copied
// (fileLint.add, fileLint.ref), so that the results of a run neither hold its files nor
// change when a read buffer is reused.
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
func parseJSON(src []byte) (*jsonNode, error) { return parseJSONIn(src, nil) }

// parseJSONIn parses a whole JSON document into an arena's memory (nil: its own); the tree is
// valid until the arena is released.
//
// The tree's strings without escapes share src's memory, not a copy of it: src must not change
// while the tree or a string taken from it is in use. A file's bytes are a worker's read
// buffer, which the next file is read into (readInput): what a result keeps is copied
// (fileLint.add, fileLint.ref, Linter.internName, the query cache's keys, suppress's
// pointers), as it was already so as not to keep a copy of each file alive, and
// TestReadKeepsNoBufferText lints files through one buffer and compares with each file linted
// from its own bytes.
func parseJSONIn(src []byte, a *jsonArena) (*jsonNode, error) {
	if a == nil {
		a = &jsonArena{}
	}
	p := &jsonParser{src: src, text: unsafe.String(unsafe.SliceData(src), len(src)), jsonArena: a}
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
	src  []byte
	text string // src's memory as a string, of which unescaped strings are substrings
	pos  int
	*jsonArena
}

// jsonArena is the memory of parsed trees: the slabs nodes, child lists, keys and key offsets
// are cut from, and the stacks of the containers being read (their children so far). One
// arena serves the parses of one file's lint (a dashboard, one embedded in a YAML scalar) and
// is then released for the next file's (jsonArenas), so that the trees of a run's files cost
// no allocation once the first files are read.
type jsonArena struct {
	nodes  slabs[jsonNode]
	ptrs   slabs[*jsonNode]
	strs   slabs[string]
	ints   slabs[int]
	kids   []*jsonNode
	keys   []string
	keyAts []int
}

var jsonArenas = sync.Pool{New: func() any { return &jsonArena{} }}

func (a *jsonArena) node(kind byte, start int) *jsonNode {
	n := &a.nodes.cut(1)[0]
	n.kind, n.start = kind, start
	return n
}

// release clears what the trees held (so that they keep no file's text alive) and keeps the
// slabs for the next parse; the trees must no longer be used.
func (a *jsonArena) release() {
	a.nodes.release()
	a.ptrs.release()
	a.strs.release()
	a.ints.release()
	clear(a.kids[:cap(a.kids)])
	clear(a.keys[:cap(a.keys)])
	a.kids, a.keys, a.keyAts = a.kids[:0], a.keys[:0], a.keyAts[:0]
}

// slabs hands out short slices of T cut from slabs of slabSize, with no room to append into
// their neighbours; a longer one gets its own. Released, the slabs are cleared and kept for
// the next use, at most maxFreeSlabs of them.
type slabs[T any] struct {
	cur        []T
	used, free [][]T
}

const (
	slabSize     = 256
	maxFreeSlabs = 64
)

// cut returns n zero elements.
func (s *slabs[T]) cut(n int) []T {
	if n > slabSize/4 {
		return make([]T, n)
	}
	if cap(s.cur)-len(s.cur) < n {
		if s.cur != nil {
			s.used = append(s.used, s.cur)
		}
		if k := len(s.free); k > 0 {
			s.cur, s.free = s.free[k-1], s.free[:k-1]
		} else {
			s.cur = make([]T, 0, slabSize)
		}
	}
	i := len(s.cur)
	s.cur = s.cur[:i+n]
	return s.cur[i : i+n : i+n]
}

// copyOf returns a copy of list cut from the slabs.
func (s *slabs[T]) copyOf(list []T) []T {
	if len(list) == 0 {
		return nil
	}
	out := s.cut(len(list))
	copy(out, list)
	return out
}

func (s *slabs[T]) release() {
	if s.cur != nil {
		s.used = append(s.used, s.cur)
		s.cur = nil
	}
	for _, sl := range s.used {
		clear(sl)
		if len(s.free) < maxFreeSlabs {
			s.free = append(s.free, sl[:0])
		}
	}
	clear(s.used)
	s.used = s.used[:0]
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
		for p.pos < len(p.src) && !delimiter(p.src[p.pos]) {
			p.pos++
		}
		lit := p.text[start:p.pos]
		switch lit {
		case "true", "false", "null":
		default:
			if !jsonNumber(lit) {
				p.pos = start
				return nil, p.errf("invalid value %q", truncate(lit, 20))
			}
		}
		n := p.node('v', start)
		n.end, n.str = p.pos, lit
		return n, nil
	}
}

// delimiter reports the bytes that end a literal: a comma, a closing bracket, whitespace.
func delimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func (p *jsonParser) object(depth int) (*jsonNode, error) {
	n := p.node('o', p.pos)
	p.pos++
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	base, kbase := len(p.kids), len(p.keys)
	defer func() { p.kids, p.keys, p.keyAts = p.kids[:base], p.keys[:kbase], p.keyAts[:kbase] }()
	for {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errf("expected an object key")
		}
		keyAt := p.pos
		k, err := p.stringValue()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errf("expected ':' after key %q", truncate(k, 40))
		}
		p.pos++
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.keys = append(p.keys, k)
		p.keyAts = append(p.keyAts, keyAt)
		p.kids = append(p.kids, v)
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
			n.keys = p.strs.copyOf(p.keys[kbase:])
			n.keyAt = p.ints.copyOf(p.keyAts[kbase:])
			n.kids = p.ptrs.copyOf(p.kids[base:])
			return n, nil
		default:
			return nil, p.errf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (*jsonNode, error) {
	n := p.node('a', p.pos)
	p.pos++
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	// Arrays share the objects' stack of children; keys stay as they are.
	base := len(p.kids)
	defer func() { p.kids = p.kids[:base] }()
	for {
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.kids = append(p.kids, v)
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
			n.kids = p.ptrs.copyOf(p.kids[base:])
			return n, nil
		default:
			return nil, p.errf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) string() (*jsonNode, error) {
	start := p.pos
	v, err := p.stringValue()
	if err != nil {
		return nil, err
	}
	n := p.node('s', start)
	n.end, n.str = p.pos, v
	return n, nil
}

// stringValue reads the string at pos and returns its value.
func (p *jsonParser) stringValue() (string, error) {
	start := p.pos
	p.pos++
	escaped, ascii := false, true
	for p.pos < len(p.src) {
		// Eight bytes at a time while none ends the string, escapes, is a control character
		// or is past ASCII.
		for p.pos+8 <= len(p.src) && plainWord(bin.LittleEndian.Uint64(p.src[p.pos:])) {
			p.pos += 8
		}
		if p.pos >= len(p.src) {
			break
		}
		switch c := p.src[p.pos]; {
		case c == '\\':
			escaped = true
			p.pos += 2
			continue
		case c == '"':
			p.pos++
			raw := p.src[start:p.pos]
			valid := ascii || utf8.Valid(raw)
			if !escaped && valid {
				return p.text[start+1 : p.pos-1], nil
			}
			if valid {
				if v, ok := unescapeJSON(raw[1 : len(raw)-1]); ok {
					return v, nil
				}
			}
			// Invalid UTF-8 or escapes, which encoding/json turns into U+FFFD as Grafana's
			// own reader would.
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				p.pos = start
				return "", p.errf("invalid string: %v", err)
			}
			return v, nil
		case c < 0x20:
			return "", p.errf("control character in a string")
		case c >= 0x80:
			ascii = false
		}
		p.pos++
	}
	p.pos = start
	return "", p.errf("unterminated string")
}

// plainWord reports whether none of the eight bytes of w is a quote, a backslash, a control
// character or a byte past ASCII (the tests for a zero byte and a byte below a bound of
// Hacker's Delight 6-1, exact on whether one exists).
func plainWord(w uint64) bool {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) &^ x & high }
	return (w&high | (w-0x20*ones)&^w&high | zero(w^'"'*ones) | zero(w^'\\'*ones)) == 0
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
