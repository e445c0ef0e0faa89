package vllmrouter

import (
	"math/rand/v2"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// drawStream is the PCG stream of the emulations' random draws (rand::rng() upstream): each
// draws from a PCG seeded with Config.Seed on this stream, so that a second model can draw the
// same numbers in the same order.
const drawStream = 0x766c6c6d2d72 // "vllm-r"

func newDraws(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, drawStream)) }

// roundRobin is vllm-router-round-robin.
func roundRobin() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "vllm-router-round-robin",
		About:   "vLLM Router --policy round_robin: one counter over the healthy workers, taken modulo their number",
		Family:  sim.FamilyBalance,
		Product: display,
		Source:  "vllm-project/router@e667ebb src/policies/round_robin.rs:22-43",
		Reasons: []string{"round-robin"},
		New:     func(sim.Config, int) sim.Policy { return &roundRobinPolicy{} },
	}
}

// roundRobinPolicy is RoundRobinPolicy (round_robin.rs:22-43): a counter that every request
// advances, the worker counter % (healthy workers); a replica added changes the modulus, not
// the counter. Reason: round-robin.
type roundRobinPolicy struct{ n int }

// Route implements sim.Policy.
func (p *roundRobinPolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	rep := p.n % f.Size()
	p.n++
	return rep, "round-robin"
}

// random is vllm-router-random.
func random() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "vllm-router-random",
		About:   "vLLM Router --policy random: a uniformly random healthy worker",
		Family:  sim.FamilyBalance,
		Product: display,
		Source:  "vllm-project/router@e667ebb src/policies/random.rs:19-38",
		Reasons: []string{"random"},
		Draws:   true,
		New:     func(c sim.Config, _ int) sim.Policy { return &randomPolicy{draws: newDraws(c.Seed)} },
	}
}

// randomPolicy is RandomPolicy (random.rs:19-38): random_range over the healthy workers, one
// seeded draw per request. Reason: random.
type randomPolicy struct{ draws *rand.Rand }

// Route implements sim.Policy.
func (p *randomPolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	return p.draws.IntN(f.Size()), "random"
}

// powerOfTwo is vllm-router-power-of-two.
func powerOfTwo() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "vllm-router-power-of-two",
		About:   "vLLM Router --policy power_of_two in front of vLLM: two random workers, the less loaded by the load each reports on /get_load; vLLM serves no /get_load and the router counts no load of its own for this policy, so every load is 0 and the first draw wins: a random worker",
		Family:  sim.FamilyBalance,
		Product: display,
		Source:  "vllm-project/router@e667ebb src/policies/power_of_two.rs:24-84, src/routers/http/router.rs:150-172,574-580,1284-1360; vLLM serves /load ({\"server_load\"}), not /get_load",
		Reasons: []string{"power-of-two-no-load"},
		Draws:   true,
		New:     func(c sim.Config, _ int) sim.Policy { return &powerOfTwoPolicy{draws: newDraws(c.Seed)} },
	}
}

// powerOfTwoPolicy is PowerOfTwoPolicy (power_of_two.rs:24-84) in front of vLLM engines: two
// distinct workers drawn (the second redrawn until it differs), the first kept when its load
// is at most the second's. The loads come from the router's poll of each worker's /get_load
// (router.rs:1284-1360, every --worker-startup-check-interval seconds, reading a "load"
// member), else from the worker's own counter, which the router raises only for cache_aware
// (router.rs:574-580). A vLLM engine answers /get_load with 404 (it serves /load, with a
// "server_load" member, and only with --enable-server-load-tracking), so both loads are 0 and
// the first draw always wins: the policy routes at random. Reason: power-of-two-no-load.
type powerOfTwoPolicy struct{ draws *rand.Rand }

// Route implements sim.Policy.
func (p *powerOfTwoPolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	n := f.Size()
	if n == 1 {
		return 0, "power-of-two-no-load"
	}
	a := p.draws.IntN(n)
	for b := p.draws.IntN(n); b == a; b = p.draws.IntN(n) {
	}
	return a, "power-of-two-no-load"
}
