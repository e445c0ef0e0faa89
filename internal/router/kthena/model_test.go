package kthena

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// refKthena is a second model of the scheduler with the filter least-request and the score
// plugins least-request and prefix-cache, written from the plugins' source (least_request.go,
// prefix_cache.go, prefix_store.go, scheduler_impl.go), not from scheduler.go: the fleet is
// simtest.RefFleet, a pod's load is read off its jobs, the prefix store is a list of each pod's
// blocks, most recent first, rebuilt from the jobs that have finished, in the order they
// finished.
type refKthena struct {
	s     Settings
	fleet *simtest.RefFleet
	draws *rand.Rand
	tick  int
	// running and waiting as the last scrape saw them
	running, waiting map[int]int
	// stored: each pod's blocks, most recent first; applied: jobs whose blocks are stored
	stored  map[int][]string
	applied map[int]bool
	keys    map[*sim.Request][]string
}

func newRefKthena(s Settings, seed uint64, fleet *simtest.RefFleet) *refKthena {
	return &refKthena{s: s, fleet: fleet, draws: rand.New(rand.NewPCG(seed, drawStream)), tick: -1,
		stored: map[int][]string{}, applied: map[int]bool{}, keys: map[*sim.Request][]string{}}
}

// refKeys are the prompt's blocks: the prompt up to each multiple of the block size, and the
// whole prompt, at most MaxBlocks of them.
func (m *refKthena) refKeys(p string) []string {
	var out []string
	for i := 1; len(out) < m.s.MaxBlocks; i++ {
		end := i * m.s.BlockSize
		if end >= len(p) {
			if p != "" {
				out = append(out, p)
			}
			break
		}
		out = append(out, p[:end])
	}
	return out
}

