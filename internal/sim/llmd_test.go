package sim

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withRouters returns c with the shipped router settings changed by f.
func withRouters(c Config, f func(*RouterSettings)) Config {
	s := DefaultRouterSettings()
	f(&s)
	c.Routers = &s
	return c
}

// relative names routes by the replica the first request went to: the first request of these
// traces meets an empty fleet, where every score ties and the picker draws one at random.
func relative(routes []int) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = "other"
		if r == routes[0] {
			out[i] = "first"
		}
	}
	return out
}

// TestLLMDApproxFloor works llmd-approx by hand on a trace of 16-token blocks (vLLM's default):
// autoTune takes the engine's 16, the floor raises it to 64, so the router keys 4 trace blocks
// at a time. Two replicas, 64 KV blocks, prefill 10 ms per token, everything in flight for 100 s.
//
//	r0 t=0 [1..8] (128 tokens): empty fleet, every score 2+2+0 = 4, a random replica A.
//	r1 t=1 [1 2 3 4 9 10 11 12]: its keys (block 4, token 64) and (block 12, token 128); A's LRU
//	   holds (4,64) and (8,128): A matches 1 of 2. r0 still prefills (until 1.28), so no queue
//	   anywhere (queue 1 each); A's usage is 8/64. A = 2*1 + 2*(1-0.125) + 3*0.5 = 5.25,
//	   B = 2 + 2 + 0 = 4: A. Its prefill (from 1.28) hits blocks 1-4 of r0: 4.
//	r2 t=2 [1 2 13..18]: shares 32 tokens with r0, half a router block: its first key (block 14,
//	   token 64) is nowhere, no match. A's usage 16/64: A = 2 + 1.5 = 3.5 < B = 4: B, hit 0.
//
// With the floor at 16 (lowered for the test, as the source's own tests do) the keys are the
// trace's blocks: r2 then matches 2 of 8 on A, A = 2 + 1.5 + 3*0.25 = 4.25 > 4, so A, hitting 2.
// The floor is what sends r2 away.
func TestLLMDApproxFloor(t *testing.T) {
	tr := scaled(tinyTrace(
		req(0, "", 100, 1, 2, 3, 4, 5, 6, 7, 8),
		req(1, "", 100, 1, 2, 3, 4, 9, 10, 11, 12),
		req(2, "", 100, 1, 2, 13, 14, 15, 16, 17, 18),
	), 16)
	type got struct {
		Routes []string
		Hits   []int
	}
	run := func() got {
		o := runTiny(t, tr, tinyConfig(2), "llmd-approx")
		return got{relative(o.Routes), o.Hits}
	}
	if d := cmp.Diff(got{[]string{"first", "first", "other"}, []int{0, 4, 0}}, run()); d != "" {
		t.Errorf("floor 64 (-want +got):\n%s", d)
	}
	defer func(f int) { llmdApproxMinBlock = f }(llmdApproxMinBlock)
	llmdApproxMinBlock = 16
	if d := cmp.Diff(got{[]string{"first", "first", "first"}, []int{0, 4, 2}}, run()); d != "" {
		t.Errorf("floor lowered to 16 (-want +got):\n%s", d)
	}
}

