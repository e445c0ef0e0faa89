package vllmrouter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/chartree/treetest"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// sessionChat is a chat whose session_params.session_id is id, out tokens long (in flight out
// seconds under simtest.Config).
func sessionChat(at float64, out int, id string) sim.Request {
	r := simtest.ChatReq(at, out, nil, simtest.Block, 1)
	r.View.SessionParams = id
	return r
}

// TestCacheAwareSessionIDs works cache_aware through by hand with the command line's defaults
// (--cache-threshold 0.3, --balance-abs-threshold 64, --balance-rel-threshold 1.5,
// vllm-project/router@e667ebb main.rs:142-160) on three workers, every request in flight for
// 100 s. A chat's routing text is its session_params.session_id (spec.rs:542-557), so the tree
// is a tree of session ids; C is cache_aware.rs, T tree.rs, both @e667ebb.
func TestCacheAwareSessionIDs(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block,
		// r0 "conv-1": loads 0,0,0 (balanced); the tree is empty, rate 0: least loaded, the
		// first of equals (C:321-327): 0. Leaf conv-1 created by 0 (T:409).
		sessionChat(0, 100, "conv-1"),
		// r1 "conv-2": loads 1,0,0 (1-0 = 1 is not above 64: balanced). The walk takes "conv-"
		// and stops part-way into conv-1: 5 of 6 characters, 0.83 > 0.3, so the node's creator,
		// 0 (C:314-320), although the conversation is another one. Split: conv- (creator 0,
		// copied, T:449-450), 1, and leaf 2 created by 0.
		sessionChat(1, 100, "conv-2"),
		// r2 "conv-3": loads 2,0,0: the walk ends in conv- (5 of 6): creator 0 again.
		sessionChat(2, 100, "conv-3"),
		// r3, a chat without session_params: its text is "", rate 0 (C:303-304): least loaded
		// of 3,0,0: 1.
		sessionChat(3, 100, ""),
		// r4, the completion "hello world": 'h' starts no node, rate 0: least loaded of 3,1,0:
		// 2. Leaf hello world created by 2.
		simtest.TextReq(4, 100, "hello world", simtest.Block, 1),
		// r5 "hello there": "hello " (6 of 11 = 0.55 > 0.3) part-way into hello world: 2.
		simtest.TextReq(5, 100, "hello there", simtest.Block, 1),
		// r6 "user-9": 'u' starts no node: least loaded of 3,1,2: 1.
		sessionChat(6, 100, "user-9"),
	)
	want := []int{0, 0, 0, 1, 2, 2, 1}
	reasons := []string{"least-loaded", "prefix-match", "prefix-match", "least-loaded", "least-loaded", "prefix-match", "least-loaded"}
	for seed := range uint64(8) { // no tie is broken at random: every seed routes alike
		c := simtest.Config(3)
		c.Seed = seed
		got, why := simtest.Run(t, tr, c, emulation(t, "vllm-router-cache-aware", Shipped()))
		if d := cmp.Diff(want, got.Routes); d != "" {
			t.Fatalf("seed %d routes (-want +got):\n%s", seed, d)
		}
		if d := cmp.Diff(reasons, why); d != "" {
			t.Fatalf("seed %d reasons (-want +got):\n%s", seed, d)
		}
	}
}

