package sglang

import (
	"context"
	"errors"
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

// TestSGLangTiny works cache_aware (modal-projects/sglang@8905cbd, sgl-model-gateway
// src/policies/cache_aware.rs, C, and tree.rs, T) through by hand on two replicas, every request
// staying in flight for 100 s, cache threshold 0.5, balance thresholds 2 and 1.5, no eviction
// before 1000 s.
func TestSGLangTiny(t *testing.T) {
	tr := simtest.CharTrace(
		// r0: loads 0,0, balanced; the tree is empty, the match ends at the root (rate 0):
		// least loaded, the first of equals (C:440-446, min_by_key): replica 0. Its insert
		// makes leaf abcdefgh, created by 0 (T:409).
		simtest.CharReq(0, 100, "abcdefgh"),
		// r1: loads 1,0 (1-0 > 2 is false: balanced). Match "abcd" part-way into abcdefgh:
		// 4/8 = 0.5, not above 0.5: least loaded, replica 1. Insert: abcd (0,1; creator 0,
		// copied on the split, T:449-450), efgh (0), XXXX (1).
		simtest.CharReq(1, 100, "abcdXXXX"),
		// r2: loads 1,1. Match abcd + "efg" part-way into efgh, created by 0: 7/8 > 0.5,
		// replica 0. Hit: block abcd (hit limit (8-1)/4 = 1).
		simtest.CharReq(2, 100, "abcdefgY"),
		// r3: loads 2,1: 7/8 on efg (created by 0 as efgh, split by r2): replica 0, hit 1.
		simtest.CharReq(3, 100, "abcdefgZ"),
		// r4: loads 3,1: 3-1 = 2 is not above 2: balanced, replica 0, hit 1.
		simtest.CharReq(4, 100, "abcdefgW"),
		// r5: loads 4,1: 4-1 = 3 > 2 and 4 > 1 x 1.5: imbalanced, least loaded replica 1, which
		// holds block abcd from r1: hit 1.
		simtest.CharReq(5, 100, "abcdefgV"),
	)
	set := func(rel float64) sim.PolicyInfo {
		return cacheAware(Settings{Gateway: Fork, CacheThreshold: 0.5, BalanceAbsThreshold: 2, BalanceRelThreshold: rel, EvictionIntervalSecs: 1000, MaxTreeSize: 1 << 26})
	}
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 0, 0, 0, 1}, Hits: []int{0, 0, 1, 1, 1, 1}}, simtest.Routes(t, tr, simtest.Config(2), set(1.5))); d != "" {
		t.Errorf("rel 1.5 (-want +got):\n%s", d)
	}
	// With the relative threshold at 5, r5's 4 > 1 x 5 is false: still balanced, replica 0.
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 0, 0, 0, 0}, Hits: []int{0, 0, 1, 1, 1, 1}}, simtest.Routes(t, tr, simtest.Config(2), set(5))); d != "" {
		t.Errorf("rel 5 (-want +got):\n%s", d)
	}
}

