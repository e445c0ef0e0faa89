package llmd

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
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// emu is the emulation named with settings s.
func emu(name string, s Settings) sim.PolicyInfo {
	if name == "llmd-precise" {
		return precise(s)
	}
	return approx(s)
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
	tr := simtest.Scaled(simtest.Trace(
		simtest.Req(0, "", 100, 1, 2, 3, 4, 5, 6, 7, 8),
		simtest.Req(1, "", 100, 1, 2, 3, 4, 9, 10, 11, 12),
		simtest.Req(2, "", 100, 1, 2, 13, 14, 15, 16, 17, 18),
	), 16)
	type got struct {
		Routes []string
		Hits   []int
	}
	run := func() got {
		o := simtest.Routes(t, tr, simtest.Config(2), emu("llmd-approx", Shipped()))
		return got{simtest.Relative(o.Routes), o.Hits}
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
	tr := simtest.Scaled(simtest.Trace(
		simtest.Req(0, "", 1, 1, 2),
		simtest.Req(1, "", 0, 3, 4, 5, 6),
		simtest.Req(3, "", 0, 7, 8, 9, 10),
		simtest.Req(10, "", 0, 1, 2),
	), 64)
	c := simtest.Config(2)
	c.KVBlocks = 4
	s := Shipped()
	s.AutoTune = false
	s.LRUCapacityPerServer = 16
	o := simtest.Routes(t, tr, c, emu("llmd-approx", s))
	type got struct {
		Routes []string
		Hits   []int
	}
	if d := cmp.Diff(got{[]string{"first", "other", "first", "first"}, []int{0, 0, 0, 0}}, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
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
	tr := simtest.Scaled(simtest.Trace(simtest.Req(0, "", 100, 1, 2, 3, 4), simtest.Req(1, "", 100, 1, 2, 3, 5)), 16)
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
			c := simtest.Config(2)
			s := Shipped()
			s.Tokenizer = tc.tokenizer
			o := simtest.Routes(t, tr, c, emu("llmd-precise", s))
			if d := cmp.Diff(tc.want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// The shipped settings are the estimate tokenizer's.
	o := simtest.Routes(t, tr, simtest.Config(2), emu("llmd-precise", Shipped()))
	if d := cmp.Diff(cases[0].want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
		t.Errorf("as shipped (-want +got):\n%s", d)
	}
}

// TestLLMDPreciseNoEngineEvents: the precise producer's index is built from the engines' KV
// events only (ROUTERS.md §2), so with engines that publish none even the vllm tokenizer finds no
// prefix. TestLLMDPreciseTokenizer's trace: at r1 every prefix score is 0, A = 2 + 1.875 = 3.875
// < B = 4: B, hit 0, the estimate tokenizer's outcome instead of A and 3 blocks.
func TestLLMDPreciseNoEngineEvents(t *testing.T) {
	tr := simtest.Scaled(simtest.Trace(simtest.Req(0, "", 100, 1, 2, 3, 4), simtest.Req(1, "", 100, 1, 2, 3, 5)), 16)
	c := simtest.Config(2)
	s := Shipped()
	s.Tokenizer, s.NoEngineEvents = "vllm", true
	o := simtest.Routes(t, tr, c, emu("llmd-precise", s))
	if d := cmp.Diff([]string{"first", "other"}, simtest.Relative(o.Routes)); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{0, 0}, o.Hits); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
}

// TestLLMDPreciseBlockSize: the precise producer keys full blocks of its own
// tokenProcessorConfig block size, so a shared prefix shorter than one of its blocks matches
// nothing. The engine's blocks are 16 tokens; vllm tokenizer; two replicas, 64 KV blocks.
//
//	r0 t=0 [1..8] (128 tokens): empty fleet, a random replica A; its prefill ends at 1.28, and
//	   A's engine then holds blocks 1-8.
//	r1 t=2 [1 2 3 9..13] (128 tokens): shares 3 engine blocks (48 tokens) with r0. No request
//	   waits (queue 2 each); A's usage 8/64: kv 2*56/64 = 1.75, B's 2.
//	   producer blocks of 16: 8 keys, A holds 3 in a row: 3/8: A = 2 + 1.75 + 1.125 = 4.875 > 4:
//	   A, hitting 3.
//	   of 32: 4 keys, 48 tokens are 1 whole key: 1/4: A = 3.75 + 0.75 = 4.5: A, hitting 3.
//	   of 64: 2 keys, 48 tokens are none: 0: A = 3.75 < B = 4: B, hitting 0.
//
// A block size below 1 is refused as the producer refuses it.
func TestLLMDPreciseBlockSize(t *testing.T) {
	tr := simtest.Scaled(simtest.Trace(simtest.Req(0, "", 100, 1, 2, 3, 4, 5, 6, 7, 8), simtest.Req(2, "", 100, 1, 2, 3, 9, 10, 11, 12, 13)), 16)
	type got struct {
		Routes []string
		Hits   []int
	}
	for _, tc := range []struct {
		block int
		want  got
	}{
		{16, got{[]string{"first", "first"}, []int{0, 3}}},
		{32, got{[]string{"first", "first"}, []int{0, 3}}},
		{64, got{[]string{"first", "other"}, []int{0, 0}}},
	} {
		c := simtest.Config(2)
		s := Shipped()
		s.Tokenizer, s.PreciseBlockSizeTokens = "vllm", tc.block
		o := simtest.Routes(t, tr, c, emu("llmd-precise", s))
		if d := cmp.Diff(tc.want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("blocks of %d (-want +got):\n%s", tc.block, d)
		}
	}
	var cr *sim.CannotRunError
	s := Shipped()
	s.PreciseBlockSizeTokens = -16
	_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), precise(s))
	if !errors.As(err, &cr) || !strings.Contains(err.Error(), "blockSizeTokens must be greater than 0, got -16") {
		t.Errorf("block size -16: err %v, want the producer's refusal", err)
	}
}

