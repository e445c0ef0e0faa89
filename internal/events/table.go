package events

import (
	"math/bits"
	"math/rand/v2"
)

// table is a hash table of uint64 keys for the collector's block indexes: open addressing with
// linear probing in a power-of-two array of slots that hold their key and value inline. A
// lookup is a multiply, one slot read (usually one cache line) and a short forward scan; Go's
// map, for the same lookup, hashes the key, walks its directory, matches a control word and
// then reads the slot. Keys are mixed with a random seed per table before they pick a slot:
// engine hashes come from the publisher, and with a fixed mix a hostile one could send
// hashes that all want one slot, making every probe a walk over all of them. The key 0 marks an empty slot, so a key 0 is held apart. The table grows
// (doubling) when it would be more than three quarters full and never shrinks; deleting shifts
// later keys of the probe run back, so no tombstones slow later lookups.
type table[V any] struct {
	slots   []tableSlot[V]
	seed    uint64 // random, set with the first array
	shift   uint8  // 64 - log2(len(slots)): a key's home slot is the top bits of its mix
	n       int    // keys held, the key 0 included
	hasZero bool
	zero    V
}

// tableSlot puts the value first: a zero-size value (a set) then adds nothing to the slot,
// where as the last field it would be padded to a word.
type tableSlot[V any] struct {
	val V
	key uint64 // 0: empty
}

// tableMinSlots is the size of a table's first array.
const tableMinSlots = 64

// slotsFor returns the array size a table holding n keys grows to: the least power of two,
// at least tableMinSlots, that n keys fill at most three quarters of.
func slotsFor(n int) int {
	s := tableMinSlots
	for n*4 > s*3 {
		s <<= 1
	}
	return s
}

func (t *table[V]) alloc(slots int) {
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	t.slots = make([]tableSlot[V], slots)
	t.shift = uint8(64 - bits.TrailingZeros(uint(slots)))
}

// home is k's first slot: k and the table's seed folded through a 64x64->128-bit multiply (as
// contentKey mixes), so that sequential keys (engine hashes can be small integers) spread over
// the array and which keys share a slot cannot be chosen without the seed.
func (t *table[V]) home(k uint64) uint64 {
	return fold(k^t.seed, (t.seed^0x9e3779b97f4a7c15)|1) >> t.shift
}

// find returns a pointer to k's value, or nil when k is not held. The pointer is valid until
// the next put or del.
func (t *table[V]) find(k uint64) *V {
	if k == 0 {
		if t.hasZero {
			return &t.zero
		}
		return nil
	}
	if t.n == 0 || len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return &s.val
		}
		if s.key == 0 {
			return nil
		}
	}
}

// put returns a pointer to k's value, inserting k with the zero value when it is not held,
// and whether k was held. The pointer is valid until the next put or del.
func (t *table[V]) put(k uint64) (*V, bool) {
	if k == 0 {
		if t.hasZero {
			return &t.zero, true
		}
		var zero V
		t.hasZero, t.zero = true, zero
		t.n++
		return &t.zero, false
	}
	if len(t.slots) == 0 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return &s.val, true
		}
		if s.key == 0 {
			// Grow only for a key not held, so that putting a held key again (every
			// re-stored block) never doubles a table that is exactly three quarters full.
			if (t.n+1)*4 > len(t.slots)*3 {
				t.grow()
				mask = uint64(len(t.slots) - 1)
				for i = t.home(k); t.slots[i].key != 0; i = (i + 1) & mask {
				}
				s = &t.slots[i]
			}
			// An empty slot's value is zero: del and reset clear what they empty.
			s.key = k
			t.n++
			return &s.val, false
		}
	}
}

func (t *table[V]) grow() {
	old := t.slots
	t.alloc(max(tableMinSlots, 2*len(old)))
	mask := uint64(len(t.slots) - 1)
	for j := range old {
		s := &old[j]
		if s.key == 0 {
			continue
		}
		i := t.home(s.key)
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = *s
	}
}

// del removes k and reports whether it was held.
func (t *table[V]) del(k uint64) bool {
	if k == 0 {
		if !t.hasZero {
			return false
		}
		var zero V
		t.hasZero, t.zero = false, zero
		t.n--
		return true
	}
	if t.n == 0 || len(t.slots) == 0 {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(k)
	for ; t.slots[i].key != k; i = (i + 1) & mask {
		if t.slots[i].key == 0 {
			return false
		}
	}
	// Backward shift: a later key of the run whose probe from its home passes the hole moves
	// into it, until the run ends, so every key stays reachable from its home without gaps.
	for j := (i + 1) & mask; t.slots[j].key != 0; j = (j + 1) & mask {
		if (j-t.home(t.slots[j].key))&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = tableSlot[V]{}
	t.n--
	return true
}

// reset empties the table, keeping its array when that is the size n keys would grow it to
// and otherwise making one of that size (so a table that once held many keys gives the memory
// back).
func (t *table[V]) reset(n int) {
	if s := slotsFor(n); s != len(t.slots) {
		t.alloc(s)
	} else {
		clear(t.slots)
	}
	var zero V
	t.n, t.hasZero, t.zero = 0, false, zero
}

// each calls f with every key held and a pointer to its value, which f may change.
func (t *table[V]) each(f func(k uint64, v *V)) {
	if t.hasZero {
		f(0, &t.zero)
	}
	for i := range t.slots {
		if s := &t.slots[i]; s.key != 0 {
			f(s.key, &s.val)
		}
	}
}
