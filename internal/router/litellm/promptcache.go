package litellm

import "github.com/kvcheck/kvcheck/internal/sim"

// promptCaching is litellm-prompt-caching with settings s.
func promptCaching(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "litellm-prompt-caching",
		About:     "LiteLLM proxy with optional_pre_call_checks [prompt_caching]: the deployment that last served the prefix up to the last cache_control marker, for 300 s, on prompts of >= 1,024 tokens; else simple-shuffle",
		Family:    sim.FamilyKV,
		Reasons:   []string{reasonCacheKey, sim.ReasonRandom},
		Draws:     true,
		Product:   display,
		Source:    "BerriAI/litellm litellm/router_utils/pre_call_checks/prompt_caching_deployment_check.py (async_filter_deployments, async_log_success_event), litellm/router_utils/prompt_caching_cache.py (extract_cacheable_prefix, TTL 300), litellm/utils.py (is_prompt_caching_valid_prompt, 1024 tokens); ROUTERS.md §1, SPEC §6",
		NeedsText: true,
		Check:     check("litellm-prompt-caching", "the prompt_caching TTL", s.PromptCacheTTLSecs, s),
		New: func(c sim.Config, _ int) sim.Policy {
			p := &litellmPromptCachePolicy{ttl: s.PromptCacheTTLSecs, shuffle: newLitellmShuffle(c.Seed), pods: newLitellmPods(s, c.Seed), pending: map[int]int{}}
			p.pins = make([]pinStore[uint64], p.pods.n)
			return p
		},
	}
}

// litellmMinCacheTokens is MINIMUM_PROMPT_CACHE_TOKEN_COUNT.
const litellmMinCacheTokens = 1024

// reasonCacheKey is litellm-prompt-caching's reason for the deployment pinned to the prompt's
// cacheable prefix.
const reasonCacheKey = "cache-key"

// litellmPromptCachePolicy is LiteLLM's prompt_caching over simple-shuffle, each replica a
// deployment. For each request:
//
//  1. The proxy pod, as for session_affinity (litellmPods): per-pod caches without Redis.
//  2. The key: a hash of the messages up to and including the last one carrying a cache_control
//     marker of type ephemeral (of that message, the content parts up to the marked one) and the
//     tools (View.CacheKey). No marker: no key, nothing looked up or pinned. Completions have no
//     messages: never.
//  3. If the prompt has at least 1,024 tokens (is_prompt_caching_valid_prompt counts the whole
//     messages; the trace's prompt tokens stand for LiteLLM's count) and the key is pinned on that
//     pod, not expired: that deployment. Otherwise simple-shuffle (one seeded draw).
//  4. When the request succeeds (its last token: the success callback), if it has a key and at
//     least 1,024 tokens, the key is pinned to the deployment that served it for 300 s
//     (PromptCacheTTLSecs; hard-coded upstream) from then, on the pod that took it.
//
// A marker on the last message (what automatic injection and many clients do) puts the whole
// conversation, the newest turn included, in the key: the next turn's key is different, so no
// follow-up ever finds a pin; only an identical request would. A marker on a stable prefix (the
// system prompt) pins every request sharing it to one deployment, whatever its load, for as long
// as such requests keep finishing within 300 s of each other. Memory: one pin per key written in
// the last TTL and pod, and one entry per request in flight.
//
// Reasons: cache-key (3: the pinned deployment), random (3: simple-shuffle).
//
// Checked against the source (BerriAI/litellm@00a9877:
// litellm/router_utils/pre_call_checks/prompt_caching_deployment_check.py):
//   - the lookup only for a valid prompt of at least the group's minimum tokens (1,024 for a
//     model without its own: _get_min_token_count_for_deployments, is_prompt_caching_valid_prompt)
//     and only on messages (async_filter_deployments);
//   - a key found narrows the deployments to the one it names; a miss leaves all (ibid.);
//   - the key written on success with the deployment that served it (async_log_success_event,
//     async_add_model_id), for completions only.
//
// Left out:
//   - automatic cache_control injection (messages_with_default_injections) and the system
//     prompt prepended for Anthropic messages: off without cache_control_injection_points and
//     not OpenAI chat;
//   - per-model minimum token counts (get_prompt_cache_min_tokens): 1,024 for all;
//   - the key's exact hashing (prompt_caching_cache.py): View.CacheKey, the same prefix the same
//     key.
type litellmPromptCachePolicy struct {
	ttl     float64
	shuffle litellmShuffle
	pods    litellmPods
	pins    []pinStore[uint64]
	pending map[int]int // job seq -> the pod that took it, while in flight
}

// Route implements sim.Policy.
func (p *litellmPromptCachePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	pod := p.pods.pick()
	p.pending[j.Seq()] = pod
	r := j.Request()
	v := r.View
	if v.Chat && v.CacheKey != 0 && r.InputTokens >= litellmMinCacheTokens {
		if rep, ok := p.pins[pod].get(v.CacheKey, j.Arrival(), f.Size()); ok {
			return rep, reasonCacheKey
		}
	}
	return p.shuffle.pick(f.Size()), sim.ReasonRandom
}

// Prefilled implements sim.Observer.
func (p *litellmPromptCachePolicy) Prefilled(*sim.Job) {}

// Finished implements sim.Observer: the success callback pins the key.
func (p *litellmPromptCachePolicy) Finished(j *sim.Job) {
	pod := p.pending[j.Seq()]
	delete(p.pending, j.Seq())
	r := j.Request()
	v := r.View
	if v.Chat && v.CacheKey != 0 && r.InputTokens >= litellmMinCacheTokens {
		p.pins[pod].set(v.CacheKey, j.Replica(), j.Done()+p.ttl, j.Done())
	}
}
