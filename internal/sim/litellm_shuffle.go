package sim

var litellmShuffleInfo = PolicyInfo{
	Name:      "litellm-simple-shuffle",
	About:     "LiteLLM proxy router as shipped (routing_strategy simple-shuffle, no pre-call checks): a uniformly random deployment, each replica a deployment",
	Product:   "LiteLLM",
	Source:    "BerriAI/litellm litellm/router_strategy/simple_shuffle.py; docs/my-website/docs/proxy/config_settings.md (routing_strategy simple-shuffle, optional_pre_call_checks null); ROUTERS.md §1, SPEC §6",
	newPolicy: func(c Config, _ int) policy { return &litellmShufflePolicy{s: newLitellmShuffle(c.Seed)} },
}

// litellmShufflePolicy is simple-shuffle with the deployments weighted equally (no weight, rpm
// or tpm in their litellm_params): random.choice among the healthy deployments, one seeded draw
// per request. LiteLLM sits above the engines here: each replica is one deployment of the model
// group. It reads nothing of the request, so it runs on any trace.
type litellmShufflePolicy struct{ s litellmShuffle }

func (p *litellmShufflePolicy) route(f *fleet, _ *job) int { return p.s.pick(f.size()) }
