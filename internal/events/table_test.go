package events

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// tableOps applies a sequence of operations to a table and to a Go map, the reference, and
// fails at the first difference: put (value set through the returned pointer), find, del,
// reset and a full walk with each. keyOf maps an operation's number to a key.
type tableCheck struct {
	t   testing.TB
	tab table[uint64]
	ref map[uint64]uint64
}

func newTableCheck(t testing.TB) *tableCheck {
	return &tableCheck{t: t, ref: map[uint64]uint64{}}
}

func (c *tableCheck) op(kind byte, k, v uint64) {
	c.t.Helper()
	switch kind % 8 {
	case 0, 1, 2: // put
		p, held := c.tab.put(k)
		_, want := c.ref[k]
		if held != want {
			c.t.Fatalf("put(%#x) held %v, reference %v", k, held, want)
		}
		if held && *p != c.ref[k] {
			c.t.Fatalf("put(%#x) points at %d, reference %d", k, *p, c.ref[k])
		}
		if !held && *p != 0 {
			c.t.Fatalf("put(%#x) inserted with %d, want the zero value", k, *p)
		}
		*p = v
		c.ref[k] = v
	case 3, 4: // find
		p := c.tab.find(k)
		want, ok := c.ref[k]
		if (p != nil) != ok || (ok && *p != want) {
			c.t.Fatalf("find(%#x) = %v, reference %d, %v", k, p, want, ok)
		}
	case 5, 6: // del
		if got, want := c.tab.del(k), c.ref[k] != 0 || hasKey(c.ref, k); got != want {
			c.t.Fatalf("del(%#x) = %v, reference %v", k, got, want)
		}
		delete(c.ref, k)
	case 7: // reset, sometimes
		if v%16 == 0 {
			c.tab.reset(int(v % 1000))
			clear(c.ref)
		}
	}
	if c.tab.n != len(c.ref) {
		c.t.Fatalf("table holds %d keys, reference %d", c.tab.n, len(c.ref))
	}
}

func hasKey(m map[uint64]uint64, k uint64) bool { _, ok := m[k]; return ok }

// all checks every key of the reference is found with its value, and each walks exactly the
// reference.
func (c *tableCheck) all() {
	c.t.Helper()
	for k, v := range c.ref {
		if p := c.tab.find(k); p == nil || *p != v {
			c.t.Fatalf("key %#x lost or changed (%v, want %d)", k, p, v)
		}
	}
	seen := 0
	c.tab.each(func(k uint64, v *uint64) {
		if want, ok := c.ref[k]; !ok || *v != want {
			c.t.Fatalf("each gave %#x = %d, reference %d, %v", k, *v, want, ok)
		}
		seen++
	})
	if seen != len(c.ref) {
		c.t.Fatalf("each gave %d keys, reference %d", seen, len(c.ref))
	}
}

// TestTableVsMap: the block indexes' table behaves as a Go map under random puts, finds and
// deletes, through growth, on random keys, sequential keys (engine hashes can be small
// integers), the key 0, and keys chosen to share one home slot, so probe runs are long and
// deletes shift keys across the end of the array.
func TestTableVsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := map[string]func(same []uint64) uint64{
		"random":     func([]uint64) uint64 { return rng.Uint64() },
		"sequential": func([]uint64) uint64 { return rng.Uint64N(3000) },
		"zero":       func([]uint64) uint64 { return rng.Uint64N(3) },
		"same-home":  func(same []uint64) uint64 { return same[rng.IntN(len(same))] },
		"same-home-and-others": func(same []uint64) uint64 {
			if rng.IntN(2) == 0 {
				return same[rng.IntN(len(same))]
			}
			return rng.Uint64N(200)
		},
	}
	for name, key := range keys {
		t.Run(name, func(t *testing.T) {
			c := newTableCheck(t)
			// Keys whose home slot is the last of the table's first array (its seed is
			// random): one run that wraps around.
			c.tab.alloc(tableMinSlots)
			var same []uint64
			for len(same) < 40 {
				if k := rng.Uint64(); c.tab.home(k) == tableMinSlots-1 {
					same = append(same, k)
				}
			}
			for i := range 200000 {
				c.op(byte(rng.IntN(7)), key(same), rng.Uint64())
				if i%997 == 0 {
					c.all()
				}
			}
			c.all()
			c.op(7, 0, 0) // reset
			c.all()
		})
	}
}

