package sim

import "math/bits"

// blockIndex is the fleet's block index: for every block cached on some replica, the set of
// replicas caching it, one bit each, so that the cached prefix on every replica is found with
// one lookup per block. Only resident blocks have an entry, so the index holds at most the sum of
// the replicas' capacities (and never more than the trace's distinct blocks), whatever the
// trace's length: an open-addressing table of entries of 1+words uint64s (the key, then the
// replica set), sized once at a load factor of at most 1/2.
type blockIndex struct {
	words int      // uint64s per replica set: ceil(replicas/64)
	data  []uint64 // per slot: key+1 (0 = empty), then words of replica bits
	mask  uint32
	n     int // entries
}

// indexBytesPerBlock is what the index costs per resident block at most, for a set of words
// uint64s: an entry of 1+words uint64s at a load factor of at least 1/4.
func indexBytesPerBlock(words int) int { return 4 * 8 * (1 + words) }

func newBlockIndex(replicas, resident int) blockIndex {
	w := (replicas + 63) / 64
	n := tableSize(resident)
	return blockIndex{words: w, data: make([]uint64, n*(1+w)), mask: uint32(n - 1)}
}

// lookup returns the replica set of key, nil when no replica caches it. The slice aliases the
// index: it is valid until the next add or remove.
func (x *blockIndex) lookup(key int32) []uint64 {
	stride := uint32(1 + x.words)
	k := uint64(uint32(key)) + 1
	for i := slotOf(key, x.mask); ; i = (i + 1) & x.mask {
		e := x.data[i*stride : (i+1)*stride]
		if e[0] == 0 {
			return nil
		}
		if e[0] == k {
			return e[1:]
		}
	}
}

// add records that replica rep caches key.
func (x *blockIndex) add(key int32, rep int) {
	stride := uint32(1 + x.words)
	k := uint64(uint32(key)) + 1
	i := slotOf(key, x.mask)
	for {
		e := x.data[i*stride : (i+1)*stride]
		if e[0] == k {
			e[1+rep/64] |= 1 << (rep % 64)
			return
		}
		if e[0] == 0 {
			e[0] = k
			e[1+rep/64] |= 1 << (rep % 64)
			x.n++
			return
		}
		i = (i + 1) & x.mask
	}
}

// remove records that replica rep no longer caches key; the entry goes when no replica does.
func (x *blockIndex) remove(key int32, rep int) {
	stride := uint32(1 + x.words)
	k := uint64(uint32(key)) + 1
	i := slotOf(key, x.mask)
	for {
		e := x.data[i*stride : (i+1)*stride]
		if e[0] == 0 {
			return
		}
		if e[0] == k {
			break
		}
		i = (i + 1) & x.mask
	}
	e := x.data[i*stride : (i+1)*stride]
	e[1+rep/64] &^= 1 << (rep % 64)
	for _, w := range e[1:] {
		if w != 0 {
			return
		}
	}
	x.n--
	// Backward-shift deletion: move later entries of the probe run into the hole.
	for j := (i + 1) & x.mask; ; j = (j + 1) & x.mask {
		ej := x.data[j*stride : (j+1)*stride]
		if ej[0] == 0 {
			break
		}
		h := slotOf(int32(uint32(ej[0]-1)), x.mask)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			copy(x.data[i*stride:(i+1)*stride], ej)
			i = j
		}
	}
	clear(x.data[i*stride : (i+1)*stride])
}

// duplicates is the number of extra copies of blocks cached on more than one replica.
func (x *blockIndex) duplicates() int64 {
	stride := 1 + x.words
	var d int64
	for i := 0; i < len(x.data); i += stride {
		if x.data[i] == 0 {
			continue
		}
		c := 0
		for _, w := range x.data[i+1 : i+stride] {
			c += bits.OnesCount64(w)
		}
		d += int64(c - 1)
	}
	return d
}
