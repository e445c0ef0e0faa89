package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Tiny traces use 4-token blocks so that every hit and every cost can be worked out by hand.
const tinyBlock = 4

// req builds a request of len(blocks) full blocks.
func req(at float64, session string, out int, blocks ...uint64) Request {
	return Request{Arrival: at, Session: session, Blocks: blocks, InputTokens: len(blocks) * tinyBlock, OutputTokens: out, N: 1}
}

func tinyTrace(rs ...Request) *Trace {
	return &Trace{Name: "tiny", Format: "test", BlockSize: tinyBlock, PrefixInfo: true, Requests: rs}
}

// scaled returns the trace with blocks of bs tokens instead of 4: the approximate router
// ignores anything shorter than 64 tokens.
func scaled(t *Trace, bs int) *Trace {
	c := &Trace{Name: t.Name, Format: t.Format, BlockSize: bs, PrefixInfo: t.PrefixInfo, Requests: make([]Request, len(t.Requests))}
	for i, r := range t.Requests {
		r.InputTokens = len(r.Blocks) * bs
		c.Requests[i] = r
	}
	return c
}

// tinyConfig: prefill 10 ms per token, decode 1 s per output token, so a request with output
// 100 stays in flight for 100 s and one with output 0 leaves right after its prefill.
func tinyConfig(replicas int) Config {
	return Config{
		Replicas: replicas, KVBlocks: 64, AddReplicaAt: -1, Seed: 1,
		Model:  Model{PrefillPerToken: 0.01, DecodePerToken: 1, MaxRunning: 8},
		Params: DefaultParams(),
	}
}

type outcome struct {
	Routes []int
	Hits   []int
}

func runTiny(t *testing.T, tr *Trace, c Config, policy string) outcome {
	t.Helper()
	_, jobs, err := simulate(tr, c, policy)
	if err != nil {
		t.Fatalf("simulate %s: %v", policy, err)
	}
	var o outcome
	for _, j := range jobs {
		o.Routes = append(o.Routes, j.rep)
		o.Hits = append(o.Hits, j.hit)
	}
	return o
}

