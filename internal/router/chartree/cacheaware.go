package chartree

import "math"

// CacheAware is cache_aware's choice of a worker as SGLang's older model gateway
// (modal-projects/sglang@8905cbd sgl-model-gateway src/policies/cache_aware.rs:376-505) and
// vLLM Router, which forked it (vllm-project/router@e667ebb src/policies/cache_aware.rs:
// 174-358), make it over this tree, with tree.rs's epochs (the two tree.rs are the same line
// for line outside their tests). The two differ in the text they hand it and in their
// settings' defaults, which their packages (internal/router/sglang, internal/router/vllmrouter)
// give it; each cites the lines of its own source for every step:
//  1. every worker registered takes one epoch (add_worker inserts "" for it);
//  2. every EvictionSecs, before the first request at or after the multiple, each worker
//     holding more than MaxTreeSize characters loses its oldest leaves (EvictLRULeaves);
//  3. imbalanced when max - min load > AbsThreshold and max > min x RelThreshold in float32:
//     the least loaded worker, the first of equals;
//  4. else the text is matched (one epoch); the node reached stamps its tenant (Node.Tenant,
//     with Rank ordering a node's holders) when the epoch is a multiple of 8; above Threshold
//     (matched characters over the text's, float32, 0 for "") the tenant, else the least
//     loaded worker, the first of equals;
//  5. the text is inserted for the worker chosen (one epoch), stamped at the node it ends in.
//
// The zero value with its settings set is ready; the tree is SGLang's (StampEnd).
type CacheAware struct {
	Threshold, AbsThreshold, RelThreshold, EvictionSecs float64
	MaxTreeSize                                         int
	// Rank orders a node's holders when its creator no longer holds it (Node.Tenant).
	Rank func(salt uint64, rep int) uint64

	tree      Tree
	started   bool
	epoch     uint64
	workers   int
	nextEvict float64
}

// Branch is the step of CacheAware.Route that chose the worker.
type Branch int

// The branches: the loads were imbalanced (3); the match was above the threshold (4); the least
// loaded worker at or below it (4).
const (
	Imbalanced Branch = iota
	Matched
	LeastLoaded
)

// next is get_epoch: the counter's value, then one more.
func (c *CacheAware) next() float64 {
	e := c.epoch
	c.epoch++
	return float64(e)
}

// Route chooses among n workers, whose requests in flight load gives, for text at time at.
func (c *CacheAware) Route(text string, at float64, n int, load func(int) int) (int, Branch) {
	if !c.started {
		c.started, c.tree.StampEnd, c.nextEvict = true, true, c.EvictionSecs
	}
	for ; c.workers < n; c.workers++ {
		c.next()
	}
	if c.EvictionSecs > 0 && at >= c.nextEvict {
		c.tree.EvictLRULeaves(c.MaxTreeSize)
		c.nextEvict = (math.Floor(at/c.EvictionSecs) + 1) * c.EvictionSecs
	}
	lo, hi := load(0), load(0)
	for i := 1; i < n; i++ {
		lo, hi = min(lo, load(i)), max(hi, load(i))
	}
	chosen, branch := -1, Imbalanced
	if !(float64(hi-lo) > c.AbsThreshold && float32(hi) > float32(lo)*float32(c.RelThreshold)) {
		branch = LeastLoaded
		node, matched := c.tree.Match(text)
		tenant := node.Tenant(c.Rank)
		if e := c.next(); tenant >= 0 && uint64(e)&7 == 0 {
			node.Stamp(tenant, e)
		}
		if tenant >= 0 && text != "" && float32(Runes(text[:matched]))/float32(Runes(text)) > float32(c.Threshold) {
			chosen, branch = tenant, Matched
		}
	}
	if chosen < 0 {
		for i := range n {
			if load(i) == lo {
				chosen = i
				break
			}
		}
	}
	c.tree.Insert(text, chosen, c.next())
	return chosen, branch
}
