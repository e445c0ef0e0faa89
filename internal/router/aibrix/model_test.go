package aibrix

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

// refPrefixCache is a second model of the gateway's prefix-cache routing, written from
// prefix_cache.go, hash.go and lru_store.go rather than from the emulation: blocks are the
// prompt's whole size-byte slices keyed by the text up to their end (a string, not a hash), the
// table a map with a write counter for recency, every decision recomputed from lists. Running
// requests come from simtest.RefFleet: the jobs sent to a pod that finish after now.
type refPrefixCache struct {
	s     Settings
	fleet *simtest.RefFleet
	draws *rand.Rand
	table map[string]*refBlock
	clock int // write counter: higher is more recent
}

type refBlock struct {
	pods    map[int]bool
	wrote   float64
	written int
}

func (m *refPrefixCache) running(rep int, now float64) int {
	n := 0
	for _, j := range m.fleet.Jobs {
		if j.Rep == rep && j.Finish > now {
			n++
		}
	}
	return n
}

func (m *refPrefixCache) route(r *sim.Request, n int) int {
	now := r.Arrival
	// The sweep: at the last whole tick, blocks unwritten for more than the TTL go.
	tick := math.Floor(now/m.s.EvictionSecs) * m.s.EvictionSecs
	for k, b := range m.table {
		if tick-b.wrote > m.s.EvictionMins*60 {
			delete(m.table, k)
		}
	}
	text := message(r.View)
	var keys []string
	for end := m.s.BlockSize; end <= len(text); end += m.s.BlockSize {
		keys = append(keys, text[:end])
	}
	load := make([]int, n)
	lo, hi := load[0], load[0]
	for i := range load {
		load[i] = m.running(i, now)
		if i == 0 || load[i] < lo {
			lo = load[i]
		}
		if i == 0 || load[i] > hi {
			hi = load[i]
		}
	}
	alive := map[int]bool{}
	for i := range n {
		if hi-lo <= m.s.ImbalanceAbs || load[i] == lo {
			alive[i] = true
		}
	}
	pct := map[int]int{}
	for i, k := range keys {
		b := m.table[k]
		if b == nil {
			break
		}
		hit := false
		for rep := range n {
			if !alive[rep] {
				continue
			}
			if b.pods[rep] {
				pct[rep] = (i + 1) * 100 / len(keys)
				hit = true
			} else {
				delete(alive, rep)
			}
		}
		if !hit {
			break
		}
	}
	pick := -1
	if len(pct) > 0 {
		var order []int
		for rep := range n {
			if _, ok := pct[rep]; ok {
				order = append(order, rep)
			}
		}
		for i := len(order) - 1; i > 0; i-- {
			k := m.draws.IntN(i + 1)
			order[i], order[k] = order[k], order[i]
		}
		sort.SliceStable(order, func(a, b int) bool {
			if pct[order[a]] != pct[order[b]] {
				return pct[order[a]] > pct[order[b]]
			}
			return load[order[a]] < load[order[b]]
		})
		// util.go's order of operations: the sum over n; the squares' sum over n-1. A pod
		// exactly at the bound is within it.
		sum := 0.0
		for _, l := range load {
			sum += float64(l)
		}
		mean := sum / float64(n)
		dev := 0.0
		if n > 1 {
			for _, l := range load {
				dev += math.Pow(float64(l)-mean, 2)
			}
			dev = math.Sqrt(dev / float64(n-1))
		}
		for _, rep := range order {
			if float64(load[rep]) <= mean+float64(m.s.StdDevFactor)*dev {
				pick = rep
				break
			}
		}
	}
	if pick < 0 {
		var idle []int
		for rep, l := range load {
			if l == lo {
				idle = append(idle, rep)
			}
		}
		pick = idle[m.draws.IntN(len(idle))]
	}
	for _, k := range keys {
		b := m.table[k]
		if b == nil {
			b = &refBlock{pods: map[int]bool{}}
			m.table[k] = b
		}
		m.clock++
		b.pods[pick], b.wrote, b.written = true, now, m.clock
		if len(m.table) > m.s.BlockNumber {
			oldest := ""
			for k2, b2 := range m.table {
				if oldest == "" || b2.written < m.table[oldest].written {
					oldest = k2
				}
			}
			delete(m.table, oldest)
		}
	}
	return pick
}

