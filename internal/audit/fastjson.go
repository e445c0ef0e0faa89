package audit

import (
	"bytes"
	"encoding/json"
)

// The request reader's export path used to decode an export line four times with
// encoding/json: once as a body (to find it is none), once into a map of its members, once more
// for the member holding the body (to see that it has messages or a prompt), and then the body
// itself; every json.Unmarshal validates its input before decoding it, so the body's bytes were
// scanned about eight times. The helpers below validate a line once (json.Valid) and then walk
// its members without decoding or validating again. They answer only where the answer is sure to
// equal encoding/json's; anything else (a key with an escape or a non-ASCII byte, which
// encoding/json unescapes or folds) goes the old way, so every result and every error stays the
// same.

// slowJSON turns the helpers off, for tests: the old way everywhere is the reference the fast
// path is checked against.
var slowJSON = false

// plainKey reports whether a member name as written in the JSON is what encoding/json decodes
// it to: no escape, and ASCII only (invalid UTF-8 would become U+FFFD, and case folding beyond
// ASCII is Unicode's).
func plainKey(k []byte) bool {
	for _, c := range k {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// walkObject calls fn with each member of the JSON object in b, which must be valid JSON
// (checked by the caller, or part of a validated line): the key as written and the value's
// bytes. It reports false when b is not an object.
func walkObject(b []byte, fn func(k, v []byte)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		end := endOfString(b, i)
		key := b[i+1 : end-1]
		i = skipWS(b, end) + 1 // past the colon
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		vend := endOfValue(b, i)
		fn(key, b[i:vend])
		i = vend
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the valid JSON string that starts at b[i] == '"' (len(b)
// when it does not end: b was not valid).
func endOfString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		esc := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			esc++
		}
		if esc%2 == 0 {
			return j + 1
		}
		j++
	}
}

// endOfValue returns the index after the valid JSON value that starts at b[i] (at most len(b)).
func endOfValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = endOfString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// exportMembers reads a validated line's members into a map, as json.Unmarshal into a
// map[string]json.RawMessage does (a repeated name keeps its last value; the values alias
// line). body is true when a member is one encoding/json would decode into wireBody's messages
// or prompt (its names match case-insensitively): the line may be a body, and the caller goes
// the old way. ok is false when a name is not plain (see plainKey).
func exportMembers(line []byte) (m map[string]json.RawMessage, body, ok bool) {
	m = map[string]json.RawMessage{}
	ok = true
	walkObject(line, func(k, v []byte) {
		if !plainKey(k) {
			ok = false
			return
		}
		if bytes.EqualFold(k, []byte("messages")) || bytes.EqualFold(k, []byte("prompt")) {
			body = true
		}
		m[string(k)] = v
	})
	return m, body, ok
}

// objectOf is asObject for a value inside a validated line: an object is walked instead of
// decoded again; a string holding JSON, or an object with a name that is not plain, goes
// through asObject.
func objectOf(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if slowJSON || len(raw) == 0 || raw[0] != '{' {
		return asObject(raw)
	}
	m := map[string]json.RawMessage{}
	plain := true
	walkObject(raw, func(k, v []byte) {
		if !plainKey(k) {
			plain = false
			return
		}
		m[string(k)] = v
	})
	if !plain {
		return asObject(raw)
	}
	return m, true
}

// hasBodyKey reports whether the object raw (inside a validated line) has a member named
// messages or prompt, exactly, as bodyAt asks of the map asObject decodes. sure is false when
// none is found and a name is not plain (it may decode to one): the caller asks asObject.
func hasBodyKey(raw []byte) (has, sure bool) {
	sure = true
	walkObject(raw, func(k, _ []byte) {
		if !plainKey(k) {
			sure = false
		}
		if string(k) == "messages" || string(k) == "prompt" {
			has = true
		}
	})
	return has, has || sure
}
