package ray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/router/chartree/treetest"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestRayHotSpot: seven requests share a 16-character system prompt and stay in flight for 100 s,
// on two replicas. Each text is 20 characters (5 blocks; hit limit (20-1)/4 = 4, the prompt).
func TestRayHotSpot(t *testing.T) {
	var rs []sim.Request
	for i := range 7 {
		rs = append(rs, simtest.CharReq(float64(i), 100, "You are helpful."+strings.Repeat(fmt.Sprint(i), 4)))
	}
	tr := simtest.CharTrace(rs...)
	run := func(threshold float64) simtest.Outcome {
		s := Shipped()
		s.ImbalancedThreshold = threshold
		return simtest.Routes(t, tr, simtest.Config(2), prefixAffinity(s))
	}
	// As shipped (threshold +Inf): r0 goes to the smallest trees (both empty, queues 0 and 0:
	// replica 0). From then on every text matches 16 of 20 characters (0.8 >= 0.1) on a node
	// only replica 0 holds: all seven pile up there, 7 in flight against 0.
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 0, 0, 0, 0, 0, 0}, Hits: []int{0, 4, 4, 4, 4, 4, 4}}, run(math.Inf(1))); d != "" {
		t.Errorf("imbalance threshold +Inf (-want +got):\n%s", d)
	}
	// Threshold 2: r1, r2 go to replica 0 (queues 1-0, 2-0 are not above 2). r3 sees 3-0 > 2:
	// power of two choices over both replicas, the shorter queue, replica 1 (cold). r4 sees 3-1:
	// the prompt's node is held by 0 and 1 now, the shorter queue is 1 (hit 4); r5 sees 3-2, 1
	// again; r6 sees 3-3, the first of the pool, 0.
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 0, 0, 1, 1, 1, 0}, Hits: []int{0, 4, 4, 0, 4, 4, 4}}, run(2)); d != "" {
		t.Errorf("imbalance threshold 2 (-want +got):\n%s", d)
	}
}

// TestRayTiny works the match-rate threshold and the smallest trees through by hand, on three
// replicas, as shipped, every request staying in flight for 100 s.
func TestRayTiny(t *testing.T) {
	tr := simtest.CharTrace(
		// r0: no match (rate 0 < 0.1): smallest trees, all three at 0; queues all 0: replica 0.
		simtest.CharReq(0, 100, "aaaaaaaaaa"),
		// r1: no match: smallest are 1 and 2 (0 characters): replica 1.
		simtest.CharReq(1, 100, strings.Repeat("b", 20)),
		// r2: smallest is 2: replica 2.
		simtest.CharReq(2, 100, "cccc"),
		// r3: trees 10, 20, 4: replica 2 although it has one in flight and 0 has one too.
		simtest.CharReq(3, 100, "dddddd"),
		// r4: matches the whole of aaaaaaaaaa (10 of 11): held by 0 alone: replica 0; hit 2
		// blocks (hit limit (11-1)/4 = 2).
		simtest.CharReq(4, 100, "aaaaaaaaaaX"),
		// r5: matches "a" of 20 = 0.05 < 0.1: smallest trees, 11, 20, 10: replica 2. The insert
		// splits "a" off, held by 0 and 2.
		simtest.CharReq(5, 100, "a"+strings.Repeat("X", 19)),
		// r6: matches "a" of 10 = 0.1, not below the threshold: the pool is the holders of "a",
		// 0 (2 in flight) and 2 (3 in flight): replica 0. Block "aYYY" misses.
		simtest.CharReq(6, 100, "a"+strings.Repeat("Y", 9)),
	)
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 2, 2, 0, 2, 0}, Hits: []int{0, 0, 0, 0, 2, 0, 0}}, simtest.Routes(t, tr, simtest.Config(3), prefixAffinity(Shipped()))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestRayEviction: eviction, off as shipped, changes where a text goes once its tree is gone.
// Two replicas, no request stays.
func TestRayEviction(t *testing.T) {
	tr := simtest.CharTrace(
		// T1 at 0: no match, both trees empty: replica 0 (20 characters).
		simtest.CharReq(0, 0, "p"+strings.Repeat("a", 19)),
		// U at 1: no match: smallest tree, replica 1 (1 character).
		simtest.CharReq(1, 0, "u"),
		// T2 at 2: matches "p" of 10 = 0.1: the holder of T1's node, replica 0. The insert splits
		// "p" (at 2) off "aaa..." (at 0) and adds "bbbbbbbbb" (at 2): replica 0 holds 29.
		simtest.CharReq(2, 0, "p"+strings.Repeat("b", 9)),
		// T1' at 11. With eviction (threshold 20, target 15, every 10 s), the run due at 10
		// finds replica 0 above 20 and removes at least 29-15 = 14 characters: its oldest
		// instant, 0, is "aaa..." (19). T1' then matches only "p" (1/21 < 0.1): smallest
		// tree, replica 1 (1 against 10), cold. Without eviction it matches 20/21 on replica 0
		// and hits T1's 5 blocks.
		simtest.CharReq(11, 0, "p"+strings.Repeat("a", 19)+"Z"),
	)
	on := Shipped()
	on.DoEviction = true
	on.EvictionThresholdChars, on.EvictionTargetChars, on.EvictionIntervalSecs = 20, 15, 10
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 0, 1}, Hits: []int{0, 0, 0, 0}}, simtest.Routes(t, tr, simtest.Config(2), prefixAffinity(on))); d != "" {
		t.Errorf("with eviction (-want +got):\n%s", d)
	}
	off := Shipped()
	off.EvictionThresholdChars, off.EvictionTargetChars, off.EvictionIntervalSecs = 20, 15, 10
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 0, 0}, Hits: []int{0, 0, 0, 5}}, simtest.Routes(t, tr, simtest.Config(2), prefixAffinity(off))); d != "" {
		t.Errorf("do_eviction false (-want +got):\n%s", d)
	}
}

