package audit

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"slices"
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

// canonical hashes the two sorted forms of a JSON text; ok is false when it is not JSON.
func (o *orders) canonical(tag int, raw string) orderForms {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return orderForms{}
	}
	// encoding/json writes object keys sorted: the first form keeps list order.
	keys, err := json.Marshal(v)
	if err != nil {
		return orderForms{}
	}
	all, err := json.Marshal(sortLists(v))
	if err != nil {
		return orderForms{}
	}
	sum := func(b []byte) uint64 {
		var h maphash.Hash
		h.SetSeed(o.seed)
		h.WriteByte(byte(tag))
		h.Write(b)
		return h.Sum64()
	}
	return orderForms{keys: sum(keys), all: sum(all), ok: true}
}

// sortLists sorts every list of v by its elements' canonical text, at every level.
func sortLists(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = sortLists(e)
		}
	case []any:
		type keyed struct {
			key []byte
			v   any
		}
		ks := make([]keyed, len(x))
		for i, e := range x {
			e = sortLists(e)
			b, _ := json.Marshal(e)
			ks[i] = keyed{b, e}
		}
		slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.key, b.key) })
		for i := range ks {
			x[i] = ks[i].v
		}
	}
	return v
}

// jsonText reports whether a message content looks like a JSON object or list.
func jsonText(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && (s[0] == '{' && s[len(s)-1] == '}' || s[0] == '[' && s[len(s)-1] == ']')
}
