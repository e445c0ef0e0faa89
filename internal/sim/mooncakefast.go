package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// parseMooncakeFast decodes the common shape of a Mooncake line without encoding/json: one flat
// object of the six known fields with lower-case names, plain numbers, session ids that are
// numbers or strings without escapes, hash_ids an array of integers. The ids are appended to ids
// (row.HashIDs aliases them). Anything else (an unknown or repeated field, null, an escape,
// a syntax error, a number encoding/json would not put in an int) returns ok false, and the line
// goes to decodeMooncakeRow, which gives the same row or the error encoding/json gives; so the
// fast path changes the speed of reading, never its outcome.
func parseMooncakeFast(b []byte, ids []uint64) (row mooncakeRow, out []uint64, ok bool) {
	p := fastJSON{b: b}
	out = ids
	if !p.eat('{') {
		return row, ids, false
	}
	var ts float64
	var in int
	var seen uint8
	for first := true; ; first = false {
		p.ws()
		if p.peek() == '}' && first {
			p.i++
			break
		}
		key, ok := p.plainString()
		if !ok || !p.eat(':') {
			return row, ids, false
		}
		p.ws()
		var bit uint8
		switch string(key) {
		case "timestamp":
			bit = 1
			tok, ok := p.number()
			if !ok {
				return row, ids, false
			}
			v, err := strconv.ParseFloat(string(tok), 64)
			if err != nil {
				return row, ids, false
			}
			ts = v
			row.Timestamp = &ts
		case "input_length":
			bit = 2
			v, ok := p.int()
			if !ok {
				return row, ids, false
			}
			in = v
			row.InputLength = &in
		case "output_length":
			bit = 4
			v, ok := p.int()
			if !ok {
				return row, ids, false
			}
			row.OutputLength = v
		case "hash_ids":
			bit = 8
			if !p.eat('[') {
				return row, ids, false
			}
			from := len(out)
			p.ws()
			if p.peek() == ']' {
				p.i++
			} else {
				for {
					p.ws()
					v, ok := p.hashID()
					if !ok {
						return row, ids, false
					}
					out = append(out, v)
					p.ws()
					if p.eat(',') {
						continue
					}
					if p.eat(']') {
						break
					}
					return row, ids, false
				}
			}
			row.HashIDs = out[from:len(out):len(out)]
			if row.HashIDs == nil {
				row.HashIDs = hashIDs{} // present and empty, not absent
			}
		case "session_id", "chat_id":
			bit = 16
			if key[0] == 'c' {
				bit = 32
			}
			raw, ok := p.plainValue()
			if !ok {
				return row, ids, false
			}
			if bit == 16 {
				row.SessionID = json.RawMessage(raw)
			} else {
				row.ChatID = json.RawMessage(raw)
			}
		default:
			return row, ids, false
		}
		if seen&bit != 0 {
			return row, ids, false
		}
		seen |= bit
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return row, ids, false
	}
	p.ws()
	if p.i != len(p.b) {
		return row, ids, false
	}
	return row, out, true
}

// fastJSON is a cursor over one line.
type fastJSON struct {
	b []byte
	i int
}

func (p *fastJSON) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastJSON) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// eat skips white space and then c, reporting whether c was there.
func (p *fastJSON) eat(c byte) bool {
	p.ws()
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// plainString reads a string without escapes or control characters and returns its content.
func (p *fastJSON) plainString() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	end := bytes.IndexByte(p.b[p.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	s := p.b[p.i+1 : p.i+1+end]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, false
		}
	}
	p.i += end + 2
	return s, true
}

// number reads a token of JSON number syntax.
func (p *fastJSON) number() ([]byte, bool) {
	start := p.i
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	p.i = i
	return b[start:i], true
}

// hashID reads an integer as parseHashID does (int64 or uint64 range, a negative one as its two's
// complement), in JSON syntax (no leading zero) and followed by neither fraction nor exponent.
func (p *fastJSON) hashID() (uint64, bool) {
	b, i := p.b, p.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	switch n := i - start; {
	case n == 0, n > 1 && b[start] == '0':
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		v = -v
	}
	p.i = i
	return v, true
}

// int reads a number that encoding/json would store in an int: no fraction or exponent, in range.
func (p *fastJSON) int() (int, bool) {
	start := p.i
	tok, ok := p.number()
	if !ok || p.i-start != len(tok) {
		return 0, false
	}
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	v := 0
	for _, c := range tok {
		if c < '0' || c > '9' || v > (math.MaxInt-int(c-'0'))/10 {
			return 0, false // a fraction, an exponent, or out of range: encoding/json's to judge
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// plainValue reads a number or a string without escapes and returns its JSON text.
func (p *fastJSON) plainValue() ([]byte, bool) {
	start := p.i
	if p.peek() == '"' {
		if _, ok := p.plainString(); !ok {
			return nil, false
		}
		return p.b[start:p.i], true
	}
	return p.number()
}

// keyStore holds a trace's block keys in chunks that never move, so that reading a long trace
// does not copy every key each time one growing array fills up (which held the old and the new
// array at once, more than twice the keys at the peak).
type keyStore struct {
	chunk []uint64
	n     int // keys stored
}

// add copies keys into the store and returns the stored copy.
func (s *keyStore) add(keys []uint64) []uint64 {
	if len(keys) == 0 {
		return nil
	}
	if cap(s.chunk)-len(s.chunk) < len(keys) {
		size := min(max(4096, 2*cap(s.chunk)), 1<<20)
		s.chunk = make([]uint64, 0, max(size, len(keys)))
	}
	from := len(s.chunk)
	s.chunk = append(s.chunk, keys...)
	s.n += len(keys)
	return s.chunk[from:len(s.chunk):len(s.chunk)]
}
