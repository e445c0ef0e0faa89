package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// charReq builds a request that a character router reads: one token per character, blocks of
// tinyBlock tokens keyed by the text up to the block's end (a chain, as the engine's are).
func charReq(at float64, out int, text string) Request {
	rs := []rune(text)
	var blocks []uint64
	h := uint64(0)
	for k := 0; k < len(rs); k += tinyBlock {
		h = mix64(h ^ pathSalt(string(rs[k:min(k+tinyBlock, len(rs))])))
		blocks = append(blocks, h)
	}
	return Request{Arrival: at, Blocks: blocks, InputTokens: len(rs), OutputTokens: out, N: 1, View: &View{Text: text}}
}

func charTrace(rs ...Request) *Trace {
	return &Trace{Name: "tiny-text", Format: "requests", BlockSize: tinyBlock, PrefixInfo: true, Requests: rs}
}

// fromFirst renames the replicas of a two-replica outcome so that the first request's is 0: the
// first request meets an idle fleet, where cache_aware draws one of the equally loaded replicas
// at random.
func fromFirst(o outcome) outcome {
	out := outcome{Hits: o.Hits}
	for _, r := range o.Routes {
		out.Routes = append(out.Routes, r^o.Routes[0])
	}
	return out
}

// TestSGLangTiny works cache_aware through by hand on two replicas, every request staying in
// flight for 100 s, cache threshold 0.5, balance thresholds 2 and 1.5, no eviction before 1000 s.
// Replica 0 is the one r0 went to.
func TestSGLangTiny(t *testing.T) {
	tr := charTrace(
		// r0: loads 0,0, balanced; the tree is empty (no holder): one of the least loaded,
		// both, at random: call it replica 0.
		charReq(0, 100, "abcdefgh"),
		// r1: loads 1,0 (1-0 > 2 is false: balanced). Match "abcd" of 8 = 0.5, not above 0.5:
		// least loaded, replica 1. Tree: abcd (0,1), efgh (0), XXXX (1).
		charReq(1, 100, "abcdXXXX"),
		// r2: loads 1,1. Match abcd + "efg" part-way into efgh, held by 0 only: 7/8 > 0.5,
		// replica 0. Hit: block abcd (hit limit (8-1)/4 = 1).
		charReq(2, 100, "abcdefgY"),
		// r3: loads 2,1: 7/8 on efg (0): replica 0, hit 1.
		charReq(3, 100, "abcdefgZ"),
		// r4: loads 3,1: 3-1 = 2 is not above 2: balanced, replica 0, hit 1.
		charReq(4, 100, "abcdefgW"),
		// r5: loads 4,1: 4-1 = 3 > 2 and 4 > 1 x 1.5: imbalanced, least loaded replica 1, which
		// holds block abcd from r1: hit 1.
		charReq(5, 100, "abcdefgV"),
	)
	set := func(rel float64) Config {
		return withRouters(tinyConfig(2), func(s *RouterSettings) {
			s.SGLang = SGLangSettings{CacheThreshold: 0.5, BalanceAbsThreshold: 2, BalanceRelThreshold: rel, EvictionIntervalSecs: 1000, MaxTreeSize: 1 << 26}
		})
	}
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 0, 0, 0, 1}, Hits: []int{0, 0, 1, 1, 1, 1}}, fromFirst(runTiny(t, tr, set(1.5), "sglang-cache-aware"))); d != "" {
		t.Errorf("rel 1.5 (-want +got):\n%s", d)
	}
	// With the relative threshold at 5, r5's 4 > 1 x 5 is false: still balanced, replica 0.
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 0, 0, 0, 0}, Hits: []int{0, 0, 1, 1, 1, 1}}, fromFirst(runTiny(t, tr, set(5), "sglang-cache-aware"))); d != "" {
		t.Errorf("rel 5 (-want +got):\n%s", d)
	}
}

