package sim

import "testing"

// onePolicy sends every request to replica 0: what a router that keeps siblings together does
// to an agent's tasks when nothing else pulls them apart.
type onePolicy struct{}

func (onePolicy) Route(*Pool, *Job) (int, string) { return 0, "one" }

// TestTwinWaitIsNoHotSpot: a request that waits only for its twin's prefill is not a waiting
// request for the hot-spot rule (issue 22 item 2). Worked by hand with the default model
// (prefill 100 us a token, decode 20 ms a token, 32 slots), 16-token blocks, 2 replicas, every
// request on replica 0 (load max/mean 40/20 = 2.00, above the even 1.00):
//
//   - siblings: 10 tasks one a second, each a unique 2,000-token prompt (125 blocks) sent with
//     n=4 and 10 output tokens. The first sibling prefills 2,000 tokens (0.2 s); the other three
//     arrive with it and wait for that prefill, which computes every block they share, then
//     hit 124 blocks and compute 16 tokens (1.6 ms each). The task is done by 0.41 s, before the
//     next one: nothing else ever waits. Before, 30 of the 40 requests counted as waiting
//     (75%, over the 50% line): a hot spot. Now none: 0%, no hot spot.
//   - not twins: the same replica, 40 requests in groups of four a second, each a 1,024-token
//     system prompt every request shares (64 blocks) and 1,024 tokens of its own. The first of
//     each group starts its prefill on arrival; the three arriving with it share a prefix with
//     it but each has 1,024 tokens of its own to compute, so each waits for work that is not
//     its own: 10 groups x 3 = 30 of 40 (75%), a hot spot as before. So do the turns of one
//     conversation sent faster than their prefill (TestOneLongConversation): each extends the
//     one before with work of its own.
func TestTwinWaitIsNoHotSpot(t *testing.T) {
	info := PolicyInfo{Name: "one", New: func(Config, int) Policy { return onePolicy{} }}
	c := Config{Replicas: 2, KVBlocks: 10_000, Model: DefaultModel(), Seed: 1, AddReplicaAt: -1, Params: DefaultParams()}

	siblings := &Trace{Name: "siblings", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 10 {
		var blocks []uint64
		for b := range 125 {
			blocks = append(blocks, uint64(i*1000+b))
		}
		siblings.Requests = append(siblings.Requests, Request{Arrival: float64(i), Blocks: blocks, InputTokens: 2000, OutputTokens: 10, N: 4})
	}
	res, _, err := simulateInfo(siblings, c, info, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := LoadOf(res, siblings)
	if res.LoadMaxOverMean != 2 || res.HotWaited != 0 || load.HotSpot(HotSpotRatio) {
		t.Errorf("siblings: load max/mean %.2f, waited %.3f, hot spot %v; want 2.00, 0, no hot spot", res.LoadMaxOverMean, res.HotWaited, load.HotSpot(HotSpotRatio))
	}

	shared := &Trace{Name: "shared", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for g := range 10 {
		for k := range 4 {
			var blocks []uint64
			for b := range 64 {
				blocks = append(blocks, uint64(b))
			}
			for b := range 64 {
				blocks = append(blocks, uint64(100_000+(4*g+k)*100+b))
			}
			shared.Requests = append(shared.Requests, Request{Arrival: float64(g), Blocks: blocks, InputTokens: 2048, OutputTokens: 10, N: 1})
		}
	}
	res, _, err = simulateInfo(shared, c, info, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	load = LoadOf(res, shared)
	if res.HotWaited != 30.0/40 || !load.HotSpot(HotSpotRatio) {
		t.Errorf("shared system prompt: waited %.4f, hot spot %v; want 30/40 = 0.75, a hot spot", res.HotWaited, load.HotSpot(HotSpotRatio))
	}
}

// TestTwinsApart: the same prompt sent three more times at once is three twins; a fourth copy
// 1 s later, after the first one's prefill (2,000 tokens x 100 us = 0.2 s), starts a new group;
// a copy 0.1 s after that is within its prefill, a twin; a request with n=4 is siblings already
// sent together (the engine computes it once), and a different prompt of the same length is no
// copy: 4 twins of 2,000 tokens.
func TestTwinsApart(t *testing.T) {
	tr := &Trace{BlockSize: 16}
	add := func(at float64, last uint64, n int) {
		tr.Requests = append(tr.Requests, Request{Arrival: at, Blocks: []uint64{1, last}, InputTokens: 2000, OutputTokens: 1, N: n})
	}
	for range 4 {
		add(0, 2, 1)
	}
	add(0, 3, 1)
	add(1, 2, 1)
	add(1.1, 2, 1)
	add(1.1, 4, 4)
	add(1.1, 4, 4)
	if got := TwinsApart(tr, DefaultModel()); got != (Twins{Requests: 4, Tokens: 8000}) {
		t.Errorf("TwinsApart = %+v, want 4 requests, 8000 tokens", got)
	}
}

// TestMakespan: the time from the first arrival to the last end. Two requests of 160 tokens (10
// blocks of 16) and 10 output tokens on one replica, at 1 s and 1.001 s: the first prefills
// 160 tokens (16 ms) and decodes 10 tokens (200 ms), ending at 1.216 s; the second waits for the
// prefill engine, prefills its own 160 tokens from 1.016 s to 1.032 s and ends at 1.232 s:
// makespan 0.232 s.
func TestMakespan(t *testing.T) {
	tr := &Trace{Name: "two", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 2 {
		var blocks []uint64
		for b := range 10 {
			blocks = append(blocks, uint64(i*100+b))
		}
		tr.Requests = append(tr.Requests, Request{Arrival: 1 + 0.001*float64(i), Blocks: blocks, InputTokens: 160, OutputTokens: 10, N: 1})
	}
	c := Config{Replicas: 1, KVBlocks: 100, Model: DefaultModel(), Seed: 1, AddReplicaAt: -1, Params: DefaultParams()}
	res, err := Simulate(tr, c, "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Makespan - 0.232; d > 1e-9 || d < -1e-9 {
		t.Errorf("makespan %.6f s, want 0.232", res.Makespan)
	}
}
