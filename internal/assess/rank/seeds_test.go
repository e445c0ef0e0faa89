package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// drawnLoads is the load max/mean the random policy (sim/random.go: a PCG seeded (seed, 1),
// one IntN(replicas) a request in arrival order) gives n requests on 2 replicas with seed,
// computed here from the same generator rather than read off a replay: the busiest replica's
// count over the mean n/2.
func drawnLoads(seed uint64, n int) float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var c [2]int
	for range n {
		c[rng.IntN(2)]++
	}
	return float64(max(c[0], c[1])) / (float64(n) / 2)
}

// fourOnTwo is four requests of one block each, none shared, with made-up arrival times (a
// request log replayed at --rate): the hot-spot rule reads the imbalance alone.
func fourOnTwo(session string) *sim.Trace {
	tr := &sim.Trace{Name: "four", Format: "mooncake", BlockSize: 16, PrefixInfo: true, SyntheticArrivals: true}
	for i := range 4 {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(i), Blocks: []uint64{uint64(i + 1)}, InputTokens: 16, OutputTokens: 4, Session: session})
	}
	return tr
}

// TestSeedsJudgeByMedian: a row whose router draws (sim.PolicyInfo.Draws) is judged over Seeds
// seeds, a row whose router does not is replayed once. Worked by hand: four requests drawn
// uniformly onto 2 replicas split 4-0 (load max/mean 4/2 = 2.00: at the 2.0 ratio and above the
// evenest spread, 2/2 = 1.00, so a hot spot, the arrivals being made up), 3-1 (3/2 = 1.50) or
// 2-2 (1.00); a 4-0 split has probability 2 x (1/2)^4 = 1/8 a seed, and three or more of five
// seeds about 10 x (1/8)^3 x (7/8)^2 + 5 x (1/8)^4 x 7/8 + (1/8)^5 = 0.016.
//
//   - unlucky: the base seed b is chosen, by drawing with the policy's generator here, as the
//     first whose own draw is 4-0 while at most 2 of b..b+4 are. Replayed once on b the row is a
//     hot spot (the control replay); judged over the five it is ranked, its load max/mean the
//     middle of the five computed ones, and it says on how many it was a hot spot.
//   - majority: the first base three of whose five seeds split 4-0: the middle of the five
//     sorted loads is 2.00, the first of those seeds in seed order (the sort keeps it), so the
//     row is not ranked and says so.
//   - always: the idealised session policy, all four requests in one session: the one key
//     hashes to one replica whatever the seed, 4-0 on every seed, 5 of 5: not ranked.
//   - round-robin does not draw: 2-2, one replay, no seeds.
func TestSeedsJudgeByMedian(t *testing.T) {
	hot := func(b uint64) (n int, loads []float64) {
		for s := b; s < b+Seeds; s++ {
			l := drawnLoads(s, 4)
			loads = append(loads, l)
			if l >= 2 {
				n++
			}
		}
		return n, loads
	}
	find := func(ok func(b uint64) bool) uint64 {
		for b := uint64(1); b < 100000; b++ {
			if ok(b) {
				return b
			}
		}
		t.Fatal("no such base seed")
		return 0
	}
	unlucky := find(func(b uint64) bool { n, _ := hot(b); return drawnLoads(b, 4) == 2 && n <= 2 })
	majority := find(func(b uint64) bool { n, _ := hot(b); return n == 3 })

	run := func(base uint64, tr *sim.Trace, policies ...string) *Ranking {
		t.Helper()
		s := setup(2, -1)
		s.Base.Seed = base
		var cands []Candidate
		for _, p := range policies {
			cands = append(cands, Candidate{Policy: p, Variant: Shipped})
		}
		rk, err := Run(context.Background(), tr, s, cands)
		if err != nil {
			t.Fatal(err)
		}
		return rk
	}
	row := func(rk *Ranking, policy string) Row {
		t.Helper()
		i := slices.IndexFunc(rk.Rows, func(r Row) bool { return r.Policy == policy })
		if i < 0 {
			t.Fatalf("no row %s", policy)
		}
		return rk.Rows[i]
	}

	t.Run("unlucky", func(t *testing.T) {
		info, _ := policy("random", nil)
		once, err := sim.SimulatePolicy(context.Background(), fourOnTwo(""), sim.Config{Replicas: 2, KVBlocks: 1000, Model: sim.DefaultModel(), Seed: unlucky, AddReplicaAt: -1, Siblings: 1, Params: sim.DefaultParams()}, info)
		if err != nil || once.LoadMaxOverMean != 2 {
			t.Fatalf("seed %d alone: load max/mean %v (%v), want the 2.00 drawn here", unlucky, once.LoadMaxOverMean, err)
		}
		rk := run(unlucky, fourOnTwo(""), "random", "round-robin")
		r := row(rk, "random")
		n, loads := hot(unlucky)
		sorted := slices.Sorted(slices.Values(loads))
		if r.Rank == 0 || r.Excluded != "" {
			t.Errorf("seed %d's 4-0 decided the row: rank %d, %q", unlucky, r.Rank, r.Excluded)
		}
		sp := r.Seeds
		if sp == nil {
			t.Fatal("random judged on one seed")
		}
		want := SeedSpread{Seeds: []uint64{unlucky, unlucky + 1, unlucky + 2, unlucky + 3, unlucky + 4}, LoadMin: sorted[0], LoadMax: sorted[4], HotSpots: n}
		if !slices.Equal(sp.Seeds, want.Seeds) || sp.Sample != 0 || sp.LoadMin != want.LoadMin || sp.LoadMax != want.LoadMax || sp.HotSpots != want.HotSpots || r.LoadMaxOverMean != sorted[2] {
			t.Errorf("spread %+v load %v, want %+v load %v (drawn %v)", *sp, r.LoadMaxOverMean, want, sorted[2], loads)
		}
		if rr := row(rk, "round-robin"); rr.Seeds != nil || rr.LoadMaxOverMean != 1 {
			t.Errorf("round-robin: seeds %+v load %v, want one replay at 1.00", rr.Seeds, rr.LoadMaxOverMean)
		}
	})
	t.Run("majority", func(t *testing.T) {
		r := row(run(majority, fourOnTwo(""), "random"), "random")
		_, loads := hot(majority)
		median := majority + uint64(slices.Index(loads, 2))
		want := fmt.Sprintf("hot spot: load max/mean 2.00 >= 2.0, on the median of 5 seeds (seed %d; a hot spot on 3 of the 5)", median)
		if r.Rank != 0 || r.Excluded != want || r.Seeds.Median != median {
			t.Errorf("rank %d, excluded %q, median seed %d; want not ranked, %q (drawn %v)", r.Rank, r.Excluded, r.Seeds.Median, want, loads)
		}
	})
	t.Run("always", func(t *testing.T) {
		r := row(run(1, fourOnTwo("s"), "session"), "session")
		if r.Rank != 0 || !strings.HasSuffix(r.Excluded, "a hot spot on 5 of the 5)") || r.Seeds.LoadMin != 2 {
			t.Errorf("rank %d, excluded %q, spread %+v; want a hot spot on every seed", r.Rank, r.Excluded, r.Seeds)
		}
	})
}