// TestPolicies checks every policy against a tiny trace worked out by hand; each case says why
// the routes and hits are what they are.
func TestPolicies(t *testing.T) {
	// Three requests sharing block 1 (a system prompt), each staying in flight for 100 s.
	hot := tinyTrace(
		req(0, "", 100, 1, 2, 3),
		req(1, "", 100, 1, 4, 5),
		req(2, "", 100, 1, 6, 7),
	)
	// r0 caches [1 2 3] on replica 0 and stays; r1 shares two blocks with it.
	share := tinyTrace(
		req(0, "", 100, 1, 2, 3),
		req(1, "", 100, 1, 2, 5),
	)
	maxOne := func(c Config) Config { c.Model.MaxRunning = 1; return c }
	withParams := func(c Config, f func(*Params)) Config { f(&c.Params); return c }
	cases := []struct {
		name   string
		policy string
		trace  *Trace
		cfg    Config
		want   outcome
	}{
		{
			// In turn, whatever the content: r1 lands on replica 1 and misses.
			name: "round robin alternates", policy: "round-robin", trace: hot, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 1, 0}, Hits: []int{0, 0, 1}},
		},
		{
			// r0 -> 0; r1 -> 1 (replica 0 has one in flight); r2 -> 0 (1 each, lowest index).
			// r2 hits block 1 (hit limit 2 blocks: (12-1)/4).
			name: "least loaded spreads", policy: "least-loaded", trace: hot, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 1, 0}, Hits: []int{0, 0, 1}},
		},
		{
			// Replica 0 holds block 1 after r0's prefill (0.12 s), so every later request matches
			// one block there and none elsewhere: everything goes to replica 0.
			name: "naive longest prefix makes a hot spot", policy: "kv-longest", trace: hot, cfg: tinyConfig(4),
			want: outcome{Routes: []int{0, 0, 0}, Hits: []int{0, 1, 1}},
		},
		{
			// No session ids: the key is block 1 for all three, so all go to one replica.
			name: "session falls back to block 0", policy: "session", trace: hot, cfg: tinyConfig(4),
			want: func() outcome {
				h, _ := keyHash(&hot.Requests[0], 1)
				r := int(h % 4)
				return outcome{Routes: []int{r, r, r}, Hits: []int{0, 1, 1}}
			}(),
		},
		{
			// Dynamo cost for r1 (weight 1): replica 0 = prefill (12-2*4)/4 = 1 + decode (3 active
			// + 3) = 7; replica 1 = 3 + (0 + 3) = 6, so replica 1.
			name: "dynamo cost prefers the idle replica at weight 1", policy: "kv-cost", trace: share, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 1}, Hits: []int{0, 0}},
		},
		{
			// Weight 2: replica 0 = 2*1 + 6 = 8; replica 1 = 2*3 + 3 = 9, so replica 0, hitting 2.
			name: "dynamo cost follows the prefix at weight 2", policy: "kv-cost", trace: share,
			cfg:  withParams(tinyConfig(2), func(p *Params) { p.OverlapWeight = 2 }),
			want: outcome{Routes: []int{0, 0}, Hits: []int{0, 2}},
		},
		{
			// beta 1: replica 0 = 8/12 - 1*1/1 = -0.33; replica 1 = 0 - 0 = 0, so replica 1.
			name: "load-aware KV at beta 1 leaves the busy replica", policy: "kv-load", trace: share, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 1}, Hits: []int{0, 0}},
		},
		{
			// beta 0.5: replica 0 = 0.67 - 0.5 = 0.17 > 0, so replica 0.
			name: "load-aware KV at beta 0.5 follows the prefix", policy: "kv-load", trace: share,
			cfg:  withParams(tinyConfig(2), func(p *Params) { p.Beta = 0.5 }),
			want: outcome{Routes: []int{0, 0}, Hits: []int{0, 2}},
		},
		{
			// llm-d scorers for r1: replica 0 = queue 1 (both 0 queued) + 2*(1 - 3/64) + 3*2/3;
			// replica 1 = 1*2 + 2*1 + 0. 2+1.906+2 = 5.906 > 4, so replica 0.
			name: "llm-d scorers follow the prefix", policy: "kv-llmd", trace: share, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 0}, Hits: []int{0, 2}},
		},
		{
			// 64-token blocks: the router remembers it sent [1 2 3] to replica 0, so r1 follows,
			// as with kv-llmd, and hits once r0's prefill (1.92 s) is done.
			name: "approximate index follows its own decisions", policy: "approx-prefix", trace: scaled(share, 64), cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 0}, Hits: []int{0, 2}},
		},
		{
			// 4-token blocks: a 64-token chunk is 16 blocks and these prompts have 3, so the
			// router knows nothing; KV utilisation (replica 0 holds 3 of 64) sends r1 away.
			name: "approximate index is blind below 64 tokens", policy: "approx-prefix", trace: share, cfg: tinyConfig(2),
			want: outcome{Routes: []int{0, 1}, Hits: []int{0, 0}},
		},
		{
			// One running request per replica. r0 runs on replica 0; r1 ([1 2 3 4]) and r2 (the
			// same) arrive while it runs. Weight 2. r1: replica 0 = 2*(16-12)/4 + (3+4) = 9,
			// replica 1 = 2*4 + 4 = 12 -> 0, where it queues. r2, decay 0.5: credit 3/(1+0.5*1)
			// = 2, replica 0 = 2*2 + 7 = 11 < 12 -> 0 again. Both hit [1 2 3] once r0 is done.
			name: "credit decay 0.5 still follows the prefix", policy: "kv-decay",
			trace: tinyTrace(req(0, "", 100, 1, 2, 3), req(1, "", 100, 1, 2, 3, 4), req(2, "", 100, 1, 2, 3, 4)),
			cfg:   withParams(maxOne(tinyConfig(2)), func(p *Params) { p.OverlapWeight = 2 }),
			want:  outcome{Routes: []int{0, 0, 0}, Hits: []int{0, 3, 3}},
		},
		{
			// Decay 2: credit 3/(1+2*1) = 1, replica 0 = 2*3 + 7 = 13 > 12 -> replica 1.
			name: "credit decay 2 lets the queue push work away", policy: "kv-decay",
			trace: tinyTrace(req(0, "", 100, 1, 2, 3), req(1, "", 100, 1, 2, 3, 4), req(2, "", 100, 1, 2, 3, 4)),
			cfg: withParams(maxOne(tinyConfig(2)), func(p *Params) {
				p.OverlapWeight, p.CreditDecay = 2, 2
			}),
			want: outcome{Routes: []int{0, 0, 1}, Hits: []int{0, 3, 0}},
		},
		{
			// Epsilon 0, one hot key, everything in flight: the bound ceil((total+1)/2) is 1, 1,
			// 2, 2, so the key's replica takes the 1st and 3rd, its ring successor the others.
			name: "bounded load spills a hot key", policy: "chash-bounded",
			trace: tinyTrace(req(0, "s", 100, 1), req(1, "s", 100, 2), req(2, "s", 100, 3), req(3, "s", 100, 4)),
			cfg:   withParams(tinyConfig(2), func(p *Params) { p.Epsilon = 0 }),
			want: func() outcome {
				p := &consistentHashPolicy{seed: 1}
				p.build(2)
				h, _ := keyHash(&Request{Session: "s"}, 1)
				first := 0
				for first < len(p.ring) && p.ring[first].h < h {
					first++
				}
				a := p.ring[first%len(p.ring)].rep
				return outcome{Routes: []int{a, 1 - a, a, 1 - a}, Hits: []int{0, 0, 0, 0}}
			}(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runTiny(t, tc.trace, tc.cfg, tc.policy)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s: routes/hits (-want +got):\n%s", tc.policy, d)
			}
		})
	}
}

