package sim

import "math/bits"

// blockIndex is the fleet's block index: for every block cached on some replica, the set of
// replicas caching it, one bit each, so that the cached prefix on every replica is found with
// one lookup per block. Only resident blocks have an entry, so the index holds at most the sum of
// the replicas' capacities (and never more than the trace's distinct blocks), whatever the
// trace's length: an open-addressing table (keys, and words uint64s of replica bits per slot)
// sized once at a load factor of at most 1/4.
type blockIndex struct {
	words int      // uint64s per replica set: ceil(replicas/64)
	keys  []int32  // per slot: key+1, 0 when empty
	sets  []uint64 // per slot: words of replica bits
	mask  uint32
	n     int // entries
}

// indexBytesPerBlock is what the index costs per resident block at most, for a set of words
// uint64s: a slot of 4+8*words bytes at a load factor of at least 1/8.
func indexBytesPerBlock(words int) int { return 8 * (4 + 8*words) }

func newBlockIndex(replicas, resident int) blockIndex {
	w := (replicas + 63) / 64
	n := tableSize(resident)
	return blockIndex{words: w, keys: make([]int32, n), sets: make([]uint64, n*w), mask: uint32(n - 1)}
}

// slot returns the slot of key, or of the empty slot where it would go.
func (x *blockIndex) slot(key int32) uint32 {
	k := key + 1
	i := slotOf(key, x.mask)
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
		h := slotOf(x.keys[j]-1, x.mask)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.keys[i] = x.keys[j]
			copy(x.sets[int(i)*w:int(i)*w+w], x.sets[int(j)*w:int(j)*w+w])
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
