package sim

import (
	"math"
	"slices"
)

var consistentHashInfo = PolicyInfo{
	Name:    "chash-bounded",
	About:   "consistent hashing of the session (else block 0) with bounded load (1+epsilon)",
	Family:  FamilySession,
	Reasons: []string{ReasonSessionKey, ReasonFirstBlock, reasonLoadBound},
	Draws:   true,
	New: func(c Config, _ int) Policy {
		return &consistentHashPolicy{seed: c.Seed, epsilon: c.Params.Epsilon}
	},
}

// reasonLoadBound is chash-bounded's reason for a request that spilled past its key's replica,
// at the load bound.
const reasonLoadBound = "load-bound"

// vnodes is the number of ring points per replica.
const vnodes = 64

// consistentHashPolicy is consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam):
// walk the ring from the key's point to the first replica whose load stays within
// ceil((1+epsilon) * average). A hot key spills to its ring successors instead of melting one
// replica, and adding a replica moves only the keys next to its points.
//
// Reasons: session-key or first-block (the key's first point takes it: the session id's hash,
// else block 0's), load-bound (it spilled past points whose replica was at the bound).
type consistentHashPolicy struct {
	seed    uint64
	epsilon float64
	ring    []ringPoint
	n       int
}

type ringPoint struct {
	h   uint64
	rep int
}

// ringOrder sorts a ring's points by hash, and points of equal hash by replica.
func ringOrder(a, b ringPoint) int {
	if a.h != b.h {
		if a.h < b.h {
			return -1
		}
		return 1
	}
	return a.rep - b.rep
}

func (p *consistentHashPolicy) build(n int) {
	p.ring = p.ring[:0]
	for i := range n {
		for v := range vnodes {
			p.ring = append(p.ring, ringPoint{h: mix64(p.seed ^ mix64(uint64(i)<<32|uint64(v))), rep: i})
		}
	}
	slices.SortFunc(p.ring, ringOrder)
	p.n = n
}

func (p *consistentHashPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	if p.n != f.Size() {
		p.build(f.Size())
	}
	h, _ := keyHash(r, p.seed)
	total := 0
	for i := range f.Size() {
		total += f.InFlight(i)
	}
	bound := int(math.Ceil((1 + p.epsilon) * float64(total+1) / float64(f.Size())))
	start, _ := slices.BinarySearchFunc(p.ring, h, func(pt ringPoint, h uint64) int {
		switch {
		case pt.h < h:
			return -1
		case pt.h > h:
			return 1
		}
		return 0
	})
	first := p.ring[start%len(p.ring)].rep
	for k := range len(p.ring) {
		pt := p.ring[(start+k)%len(p.ring)]
		if f.InFlight(pt.rep)+1 <= bound {
			if pt.rep == first {
				return pt.rep, keyReason(r)
			}
			return pt.rep, reasonLoadBound
		}
	}
	// Unreachable: some replica is always at or below the average.
	return first, keyReason(r)
}
