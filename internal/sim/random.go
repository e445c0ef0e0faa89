package sim

import "math/rand/v2"

var randomInfo = PolicyInfo{
	Name:  "random",
	About: "uniformly random replica (seeded)",
	newPolicy: func(c Config, _ int) policy {
		return &randomPolicy{rng: rand.New(rand.NewPCG(c.Seed, 1))}
	},
}

type randomPolicy struct{ rng *rand.Rand }

func (p *randomPolicy) route(f *fleet, _ *job) int { return p.rng.IntN(f.size()) }