// bruteRay is a second model of PrefixCacheAffinityRouter, written from
// _prefix_match_best_replicas, choose_replicas and _select_from_candidate_replicas over the
// brute-force tree, drawing its power-of-two pairs from the same seeded generator.
type bruteRay struct {
	s    Settings
	rng  *rand.Rand
	tree *treetest.Brute
	done float64
}

func (p *bruteRay) Route(f *sim.Pool, j *sim.Job) (int, string) {
	at := j.Arrival()
	if iv := p.s.EvictionIntervalSecs; p.s.DoEviction && iv > 0 {
		if k := math.Floor(at / iv); k > p.done {
			for rep := range f.Size() {
				if n := p.tree.Size(rep); n > p.s.EvictionThresholdChars {
					p.tree.EvictOldest(rep, n-p.s.EvictionTargetChars)
				}
			}
			p.done = k
		}
	}
	all := make([]int, f.Size())
	queues := make([]int, f.Size())
	for i := range all {
		all[i], queues[i] = i, f.InFlight(i)
	}
	text := j.Request().View.Text
	var pool []int
	if float64(slices.Max(queues)-slices.Min(queues)) <= p.s.ImbalancedThreshold && text != "" {
		node, m := p.tree.Match(text)
		if float64(len([]rune(text[:m])))/float64(len([]rune(text))) < p.s.MatchRateThreshold {
			sizes := make([]int, f.Size())
			for i := range sizes {
				sizes[i] = p.tree.Size(i)
			}
			for i, s := range sizes {
				if s == slices.Min(sizes) {
					pool = append(pool, i)
				}
			}
		} else if node == "" {
			pool = all
		} else {
			pool = p.tree.Holders(node)
		}
	}
	if len(pool) == 0 {
		if f.Size() == 1 {
			pool = []int{0}
		} else {
			a := p.rng.IntN(f.Size())
			b := p.rng.IntN(f.Size() - 1)
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
	p.tree.Insert(text, chosen, at)
	return chosen, ""
}

// TestRayAgreesWithBruteForce compares the emulation with bruteRay on random traffic under random
// settings: the shipped ones, finite imbalance thresholds (power of two choices), eviction on.
func TestRayAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 16))
		tr := simtest.RandomCharTrace(rng, 150, treetest.RandomText)
		s := Shipped()
		if seed%4 != 0 {
			s = Settings{
				ImbalancedThreshold:    []float64{math.Inf(1), 0, 1, 3}[rng.IntN(4)],
				MatchRateThreshold:     []float64{0, 0.1, 0.4, 0.9}[rng.IntN(4)],
				DoEviction:             rng.IntN(3) > 0,
				EvictionThresholdChars: rng.IntN(40),
				EvictionTargetChars:    rng.IntN(40),
				EvictionIntervalSecs:   float64(rng.IntN(4)),
			}
		}
		c := simtest.Config(1 + rng.IntN(4))
		c.KVBlocks = 6
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(3) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		simtest.Compare(t, tr, c, prefixAffinity(s), &bruteRay{s: s, rng: rand.New(rand.NewPCG(c.Seed, 7)), tree: treetest.NewBrute()},
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}