// TestTableHostileKeys: keys chosen so that a fixed multiplicative mix (Fibonacci hashing, the
// obvious choice) sends them all to one slot, as a hostile publisher could choose its block
// hashes, spread over a table whose mix is seeded: no probe walks far.
func TestTableHostileKeys(t *testing.T) {
	// The inverse of phi modulo 2^64, by Newton's iteration (each step doubles the bits).
	phi := uint64(0x9e3779b97f4a7c15)
	phiInv := phi
	for range 6 {
		phiInv *= 2 - phi*phiInv
	}
	if phi*phiInv != 1 {
		t.Fatal("phiInv is not the inverse")
	}
	var tab table[uint64]
	const n = 20000
	for i := range uint64(n) {
		// k*phi = 0x5a5a<<48 | i: the same top 48 bits for every key.
		k := (0x5a5a<<48 | i) * phiInv
		p, _ := tab.put(k)
		*p = i
	}
	longest := 0
	mask := uint64(len(tab.slots) - 1)
	for i, s := range tab.slots {
		if s.key == 0 {
			continue
		}
		if d := int((uint64(i) - tab.home(s.key)) & mask); d > longest {
			longest = d
		}
	}
	// Unseeded, every key would share a home and the last would sit n-1 slots from it.
	if longest > 500 {
		t.Errorf("a key sits %d slots past its home among %d chosen keys, want a short probe", longest, n)
	}
	for i := range uint64(n) {
		if p := tab.find((0x5a5a<<48 | i) * phiInv); p == nil || *p != i {
			t.Fatalf("key %d lost", i)
		}
	}
}

// FuzzTable: any sequence of operations (9 bytes each: the operation, then the key, whose
// low byte alone is used when the operation's high bit is set, so keys repeat) leaves the
// table as a Go map would be.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0x80, 1, 2, 3, 4, 5, 6, 7, 8, 0x85, 1, 2, 3, 4, 5, 6, 7, 8, 0x87, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		c := newTableCheck(t)
		for i := 0; i+9 <= len(p); i += 9 {
			k := binary.LittleEndian.Uint64(p[i+1:])
			if p[i]&0x80 != 0 {
				k &= 0xff
			}
			c.op(p[i], k, uint64(i)+1)
		}
		c.all()
	})
}

// TestGenerationsRef: ref finds a value in either generation and leaves it in the current one,
// inserts a new key only when asked, and rotation keeps what ref touched.
func TestGenerationsRef(t *testing.T) {
	for _, g := range []generations[int]{newGenerations[int](), newFilteredGenerations[int](8)} {
		if v, ok := g.ref(5, false); v != nil || ok {
			t.Fatal("ref without add inserted a key")
		}
		v, ok := g.ref(5, true)
		if ok || *v != 0 {
			t.Fatalf("new key: held %v, value %d", ok, *v)
		}
		*v = 50
		g.rotate()
		if g.inCur(5) {
			t.Fatal("5 still in the current generation after a rotation")
		}
		v, ok = g.ref(5, false) // from the previous generation, copied into the current one
		if !ok || *v != 50 || !g.inCur(5) {
			t.Fatalf("ref(5) after a rotation = %d, %v, in current %v", *v, ok, g.inCur(5))
		}
		*v = 51
		g.rotate()
		if got, ok := g.get(5); !ok || got != 51 {
			t.Fatalf("5 = %d, %v after the second rotation, want the 51 written through ref", got, ok)
		}
		g.rotate()
		if _, ok := g.get(5); ok {
			t.Fatal("5 survived two rotations without use")
		}
	}
}

// TestTablePutHeldAtThreshold: a table exactly three quarters full (48 keys in 64 slots) does
// not grow when a key it holds is put again, as every re-stored block is: growth is for a key
// that would make it more than three quarters full. It grew (doubling its memory) before
// looking whether the key was held, and the next rotation then made a new array again.
func TestTablePutHeldAtThreshold(t *testing.T) {
	var tab table[uint64]
	for k := uint64(1); k <= 48; k++ {
		p, _ := tab.put(k)
		*p = k * 10
	}
	if len(tab.slots) != tableMinSlots || tab.n != 48 {
		t.Fatalf("48 keys: %d slots, %d held; want %d slots", len(tab.slots), tab.n, tableMinSlots)
	}
	for k := uint64(1); k <= 48; k++ {
		if p, held := tab.put(k); !held || *p != k*10 {
			t.Fatalf("put(%d) again: held %v", k, held)
		}
	}
	if len(tab.slots) != tableMinSlots {
		t.Fatalf("putting held keys at the threshold grew the table to %d slots", len(tab.slots))
	}
	if p, held := tab.put(49); held || *p != 0 || len(tab.slots) != 2*tableMinSlots {
		t.Fatalf("the 49th key: held %v, %d slots; want a new key and %d slots", held, len(tab.slots), 2*tableMinSlots)
	}
	for k := uint64(1); k <= 48; k++ {
		if p := tab.find(k); p == nil || *p != k*10 {
			t.Fatalf("find(%d) after growing: %v", k, p)
		}
	}
}