// TestSGLangMatchGoesToCreator (issue 21's Done-when for the older gateway; for smg, which
// names the least expected wait among the node's holders, see TestSMGAffinityAmongHolders): a
// request matching a node goes to the node's last_tenant, the
// replica whose insert created it (T:409, copied on a split T:449-450, returned while it holds
// the node T:570-575), every time, whatever the seed. Three replicas, threshold 0.5, balance
// thresholds 64 and 1.5 (never imbalanced here), no eviction. Requests with output 0 leave
// within 0.1 s; b stays 100 s, so the loads are 1,0,0 from c on.
func TestSGLangMatchGoesToCreator(t *testing.T) {
	tr := simtest.CharTrace(
		// a: empty tree: least loaded, the first of equals: replica 0; leaf abcdefgh, created
		// by 0.
		simtest.CharReq(0, 0, "abcdefgh"),
		// b: "abcd" of 8 = 0.5 is not above 0.5: least loaded (0,0,0): replica 0. The split
		// makes abcd {0} created by 0, efgh {0}; leaf XXXX {0}.
		simtest.CharReq(1, 100, "abcdXXXX"),
		// c: 4/8 again: least loaded (1,0,0), the first of 1 and 2: replica 1, which joins abcd
		// (its creator stays 0); leaf YYYY created by 1.
		simtest.CharReq(2, 0, "abcdYYYY"),
		// d: "abcdQ" ends in node abcd: 4/5 = 0.8 > 0.5. Holders 0 and 1, created by 0:
		// replica 0, every time (a holder drawn at random would be 1 half the time).
		simtest.CharReq(3, 0, "abcdQ"),
		// e: "abcdYYYYZ" ends in YYYY, created by 1: 8/9, replica 1.
		simtest.CharReq(4, 0, "abcdYYYYZ"),
	)
	s := Settings{Gateway: Fork, CacheThreshold: 0.5, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, EvictionIntervalSecs: 1000, MaxTreeSize: 1 << 26}
	for seed := range uint64(24) {
		c := simtest.Config(3)
		c.Seed = seed
		if got := simtest.Routes(t, tr, c, cacheAware(s)).Routes; !slices.Equal(got, []int{0, 0, 1, 0, 1}) {
			t.Fatalf("seed %d: routes %v, want [0 0 1 0 1]", seed, got)
		}
	}
}

// TestSGLangStaleCreator: a creator evicted from a node no longer draws its matches (T:573: the
// cached tenant is used only while the node's map still holds it); the node's remaining holder
// does, and becomes its last_tenant (T:576-586). Three replicas, threshold 0.5, balance
// thresholds 64 and 1.5, eviction every 10 s down to 6 characters a replica. Epochs: the three
// workers registered took 0-2 (C:167-198: an insert of "" each); then each request's match and
// insert take one each. No match takes a multiple of 8 before the eviction, so no match stamps
// anything (T:601-607).
func TestSGLangStaleCreator(t *testing.T) {
	tr := simtest.CharTrace(
		// a at 0 (match 3, insert 4): empty tree, replica 0; leaf abcdefgh {0@4}, created by 0.
		simtest.CharReq(0, 0, "abcdefgh"),
		// b at 1 (5, 6): 4/8 is not above 0.5: least loaded (0,0,0), replica 0. Split: abcd
		// {0@4} created by 0, efgh {0@4}; leaf XXXX {0@6}.
		simtest.CharReq(1, 0, "abcdXXXX"),
		// z at 2 (7, 8), in flight 100 s: no match, replica 0; leaf z x12 {0@8}.
		simtest.CharReq(2, 100, "zzzzzzzzzzzz"),
		// d at 3 (9, 10): 4/8 on abcd: least loaded (1,0,0), replica 1, which joins abcd at
		// epoch 0 (T:487-499); leaf WWWW {1@10}.
		simtest.CharReq(3, 0, "abcdWWWW"),
		// At 20 the eviction due at 10 runs first. Replica 0 holds abcd 4 + efgh 4 + XXXX 4 + z
		// 12 = 24 > 6, replica 1 abcd 4 + WWWW 4 = 8 > 6. Leaves by epoch: efgh (0@4) goes (20
		// left), XXXX (0@6) goes (16) and makes abcd 0's leaf at 4, which goes next (12 left;
		// 1 still holds it), z (0@8) goes (0 left), WWWW (1@10) goes (4 left) and makes abcd
		// 1's leaf, kept as 4 <= 6. Tree: abcd {1@0}, created by 0, which no longer holds it.
		// e (11, 12): "abcdQ", 4/5 > 0.5 on abcd: the creator is stale, its one holder is 1:
		// replica 1, now its last_tenant.
		simtest.CharReq(20, 0, "abcdQ"),
		// f (13, 14): the same node, last_tenant 1: replica 1.
		simtest.CharReq(21, 0, "abcdR"),
	)
	s := Settings{Gateway: Fork, CacheThreshold: 0.5, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, EvictionIntervalSecs: 10, MaxTreeSize: 6}
	if got := simtest.Routes(t, tr, simtest.Config(3), cacheAware(s)).Routes; !slices.Equal(got, []int{0, 0, 0, 1, 1, 1}) {
		t.Errorf("routes %v, want [0 0 0 1 1 1]", got)
	}
}