// TestLLMDApproxMatchCap: the approximate producer matches at most maxPrefixTokensToMatch /
// block size keys (131072 tokens by default), and maxPrefixBlocksToMatch only when the token cap
// is 0 (resolveMaxBlocks; types.go: "the default token cap otherwise supersedes it"). Blocks of
// 16 tokens, router blocks of 64, two replicas, 64 KV blocks, everything in flight for 100 s.
//
//	r0 t=0 [1..32] (512 tokens, 8 keys): empty fleet, a random replica A; usage 32/64.
//	r1 t=1 [1 2 3 4 33..60] (512 tokens): its first key (block 4, token 64) is A's, the other 7
//	   its own. No request waits (queue 2 each); A's kv 2*(1-0.5) = 1, B's 2.
//	   uncapped (131072 tokens, or both caps 0): 8 keys, A matches 1: 1/8: A = 2 + 1 + 0.375 =
//	   3.375 < B = 4: B, hit 0.
//	   capped at 64 tokens (or 0 tokens and 1 block): 1 key, A matches it: 1/1: A = 2 + 1 + 3 =
//	   6 > 4: A; its prefill starts when r0's ends and hits blocks 1-4: 4.
//	   0 tokens and 1 block but the token cap left at 131072: the token cap wins, as uncapped.
func TestLLMDApproxMatchCap(t *testing.T) {
	own := make([]uint64, 0, 28)
	for b := uint64(33); b <= 60; b++ {
		own = append(own, b)
	}
	r0 := make([]uint64, 0, 32)
	for b := uint64(1); b <= 32; b++ {
		r0 = append(r0, b)
	}
	tr := simtest.Scaled(simtest.Trace(simtest.Req(0, "", 100, r0...), simtest.Req(1, "", 100, append([]uint64{1, 2, 3, 4}, own...)...)), 16)
	type got struct {
		Routes []string
		Hits   []int
	}
	uncapped, capped := got{[]string{"first", "other"}, []int{0, 0}}, got{[]string{"first", "first"}, []int{0, 4}}
	for _, tc := range []struct {
		name           string
		tokens, blocks int
		want           got
	}{
		{"shipped", 131072, 2048, uncapped},
		{"no caps", 0, 0, uncapped},
		{"64 tokens", 64, 2048, capped},
		{"1 block, no token cap", 0, 1, capped},
		{"1 block under the token cap", 131072, 1, uncapped},
	} {
		c := simtest.Config(2)
		s := Shipped()
		s.MaxPrefixTokensToMatch, s.MaxPrefixBlocksToMatch = tc.tokens, tc.blocks
		o := simtest.Routes(t, tr, c, emu("llmd-approx", s))
		if d := cmp.Diff(tc.want, got{simtest.Relative(o.Routes), o.Hits}); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
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
	tr := simtest.Scaled(simtest.Trace(
		simtest.Req(0, "", 100, 1, 2, 3, 4),
		simtest.Req(0.1, "", 100, 5, 6, 7, 8),
		simtest.Req(0.2, "", 100, 9, 10, 11, 12),
		simtest.Req(0.3, "", 100, 13, 14, 15, 16),
	), 16)
	// Over several seeds, so that a picker choosing r3 by chance would be caught.
	for seed := range uint64(8) {
		c := simtest.Config(2)
		c.Model.MaxRunning = 1
		c.Seed = seed
		for _, policy := range []string{"llmd-approx", "llmd-precise"} {
			o := simtest.Routes(t, tr, c, emu(policy, Shipped()))
			r := o.Routes
			if r[1] == r[0] || r[3] == r[2] || !slices.Equal(o.Hits, []int{0, 0, 0, 0}) {
				t.Errorf("%s seed %d: routes %v hits %v, want r1 away from r0, r3 away from r2, no hits", policy, seed, r, o.Hits)
			}
		}
	}
}

// refLLMDApprox is a second model of llmd-approx, written from the approximate producer's and
// the scorers' description (ROUTERS.md §2 and the doc comments cited there), not from
// llmd_approx.go: the prompt's tokens are cut from token 0 into router blocks of R tokens (the
// last partial), the content up to token e named by the trace block holding token e-1 and e;
// walking them in order, every server whose LRU holds the name counts one, until a name no
// server holds; each server's LRU is a list, most recent last, the chosen server's gets every
// name of the request in order (a name already there moves to the end), and loses its first
// names beyond its capacity. The score is queue (min-max over waiting requests, 1 when all wait
// alike; waiting: sent and not admitted) x 2, then (1 - KV usage: the admitted requests' blocks
// over the capacity) x 2, then matched/names x 3, each clamped to [0, 1]; the
// highest wins, ties to a uniformly drawn one (one draw, only when two or more tie).
type refLLMDApprox struct {
	blockTokens, traceBS, capacity, maxNames int
	kvBlocks                                 int
	precise                                  int // the precise producer's block size; 0: the approximate producer
	lru                                      [][]string
	rng                                      *rand.Rand
	e                                        *simtest.RefFleet
}

func (m *refLLMDApprox) route(r *sim.Request, n int) int {
	for len(m.lru) < n {
		m.lru = append(m.lru, nil)
	}
	t := r.Arrival
	var names []string
	for end := m.blockTokens; m.precise == 0 && len(names) < m.maxNames; end += m.blockTokens {
		e := min(end, r.InputTokens)
		names = append(names, fmt.Sprintf("%d@%d", r.Blocks[(e-1)/m.traceBS], e))
		if e == r.InputTokens {
			break
		}
	}
	matched := make([]int, n)
	for _, name := range names {
		anyone := false
		for i := range n {
			if slices.Contains(m.lru[i], name) {
				matched[i]++
				anyone = true
			}
		}
		if !anyone {
			break
		}
	}
	total := len(names)
	if m.precise > 0 {
		// The precise producer: the engine's blocks, read in full blocks of its own size.
		total = r.InputTokens / m.precise
		for i := range n {
			matched[i] = min(m.e.CachedRun(i, r.Blocks, len(m.e.Full(r)), t)*m.traceBS/m.precise, total)
		}
	}
	waiting := make([]int, n)
	active := make([]int, n)
	for _, j := range m.e.Jobs {
		if j.Admit > t {
			waiting[j.Rep]++
		} else if j.Finish > t {
			active[j.Rep] += len(j.R.Blocks)
		}
	}
	lo, hi := slices.Min(waiting), slices.Max(waiting)
	unit := func(x float64) float64 { return math.Max(0, math.Min(1, x)) }
	var ties []int
	best := math.Inf(-1)
	for i := range n {
		queue := 1.0
		if hi > lo {
			queue = float64(hi-waiting[i]) / float64(hi-lo)
		}
		usage := float64(min(active[i], m.kvBlocks)) / float64(m.kvBlocks)
		prefix := 0.0
		if total > 0 {
			prefix = float64(matched[i]) / float64(total)
		}
		score := 0.0
		score += unit(queue) * 2
		score += unit(1-usage) * 2
		score += unit(prefix) * 3
		if score > best {
			best, ties = score, []int{i}
		} else if score == best {
			ties = append(ties, i)
		}
	}
	pick := ties[0]
	if len(ties) > 1 {
		pick = ties[m.rng.IntN(len(ties))]
	}
	for _, name := range names { // none for the precise producer
		l := slices.DeleteFunc(m.lru[pick], func(s string) bool { return s == name })
		l = append(l, name)
		if len(l) > m.capacity {
			l = l[len(l)-m.capacity:]
		}
		m.lru[pick] = l
	}
	return pick
}

// TestLLMDPreciseModel: llmd-precise with the vllm tokenizer agrees with the same second model
// reading the engines' blocks (refFleet) in 16-token keys, on traces of 16- and 32-token blocks.
func TestLLMDPreciseModel(t *testing.T) {
	for _, bs := range []int{16, 32} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("block%d/seed%d", bs, seed), func(t *testing.T) {
				tr := simtest.RandomTraffic(seed, 300, bs)
				c := simtest.ModelConfig(seed, 3, tr.Requests[150].Arrival)
				s := Shipped()
				s.Tokenizer = "vllm"
				e := simtest.NewRefFleet(bs, c.Model)
				m := &refLLMDApprox{traceBS: bs, precise: 16, kvBlocks: c.KVBlocks, rng: rand.New(rand.NewPCG(seed, 0x6c6c6d64)), e: e}
				want := simtest.Replay(tr, c, m.route, e)
				got := simtest.Routes(t, tr, c, emu("llmd-precise", s))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("llmd-precise against the second model (-model +emulation):\n%s", d)
				}
				if slices.Max(want.Hits) == 0 {
					t.Error("the traffic should hit")
				}
			})
		}
	}
}

