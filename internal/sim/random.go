package sim

import "math/rand/v2"

var randomInfo = PolicyInfo{
	Name:    "random",
	About:   "uniformly random replica (seeded)",
	Family:  FamilyBalance,
	Reasons: []string{ReasonRandom},
	Draws:   true,
	New: func(c Config, _ int) Policy {
		return &randomPolicy{rng: rand.New(rand.NewPCG(c.Seed, 1))}
	},
}

// ReasonRandom is the reason of a replica drawn at random (random, and the routers that draw
// one).
const ReasonRandom = "random"

// randomPolicy is a uniformly random replica. Reason: random.
type randomPolicy struct{ rng *rand.Rand }

func (p *randomPolicy) Route(f *Pool, _ *Job) (int, string) {
	return p.rng.IntN(f.Size()), ReasonRandom
}