// TestSGLangFirstOfEquals: under the fork, a cold request on an idle fleet goes to the first of
// the equally least loaded (C:440-446: min_by_key returns the first minimum), whatever the seed.
func TestSGLangFirstOfEquals(t *testing.T) {
	tr := simtest.CharTrace(simtest.CharReq(0, 1, "cold"))
	for seed := range uint64(10) {
		c := simtest.Config(4)
		c.Seed = seed
		if got := simtest.Routes(t, tr, c, cacheAware(fork(CLIDefaults()))).Routes[0]; got != 0 {
			t.Errorf("seed %d: replica %d, want 0", seed, got)
		}
	}
}

// TestSGLangDefaultSets replays one trace of long prompts under both shipped default sets. The
// CLI's (threshold 0.3, tree 2^26 characters, eviction every 120 s) keeps every prompt; the
// policy hint's (threshold 0.5, tree 10,000 characters, eviction every 30 s) keeps one prompt
// per replica and loses the rest. Prefill 0.01 ms per token, so requests with no output leave
// within 0.1 s; X, Y and Y' stay 1,000 s. Replica 0 is the one X went to.
func TestSGLangDefaultSets(t *testing.T) {
	s := strings.Repeat("s", 8000)
	c10k := strings.Repeat("c", 10000)
	tr := simtest.CharTrace(
		// X at 0: idle fleet, empty tree: the first of the least loaded, replica 0.
		simtest.CharReq(0, 1000, "xxxxxxxx"),
		// A (10,000 characters) at 1: no match, loads 1,0: replica 1.
		simtest.CharReq(1, 0, s+strings.Repeat("a", 2000)),
		// C (10,000, nothing in common) at 2: no match, loads 1,0: replica 1, which holds
		// 20,000 characters now (A last used at 1, C at 2).
		simtest.CharReq(2, 0, c10k),
		// Y and Y' repeat C at 3 and 4: loads 1,0 then 1,1, balanced; all of C matches (1.0)
		// on replica 1, which gets both and hits C's 2,499 blocks (hit limit (10000-1)/4).
		// C is last used at 4 now.
		simtest.CharReq(3, 1000, c10k),
		simtest.CharReq(4, 1000, c10k),
		// A' shares A's first 8,000 characters, at 40; loads 1,2: balanced under both (1 > 64
		// and 1 > 32 are false). CLI: the tree still has A, match 8,000/10,000 = 0.8 > 0.3:
		// replica 1, whose engine holds A's blocks: 2,000 blocks of "ssss" hit (the 2,001st is
		// "qqqq" against "aaaa"). Hint: the eviction due at 30 runs first: replica 1 holds
		// 20,000 > 10,000 and its least recently used leaf, A (at 1), goes; the walk then stops
		// at the root: least loaded, replica 0, which has never seen the prompt.
		simtest.CharReq(40, 0, s+strings.Repeat("q", 2000)),
	)
	c := sim.Config{Replicas: 2, KVBlocks: 10000, AddReplicaAt: -1, Seed: 1,
		Model: sim.Model{PrefillPerToken: 1e-5, DecodePerToken: 1, MaxRunning: 8}, Params: sim.DefaultParams()}
	cli, hint := cacheAware(fork(CLIDefaults())), cacheAware(fork(HintDefaults()))
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 1, 1, 1, 1}, Hits: []int{0, 0, 0, 2499, 2499, 2000}}, simtest.Routes(t, tr, c, cli)); d != "" {
		t.Errorf("CLI defaults (-want +got):\n%s", d)
	}
	if d := cmp.Diff(simtest.Outcome{Routes: []int{0, 1, 1, 1, 1, 0}, Hits: []int{0, 0, 0, 2499, 2499, 0}}, simtest.Routes(t, tr, c, hint)); d != "" {
		t.Errorf("policy-hint defaults (-want +got):\n%s", d)
	}
	// The older gateway's shipped sets, as simulate --sglang-defaults and assess's ranking build
	// them (Emulations of the variant's settings), route as above.
	for _, v := range (Router{}).Shipped() {
		want := map[string][]int{"fork": {0, 1, 1, 1, 1, 1}, "fork-hint": {0, 1, 1, 1, 1, 0}}[v.Key]
		if want == nil {
			continue
		}
		if got := simtest.Routes(t, tr, c, (Router{}).Emulations(v.Settings)[0]).Routes; !slices.Equal(got, want) {
			t.Errorf("shipped %s: routes %v, want %v", v.Key, got, want)
		}
	}
	// As shipped, first of its sets, smg's CLI set applies.
	if d := cmp.Diff(simtest.Routes(t, tr, c, cacheAware(CLIDefaults())), simtest.Routes(t, tr, c, (Router{}).Emulations((Router{}).Shipped()[0].Settings)[0])); d != "" {
		t.Errorf("no router settings against the CLI's (-CLI +none):\n%s", d)
	}
}

