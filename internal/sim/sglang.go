package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

var sglangInfo = PolicyInfo{
	Name:      "sglang-cache-aware",
	About:     "SGLang model gateway cache_aware: character radix tree, longest match above the cache threshold, else least loaded; least loaded when imbalanced",
	Product:   "SGLang model gateway (sgl-model-gateway)",
	Source:    "sgl-project/sglang sgl-model-gateway/src/policies/cache_aware.rs@b93974f with PR #14650 (least loaded on a miss) and PR #33138 (a random one among equally least loaded), tree.rs@24ce7f6; ROUTERS.md §5, SPEC.md §6",
	NeedsText: true,
	check:     sglangCheck,
	newPolicy: func(c Config, _ int) policy {
		s := c.routers().SGLang
		return &sglangPolicy{s: s, seed: c.Seed, rng: rand.New(rand.NewPCG(c.Seed, 33)), nextEvict: s.EvictionIntervalSecs}
	},
}

// sglangCheck refuses what the gateway's ConfigValidator refuses for cache_aware
// (src/config/validation.rs@0b6466f, validate_policy): a cache threshold outside 0-1, a relative
// balance threshold below 1, an eviction interval or a tree size not above 0; and a negative or
// non-numeric absolute threshold, which the CLI cannot parse as a count.
func sglangCheck(c Config, t *Trace) error {
	s := c.routers().SGLang
	refuse := func(format string, a ...any) error {
		return &CannotRunError{Policy: "sglang-cache-aware", Trace: t.Name, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case !(s.CacheThreshold >= 0 && s.CacheThreshold <= 1):
		return refuse("cache_threshold %v: the gateway wants 0.0 to 1.0", s.CacheThreshold)
	case s.BalanceRelThreshold < 1:
		return refuse("balance_rel_threshold %v: the gateway wants at least 1.0", s.BalanceRelThreshold)
	case !(s.BalanceAbsThreshold >= 0):
		return refuse("balance_abs_threshold %v: the gateway wants a count of requests, 0 or more", s.BalanceAbsThreshold)
	case !(s.EvictionIntervalSecs > 0):
		return refuse("eviction interval %v s: the gateway wants more than 0", s.EvictionIntervalSecs)
	case s.MaxTreeSize <= 0:
		return refuse("max_tree_size %d: the gateway wants more than 0 characters", s.MaxTreeSize)
	}
	return nil
}

// sglangPolicy is the SGLang model gateway's cache_aware policy (sgl-model-gateway
// src/policies/cache_aware.rs, select_worker), with the settings of Config.Routers.SGLang (the
// CLI's defaults, SGLangCLIDefaults, unless told otherwise; a worker registered with a
// cache_aware policy hint gets SGLangHintDefaults). For each request, with load the requests the
// gateway has sent to a replica and not seen finish (in flight):
//  1. If max load - min load > BalanceAbsThreshold and max load > min load x
//     BalanceRelThreshold, the fleet is imbalanced: the least loaded replica gets the request, one
//     drawn at random among equals (PR #33138, 2026-07; before it, the first).
//  2. Otherwise the text is matched against the radix tree (radixTree.match). The match rate
//     is the characters matched over the text's characters (0 for an empty text), in float32 as
//     the gateway computes it. The replica returned is the first holder of the node the match
//     ends in, in the node's own order, and its times along the path are refreshed (tree.rs
//     prefix_match).
//  3. If the rate > CacheThreshold, that replica gets the request; otherwise the least loaded
//     does. The gateway's comment still says "smallest tree", but the code has taken the least
//     loaded since PR #14650 (2025-12, "Fix cache-aware router should pick min load instead of
//     min tenant size"); before it, get_smallest_tenant was used. Equals are drawn at random here
//     too.
//  4. The text is inserted into the tree for the replica chosen, in either case.
//  5. Every EvictionIntervalSecs a background thread evicts each replica's least
//     recently used leaves until it holds at most MaxTreeSize characters
//     (radixTree.evictLRULeaves). Here it runs before the first request at or after each
//     multiple of the interval; two runs in a row evict nothing more.
//
// What is the gateway's and what is kvcheck's choice: the holder a match returns is the first in
// a DashMap's iteration order in tree.rs@24ce7f6, fixed for a node but arbitrary (later trees
// try a per-node last_tenant first, refreshed on one touch in 16: still an arbitrary holder);
// here it is the first in a pseudo-random order drawn from Config.Seed and the node (a node split
// off keeps the order of the node it came from, as the upstream copy of the map does). The
// prefill_backlog option of later gateways applies to prefill pools of disaggregated serving
// only, not emulated. Times are the arrival times of
// the trace, where the gateway reads the wall clock in milliseconds; leaves last used at the same
// instant are evicted in the order of their text. Replicas are all healthy.
type sglangPolicy struct {
	s         SGLangSettings
	seed      uint64
	rng       *rand.Rand
	tree      radixTree
	ties      []int
	nextEvict float64
}

// sglangFirst ranks replica rep among the holders of a node with salt: the holder with the lowest
// rank is the one a node lists first.
func sglangFirst(salt, seed uint64, rep int) uint64 {
	return mix64(salt ^ mix64(seed<<20^uint64(rep)))
}

func (p *sglangPolicy) route(f *fleet, j *job) int {
	at := j.arrival
	if p.s.EvictionIntervalSecs > 0 {
		if at >= p.nextEvict {
			p.tree.evictLRULeaves(p.s.MaxTreeSize)
			p.nextEvict = (math.Floor(at/p.s.EvictionIntervalSecs) + 1) * p.s.EvictionIntervalSecs
		}
	}
	text := treeText(j.req)
	lo, hi := f.inflight(0), f.inflight(0)
	for i := 1; i < f.size(); i++ {
		lo, hi = min(lo, f.inflight(i)), max(hi, f.inflight(i))
	}
	chosen := -1
	if !(float64(hi-lo) > p.s.BalanceAbsThreshold && float32(hi) > float32(lo)*float32(p.s.BalanceRelThreshold)) {
		n, matched := p.tree.match(text)
		if len(n.holders) > 0 {
			first := n.holders[0].rep
			for _, h := range n.holders[1:] {
				if sglangFirst(n.salt, p.seed, h.rep) < sglangFirst(n.salt, p.seed, first) {
					first = h.rep
				}
			}
			p.tree.touch(n, first, at)
			if text != "" && float32(runeCount(text[:matched]))/float32(runeCount(text)) > float32(p.s.CacheThreshold) {
				chosen = first
			}
		}
	}
	if chosen < 0 {
		p.ties = p.ties[:0]
		for i := range f.size() {
			if f.inflight(i) == lo {
				p.ties = append(p.ties, i)
			}
		}
		chosen = p.ties[p.rng.IntN(len(p.ties))]
	}
	p.tree.insert(text, chosen, at)
	return chosen
}