// TestRandomIsSeeded checks that random follows its seeded generator and nothing else.
func TestRandomIsSeeded(t *testing.T) {
	var rs []Request
	for i := range 20 {
		rs = append(rs, req(float64(i), "", 0, uint64(i+1)))
	}
	tr := tinyTrace(rs...)
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			c := tinyConfig(3)
			c.Seed = seed
			rng := rand.New(rand.NewPCG(seed, 1))
			var want []int
			for range rs {
				want = append(want, rng.IntN(3))
			}
			got := runTiny(t, tr, c, "random")
			if d := cmp.Diff(want, got.Routes); d != "" {
				t.Errorf("routes (-want +got):\n%s", d)
			}
		})
	}
}

// TestSiblings shows the sibling burst: two copies of a prompt arrive together. The exact KV
// router has seen no event for the first yet, so it spreads them and both replicas compute the
// prefix; the approximate router remembers its first decision and sends the sibling along, where
// it hits once the first prefill is done.
func TestSiblings(t *testing.T) {
	tr := scaled(tinyTrace(req(0, "", 10, 1, 2, 3, 4)), 64)
	c := tinyConfig(2)
	c.Siblings = 2
	cases := []struct {
		policy string
		want   outcome
	}{
		// Queue scores: after the first sibling, replica 0 has nothing queued either (its
		// prefill started), but its KV usage is 4/64, so replica 1 scores higher.
		{"kv-llmd", outcome{Routes: []int{0, 1}, Hits: []int{0, 0}}},
		{"approx-prefix", outcome{Routes: []int{0, 0}, Hits: []int{0, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			got := runTiny(t, tr, c, tc.policy)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestAddedReplica checks --add-replica-at: round-robin gives the newcomer its share at once,
// naive longest-prefix never sends it anything.
func TestAddedReplica(t *testing.T) {
	var rs []Request
	for i := range 12 {
		rs = append(rs, req(float64(i), "", 0, 1, uint64(100+i)))
	}
	tr := tinyTrace(rs...)
	c := tinyConfig(2)
	c.AddReplicaAt = 6
	cases := []struct {
		policy string
		want   float64
	}{
		{"round-robin", 2.0 / 6}, // six requests after t=6 in turn over 3 replicas
		{"kv-longest", 0},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			res, err := Simulate(tr, c, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			if res.FreshShare == nil || *res.FreshShare != tc.want {
				t.Errorf("fresh share = %v, want %v", res.FreshShare, tc.want)
			}
			if len(res.PerReplica) != 3 {
				t.Errorf("per replica = %v, want 3 replicas", res.PerReplica)
			}
		})
	}
}

// TestQueueAndTTFT works the service model by hand: one replica, one request at a time.
// r0 (8 tokens) prefills 0-0.08 and decodes 2 s; r1 arrives at 0.01 and waits for the slot
// until 2.08, then prefills 4 uncached tokens (block 1 hit, hit limit (8-1)/4 = 1) until 2.12.
func TestQueueAndTTFT(t *testing.T) {
	tr := tinyTrace(req(0, "", 2, 1, 2), req(0.01, "", 2, 1, 3))
	c := tinyConfig(1)
	c.Model.MaxRunning = 1
	_, jobs, err := simulate(tr, c, "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		queue, hit int
		ttft       float64
	}{{0, 0, 0.08}, {1, 1, 2.12 - 0.01}}
	for i, w := range want {
		j := jobs[i]
		if j.queue != w.queue || j.hit != w.hit || !near(j.ttft, w.ttft) {
			t.Errorf("request %d: queue %d hit %d ttft %.4f, want queue %d hit %d ttft %.4f", i, j.queue, j.hit, j.ttft, w.queue, w.hit, w.ttft)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestDeterministic runs every policy twice with one seed and expects identical results.
func TestDeterministic(t *testing.T) {
	var rs []Request
	for i := range 200 {
		rs = append(rs, req(float64(i)/10, fmt.Sprint("s", i%7), i%5, 1, uint64(i%13+2), uint64(i%29+20)))
	}
	tr := tinyTrace(rs...)
	for _, p := range PolicyNames() {
		t.Run(p, func(t *testing.T) {
			c := tinyConfig(3)
			c.KVBlocks = 8
			a, err := Simulate(tr, c, p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Simulate(tr, c, p)
			if d := cmp.Diff(a, b); d != "" {
				t.Errorf("two runs differ (-first +second):\n%s", d)
			}
		})
	}
}
