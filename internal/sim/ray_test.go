package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRayHotSpot: seven requests share a 16-character system prompt and stay in flight for 100 s,
// on two replicas. Each text is 20 characters (5 blocks; hit limit (20-1)/4 = 4, the prompt).
func TestRayHotSpot(t *testing.T) {
	var rs []Request
	for i := range 7 {
		rs = append(rs, charReq(float64(i), 100, "You are helpful."+strings.Repeat(fmt.Sprint(i), 4)))
	}
	tr := charTrace(rs...)
	run := func(threshold float64) outcome {
		return runTiny(t, tr, withRouters(tinyConfig(2), func(s *RouterSettings) { s.Ray.ImbalancedThreshold = threshold }), "ray-prefix-affinity")
	}
	// As shipped (threshold +Inf): r0 goes to the smallest trees (both empty, queues 0 and 0:
	// replica 0). From then on every text matches 16 of 20 characters (0.8 >= 0.1) on a node
	// only replica 0 holds: all seven pile up there, 7 in flight against 0.
	if d := cmp.Diff(outcome{Routes: []int{0, 0, 0, 0, 0, 0, 0}, Hits: []int{0, 4, 4, 4, 4, 4, 4}}, run(math.Inf(1))); d != "" {
		t.Errorf("imbalance threshold +Inf (-want +got):\n%s", d)
	}
	// Threshold 2: r1, r2 go to replica 0 (queues 1-0, 2-0 are not above 2). r3 sees 3-0 > 2:
	// power of two choices over both replicas, the shorter queue, replica 1 (cold). r4 sees 3-1:
	// the prompt's node is held by 0 and 1 now, the shorter queue is 1 (hit 4); r5 sees 3-2, 1
	// again; r6 sees 3-3, the first of the pool, 0.
	if d := cmp.Diff(outcome{Routes: []int{0, 0, 0, 1, 1, 1, 0}, Hits: []int{0, 4, 4, 0, 4, 4, 4}}, run(2)); d != "" {
		t.Errorf("imbalance threshold 2 (-want +got):\n%s", d)
	}
}

// TestRayTiny works the match-rate threshold and the smallest trees through by hand, on three
// replicas, as shipped, every request staying in flight for 100 s.
func TestRayTiny(t *testing.T) {
	tr := charTrace(
		// r0: no match (rate 0 < 0.1): smallest trees, all three at 0; queues all 0: replica 0.
		charReq(0, 100, "aaaaaaaaaa"),
		// r1: no match: smallest are 1 and 2 (0 characters): replica 1.
		charReq(1, 100, strings.Repeat("b", 20)),
		// r2: smallest is 2: replica 2.
		charReq(2, 100, "cccc"),
		// r3: trees 10, 20, 4: replica 2 although it has one in flight and 0 has one too.
		charReq(3, 100, "dddddd"),
		// r4: matches the whole of aaaaaaaaaa (10 of 11): held by 0 alone: replica 0; hit 2
		// blocks (hit limit (11-1)/4 = 2).
		charReq(4, 100, "aaaaaaaaaaX"),
		// r5: matches "a" of 20 = 0.05 < 0.1: smallest trees, 11, 20, 10: replica 2. The insert
		// splits "a" off, held by 0 and 2.
		charReq(5, 100, "a"+strings.Repeat("X", 19)),
		// r6: matches "a" of 10 = 0.1, not below the threshold: the pool is the holders of "a",
		// 0 (2 in flight) and 2 (3 in flight): replica 0. Block "aYYY" misses.
		charReq(6, 100, "a"+strings.Repeat("Y", 9)),
	)
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 2, 2, 0, 2, 0}, Hits: []int{0, 0, 0, 0, 2, 0, 0}}, runTiny(t, tr, tinyConfig(3), "ray-prefix-affinity")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestRayEviction: eviction, off as shipped, changes where a text goes once its tree is gone.
// Two replicas, no request stays.
func TestRayEviction(t *testing.T) {
	tr := charTrace(
		// T1 at 0: no match, both trees empty: replica 0 (20 characters).
		charReq(0, 0, "p"+strings.Repeat("a", 19)),
		// U at 1: no match: smallest tree, replica 1 (1 character).
		charReq(1, 0, "u"),
		// T2 at 2: matches "p" of 10 = 0.1: the holder of T1's node, replica 0. The insert splits
		// "p" (at 2) off "aaa..." (at 0) and adds "bbbbbbbbb" (at 2): replica 0 holds 29.
		charReq(2, 0, "p"+strings.Repeat("b", 9)),
		// T1' at 11. With eviction (threshold 20, target 15, every 10 s), the run due at 10
		// finds replica 0 above 20 and removes at least 29-15 = 14 characters: its oldest
		// instant, 0, is "aaa..." (19). T1' then matches only "p" (1/21 < 0.1): smallest
		// tree, replica 1 (1 against 10), cold. Without eviction it matches 20/21 on replica 0
		// and hits T1's 5 blocks.
		charReq(11, 0, "p"+strings.Repeat("a", 19)+"Z"),
	)
	on := withRouters(tinyConfig(2), func(s *RouterSettings) {
		s.Ray.DoEviction = true
		s.Ray.EvictionThresholdChars, s.Ray.EvictionTargetChars, s.Ray.EvictionIntervalSecs = 20, 15, 10
	})
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 0, 1}, Hits: []int{0, 0, 0, 0}}, runTiny(t, tr, on, "ray-prefix-affinity")); d != "" {
		t.Errorf("with eviction (-want +got):\n%s", d)
	}
	off := withRouters(tinyConfig(2), func(s *RouterSettings) {
		s.Ray.EvictionThresholdChars, s.Ray.EvictionTargetChars, s.Ray.EvictionIntervalSecs = 20, 15, 10
	})
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 0, 0}, Hits: []int{0, 0, 0, 5}}, runTiny(t, tr, off, "ray-prefix-affinity")); d != "" {
		t.Errorf("do_eviction false (-want +got):\n%s", d)
	}
}

