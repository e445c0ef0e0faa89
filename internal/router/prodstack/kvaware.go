package prodstack

import "github.com/kvcheck/kvcheck/internal/sim"

// kvAware is prodstack-kvaware with settings s.
func kvAware(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:       "prodstack-kvaware",
		About:      "vLLM production-stack router --routing-logic kvaware: the engine LMCache credits with the prompt's first chunk, when it holds all but --kv-aware-threshold tokens; chat requests look up an empty prompt and fall back to the session ring or QPS",
		Family:     sim.FamilyKV,
		Reasons:    append([]string{sim.ReasonPrefixMatch}, fallbackReasons...),
		Draws:      true,
		Product:    display,
		Source:     "vllm-project/production-stack src/vllm_router/routers/routing_logic.py KvawareRouter (\"TODO: Handle chat completions\"), parsers/parser.py --kv-aware-threshold 2000; LMCache lmcache/v1/cache_controller KVController.lookup; ROUTERS.md §3, SPEC §6",
		NeedsText:  true,
		ReadsIndex: true,
		New: func(c sim.Config, _ int) sim.Policy {
			return &prodStackKVAwarePolicy{key: s.SessionKey, threshold: s.KVAwareThreshold, ring: sessionRing{seed: c.Seed}}
		},
	}
}

// prodStackKVAwarePolicy is KvawareRouter. For each request:
//
//  1. Tokens: the tokenizer's encoding of request_json.get("prompt", ""): a completion's prompt
//     (the trace's tokens), and for a chat request, which has no prompt field, the empty string.
//  2. LMCache lookup of those tokens (lmcacheIndex): layout_info, the instances credited with
//     the prompt's chunks in order. A chat request's empty prompt has no chunk: never a match.
//  3. If layout_info is empty, or its first instance's matched tokens are fewer than
//     max(tokens - --kv-aware-threshold, 0) (KVAwareThreshold, 2000), the fallback
//     (prodStackFallback): the --session-key header's id on the hash ring, else the engine with
//     the lowest QPS over 60 s (an engine with no request yet first).
//  4. Otherwise the first instance of layout_info, however loaded.
//
// So on chat traffic kvaware is session hashing (with a session key) or QPS balancing, never
// KV-aware; on completions whose prompts exceed the threshold by more than their cached part, it
// falls back too. The router counts every request it sends for the QPS figures.
//
// Checked against vllm-project/production-stack@a6c01db (routing_logic.py is
// src/vllm_router/routers/routing_logic.py; other paths from the repository root):
//   - tokens of request_json.get("prompt", ""), so a chat looks up nothing
//     (routing_logic.py:355-376);
//   - the LMCache lookup's first instance and its matched tokens (routing_logic.py:378-386);
//   - fallback when there is no instance or it matches fewer than max(tokens - threshold, 0):
//     the session ring or _qps_routing (routing_logic.py:388-404), --kv-aware-threshold 2000
//     (routing_logic.py:262; parser.py:444);
//   - otherwise the first instance, however loaded (routing_logic.py:405-428).
//
// Left out:
//   - LMCache itself: its workers' chunks stand for the engines' caches (lmcacheIndex), and the
//     lookup's crediting is KVController.lookup's as ROUTERS.md §3 reads it;
//   - the tokenizer: the trace's tokens stand for it;
//   - the body member of the session key's name (as prodstack-session).
type prodStackKVAwarePolicy struct {
	key       string
	threshold int
	ring      sessionRing
	qps       qpsWindow
	lm        lmcacheIndex
}

// Route implements sim.Policy. Reasons: prefix-match (the engine LMCache credits first),
// session-key or lowest-qps (prodStackFallback).
func (p *prodStackKVAwarePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	layout := p.lm.lookup(f, j)
	tokens := 0
	if r := j.Request(); !r.View.Chat {
		tokens = r.InputTokens
	}
	var rep int
	var reason string
	if len(layout) == 0 || layout[0].end < max(tokens-p.threshold, 0) {
		rep, reason = prodStackFallback(j, p.key, &p.ring, &p.qps, f.Size())
	} else {
		rep, reason = layout[0].rep, sim.ReasonPrefixMatch
	}
	p.qps.record(rep, j.Arrival())
	p.lm.sent(f, j, rep)
	return rep, reason
}
