package sim

var litellmSessionInfo = PolicyInfo{
	Name:      "litellm-session-affinity",
	About:     "LiteLLM proxy with optional_pre_call_checks [session_affinity]: the session id's pinned deployment for deployment_affinity_ttl_seconds (3600), else simple-shuffle; per-pod pins without Redis",
	Product:   "LiteLLM",
	Source:    "BerriAI/litellm litellm/router_utils/pre_call_checks/deployment_affinity_check.py@00e1fe8 (async_filter_deployments, async_pre_call_deployment_hook), litellm/proxy/litellm_pre_call_utils.py (session id headers), litellm/router_strategy/simple_shuffle.py; config_settings.md (deployment_affinity_ttl_seconds 3600, redis_host); ROUTERS.md §1, SPEC §6",
	NeedsText: true,
	check:     litellmCheck("litellm-session-affinity", "deployment_affinity_ttl_seconds", func(s LiteLLMSettings) float64 { return s.AffinityTTLSecs }),
	newPolicy: func(c Config, _ int) policy {
		s := c.routers().LiteLLM
		p := &litellmSessionPolicy{ttl: s.AffinityTTLSecs, shuffle: newLitellmShuffle(c.Seed), pods: newLitellmPods(s, c.Seed)}
		p.pins = make([]pinStore[string], p.pods.n)
		return p
	},
}

// litellmSessionPolicy is LiteLLM's session_affinity over simple-shuffle, each replica a
// deployment. For each request:
//
//  1. The proxy pod that takes it: one of ProxyPods drawn uniformly (litellmPods) when the pins
//     are per pod (more than one pod and no Redis: each pod's DualCache is its own memory);
//     otherwise every request sees the same pins.
//  2. Its session id (litellmSessionID): x-litellm-trace-id, x-litellm-session-id, a header
//     matching ^x-.+-session-id$ with a value matching ^[a-zA-Z0-9_\-]{8,}$, else the body's
//     metadata.session_id.
//  3. With an id pinned on that pod to a deployment and the pin not expired: that deployment.
//     Otherwise simple-shuffle (one seeded draw).
//  4. With an id, the pre-call hook writes the pin (id -> the deployment chosen) with a TTL of
//     deployment_affinity_ttl_seconds (AffinityTTLSecs, 3600) from now, on every request, so a
//     session active at least once an hour stays pinned.
//
// A request without a session id is shuffled; one pod never sees another's pins, so without
// Redis a session is split over as many deployments as pods it reaches. The in-memory cache's
// own size bound is not modelled. Memory: one pin per session active in the last TTL and pod.
type litellmSessionPolicy struct {
	ttl     float64
	shuffle litellmShuffle
	pods    litellmPods
	pins    []pinStore[string]
}

func (p *litellmSessionPolicy) route(f *fleet, j *job) int {
	pins := &p.pins[p.pods.pick()]
	id := litellmSessionID(j.req.View)
	if id != "" {
		if rep, ok := pins.get(id, j.arrival, f.size()); ok {
			pins.set(id, rep, j.arrival+p.ttl, j.arrival)
			return rep
		}
	}
	rep := p.shuffle.pick(f.size())
	if id != "" {
		pins.set(id, rep, j.arrival+p.ttl, j.arrival)
	}
	return rep
}
