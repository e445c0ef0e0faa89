package audit

import "math/bits"

// blockTable is the prefix index's store: an open-addressing hash table (linear probing) from
// 64-bit keys, which are hashes and so already spread evenly, to 32-bit values. A slot is 12
// bytes (8 for a set) and at least one slot in four is free, so at the default bound of
// DefaultMaxBlocks entries it holds about 64 MB (43 MB for a set), where a Go map of the same
// entries took 120 MB (145 MB for the set: a map's slots are the same size but it doubles
// past the bound's needs and keeps its old table while growing). It grows by doubling, never
// past the slots its bound needs.
type blockTable struct {
	keys  []uint64 // 0 marks a free slot
	vals  []uint32 // nil for a set
	n     int
	limit int // the most entries it will hold (the caller stops there)
	// The key 0 cannot be stored in keys: it is kept apart.
	zero    bool
	zeroVal uint32
}

// newBlockTable returns an empty table for at most limit entries; set makes it hold keys only.
func newBlockTable(limit int, set bool) *blockTable {
	t := &blockTable{limit: limit}
	t.alloc(min(1024, t.maxSlots()), !set)
	return t
}

// maxSlots is the number of slots limit entries need at a load of at most 3/4.
func (t *blockTable) maxSlots() int { return t.limit + t.limit/3 + 1 }

func (t *blockTable) alloc(slots int, vals bool) {
	t.keys = make([]uint64, slots)
	t.vals = nil
	if vals {
		t.vals = make([]uint32, slots)
	}
}

// len is the number of entries.
func (t *blockTable) len() int {
	if t.zero {
		return t.n + 1
	}
	return t.n
}

// slot is where k's probe starts: k scaled to the table's size (its high bits).
func (t *blockTable) slot(k uint64) int {
	hi, _ := bits.Mul64(k, uint64(len(t.keys)))
	return int(hi)
}

// get returns k's value and whether k is in the table.
func (t *blockTable) get(k uint64) (uint32, bool) {
	if k == 0 {
		return t.zeroVal, t.zero
	}
	for i := t.slot(k); ; {
		switch t.keys[i] {
		case k:
			if t.vals == nil {
				return 0, true
			}
			return t.vals[i], true
		case 0:
			return 0, false
		}
		if i++; i == len(t.keys) {
			i = 0
		}
	}
}

// put sets k's value, adding k if it is not in the table.
func (t *blockTable) put(k uint64, v uint32) {
	if k == 0 {
		t.zero, t.zeroVal = true, v
		return
	}
	if 4*(t.n+1) > 3*len(t.keys) && len(t.keys) < t.maxSlots() {
		t.grow(min(2*len(t.keys), t.maxSlots()))
	}
	i := t.find(k)
	if t.keys[i] == 0 {
		if t.n+1 >= len(t.keys) {
			// Past the bound the caller was to stop at: grow rather than fill the last slot
			// (a probe for a missing key ends at a free slot).
			t.grow(2 * len(t.keys))
			i = t.find(k)
		}
		t.keys[i] = k
		t.n++
	}
	if t.vals != nil {
		t.vals[i] = v
	}
}

// find returns k's slot, or the free slot where it would go.
func (t *blockTable) find(k uint64) int {
	for i := t.slot(k); ; {
		if t.keys[i] == k || t.keys[i] == 0 {
			return i
		}
		if i++; i == len(t.keys) {
			i = 0
		}
	}
}

func (t *blockTable) grow(slots int) {
	keys, vals := t.keys, t.vals
	t.alloc(slots, vals != nil)
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := t.find(k)
		t.keys[i] = k
		if vals != nil {
			t.vals[i] = vals[j]
		}
	}
}

// each calls f on every entry, in no particular order.
func (t *blockTable) each(f func(k uint64, v uint32)) {
	if t.zero {
		f(0, t.zeroVal)
	}
	for i, k := range t.keys {
		if k == 0 {
			continue
		}
		var v uint32
		if t.vals != nil {
			v = t.vals[i]
		}
		f(k, v)
	}
}