// TestSeedReplays: a traffic of at most SeedSampleRefs block references replays the four seeds
// after the base on the whole of it; a larger one all five on its first requests up to that
// many. Three requests of 400,000 blocks: the first two make 800,000 (within 1,048,576), the
// third 1,200,000: the sample is the first 2 requests.
func TestSeedReplays(t *testing.T) {
	big := make([]uint64, 400000)
	tr := &sim.Trace{Name: "big", BlockSize: 16, PrefixInfo: true}
	for range 3 {
		tr.Requests = append(tr.Requests, sim.Request{Blocks: big})
	}
	seeds, sample := seedReplays(tr, 1)
	if !slices.Equal(seeds, []uint64{1, 2, 3, 4, 5}) || sample != 2 {
		t.Errorf("large: seeds %v on %d requests, want 1-5 on the first 2", seeds, sample)
	}
	seeds, sample = seedReplays(fourOnTwo(""), 7)
	if !slices.Equal(seeds, []uint64{8, 9, 10, 11}) || sample != 0 {
		t.Errorf("small: seeds %v on %d requests, want 8-11 on the whole", seeds, sample)
	}
}

// TestMedianReplayIsMajority: the median seed's replay is a hot spot exactly when most of the
// seeds' are, whatever their load max/mean. Five replays with the arrival times known (a hot
// spot needs max/mean >= 2.0 and at least half the busiest replica's requests waiting), the
// evenest spread 1.0:
//   - one hot spot (2.2, waiting 0.6) among 1.0, 1.1 and two at 2.5 and 2.6 whose busiest
//     replica waited 0.1 (not busy enough): by max/mean alone the middle is the 2.2, a hot
//     spot on 1 seed of 5; hot spots last, the middle is the 2.5, no hot spot;
//   - three hot spots (2.0, 2.1, 2.2) with 1.0 and an idle 2.05: by max/mean alone the middle
//     is the idle 2.05, no hot spot on 3 seeds of 5; hot spots last, the 2.0, a hot spot.
func TestMedianReplayIsMajority(t *testing.T) {
	replay := func(mm, waited float64) Row {
		return Row{LoadMaxOverMean: mm, load: sim.Load{MaxOverMean: mm, Even: 1, ArrivalsKnown: true, HotWaited: waited}}
	}
	for _, c := range []struct {
		name string
		rows []Row
		want float64 // the median replay's max/mean
		hot  bool
	}{
		{"one hot of five", []Row{replay(2.5, 0.1), replay(1.0, 0), replay(2.2, 0.6), replay(2.6, 0.1), replay(1.1, 0)}, 2.5, false},
		{"three hot of five", []Row{replay(2.2, 0.6), replay(2.05, 0.1), replay(1.0, 0), replay(2.1, 0.7), replay(2.0, 0.5)}, 2.0, true},
	} {
		m := c.rows[medianReplay(c.rows, sim.HotSpotRatio)]
		if m.LoadMaxOverMean != c.want || m.load.HotSpot(sim.HotSpotRatio) != c.hot {
			t.Errorf("%s: the median replay is %.2f (hot %v), want %.2f (hot %v)", c.name, m.LoadMaxOverMean, m.load.HotSpot(sim.HotSpotRatio), c.want, c.hot)
		}
	}
}
