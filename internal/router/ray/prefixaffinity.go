package ray

import (
	"math"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/kvcheck/kvcheck/internal/router/chartree"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// prefixAffinity is ray-prefix-affinity with settings s.
func prefixAffinity(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "ray-prefix-affinity",
		About:     "Ray Serve LLM PrefixCacheAffinityRouter: character tree, best-matching replicas above the match-rate threshold, else smallest trees; imbalance threshold infinite by default",
		Family:    sim.FamilyKV,
		Reasons:   []string{reasonImbalanced, reasonEmptyText, reasonSmallestTree, sim.ReasonPrefixMatch, reasonNoMatchAll},
		Draws:     true,
		Product:   display,
		Source:    "ray-project/ray python/ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_aware_router.py (imbalanced_threshold=inf), prefix_tree.py@19a1eaa, serve/_private/request_router/pow_2_router.py and request_router.py; ROUTERS.md §6, SPEC.md §6",
		NeedsText: true,
		KeepsText: true,
		New: func(c sim.Config, _ int) sim.Policy {
			return &rayPolicy{s: s, rng: rand.New(rand.NewPCG(c.Seed, 7)), nextEvict: s.EvictionIntervalSecs}
		},
	}
}

// The reasons of ray-prefix-affinity (rayPolicy's steps): imbalanced, empty-text,
// smallest-tree, no-match-all; and prefix-match.
const (
	reasonImbalanced   = "imbalanced"
	reasonEmptyText    = "empty-text"
	reasonSmallestTree = "smallest-tree"
	reasonNoMatchAll   = "no-match-all"
)

// rayPolicy is Ray Serve LLM's PrefixCacheAffinityRouter (prefix_aware_router.py,
// _prefix_match_best_replicas and choose_replicas) with the keyword arguments of
// Settings. For each request, with a replica's queue length the requests it has been
// sent and not finished (in flight):
//  1. If the longest queue - the shortest > ImbalancedThreshold (+Inf by default, so never),
//     the pool is two distinct replicas drawn at random (select_pow2_pair, in random order).
//  2. Otherwise the text is matched against the tree (radixTree.match; Ray's prefix_match does
//     not refresh any time). The match rate is the characters matched over the text's
//     characters. If it is below MatchRateThreshold (0.1), the pool is every replica holding
//     the fewest characters (get_smallest_tenants: a replica never sent anything holds 0);
//     else it is every replica holding the node the match ends in (all of them when the walk
//     stops at the root), in replica order.
//  3. The request goes to the replica of the pool with the shortest queue, the first in the
//     pool's order among equals (request_router.py, _select_from_candidate_replicas).
//  4. The text is inserted into the tree for that replica (on_request_routed).
//  5. Only with DoEviction (false by default): every EvictionIntervalSecs, each replica holding
//     more than EvictionThresholdChars loses its least recently used nodes, a whole instant at a
//     time, until at least (its characters - EvictionTargetChars) are gone
//     (radixTree.evictOldest). Here it runs before the first request at or after each multiple
//     of the interval; two runs in a row evict nothing more.
//
// Reasons: imbalanced (1), empty-text (the power of two choices for an empty text),
// smallest-tree (2, below the match-rate threshold), prefix-match (2, the holders of the node
// the match ends in), no-match-all (2, a rate at or above the threshold with nothing matched:
// only with a threshold of 0, every replica).
//
// What is Ray's and what is kvcheck's choice: queue lengths are exact here, where Ray reads them
// from a cache refreshed by probes; max_ongoing_requests (a full replica is skipped) is not
// emulated; replicas are listed in index order, where Ray's tenant order follows the set of
// replicas it was given. An empty text, on which Ray's match rate divides by zero, is routed
// by power of two choices. Times are the trace's arrival times.
//
// Checked against ray-project/ray@06c16f2 python/ray/llm/_internal/serve/routing_policies/
// prefix_aware/prefix_aware_router.py (function names; the stored copy has no line numbers):
//   - the text (rayText: _extract_text_from_request, _normalize_prompt_to_string,
//     _coerce_to_text);
//   - imbalance when the longest queue minus the shortest is above imbalanced_threshold (inf by
//     default, initialize_state), then the pool is power of two choices' pair;
//   - otherwise the match rate, matched characters over the text's, below match_rate_threshold
//     (0.1) the smallest tenants, else the tenants holding the match
//     (_prefix_match_best_replicas);
//   - eviction off by default; 400,000, 360,000 and 10 s when on (initialize_state).
//
// Left out:
//   - max_ongoing_requests (a full replica skipped), the probed queue-length cache, locality and
//     multiplexing preferences, replicas dying; an empty text (Ray divides by zero) takes power of
//     two choices; the second model (bruteRay) is written from prefix_aware_router.py and
//     prefix_tree.py over the brute-force tree.
type rayPolicy struct {
	s         Settings
	rng       *rand.Rand
	tree      chartree.Tree
	nextEvict float64
	pool      []int
}

