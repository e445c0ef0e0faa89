package audit

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The request reader's export path used to decode an export line four times with
// encoding/json: once as a body (to find it is none), once into a map of its members, once more
// for the member holding the body (to see that it has messages or a prompt), and then the body
// itself; every json.Unmarshal validates its input before decoding it, so the body's bytes were
// scanned about eight times. The helpers below validate a line once (validJSON, json.Valid's
// answer in a tighter loop) and then walk
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

// JSONMembers calls fn with each member of the JSON object in b: the key as written (escapes
// not decoded) and the value's bytes, both pointing into b. It walks strings and brackets
// without decoding them and reports false when b is not an object (or stops being one part
// way); values are not validated, so fn may have seen some members by then. The simulator's
// request-log reader uses it on unvalidated lines; audit's callers pass validated JSON.
func JSONMembers(b []byte, fn func(k, v []byte)) bool {
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
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		vend := endOfValue(b, i)
		if vend <= i {
			return false
		}
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

// endOfString returns the index after the JSON string that starts at b[i] == '"', or -1 when
// it does not end.
func endOfString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
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

// endOfValue returns the index after the JSON value that starts at b[i], or -1 when there is
// none or a string or bracket in it does not end. Only strings and brackets are followed: the
// value is not validated.
func endOfValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := endOfString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
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
	JSONMembers(line, func(k, v []byte) {
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
	JSONMembers(raw, func(k, v []byte) {
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
	JSONMembers(raw, func(k, _ []byte) {
		if !plainKey(k) {
			sure = false
		}
		if string(k) == "messages" || string(k) == "prompt" {
			has = true
		}
	})
	return has, has || sure
}

// bodyFields and messageFields are the member names wireBody and wireMessage decode;
// encoding/json also matches them case-insensitively.
var (
	bodyFields    = []string{"model", "messages", "prompt", "tools", "session_id", "metadata", "headers", "cache_salt", "extra_key", "lora_path", "session_params"}
	messageFields = []string{"role", "content", "cache_control", "tool_calls", "reasoning_content"}
)

// foldsTo reports whether the plain name k is one of names but for case, which encoding/json
// would decode into that field.
func foldsTo(k []byte, names []string) bool {
	for _, n := range names {
		if bytes.EqualFold(k, []byte(n)) {
			return true
		}
	}
	return false
}

// fastBody decodes a valid body as json.Unmarshal into wireBody does, without validating it
// again or going through reflection; the raw values alias data. ok is false where it cannot be
// sure of giving the same (a name that is not plain, or is a field's name in another case; a
// field twice; a value of a type the field does not take; a message that is not an object; a
// content that does not decode), and the caller decodes with encoding/json, which gives the
// result or the error it always gave.
func fastBody(data []byte) (b wireBody, ok bool) {
	ok = true
	var seen uint16
	JSONMembers(data, func(k, v []byte) {
		if !ok {
			return
		}
		if !plainKey(k) {
			ok = false
			return
		}
		var bit uint16
		switch string(k) {
		case "model":
			bit, b.Model = 1, v
		case "messages":
			bit = 2
			b.Messages, ok = fastMessages(v)
		case "prompt":
			bit, b.Prompt = 4, v
		case "tools":
			bit, b.Tools = 8, v
		case "session_id":
			bit, b.SessionID = 16, v
		case "metadata":
			bit, b.Metadata = 32, v
		case "headers":
			bit, b.Headers = 64, v
		case "cache_salt":
			bit, b.CacheSalt = 128, v
		case "extra_key":
			bit, b.ExtraKey = 256, v
		case "lora_path":
			bit, b.LoraPath = 512, v
		case "session_params":
			bit, b.SessionParams = 1024, v
		default:
			if foldsTo(k, bodyFields) {
				ok = false
			}
			return
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
	})
	return b, ok
}

// fastMessages decodes a valid messages value: null (no messages) or a list of objects.
func fastMessages(v []byte) (*[]wireMessage, bool) {
	if string(v) == "null" {
		return nil, true
	}
	if v[0] != '[' {
		return nil, false
	}
	// Sized once (a count is one more walk of the bytes): a list of 850,000 messages grown by
	// appending left its smaller copies behind, as much garbage as the list.
	n := 0
	walkArray(v, func([]byte) { n++ })
	msgs := make([]wireMessage, 0, n)
	ok := true
	walkArray(v, func(e []byte) {
		if !ok {
			return
		}
		if e[0] != '{' {
			ok = false
			return
		}
		var m wireMessage
		if m, ok = fastMessage(e); ok {
			msgs = append(msgs, m)
		}
	})
	if !ok {
		return nil, false
	}
	return &msgs, true
}

func fastMessage(e []byte) (m wireMessage, ok bool) {
	ok = true
	var seen uint8
	JSONMembers(e, func(k, v []byte) {
		if !ok {
			return
		}
		if !plainKey(k) {
			ok = false
			return
		}
		var bit uint8
		switch string(k) {
		case "role":
			bit = 1
			m.Role, ok = fastString(v)
		case "content":
			bit = 2
			ok = m.Content.UnmarshalJSON(v) == nil
		case "cache_control":
			bit, m.CacheControl = 4, v
		case "tool_calls":
			bit, m.ToolCalls = 8, v
		case "reasoning_content":
			bit, m.Reasoning = 16, v
		default:
			if foldsTo(k, messageFields) {
				ok = false
			}
			return
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
	})
	return m, ok
}

// fastString decodes a valid JSON string value (or null, which leaves a string empty); ok is
// false for any other value.
func fastString(v []byte) (string, bool) {
	switch {
	case string(v) == "null":
		return "", true
	case v[0] != '"':
		return "", false
	case bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v):
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// walkArray calls fn with each element of the valid JSON array in b.
func walkArray(b []byte, fn func(v []byte)) {
	i := skipWS(b, 0) + 1
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := endOfValue(b, i)
		if end <= i {
			return // b was not valid after all
		}
		fn(b[i:end])
		i = end
	}
}

// maxDepth is encoding/json's nesting limit: json.Valid refuses a value nested deeper.
const maxDepth = 10000

// validJSON is json.Valid: one JSON value with optional white space around it. It gives the
// same answer (FuzzValidJSON compares them) in one pass without the scanner's call per byte.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

// afterElement reads what follows a member or element of an object or array, from b[i]: a comma
// (it returns the index of the next one), or the closing bracket (end is true, and the index is
// after it). Anything else is not valid.
func afterElement(b []byte, i int, closing byte) (next int, end, ok bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), false, true
	case closing:
		return i + 1, true, true
	}
	return i, false, false
}

// validValue checks the value starting at b[i] and returns the index after it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{':
		if depth+1 > maxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, skipWS(b, i+1), depth+1); !ok {
				return i, false
			}
			var end bool
			if i, end, ok = afterElement(b, i, '}'); end || !ok {
				return i, ok
			}
		}
	case c == '[':
		if depth+1 > maxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth+1); !ok {
				return i, false
			}
			var end bool
			if i, end, ok = afterElement(b, i, ']'); end || !ok {
				return i, ok
			}
		}
	case c == 't':
		return i + 4, bytes.HasPrefix(b[i:], []byte("true"))
	case c == 'f':
		return i + 5, bytes.HasPrefix(b[i:], []byte("false"))
	case c == 'n':
		return i + 4, bytes.HasPrefix(b[i:], []byte("null"))
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	}
	return i, false
}

// validString checks the string starting at b[i] == '"': no control characters, only JSON's
// escapes (bytes above 0x7F are not checked, as encoding/json's scanner does not).
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if (h < '0' || h > '9') && (h < 'a' || h > 'f') && (h < 'A' || h > 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// validNumber checks the number starting at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	if b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}
