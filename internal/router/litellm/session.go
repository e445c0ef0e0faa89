package litellm

import "github.com/kvcheck/kvcheck/internal/sim"

// sessionAffinity is litellm-session-affinity with settings s.
func sessionAffinity(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "litellm-session-affinity",
		About:     "LiteLLM proxy with optional_pre_call_checks [session_affinity]: the session id's pinned deployment for deployment_affinity_ttl_seconds (3600), else simple-shuffle; per-pod pins without Redis",
		Family:    sim.FamilySession,
		Reasons:   []string{sim.ReasonSessionKey, sim.ReasonRandom},
		Draws:     true,
		Product:   display,
		Source:    "BerriAI/litellm litellm/router_utils/pre_call_checks/deployment_affinity_check.py@00e1fe8 (async_filter_deployments, async_pre_call_deployment_hook), litellm/proxy/litellm_pre_call_utils.py (session id headers), litellm/router_strategy/simple_shuffle.py; config_settings.md (deployment_affinity_ttl_seconds 3600, redis_host); ROUTERS.md §1, SPEC §6",
		NeedsText: true,
		Check:     check("litellm-session-affinity", "deployment_affinity_ttl_seconds", s.AffinityTTLSecs, s),
		New: func(c sim.Config, _ int) sim.Policy {
			p := &litellmSessionPolicy{ttl: s.AffinityTTLSecs, shuffle: newLitellmShuffle(c.Seed), pods: newLitellmPods(s, c.Seed)}
			p.pins = make([]pinStore[string], p.pods.n)
			return p
		},
	}
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
//
// Reasons: session-key (3: the pinned deployment), random (3: simple-shuffle, with or without
// an id).
//
// Checked against the source (BerriAI/litellm@00e1fe8:
// litellm/router_utils/pre_call_checks/deployment_affinity_check.py):
//   - the session id from the request's metadata (get_request_metadata_field "session_id" in
//     _get_session_id_from_request_kwargs), which the proxy fills from the headers read above;
//   - a pin found for the model group and session id, on a deployment still healthy, is the
//     only deployment left (async_filter_deployments, step 2);
//   - the pin written with the deployment chosen and deployment_affinity_ttl_seconds on every
//     request, before the call (async_pre_call_deployment_hook);
//   - a pin per DualCache: one per pod without Redis.
//
// Left out:
//   - previous_response_id continuity, API-key affinity and encrypted-content affinity (steps
//     1 and 3): replayed traffic carries none of their keys;
//   - the model-map key check (_get_stable_model_map_key_from_deployments): the emulated
//     deployments share one model;
//   - the Codex/opencode header cases, Anthropic metadata.user_id and W3C baggage.
type litellmSessionPolicy struct {
	ttl     float64
	shuffle litellmShuffle
	pods    litellmPods
	pins    []pinStore[string]
}

// Route implements sim.Policy.
func (p *litellmSessionPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	pins := &p.pins[p.pods.pick()]
	id := litellmSessionID(j.Request().View)
	now := j.Arrival()
	if id != "" {
		if rep, ok := pins.get(id, now, f.Size()); ok {
			pins.set(id, rep, now+p.ttl, now)
			return rep, sim.ReasonSessionKey
		}
	}
	rep := p.shuffle.pick(f.Size())
	if id != "" {
		pins.set(id, rep, now+p.ttl, now)
	}
	return rep, sim.ReasonRandom
}