// TestSGLangDrawsAmongEquals: cold requests on an idle fleet go to a replica drawn at random among
// the equally least loaded (PR #33138), not always the first: over 40 seeds, one cold request on
// four idle replicas lands on each of them.
func TestSGLangDrawsAmongEquals(t *testing.T) {
	tr := charTrace(charReq(0, 1, "cold"))
	seen := map[int]bool{}
	for seed := range uint64(40) {
		c := tinyConfig(4)
		c.Seed = seed
		seen[runTiny(t, tr, c, "sglang-cache-aware").Routes[0]] = true
	}
	if len(seen) != 4 {
		t.Errorf("replicas chosen over 40 seeds: %v, want all four", seen)
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
	tr := charTrace(
		// X at 0: idle fleet, empty tree: a replica drawn among both, replica 0.
		charReq(0, 1000, "xxxxxxxx"),
		// A (10,000 characters) at 1: no match, loads 1,0: replica 1.
		charReq(1, 0, s+strings.Repeat("a", 2000)),
		// C (10,000, nothing in common) at 2: no match, loads 1,0: replica 1, which holds
		// 20,000 characters now (A last used at 1, C at 2).
		charReq(2, 0, c10k),
		// Y and Y' repeat C at 3 and 4: loads 1,0 then 1,1, balanced; all of C matches (1.0)
		// on replica 1, which gets both and hits C's 2,499 blocks (hit limit (10000-1)/4).
		// C is last used at 4 now.
		charReq(3, 1000, c10k),
		charReq(4, 1000, c10k),
		// A' shares A's first 8,000 characters, at 40; loads 1,2: balanced under both (1 > 64
		// and 1 > 32 are false). CLI: the tree still has A, match 8,000/10,000 = 0.8 > 0.3:
		// replica 1, whose engine holds A's blocks: 2,000 blocks of "ssss" hit (the 2,001st is
		// "qqqq" against "aaaa"). Hint: the eviction due at 30 runs first: replica 1 holds
		// 20,000 > 10,000 and its least recently used leaf, A (at 1), goes; the walk then stops
		// at the root: least loaded, replica 0, which has never seen the prompt.
		charReq(40, 0, s+strings.Repeat("q", 2000)),
	)
	c := Config{Replicas: 2, KVBlocks: 10000, AddReplicaAt: -1, Seed: 1,
		Model: Model{PrefillPerToken: 1e-5, DecodePerToken: 1, MaxRunning: 8}, Params: DefaultParams()}
	cli := withRouters(c, func(s *RouterSettings) { s.SGLang = SGLangCLIDefaults() })
	hint := withRouters(c, func(s *RouterSettings) { s.SGLang = SGLangHintDefaults() })
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 1, 1, 1, 1}, Hits: []int{0, 0, 0, 2499, 2499, 2000}}, fromFirst(runTiny(t, tr, cli, "sglang-cache-aware"))); d != "" {
		t.Errorf("CLI defaults (-want +got):\n%s", d)
	}
	if d := cmp.Diff(outcome{Routes: []int{0, 1, 1, 1, 1, 0}, Hits: []int{0, 0, 0, 2499, 2499, 0}}, fromFirst(runTiny(t, tr, hint, "sglang-cache-aware"))); d != "" {
		t.Errorf("policy-hint defaults (-want +got):\n%s", d)
	}
	// Without Config.Routers the CLI's set applies.
	if d := cmp.Diff(runTiny(t, tr, cli, "sglang-cache-aware"), runTiny(t, tr, c, "sglang-cache-aware")); d != "" {
		t.Errorf("no router settings against the CLI's (-CLI +none):\n%s", d)
	}
}

// TestTreeEmulationsNeedText: on a trace of block hashes the character routers cannot run.
func TestTreeEmulationsNeedText(t *testing.T) {
	tr := tinyTrace(req(0, "", 1, 1, 2))
	for _, p := range []string{"sglang-cache-aware", "ray-prefix-affinity"} {
		_, err := Simulate(tr, tinyConfig(2), p)
		var cr *CannotRunError
		if !errors.As(err, &cr) || cr.Policy != p {
			t.Errorf("%s on block hashes: %v, want a CannotRunError", p, err)
		}
	}
}

// TestSGLangRefuses: settings the gateway's ConfigValidator refuses give a CannotRunError naming
// the setting, never a figure.
func TestSGLangRefuses(t *testing.T) {
	tr := charTrace(charReq(0, 1, "abc"))
	for _, tc := range []struct {
		name string
		set  func(*SGLangSettings)
	}{
		{"cache_threshold", func(s *SGLangSettings) { s.CacheThreshold = 1.5 }},
		{"cache_threshold", func(s *SGLangSettings) { s.CacheThreshold = math.NaN() }},
		{"balance_rel_threshold", func(s *SGLangSettings) { s.BalanceRelThreshold = 0.9 }},
		{"balance_abs_threshold", func(s *SGLangSettings) { s.BalanceAbsThreshold = -1 }},
		{"eviction interval", func(s *SGLangSettings) { s.EvictionIntervalSecs = 0 }},
		{"max_tree_size", func(s *SGLangSettings) { s.MaxTreeSize = 0 }},
	} {
		c := withRouters(tinyConfig(2), func(r *RouterSettings) { tc.set(&r.SGLang) })
		_, err := Simulate(tr, c, "sglang-cache-aware")
		var cr *CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(cr.Reason, tc.name) {
			t.Errorf("%+v: %v, want a CannotRunError about %s", c.Routers.SGLang, err, tc.name)
		}
	}
	// The edges are accepted: threshold 0 and 1, relative threshold 1.
	c := withRouters(tinyConfig(2), func(r *RouterSettings) { r.SGLang.CacheThreshold, r.SGLang.BalanceRelThreshold = 1, 1 })
	if _, err := Simulate(tr, c, "sglang-cache-aware"); err != nil {
		t.Errorf("cache_threshold 1, balance_rel_threshold 1: %v", err)
	}
}