// TestLLMDApproxModel: llmd-approx agrees with refLLMDApprox on routes and hits over random
// traffic of 16-token blocks: as shipped (autoTune: 64-token router blocks, an LRU as large as
// the engine's cache), and with autoTune off, a small LRU that evicts, and 128-token blocks.
func TestLLMDApproxModel(t *testing.T) {
	variants := []struct {
		name                  string
		autoTune              bool
		blockTokens, capacity int
	}{
		{"shipped", true, 64, 1 << 16},
		{"lru 12", false, 64, 12},
		{"block 128 lru 30", false, 128, 30},
	}
	for _, v := range variants {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				tr := simtest.RandomTraffic(seed, 300, 16)
				c := simtest.ModelConfig(seed, 3, tr.Requests[150].Arrival)
				s := Shipped()
				s.AutoTune = v.autoTune
				if !v.autoTune {
					s.BlockSizeTokens, s.LRUCapacityPerServer = v.blockTokens, v.capacity
				}
				e := simtest.NewRefFleet(16, c.Model)
				m := &refLLMDApprox{blockTokens: v.blockTokens, traceBS: 16, capacity: v.capacity, maxNames: 131072 / v.blockTokens,
					kvBlocks: c.KVBlocks, rng: rand.New(rand.NewPCG(seed, 0x6c6c6d64)), e: e}
				want := simtest.Replay(tr, c, m.route, e)
				got := simtest.Routes(t, tr, c, emu("llmd-approx", s))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("llmd-approx against the second model (-model +emulation):\n%s", d)
				}
				if slices.Max(want.Hits) == 0 || slices.Max(want.Routes) < 3 {
					t.Errorf("the traffic should hit and reach the added replica: hits max %d, routes max %d", slices.Max(want.Hits), slices.Max(want.Routes))
				}
			})
		}
	}
}

// TestLLMDApproxRefusesSettings: what the producer refuses at start is a CannotRunError.
func TestLLMDApproxRefusesSettings(t *testing.T) {
	tr := simtest.Trace(simtest.Req(0, "", 0, 1))
	for _, set := range []func(*Settings){
		func(s *Settings) { s.AutoTune, s.BlockSizeTokens = false, 0 },
		func(s *Settings) { s.MaxPrefixTokensToMatch = -1 },
	} {
		s := Shipped()
		set(&s)
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), approx(s))
		var cr *sim.CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), "must be") {
			t.Errorf("err %v, want the producer's refusal", err)
		}
	}
	// autoTune takes the engine's block size: blockSizeTokens 0 is then never read.
	s := Shipped()
	s.BlockSizeTokens = 0
	if _, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), approx(s)); err != nil {
		t.Errorf("autoTune with blockSizeTokens 0: %v", err)
	}
}