// TestTreeEmulationsNeedText: on a trace of block hashes the character routers cannot run.
func TestTreeEmulationsNeedText(t *testing.T) {
	tr := simtest.Trace(simtest.Req(0, "", 1, 1, 2))
	_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), cacheAware(CLIDefaults()))
	var cr *sim.CannotRunError
	if !errors.As(err, &cr) || cr.Policy != "sglang-cache-aware" {
		t.Errorf("on block hashes: %v, want a CannotRunError", err)
	}
}

// TestSGLangRefuses: settings the gateway's ConfigValidator refuses give a CannotRunError naming
// the setting, never a figure.
func TestSGLangRefuses(t *testing.T) {
	tr := simtest.CharTrace(simtest.CharReq(0, 1, "abc"))
	for _, tc := range []struct {
		name string
		set  func(*Settings)
	}{
		{"cache_threshold", func(s *Settings) { s.CacheThreshold = 1.5 }},
		{"cache_threshold", func(s *Settings) { s.CacheThreshold = math.NaN() }},
		{"balance_rel_threshold", func(s *Settings) { s.BalanceRelThreshold = 0.9 }},
		{"balance_abs_threshold", func(s *Settings) { s.BalanceAbsThreshold = -1 }},
		{"eviction interval", func(s *Settings) { s.EvictionIntervalSecs = 0 }},
		{"max_tree_size", func(s *Settings) { s.MaxTreeSize = 0 }},
	} {
		s := CLIDefaults()
		tc.set(&s)
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), cacheAware(s))
		var cr *sim.CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(cr.Reason, tc.name) {
			t.Errorf("%+v: %v, want a CannotRunError about %s", s, err, tc.name)
		}
	}
	// The edges are accepted: threshold 0 and 1, relative threshold 1.
	s := CLIDefaults()
	s.CacheThreshold, s.BalanceRelThreshold = 1, 1
	if _, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), cacheAware(s)); err != nil {
		t.Errorf("cache_threshold 1, balance_rel_threshold 1: %v", err)
	}
}