// TestCacheAwareImbalance: the imbalance branch and the threshold's edge, on two workers with
// every request in flight for 100 s, all of them the completion "abcdefgh".
func TestCacheAwareImbalance(t *testing.T) {
	var rs []sim.Request
	for i := range 6 {
		rs = append(rs, simtest.TextReq(float64(i), 100, "abcdefgh", simtest.Block, 1))
	}
	tr := simtest.TextTrace(simtest.Block, rs...)
	for _, tt := range []struct {
		name    string
		s       Settings
		want    []int
		reasons []string
	}{
		// --balance-abs-threshold 2: imbalanced when max - min > 2 and max > min x 1.5
		// (C:253-254). a: empty tree, least loaded 0, leaf abcdefgh created by 0. b (loads 1,0)
		// and c (2,0): balanced, 8/8 = 1 > 0.3: the creator, 0. d (3,0): 3 > 2 and 3 > 0:
		// imbalanced, least loaded 1 (C:197-200), which now holds the node too (C:203-211). e
		// (3,1): 2 is not above 2: balanced, the node's last_tenant is still its creator, 0
		// (T:570-575). f (4,1): 3 > 2 and 4 > 1.5: imbalanced, 1.
		{"abs 2", func() Settings { s := Shipped(); s.BalanceAbs = 2; return s }(),
			[]int{0, 0, 0, 1, 0, 1}, []string{"least-loaded", "prefix-match", "prefix-match", "imbalanced", "prefix-match", "imbalanced"}},
		// --cache-threshold 1: a full match's rate 1.0 is not above 1.0 (C:314), so no request
		// follows the tree: least loaded each time, the first of equals: 0, 1, 0, 1, 0, 1.
		{"threshold 1", func() Settings { s := Shipped(); s.CacheThreshold = 1; return s }(),
			[]int{0, 1, 0, 1, 0, 1}, slices.Repeat([]string{"least-loaded"}, 6)},
	} {
		got, why := simtest.Run(t, tr, simtest.Config(2), emulation(t, "vllm-router-cache-aware", tt.s))
		if d := cmp.Diff(tt.want, got.Routes); d != "" {
			t.Errorf("%s routes (-want +got):\n%s", tt.name, d)
		}
		if d := cmp.Diff(tt.reasons, why); d != "" {
			t.Errorf("%s reasons (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestCacheAwareRefuses: what the router's validator refuses (validation.rs@e667ebb:139-167)
// is a CannotRunError, never a figure; its edges (threshold 0 and 1, relative threshold 1)
// run.
func TestCacheAwareRefuses(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block, simtest.TextReq(0, 1, "x", simtest.Block, 1))
	for _, mod := range []func(*Settings){
		func(s *Settings) { s.CacheThreshold = 1.5 },
		func(s *Settings) { s.CacheThreshold = -0.1 },
		func(s *Settings) { s.CacheThreshold = math.NaN() },
		func(s *Settings) { s.BalanceRel = 0.9 },
		func(s *Settings) { s.BalanceAbs = -1 },
		func(s *Settings) { s.EvictionSecs = 0 },
		func(s *Settings) { s.MaxTreeSize = 0 },
	} {
		s := Shipped()
		mod(&s)
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), emulation(t, "vllm-router-cache-aware", s))
		if ce := (*sim.CannotRunError)(nil); !errors.As(err, &ce) {
			t.Errorf("%+v: error %v, want a CannotRunError", s, err)
		}
	}
	for _, mod := range []func(*Settings){
		func(s *Settings) { s.CacheThreshold = 0 },
		func(s *Settings) { s.CacheThreshold, s.BalanceRel, s.BalanceAbs = 1, 1, 0 },
	} {
		s := Shipped()
		mod(&s)
		if _, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), emulation(t, "vllm-router-cache-aware", s)); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// bruteCacheAware is a second model of vLLM Router's cache_aware, written from
// cache_aware.rs's select_worker_with_headers and select_worker_min_load and tree.rs
// (@e667ebb) over the brute-force tree (paths and holders, no nodes), not from cacheaware.go:
// the text refText reads; the loads; the imbalance test; the match, its node's creator while
// it holds the node, else its first holder by firstRank, which becomes its creator; one epoch
// counter that registering a worker, every match and every insert advance; a match stamps its
// node when its epoch is a multiple of 8; eviction at each multiple of the interval.
type bruteCacheAware struct {
	s       Settings
	seed    uint64
	tree    *treetest.Brute
	creator map[string]int
	epoch   float64
	workers int
	done    float64
}

func (p *bruteCacheAware) Route(f *sim.Pool, j *sim.Job) (int, string) {
	for p.workers < f.Size() {
		p.workers++
		p.epoch++
	}
	if k := math.Floor(j.Arrival() / p.s.EvictionSecs); k > p.done {
		p.tree.EvictLRULeaves(p.s.MaxTreeSize)
		p.done = k
	}
	loads := make([]int, f.Size())
	for i := range loads {
		loads[i] = f.InFlight(i)
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	text := refText(j.Request().View)
	chosen := -1
	if hi-lo <= p.s.BalanceAbs || !(float32(hi) > float32(lo)*float32(p.s.BalanceRel)) {
		node, m := p.tree.Match(text)
		e := p.epoch
		p.epoch++
		if hs := p.tree.Holders(node); len(hs) > 0 {
			tenant, ok := p.creator[node]
			if !ok || !slices.Contains(hs, tenant) {
				salt := p.tree.Nodes[node].Salt
				tenant = hs[0]
				for _, h := range hs {
					if firstRank(salt, p.seed, h) < firstRank(salt, p.seed, tenant) {
						tenant = h
					}
				}
				p.creator[node] = tenant
			}
			if int64(e)%8 == 0 {
				p.tree.Nodes[node].Holders[tenant] = e
			}
			if text != "" && float32(len([]rune(text[:m])))/float32(len([]rune(text))) > float32(p.s.CacheThreshold) {
				chosen = tenant
			}
		}
	}
	if chosen < 0 {
		chosen = slices.Index(loads, lo)
	}
	leaf := text != ""
	for path := range p.tree.Nodes {
		if l := treetest.RunePrefix(text, path); len(p.tree.Parent(path)) < l && l < len(path) {
			p.creator[path[:l]] = p.creator[path]
			leaf = leaf && path[:l] != text
		}
	}
	if _, ok := p.tree.Nodes[text]; !ok && leaf {
		defer func() { p.creator[text] = chosen }()
	}
	p.tree.Insert(text, chosen, p.epoch)
	p.epoch++
	return chosen, ""
}

// TestCacheAwareAgreesWithBruteForce compares the emulation with bruteCacheAware route by
// route on random traffic: completions of random texts, and chats whose session ids share
// prefixes (or are blank, or missing), under the shipped values and random ones, with queues,
// a replica added at times, and trees small enough to be evicted.
func TestCacheAwareAgreesWithBruteForce(t *testing.T) {
	ids := []string{"", "  ", "conv-1", "conv-12", "conv-2", "user-3", "user-30", "ü-1"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 21))
		tr := simtest.RandomCharTrace(rng, 150, treetest.RandomText)
		for i := range tr.Requests {
			if rng.IntN(3) == 0 {
				v := sim.StringChat("system", " prompt")
				if rng.IntN(4) > 0 {
					v.SessionParams = ids[rng.IntN(len(ids))]
				}
				tr.Requests[i].View = v
			}
		}
		s := Shipped()
		if seed%3 != 0 {
			s.CacheThreshold = []float64{0, 0.3, 0.5, 1}[rng.IntN(4)]
			s.BalanceAbs = rng.IntN(4)
			s.BalanceRel = []float64{1, 1.1, 1.5}[rng.IntN(3)]
			s.EvictionSecs = float64(1 + rng.IntN(4))
			s.MaxTreeSize = []int{1, 5, 20, 60}[rng.IntN(4)]
		}
		c := simtest.Config(2 + rng.IntN(4))
		c.KVBlocks = 6
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(3) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		simtest.Compare(t, tr, c, emulation(t, "vllm-router-cache-aware", s),
			&bruteCacheAware{s: s, seed: seed, tree: &treetest.Brute{Nodes: map[string]*treetest.BruteNode{}, StampEnd: true}, creator: map[string]int{}},
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}
