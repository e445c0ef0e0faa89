package litellm

import "github.com/kvcheck/kvcheck/internal/sim"

// simpleShuffle is litellm-simple-shuffle.
func simpleShuffle() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "litellm-simple-shuffle",
		About:   "LiteLLM proxy router as shipped (routing_strategy simple-shuffle, no pre-call checks): a uniformly random deployment, each replica a deployment",
		Family:  sim.FamilyBalance,
		Reasons: []string{sim.ReasonRandom},
		Draws:   true,
		Product: display,
		Source:  "BerriAI/litellm litellm/router_strategy/simple_shuffle.py; docs/my-website/docs/proxy/config_settings.md (routing_strategy simple-shuffle, optional_pre_call_checks null); ROUTERS.md §1, SPEC §6",
		New:     func(c sim.Config, _ int) sim.Policy { return &litellmShufflePolicy{s: newLitellmShuffle(c.Seed)} },
	}
}

// litellmShufflePolicy is simple-shuffle with the deployments weighted equally (no weight, rpm
// or tpm in their litellm_params): random.choice among the healthy deployments, one seeded draw
// per request. LiteLLM sits above the engines here: each replica is one deployment of the model
// group. It reads nothing of the request, so it runs on any trace. Reason: random.
//
// Checked against the source:
//   - no weight, rpm or tpm in the first deployment's litellm_params: random.choice over the
//     healthy deployments (BerriAI/litellm@1116dd5:litellm/router_strategy/simple_shuffle.py,
//     the last branch of simple_shuffle).
//
// Left out:
//   - weighted picks (weight, rpm, tpm): the emulation's deployments carry none;
//   - health checks, cooldowns and retries: every deployment is healthy.
type litellmShufflePolicy struct{ s litellmShuffle }

// Route implements sim.Policy.
func (p *litellmShufflePolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	return p.s.pick(f.Size()), sim.ReasonRandom
}