// chatTraffic gives random traffic texts that share prefixes as conversations do: one of a few
// system prompts, a conversation's earlier turns and a new one, as string contents or lists,
// with nulls and missing contents among them, and completions.
func chatTraffic(seed uint64, n int) *sim.Trace {
	tr := simtest.RandomTraffic(seed, n, simtest.Block)
	rng := rand.New(rand.NewPCG(seed, 5))
	var convs [][]string
	for i := range tr.Requests {
		var msgs []string
		switch c := rng.IntN(4); {
		case c == 0 || len(convs) == 0:
			msgs = []string{fmt.Sprintf("system prompt %d: %s", rng.IntN(3), strings.Repeat("be brief. ", 1+rng.IntN(6)))}
			convs = append(convs, msgs)
		default:
			k := rng.IntN(len(convs))
			msgs = append(convs[k], fmt.Sprintf("turn %d", rng.IntN(100)))
			convs[k] = msgs
		}
		v := &sim.View{}
		if rng.IntN(6) == 0 {
			v.Text = strings.Join(msgs, "\n")
		} else {
			v.Chat = true
			for _, m := range msgs {
				switch rng.IntN(8) {
				case 0:
					v.Pieces = append(v.Pieces, sim.Piece{End: int32(len(v.Text)), Kind: sim.PieceNull})
				case 1:
					v.Pieces = append(v.Pieces, sim.Piece{End: int32(len(v.Text)), Kind: sim.PieceList})
					v.Text += m
					v.Pieces = append(v.Pieces, sim.Piece{End: int32(len(v.Text)), Kind: sim.PiecePartText})
					v.Lists = append(v.Lists, `[{"type":"text","text":"`+m+`"}]`)
				default:
					v.Text += m
					v.Pieces = append(v.Pieces, sim.Piece{End: int32(len(v.Text)), Kind: sim.PieceString})
				}
			}
		}
		tr.Requests[i].View = v
		tr.Requests[i].OutputTokens = rng.IntN(60)
	}
	tr.Format = "requests"
	return tr
}

// TestSecondModel: the emulation and the second model route random chat traffic alike, request
// by request, for both default sets, a small table and a short TTL, on three replicas and with
// a fourth added mid-way.
func TestSecondModel(t *testing.T) {
	small := Binary()
	small.BlockNumber, small.EvictionMins, small.ImbalanceAbs = 40, 0.05, 2
	for _, s := range []Settings{Manifests(), Binary(), small} {
		for seed := uint64(1); seed <= 4; seed++ {
			tr := chatTraffic(seed, 250)
			for _, add := range []float64{-1, tr.Requests[120].Arrival} {
				c := simtest.ModelConfig(seed, 3, add)
				fleet := simtest.NewRefFleet(simtest.Block, c.Model)
				m := &refPrefixCache{s: s, fleet: fleet, draws: rand.New(rand.NewPCG(seed, drawStream)), table: map[string]*refBlock{}}
				want := simtest.Replay(tr, c, m.route, fleet)
				got := simtest.Routes(t, tr, c, emulation(s))
				if d := cmp.Diff(want.Routes, got.Routes); d != "" {
					t.Fatalf("block size %d seed %d add %v: routes differ from the second model (-model +emulation):\n%s", s.BlockSize, seed, add, d)
				}
			}
		}
	}
}

// TestReasonsDeclared: every reason a route gives is one the emulation declares (listed in
// simulate's help), and on random traffic with a low imbalance count each is given.
func TestReasonsDeclared(t *testing.T) {
	s := Binary()
	s.ImbalanceAbs = 2
	e := emulation(s)
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		c := simtest.ModelConfig(seed, 3, -1)
		_, why := simtest.Run(t, chatTraffic(seed, 250), c, e)
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