// bruteRay is a second model of PrefixCacheAffinityRouter, written from
// _prefix_match_best_replicas, choose_replicas and _select_from_candidate_replicas over the
// brute-force tree, drawing its power-of-two pairs from the same seeded generator.
type bruteRay struct {
	s    RaySettings
	rng  *rand.Rand
	tree *bruteTree
	done float64
}

func (p *bruteRay) route(f *fleet, j *job) int {
	at := j.arrival
	if iv := p.s.EvictionIntervalSecs; p.s.DoEviction && iv > 0 {
		if k := math.Floor(at / iv); k > p.done {
			for rep := range f.size() {
				if n := p.tree.size(rep); n > p.s.EvictionThresholdChars {
					p.tree.evictOldest(rep, n-p.s.EvictionTargetChars)
				}
			}
			p.done = k
		}
	}
	all := make([]int, f.size())
	queues := make([]int, f.size())
	for i := range all {
		all[i], queues[i] = i, f.inflight(i)
	}
	text := j.req.View.Text
	var pool []int
	if float64(slices.Max(queues)-slices.Min(queues)) <= p.s.ImbalancedThreshold && text != "" {
		node, m := p.tree.match(text)
		if float64(len([]rune(text[:m])))/float64(len([]rune(text))) < p.s.MatchRateThreshold {
			sizes := make([]int, f.size())
			for i := range sizes {
				sizes[i] = p.tree.size(i)
			}
			for i, s := range sizes {
				if s == slices.Min(sizes) {
					pool = append(pool, i)
				}
			}
		} else if node == "" {
			pool = all
		} else {
			pool = p.tree.holders(node)
		}
	}
	if len(pool) == 0 {
		if f.size() == 1 {
			pool = []int{0}
		} else {
			a := p.rng.IntN(f.size())
			b := p.rng.IntN(f.size() - 1)
			if b >= a {
				b++
			}
			pool = []int{a, b}
		}
	}
	chosen := pool[0]
	for _, i := range pool {
		if queues[i] < queues[chosen] {
			chosen = i
		}
	}
	p.tree.insert(text, chosen, at)
	return chosen
}

// TestRayAgreesWithBruteForce compares the emulation with bruteRay on random traffic under random
// settings: the shipped ones, finite imbalance thresholds (power of two choices), eviction on.
func TestRayAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 16))
		tr := randomTextTrace(rng, 150)
		s := DefaultRouterSettings().Ray
		if seed%4 != 0 {
			s = RaySettings{
				ImbalancedThreshold:    []float64{math.Inf(1), 0, 1, 3}[rng.IntN(4)],
				MatchRateThreshold:     []float64{0, 0.1, 0.4, 0.9}[rng.IntN(4)],
				DoEviction:             rng.IntN(3) > 0,
				EvictionThresholdChars: rng.IntN(40),
				EvictionTargetChars:    rng.IntN(40),
				EvictionIntervalSecs:   float64(rng.IntN(4)),
			}
		}
		c := withRouters(tinyConfig(1+rng.IntN(4)), func(r *RouterSettings) { r.Ray = s })
		c.KVBlocks = 6
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(3) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		compareWithModel(t, tr, c, "ray-prefix-affinity", &bruteRay{s: s, rng: rand.New(rand.NewPCG(c.Seed, 7)), tree: newBruteTree()},
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}