func (m *refKthena) route(r *sim.Request, n int) int {
	now := r.Arrival
	// The blocks of the jobs that finished by now, in the order they finished.
	var done []int
	for k, j := range m.fleet.Jobs {
		if !m.applied[k] && j.Finish <= now {
			done = append(done, k)
		}
	}
	sort.SliceStable(done, func(a, b int) bool { return m.fleet.Jobs[done[a]].Finish < m.fleet.Jobs[done[b]].Finish })
	for _, k := range done {
		m.applied[k] = true
		j := m.fleet.Jobs[k]
		keys := m.keys[j.R]
		for b := len(keys) - 1; b >= 0; b-- {
			l := slices.DeleteFunc(m.stored[j.Rep], func(x string) bool { return x == keys[b] })
			l = append([]string{keys[b]}, l...)
			if len(l) > m.s.CacheSize {
				l = l[:m.s.CacheSize]
			}
			m.stored[j.Rep] = l
		}
	}
	inflight := func(i int) int {
		c := 0
		for _, j := range m.fleet.Jobs {
			if j.Rep == i && j.Finish > now {
				c++
			}
		}
		return c
	}
	if k := int(math.Floor(now / m.s.ScrapeSecs)); k > m.tick {
		m.tick = k
		m.running, m.waiting = map[int]int{}, map[int]int{}
		for _, j := range m.fleet.Jobs {
			if j.Finish > now {
				if j.Admit > now {
					m.waiting[j.Rep]++
				} else {
					m.running[j.Rep]++
				}
			}
		}
	}
	var pods []int
	for i := range n {
		if m.waiting[i] < m.s.MaxWaiting {
			pods = append(pods, i)
		}
	}
	if len(pods) == 0 {
		best := 0
		for i := range n {
			if m.waiting[i] < m.waiting[best] {
				best = i
			}
		}
		return best
	}
	score := map[int]float64{}
	for _, pl := range m.s.Score {
		switch pl.Name {
		case "least-request":
			base := map[int]float64{}
			top := 0.0
			for _, i := range pods {
				in := inflight(i)
				base[i] = float64(in + 100*max(in-m.running[i], 0))
				top = max(top, base[i])
			}
			for _, i := range pods {
				if top == 0 {
					score[i] += float64(pl.Weight) * 100
				} else {
					score[i] += float64(pl.Weight) * math.Trunc((top-base[i])/top*100)
				}
			}
		case "prefix-cache":
			keys := m.refKeys(r.View.Text)
			m.keys[r] = keys
			found := map[int]bool{}
			for b := len(keys) - 1; b >= 0 && len(found) < m.s.TopK; b-- {
				var holders []int
				for _, i := range pods {
					if !found[i] && slices.Contains(m.stored[i], keys[b]) {
						holders = append(holders, i)
					}
				}
				if room := m.s.TopK - len(found); len(holders) > room {
					m.draws.Shuffle(len(holders), func(a, b int) { holders[a], holders[b] = holders[b], holders[a] })
					holders = holders[:room]
				}
				for _, i := range holders {
					found[i] = true
					score[i] += float64(pl.Weight) * math.Trunc(float64(b+1)/float64(len(keys))*100)
				}
			}
		}
	}
	top := math.Inf(-1)
	for _, i := range pods {
		top = max(top, score[i])
	}
	var tied []int
	for _, i := range pods {
		if score[i] == top {
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return tied[0]
	}
	return tied[m.draws.IntN(len(tied))]
}

// words gives each block of random traffic a 6-character word, so that prompts that share
// blocks share text.
func words(tr *sim.Trace) {
	for i := range tr.Requests {
		r := &tr.Requests[i]
		var b strings.Builder
		for _, x := range r.Blocks {
			fmt.Fprintf(&b, "%06d", x%1_000_000)
		}
		r.View = &sim.View{Text: b.String()}
	}
	tr.Format = "requests"
}

// TestSecondModel: the emulation and the second model route random traffic alike, request by
// request: four seeds, three pods, a fourth added mid-way or not; 8-byte blocks (a block of
// the traffic is 6 bytes, so blocks straddle), topKMatches 2 (so holders are drawn), 40 blocks a
// pod (so pods forget), maxWaitingRequests 1 with 1 running slot (so pods are filtered, some requests finding none), and
// least-request weighted 2 against prefix-cache 3.
func TestSecondModel(t *testing.T) {
	s := Shipped()
	s.Score = []Plugin{{"least-request", 2}, {"prefix-cache", 3}}
	s.MaxWaiting, s.BlockSize, s.TopK, s.CacheSize = 1, 8, 2, 40
	for seed := uint64(1); seed <= 4; seed++ {
		tr := simtest.RandomTraffic(seed, 300, simtest.Block)
		words(tr)
		for _, add := range []float64{-1, tr.Requests[150].Arrival} {
			c := simtest.ModelConfig(seed, 3, add)
			c.Model.MaxRunning = 1
			fleet := simtest.NewRefFleet(simtest.Block, c.Model)
			m := newRefKthena(s, seed, fleet)
			want := simtest.Replay(tr, c, m.route, fleet)
			got := simtest.Routes(t, tr, c, emulation(s))
			if d := cmp.Diff(want.Routes, got.Routes); d != "" {
				t.Fatalf("seed %d add %v: routes differ from the second model (-model +emulation):\n%s", seed, add, d)
			}
		}
	}
}

// TestReasonsDeclared: every reason a route gives is one the emulation declares (listed in
// simulate's help), and on the second model's traffic each is given.
func TestReasonsDeclared(t *testing.T) {
	s := Shipped()
	s.Score = []Plugin{{"least-request", 2}, {"prefix-cache", 3}}
	s.MaxWaiting, s.BlockSize, s.TopK, s.CacheSize = 1, 8, 2, 40
	e := emulation(s)
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		tr := simtest.RandomTraffic(seed, 300, simtest.Block)
		words(tr)
		c := simtest.ModelConfig(seed, 3, -1)
		c.Model.MaxRunning = 1
		_, why := simtest.Run(t, tr, c, e)
		for i, r := range why {
			if !slices.Contains(e.Reasons, r) {
				t.Fatalf("request %d gives reason %q, not among %v", i, r, e.Reasons)
			}
			seen[r] = true
		}
	}
	for _, r := range e.Reasons {
		if !seen[r] {
			t.Errorf("declared reason %q never given", r)
		}
	}
}