// bruteSGLang is a second model of cache_aware as the fork @8905cbd has it, written from
// cache_aware.rs's select_worker and tree.rs over the brute-force tree (paths and holders, no
// nodes), not from sglang.go: loads; the imbalance test; the match; the node's creator while it
// holds the node, else its first holder in the node's pseudo-random order (kvcheck's stand-in
// for a DashMap's order), which becomes the node's creator; one counter of epochs, which the
// replicas registered, every match and every insert advance; a match stamps the node it returns
// when its epoch is a multiple of 8; an insert stamps the node it ends in, and nodes before it
// the replica did not hold get 0 (bruteTree.stampEnd); eviction at each multiple of the interval.
type bruteSGLang struct {
	s       Settings
	seed    uint64
	tree    *treetest.Brute
	creator map[string]int // by path
	epoch   float64
	workers int
	done    float64 // multiples of the eviction interval already run
}

func (p *bruteSGLang) Route(f *sim.Pool, j *sim.Job) (int, string) {
	at := j.Arrival()
	for p.workers < f.Size() {
		p.workers++
		p.epoch++
	}
	if iv := p.s.EvictionIntervalSecs; iv > 0 {
		if k := math.Floor(at / iv); k > p.done {
			p.tree.EvictLRULeaves(p.s.MaxTreeSize)
			p.done = k
		}
	}
	loads := make([]int, f.Size())
	for i := range loads {
		loads[i] = f.InFlight(i)
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	text := j.Request().View.Text
	chosen := -1
	if !(float64(hi-lo) > p.s.BalanceAbsThreshold && float32(hi) > float32(lo)*float32(p.s.BalanceRelThreshold)) {
		node, m := p.tree.Match(text)
		e := p.epoch
		p.epoch++
		if hs := p.tree.Holders(node); len(hs) > 0 {
			tenant, ok := p.creator[node]
			if !slices.Contains(hs, tenant) || !ok {
				salt := p.tree.Nodes[node].Salt
				tenant = hs[0]
				for _, h := range hs {
					if sglangFirst(salt, p.seed, h) < sglangFirst(salt, p.seed, tenant) {
						tenant = h
					}
				}
				p.creator[node] = tenant
			}
			if int64(e)%8 == 0 {
				p.tree.Nodes[node].Holders[tenant] = e
			}
			rate := float32(0)
			if text != "" {
				rate = float32(len([]rune(text[:m]))) / float32(len([]rune(text)))
			}
			if rate > float32(p.s.CacheThreshold) {
				chosen = tenant
			}
		}
	}
	if chosen < 0 {
		chosen = slices.Index(loads, lo)
	}
	// The node the text leaves part-way splits; its upper part keeps its creator. A text that
	// ends where no node ends makes a new leaf, created by the replica chosen.
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

// TestSGLangAgreesWithBruteForce compares the emulation with bruteSGLang on random traffic
// under random settings (both default sets among them), with queues, an added replica at
// times, and trees small enough to be evicted.
func TestSGLangAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 15))
		tr := simtest.RandomCharTrace(rng, 150, treetest.RandomText)
		var s Settings
		switch seed % 4 {
		case 0:
			s = CLIDefaults()
		case 1:
			s = HintDefaults()
		default:
			s = Settings{
				CacheThreshold:       []float64{0, 0.3, 0.5, 0.8}[rng.IntN(4)],
				BalanceAbsThreshold:  float64(rng.IntN(4)),
				BalanceRelThreshold:  []float64{1, 1.1, 1.5}[rng.IntN(3)],
				EvictionIntervalSecs: float64(1 + rng.IntN(4)),
				MaxTreeSize:          []int{1, 5, 20, 60}[rng.IntN(4)],
			}
		}
		s.Gateway = Fork
		c := simtest.Config(2 + rng.IntN(4))
		c.KVBlocks = 6
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(3) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		simtest.Compare(t, tr, c, cacheAware(s), &bruteSGLang{s: s, seed: c.Seed, tree: &treetest.Brute{Nodes: map[string]*treetest.BruteNode{}, StampEnd: true}, creator: map[string]int{}},
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}

// fork is s for the older gateway that shipped inside sglang.
func fork(s Settings) Settings {
	s.Gateway = Fork
	return s
}