// bruteSGLang is a second model of cache_aware, written from cache_aware.rs's select_worker over
// the brute-force tree: loads, the imbalance test, the match rate against the threshold, the
// first holder of the node reached (in the node's pseudo-random order), eviction at each
// multiple of the interval.
type bruteSGLang struct {
	s    SGLangSettings
	seed uint64
	rng  *rand.Rand // draws among equally least loaded replicas, as the emulation's does
	tree *bruteTree
	done float64 // multiples of the eviction interval already run
}

func (p *bruteSGLang) route(f *fleet, j *job) int {
	at := j.arrival
	if iv := p.s.EvictionIntervalSecs; iv > 0 {
		if k := math.Floor(at / iv); k > p.done {
			p.tree.evictLRULeaves(p.s.MaxTreeSize)
			p.done = k
		}
	}
	loads := make([]int, f.size())
	for i := range loads {
		loads[i] = f.inflight(i)
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	text := j.req.View.Text
	chosen := -1
	if !(float64(hi-lo) > p.s.BalanceAbsThreshold && float32(hi) > float32(lo)*float32(p.s.BalanceRelThreshold)) {
		node, m := p.tree.match(text)
		if hs := p.tree.holders(node); len(hs) > 0 {
			salt := p.tree.nodes[node].salt
			first := hs[0]
			for _, h := range hs {
				if sglangFirst(salt, p.seed, h) < sglangFirst(salt, p.seed, first) {
					first = h
				}
			}
			p.tree.touch(node, first, at)
			rate := float32(0)
			if text != "" {
				rate = float32(len([]rune(text[:m]))) / float32(len([]rune(text)))
			}
			if rate > float32(p.s.CacheThreshold) {
				chosen = first
			}
		}
	}
	if chosen < 0 {
		var least []int
		for i, l := range loads {
			if l == lo {
				least = append(least, i)
			}
		}
		chosen = least[p.rng.IntN(len(least))]
	}
	p.tree.insert(text, chosen, at)
	return chosen
}

// randomTextTrace is random traffic for the tree routers: arrivals in half seconds (often
// together), texts sharing prefixes (randomText), outputs of 0 to 12 tokens.
func randomTextTrace(rng *rand.Rand, n int) *Trace {
	var rs []Request
	var texts []string
	at := 0.0
	for range n {
		at += float64(rng.IntN(3)) / 2
		text := randomText(rng, texts)
		texts = append(texts, text)
		rs = append(rs, charReq(at, rng.IntN(13), text))
	}
	return charTrace(rs...)
}

// compareWithModel replays tr under the emulation and under model and fails on the first
// request routed differently or hitting differently.
func compareWithModel(t *testing.T, tr *Trace, c Config, name string, model policy, what string) {
	t.Helper()
	info, _ := lookupPolicy(name)
	_, want, err := simulateInfo(tr, c, PolicyInfo{Name: "model", NeedsText: true, newPolicy: func(Config, int) policy { return model }}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := simulateInfo(tr, c, info, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if got[k].rep != want[k].rep || got[k].hit != want[k].hit {
			t.Fatalf("%s: request %d (%q at %g): %s routes to %d hitting %d, the second model to %d hitting %d",
				what, k, got[k].req.View.Text, got[k].arrival, name, got[k].rep, got[k].hit, want[k].rep, want[k].hit)
		}
	}
}

// TestSGLangAgreesWithBruteForce compares the emulation with bruteSGLang on random traffic
// under random settings (both default sets among them), with queues, an added replica at
// times, and trees small enough to be evicted.
func TestSGLangAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 15))
		tr := randomTextTrace(rng, 150)
		var s SGLangSettings
		switch seed % 4 {
		case 0:
			s = SGLangCLIDefaults()
		case 1:
			s = SGLangHintDefaults()
		default:
			s = SGLangSettings{
				CacheThreshold:       []float64{0, 0.3, 0.5, 0.8}[rng.IntN(4)],
				BalanceAbsThreshold:  float64(rng.IntN(4)),
				BalanceRelThreshold:  []float64{1, 1.1, 1.5}[rng.IntN(3)],
				EvictionIntervalSecs: float64(1 + rng.IntN(4)),
				MaxTreeSize:          []int{1, 5, 20, 60}[rng.IntN(4)],
			}
		}
		c := withRouters(tinyConfig(2+rng.IntN(4)), func(r *RouterSettings) { r.SGLang = s })
		c.KVBlocks = 6
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(3) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		compareWithModel(t, tr, c, "sglang-cache-aware", &bruteSGLang{s: s, seed: c.Seed, rng: rand.New(rand.NewPCG(c.Seed, 33)), tree: newBruteTree()},
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}