// TestLLMDApproxStaleIndex: the router's LRU keeps a prefix the engine evicted, and sends the
// request there for nothing. Blocks of 64 tokens, 4 KV blocks per replica, autoTune off with an
// LRU of 16 keys (so the router remembers more than the engine holds).
//
//	r0 t=0 [1 2] out 1: empty fleet, a random replica A; prefill until 1.28, ends at 2.28.
//	r1 t=1 [3 4 5 6] out 0: A's usage 2/4: A = 2 + 2*0.5 = 3 < B = 4: B (prefill until 3.56).
//	r2 t=3 [7 8 9 10] out 0: A idle and empty; B runs r1 (usage 4/4): A = 4 > B = 2: A. Its
//	   prefill stores 4 blocks in A's 4 slots and evicts r0's 1 and 2 (free since 2.28). A's LRU
//	   keeps (1,64) and (2,128) next to r2's keys: it never hears of the eviction.
//	r3 t=10 [1 2] out 0: both idle, but A matches 2 of 2 keys: A = 4 + 3 = 7 > B = 4: A, where
//	   the engine no longer has block 1: hit 0.
func TestLLMDApproxStaleIndex(t *testing.T) {
	tr := scaled(tinyTrace(
		req(0, "", 1, 1, 2),
		req(1, "", 0, 3, 4, 5, 6),
		req(3, "", 0, 7, 8, 9, 10),
		req(10, "", 0, 1, 2),
	), 64)
	c := tinyConfig(2)
	c.KVBlocks = 4
	c = withRouters(c, func(s *RouterSettings) { s.LLMD.AutoTune = false; s.LLMD.LRUCapacityPerServer = 16 })
	o := runTiny(t, tr, c, "llmd-approx")
	type got struct {
		Routes []string
		Hits   []int
	}
	if d := cmp.Diff(got{[]string{"first", "other", "first", "first"}, []int{0, 0, 0, 0}}, got{relative(o.Routes), o.Hits}); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestLLMDPreciseTokenizer: with the estimate tokenizer (the default) the precise producer's keys
// never match the engine's blocks, with "vllm" they do. Blocks of 16 tokens (the producer's own
// block size, so its keys are the engine's blocks), two replicas, 64 KV blocks.
//
//	r0 t=0 [1 2 3 4] (64 tokens): empty fleet, a random replica A; prefill until 0.64, then A's
//	   engine holds blocks 1-4.
//	r1 t=1 [1 2 3 5]: no queue anywhere (2 each); A's usage 4/64: kv 2*60/64 = 1.875, B's 2.
//	   estimate: prefix 0 everywhere: A = 3.875 < B = 4: B, hit 0.
//	   vllm: 4 full blocks; A holds 1 2 3 consecutively: 3/4: A = 2 + 1.875 + 2.25 = 6.125: A,
//	   hitting 3 (the hit limit, (64-1)/16).
func TestLLMDPreciseTokenizer(t *testing.T) {
	tr := scaled(tinyTrace(req(0, "", 100, 1, 2, 3, 4), req(1, "", 100, 1, 2, 3, 5)), 16)
	type got struct {
		Routes []string
		Hits   []int
	}
	cases := []struct {
		tokenizer string
		want      got
	}{
		{"estimate", got{[]string{"first", "other"}, []int{0, 0}}},
		{"vllm", got{[]string{"first", "first"}, []int{0, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.tokenizer, func(t *testing.T) {
			c := withRouters(tinyConfig(2), func(s *RouterSettings) { s.LLMD.Tokenizer = tc.tokenizer })
			o := runTiny(t, tr, c, "llmd-precise")
			if d := cmp.Diff(tc.want, got{relative(o.Routes), o.Hits}); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// The shipped settings are the estimate tokenizer's.
	o := runTiny(t, tr, tinyConfig(2), "llmd-precise")
	if d := cmp.Diff(cases[0].want, got{relative(o.Routes), o.Hits}); d != "" {
		t.Errorf("as shipped (-want +got):\n%s", d)
	}
}

// TestLLMDQueueScorer works the queue scorer's min-max by hand: one running request per
// replica, so a request routed to a busy replica waits, and prompts that share nothing.
//
//	r0 t=0: a random replica X (every score 4).
//	r1 t=0.1: no one waits (X's r0 is prefilling); X's usage 4/64: X = 3.875 < 4: the other, Y.
//	r2 t=0.2: both run one request, nobody waits, equal usage: a tie, a random replica Z.
//	r3 t=0.3: r2 waits at Z: queue min 0, max 1: Z's queue score 0, the other's 1; usage equal
//	   (a waiting request holds no blocks): Z = 0 + 1.875 < 2 + 1.875: the other.
func TestLLMDQueueScorer(t *testing.T) {
	tr := scaled(tinyTrace(
		req(0, "", 100, 1, 2, 3, 4),
		req(0.1, "", 100, 5, 6, 7, 8),
		req(0.2, "", 100, 9, 10, 11, 12),
		req(0.3, "", 100, 13, 14, 15, 16),
	), 16)
	// Over several seeds, so that a picker choosing r3 by chance would be caught.
	for seed := range uint64(8) {
		c := tinyConfig(2)
		c.Model.MaxRunning = 1
		c.Seed = seed
		for _, policy := range []string{"llmd-approx", "llmd-precise"} {
			o := runTiny(t, tr, c, policy)
			r := o.Routes
			if r[1] == r[0] || r[3] == r[2] || !slices.Equal(o.Hits, []int{0, 0, 0, 0}) {
				t.Errorf("%s seed %d: routes %v hits %v, want r1 away from r0, r3 away from r2, no hits", policy, seed, r, o.Hits)
			}
		}
	}
}
