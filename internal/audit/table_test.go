package audit

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestBlockTableAgreesWithMap: the table answers as a Go map does over random puts and gets:
// keys spread over 64 bits, keys crowded into the first slot (small numbers scale to slot 0,
// so probes run long and wrap past the end), the key 0, a set, bounds small enough that the
// table grows to its last size, and puts past the bound (the caller's check failing).
func TestBlockTableAgreesWithMap(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 28))
		limit := []int{1, 7, 100, 3000}[seed%4]
		set := seed%3 == 0
		tb := newBlockTable(limit, set)
		want := map[uint64]uint32{}
		key := func() uint64 {
			switch rng.IntN(4) {
			case 0:
				return uint64(rng.IntN(50)) // crowded, 0 among them
			case 1:
				return ^uint64(rng.IntN(50)) // crowded at the end: probes wrap
			default:
				return rng.Uint64()
			}
		}
		for step := range 6000 {
			k := key()
			if rng.IntN(2) == 0 && (len(want) < limit || rng.IntN(20) == 0) {
				v := rng.Uint32()
				if set {
					v = 0
				}
				tb.put(k, v)
				want[k] = v
			}
			gv, gok := tb.get(k)
			wv, wok := want[k]
			if gv != wv || gok != wok {
				t.Fatalf("seed %d step %d: get(%#x) = %d, %v; want %d, %v", seed, step, k, gv, gok, wv, wok)
			}
			if tb.len() != len(want) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, tb.len(), len(want))
			}
		}
		got := map[uint64]uint32{}
		tb.each(func(k uint64, v uint32) { got[k] = v })
		if !maps.Equal(got, want) {
			t.Fatalf("seed %d: each gave %d entries, want %d (or different values)", seed, len(got), len(want))
		}
		if len(want) <= limit && len(tb.keys) > tb.maxSlots() {
			t.Errorf("seed %d: %d slots for a bound of %d entries, want at most %d", seed, len(tb.keys), limit, tb.maxSlots())
		}
	}
}

// TestBlockTableSize: at its bound the table has one slot in four free at least and no more
// than limit*4/3+1 slots: 400,000 entries in 533,334 slots (at the default bound,
// 4,000,000 in 5,333,334 slots of 12 bytes: 64 MB).
func TestBlockTableSize(t *testing.T) {
	tb := newBlockTable(400_000, false)
	rng := rand.New(rand.NewPCG(1, 2))
	for tb.len() < 400_000 {
		tb.put(rng.Uint64()|1, 1)
	}
	if got := len(tb.keys); got != 533_334 {
		t.Errorf("%d slots, want 533,334", got)
	}
	if 4*tb.n > 3*len(tb.keys) {
		t.Errorf("%d of %d slots used, more than 3/4", tb.n, len(tb.keys))
	}
}
