package audit

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
)

// The causes a divergence gets when two requests carry the same tools or the same JSON in
// another order: the engine hashes bytes, so a reordered tool list or a map serialised in
// another key order breaks the prefix there as surely as a timestamp.
const (
	CauseToolOrder = "tool order"
	CauseKeyOrder  = "key order"
	CauseListOrder = "list order"
)

// maxOrderUnits bounds the JSON units (tool lists, JSON message contents) remembered to tell
// a reordering from a real change: two hashes each.
const maxOrderUnits = 250_000

// orderForms are the hashes of a JSON unit's canonical forms: keys sorted at every level
// (list order kept), and keys sorted with every list sorted too.
type orderForms struct {
	keys, all uint64
	ok        bool
}

// orders remembers JSON units by their bytes and by their content regardless of order.
type orders struct {
	seed  maphash.Seed
	forms map[uint64]orderForms // hash of the bytes -> canonical forms
	first map[uint64]uint64     // hash of the fully sorted form -> hash of the first bytes seen
}

func newOrders(seed maphash.Seed) *orders {
	return &orders{seed: seed, forms: map[uint64]orderForms{}, first: map[uint64]uint64{}}
}

// cause records one JSON unit (tag tells the tools from each message slot) and reports the
// order cause when the same content was seen before in other bytes: "tool order" when a tool
// list's elements moved, "key order" when only object keys did, "list order" for another list.
func (o *orders) cause(tag int, raw string) string {
	var h maphash.Hash
	h.SetSeed(o.seed)
	h.WriteByte(byte(tag))
	h.WriteString(raw)
	exact := h.Sum64()
	f, ok := o.forms[exact]
	if !ok {
		f = o.canonical(tag, raw)
		if len(o.forms) < maxOrderUnits {
			o.forms[exact] = f
		}
	}
	if !f.ok {
		return ""
	}
	prev, seen := o.first[f.all]
	if !seen {
		if len(o.first) < maxOrderUnits {
			o.first[f.all] = exact
		}
		return ""
	}
	if prev == exact {
		return ""
	}
	if pf, ok := o.forms[prev]; ok && pf.keys == f.keys {
		return CauseKeyOrder
	}
	if tag == 0 {
		return CauseToolOrder
	}
	return CauseListOrder
}

// canonical hashes the two sorted forms of a JSON text; ok is false when it is not JSON. It
// walks the text's tokens once and never builds the value: each object and list becomes the
// hashes of its members, so memory is 24 bytes a member of the objects and lists open at once
// (a tool list of 400,000 tools, 50 MB, was decoded into maps of 700 MB and re-encoded once per
// nesting level).
func (o *orders) canonical(tag int, raw string) orderForms {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	keys, all, err := o.walk(dec)
	if err != nil {
		return orderForms{}
	}
	return orderForms{keys: o.mix(uint64(tag), keys), all: o.mix(uint64(tag), all), ok: true}
}

// mix hashes a sequence of words.
func (o *orders) mix(words ...uint64) uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	var b [8]byte
	for _, w := range words {
		binary.LittleEndian.PutUint64(b[:], w)
		h.Write(b[:])
	}
	return h.Sum64()
}

// text hashes a scalar by its kind and its text (a string as decoded, a number as written).
func (o *orders) text(kind byte, s string) uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	h.WriteByte(kind)
	h.WriteString(s)
	return h.Sum64()
}

// walk reads one JSON value from dec and returns the hashes of its two canonical forms: keys
// sorted at every level with list order kept, and keys and lists both sorted. Two values with
// equal forms are the same content in another order.
func (o *orders) walk(dec *json.Decoder) (keys, all uint64, err error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, err
	}
	switch t := tok.(type) {
	case json.Delim:
		type member struct{ name, keys, all uint64 }
		var ms []member
		object := t == '{'
		for dec.More() {
			var m member
			if object {
				k, err := dec.Token()
				if err != nil {
					return 0, 0, err
				}
				name, _ := k.(string)
				m.name = o.text('k', name)
			}
			if m.keys, m.all, err = o.walk(dec); err != nil {
				return 0, 0, err
			}
			ms = append(ms, m)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return 0, 0, err
		}
		kw := make([]uint64, 0, 1+2*len(ms))
		aw := make([]uint64, 0, 1+2*len(ms))
		if object {
			// An object's members in key order, in both forms (encoding/json's order).
			slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.name, b.name) })
			kw, aw = append(kw, '{'), append(aw, '{')
			for _, m := range ms {
				kw, aw = append(kw, m.name, m.keys), append(aw, m.name, m.all)
			}
			return o.mix(kw...), o.mix(aw...), nil
		}
		kw = append(kw, '[')
		for _, m := range ms {
			kw = append(kw, m.keys)
		}
		// A list sorted: its elements' fully sorted forms, in order of their hashes.
		slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.all, b.all) })
		aw = append(aw, '[')
		for _, m := range ms {
			aw = append(aw, m.all)
		}
		return o.mix(kw...), o.mix(aw...), nil
	case string:
		h := o.text('s', t)
		return h, h, nil
	case json.Number:
		h := o.text('n', string(t))
		return h, h, nil
	case bool:
		h := o.text('b', strconv.FormatBool(t))
		return h, h, nil
	default: // null
		h := o.text('z', "")
		return h, h, nil
	}
}

// jsonText reports whether a message content looks like a JSON object or list.
func jsonText(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && (s[0] == '{' && s[len(s)-1] == '}' || s[0] == '[' && s[len(s)-1] == ']')
}
