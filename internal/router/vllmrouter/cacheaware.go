package vllmrouter

import (
	"fmt"
	"math"

	"github.com/kvcheck/kvcheck/internal/router/chartree"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// reasonImbalanced is cache_aware's reason for the least loaded worker when the loads are
// imbalanced (cache_aware.rs:253-270).
const reasonImbalanced = "imbalanced"

// cacheAwareReasons are the reasons of vllm-router-cache-aware.
var cacheAwareReasons = []string{reasonImbalanced, sim.ReasonPrefixMatch, sim.ReasonLeastLoaded}

// cacheAware is vllm-router-cache-aware with settings s.
func cacheAware(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "vllm-router-cache-aware",
		About:     "vLLM Router --policy cache_aware: a character tree of the routing text (a chat's session_params.session_id, never its messages; a completion's prompt); above --cache-threshold the replica that created the matched node, else the fewest requests in flight; the fewest in flight whenever the loads are imbalanced",
		Family:    sim.FamilyKV,
		Product:   display,
		Source:    "vllm-project/router@e667ebb src/policies/cache_aware.rs:126-358, src/tree.rs:209-227,362-619 (the SGLang gateway's tree, line for line), src/routers/http/router.rs:540-580, src/main.rs:142-160,362-368, src/config/validation.rs:127-167",
		Reasons:   cacheAwareReasons,
		NeedsText: true,
		KeepsText: true,
		Check:     func(_ sim.Config, t *sim.Trace) error { return refused(s, t) },
		New: func(c sim.Config, _ int) sim.Policy {
			return &cacheAwarePolicy{c: chartree.CacheAware{Threshold: s.CacheThreshold, AbsThreshold: float64(s.BalanceAbs), RelThreshold: s.BalanceRel,
				EvictionSecs: s.EvictionSecs, MaxTreeSize: s.MaxTreeSize, Rank: func(salt uint64, rep int) uint64 { return firstRank(salt, c.Seed, rep) }}}
		},
	}
}

// refused refuses what the router's ConfigValidator refuses for cache_aware
// (validation.rs@e667ebb:139-167): a cache threshold outside 0-1, a relative balance threshold
// below 1, an eviction interval or a tree size of 0. A negative absolute threshold or interval
// is refused too: clap cannot parse it into its unsigned type (main.rs:148, 156, 160).
func refused(s Settings, t *sim.Trace) error {
	refuse := func(format string, a ...any) error {
		return &sim.CannotRunError{Policy: "vllm-router-cache-aware", Trace: t.Name, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case !(s.CacheThreshold >= 0 && s.CacheThreshold <= 1):
		return refuse("--cache-threshold %v: the router wants 0.0 to 1.0 (\"Must be between 0.0 and 1.0\")", s.CacheThreshold)
	case !(s.BalanceRel >= 1):
		return refuse("--balance-rel-threshold %v: the router wants at least 1.0", s.BalanceRel)
	case s.BalanceAbs < 0:
		return refuse("--balance-abs-threshold %d: the router wants a count of requests, 0 or more", s.BalanceAbs)
	case !(s.EvictionSecs >= 1) || math.IsInf(s.EvictionSecs, 1):
		return refuse("--eviction-interval %v: the router wants whole seconds, more than 0", s.EvictionSecs)
	case s.MaxTreeSize <= 0:
		return refuse("--max-tree-size %d: the router wants more than 0 characters", s.MaxTreeSize)
	}
	return nil
}

// cacheAwarePolicy is vLLM Router's cache_aware (CacheAwarePolicy, cache_aware.rs@e667ebb,
// C below; its tree is src/tree.rs, T, which is the SGLang gateway's tree.rs @8905cbd line for
// line outside its tests) with the command line's values (main.rs:142-160, passed unchanged by
// parse_policy, main.rs:362-368). For each request, with load the requests the router has
// sent a worker and not seen finish (Worker::load: route_typed_request raises it only when the
// policy is cache_aware, router.rs:574-580, and lowers it when the response ends):
//  1. The text is routingText (extract_text_for_routing, router.rs:549): a chat's
//     session_params.session_id, else ""; a completion's prompt. It is always passed (Some,
//     router.rs:555), so every request is inserted, the empty text too.
//  2. Imbalanced when max load - min load > BalanceAbs (unsigned, saturating) and max load >
//     min load x BalanceRel in float32 (C:246-254): the least loaded worker, the first of
//     equals (C:197-200, min_by_key), and the text is inserted for it (C:203-211).
//  3. Otherwise the text is matched (T:531-619): the walk ends in the node the text leaves or
//     ends in; the tenant is that node's last_tenant while it still holds the node (T:570-575),
//     the worker whose insert created it as a leaf (T:409; copied on a split, T:449-450), else
//     the node's first holder in its map's order, kept as its last_tenant (T:576-597).
//  4. The match rate is matched characters over the text's characters, 0 for "" (C:302-307),
//     in float32. Above CacheThreshold the tenant (C:314-320); otherwise the least loaded
//     worker, the first of equals (C:321-327; the comment at C:30 says "smallest tree", the
//     code takes the least loaded).
//  5. The text is inserted for the worker chosen (C:331). An insert stamps the node it ends in
//     with the next epoch; a node it passes that the worker did not hold yet gets 0
//     (T:393-527). A match stamps its tenant with its epoch when the epoch is a multiple of 8
//     (T:601-607). One process-wide counter (T:218-227) gives the epochs; registering a worker
//     inserts "" for it (C:127-134), one epoch each.
//  6. Every EvictionSecs a thread evicts, for each worker holding more than MaxTreeSize
//     characters, its oldest leaves until it holds at most that (C:96-114;
//     chartree.Tree.EvictLRULeaves).
//
// Reasons: imbalanced (2), prefix-match (4, above the threshold), least-loaded (4, at or below
// it).
//
// The steps are chartree.CacheAware's, which SGLang's older gateway shares (the same
// cache_aware.rs, forked; the same tree.rs).
//
// kvcheck's choices where the source leaves it open: a node's "first holder in its map's order"
// is a DashMap's order, arbitrary but fixed for the node; here a pseudo-random order drawn from
// Config.Seed and the node's salt (firstRank). The eviction thread sleeps on its own clock;
// here it runs before the first request at or after each multiple of the interval. Leaves of
// one epoch are evicted in the order of worker and text.
//
// Left out: unhealthy workers and the removal of a stale tenant with the fallback to the first
// healthy worker (C:341-357: every worker is healthy); the per-model trees (C:241-298: one
// model, so one tree; a model with no tree would route at random, C:282-298); the PD mode's
// prefill and decode policies; retries re-running the selection.
type cacheAwarePolicy struct{ c chartree.CacheAware }

// firstRank ranks worker rep among the holders of a node with salt: the lowest rank is the
// holder the node's map lists first.
func firstRank(salt, seed uint64, rep int) uint64 {
	return sim.Mix64(salt ^ sim.Mix64(seed^drawStream^uint64(rep)<<32))
}

// branchReasons are the reasons of chartree.CacheAware's branches.
var branchReasons = map[chartree.Branch]string{chartree.Imbalanced: reasonImbalanced, chartree.Matched: sim.ReasonPrefixMatch, chartree.LeastLoaded: sim.ReasonLeastLoaded}

// Route implements sim.Policy.
func (p *cacheAwarePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	rep, b := p.c.Route(chartree.Valid(routingText(j.Request().View)), j.Arrival(), f.Size(), f.InFlight)
	return rep, branchReasons[b]
}
