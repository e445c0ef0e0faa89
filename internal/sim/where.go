package sim

import "math/bits"

// blockIndex is the fleet's block index: for every block cached on some replica, the set of
// replicas caching it, one bit each, so that the cached prefix on every replica is found with
// one lookup per block. Only resident blocks have an entry, so the index holds at most the sum of
// the replicas' capacities (and never more than the trace's distinct blocks), whatever the
// trace's length: an open-addressing table (keys, and words uint64s of replica bits per slot) at
// a load factor of at most 1/4. It starts at indexStart entries' worth and doubles as entries
// arrive, so a replay that caches few distinct blocks at once (a policy that sends everything to
// one replica) keeps a table that stays in the processor's cache and costs little to set up.
type blockIndex struct {
	words int      // uint64s per replica set: ceil(replicas/64)
	keys  []int32  // per slot: key+1, 0 when empty
	sets  []uint64 // per slot: words of replica bits
	mask  uint32   // len(keys)-1
	shift uint8    // slotOf's shift for len(keys)
	n     int      // entries
}

// indexBytesPerBlock is what the index costs per resident block at most, for a set of words
// uint64s: a slot of 4+8*words bytes at a load factor of at least 1/8 when full.
func indexBytesPerBlock(words int) int { return 8 * (4 + 8*words) }

// indexStart is the most entries a new index is sized for.
const indexStart = 1024

// newBlockIndex returns an empty index for replicas replicas and at most resident entries. It
// never grows past tableSize(resident) slots.
func newBlockIndex(replicas, resident int) blockIndex {
	w := (replicas + 63) / 64
	n := tableSize(min(resident, indexStart))
	return blockIndex{words: w, keys: make([]int32, n), sets: make([]uint64, n*w), mask: uint32(n - 1), shift: slotShift(n)}
}

// grow doubles the table, moving every entry to its slot in the new one.
func (x *blockIndex) grow() {
	keys, sets, w := x.keys, x.sets, x.words
	x.keys = make([]int32, 2*len(keys))
	x.sets = make([]uint64, 2*len(sets))
	x.mask, x.shift = uint32(len(x.keys)-1), slotShift(len(x.keys))
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := x.slot(k - 1)
		x.keys[i] = k
		copy(x.sets[int(i)*w:int(i)*w+w], sets[j*w:j*w+w])
	}
}

// slot returns the slot of key, or of the empty slot where it would go.
func (x *blockIndex) slot(key int32) uint32 {
	k := key + 1
	i := slotOf(key, x.shift)
	for x.keys[i] != k && x.keys[i] != 0 {
		i = (i + 1) & x.mask
	}
	return i
}

// lookup returns the replica set of key, nil when no replica caches it. The slice aliases the
// index: it is valid until the next add or remove.
func (x *blockIndex) lookup(key int32) []uint64 {
	i := x.slot(key)
	if x.keys[i] == 0 {
		return nil
	}
	w := uint32(x.words)
	return x.sets[i*w : (i+1)*w]
}

// add records that replica rep caches key.
func (x *blockIndex) add(key int32, rep int) {
	i := x.slot(key)
	if x.keys[i] == 0 {
		if 4*(x.n+1) > len(x.keys) {
			x.grow()
			i = x.slot(key)
		}
		x.keys[i] = key + 1
		x.n++
	}
	x.sets[int(i)*x.words+rep/64] |= 1 << (rep % 64)
}

// remove records that replica rep no longer caches key; the entry goes when no replica does.
func (x *blockIndex) remove(key int32, rep int) {
	i := x.slot(key)
	if x.keys[i] == 0 {
		return
	}
	w := x.words
	set := x.sets[int(i)*w : int(i)*w+w]
	set[rep/64] &^= 1 << (rep % 64)
	for _, b := range set {
		if b != 0 {
			return
		}
	}
	x.n--
	// Backward-shift deletion: move later entries of the probe run into the hole.
	for j := (i + 1) & x.mask; x.keys[j] != 0; j = (j + 1) & x.mask {
		h := slotOf(x.keys[j]-1, x.shift)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.keys[i] = x.keys[j]
			if w == 1 {
				x.sets[i] = x.sets[j] // copy's call to memmove cost more than the move
			} else {
				copy(x.sets[int(i)*w:int(i)*w+w], x.sets[int(j)*w:int(j)*w+w])
			}
			i = j
		}
	}
	x.keys[i] = 0
	clear(x.sets[int(i)*w : int(i)*w+w])
}

// duplicates is the number of extra copies of blocks cached on more than one replica.
func (x *blockIndex) duplicates() int64 {
	var d int64
	for i, k := range x.keys {
		if k == 0 {
			continue
		}
		c := 0
		for _, b := range x.sets[i*x.words : (i+1)*x.words] {
			c += bits.OnesCount64(b)
		}
		d += int64(c - 1)
	}
	return d
}