// Route implements sim.Policy.
func (p *rayPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	at := j.Arrival()
	if p.s.DoEviction && p.s.EvictionIntervalSecs > 0 && at >= p.nextEvict {
		for rep := range f.Size() {
			if size := p.tree.SizeOf(rep); size > p.s.EvictionThresholdChars {
				p.tree.EvictOldest(rep, size-p.s.EvictionTargetChars)
			}
		}
		p.nextEvict = (math.Floor(at/p.s.EvictionIntervalSecs) + 1) * p.s.EvictionIntervalSecs
	}
	v := j.Request().View
	text, asIs := rayText(v)
	lo, hi := f.InFlight(0), f.InFlight(0)
	for i := 1; i < f.Size(); i++ {
		lo, hi = min(lo, f.InFlight(i)), max(hi, f.InFlight(i))
	}
	p.pool = p.pool[:0]
	reason := reasonImbalanced
	if text == "" {
		reason = reasonEmptyText
	}
	if float64(hi-lo) <= p.s.ImbalancedThreshold && text != "" {
		n, matched := p.tree.Match(text)
		rate := float64(chartree.Runes(text[:matched])) / float64(chartree.Runes(text))
		switch {
		case rate < p.s.MatchRateThreshold:
			reason = reasonSmallestTree
			least := p.tree.SizeOf(0)
			for i := 1; i < f.Size(); i++ {
				least = min(least, p.tree.SizeOf(i))
			}
			for i := range f.Size() {
				if p.tree.SizeOf(i) == least {
					p.pool = append(p.pool, i)
				}
			}
		case n == p.tree.Root():
			reason = reasonNoMatchAll
			for i := range f.Size() {
				p.pool = append(p.pool, i)
			}
		default:
			reason = sim.ReasonPrefixMatch
			for i := range f.Size() {
				if n.Holder(i) >= 0 {
					p.pool = append(p.pool, i)
				}
			}
		}
	}
	if len(p.pool) == 0 {
		p.pool = p.pow2(f.Size())
	}
	chosen := p.pool[0]
	for _, i := range p.pool[1:] {
		if f.InFlight(i) < f.InFlight(chosen) {
			chosen = i
		}
	}
	// The tree's labels stay in the log's text file when the text is the view's as it is there
	// (as shipped the tree never evicts: in memory it would hold the traffic's distinct text).
	if src, off := v.TextFile(); src != nil && asIs {
		p.tree.InsertFrom(text, src, off, chosen, at)
	} else {
		p.tree.Insert(text, chosen, at)
	}
	if err := p.tree.Err(); err != nil {
		f.Fail(err)
	}
	return chosen, reason
}

// pow2 is select_pow2_pair: two distinct replicas drawn uniformly, in random order (one when
// there is one).
func (p *rayPolicy) pow2(n int) []int {
	if n == 1 {
		return append(p.pool[:0], 0)
	}
	a := p.rng.IntN(n)
	b := p.rng.IntN(n - 1)
	if b >= a {
		b++
	}
	return append(p.pool[:0], a, b)
}

// rayText is the text Ray's router reads (ray-project/ray@06c16f2
// python/ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_aware_router.py,
// _extract_text_from_request, _normalize_prompt_to_string and _coerce_to_text): a completion's
// prompt; for a chat, every message's content concatenated with no separator: a string as it
// is, of a list every part's text member that is a string, whatever the part's type (an
// input_text too; an image has none), null or a missing content nothing. reasoning_content and
// tool calls are not read. Without reasoning pieces that is View.Text itself, shared, not
// copied, and asIs is true when it is (valid UTF-8, so not rewritten).
func rayText(v *sim.View) (text string, asIs bool) {
	reasoning := false
	for _, p := range v.Pieces {
		reasoning = reasoning || p.Kind == sim.PieceReasoning
	}
	if !reasoning {
		if !utf8.ValidString(v.Text) {
			return chartree.Valid(v.Text), false
		}
		return v.Text, true
	}
	var sb strings.Builder
	from := int32(0)
	for _, p := range v.Pieces {
		if p.Kind != sim.PieceReasoning {
			sb.WriteString(v.Text[from:p.End])
		}
		from = p.End
	}
	return chartree.Valid(sb.String()), false
}
