package prodstack

import (
	"fmt"
	"math"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// loadAware is prodstack-loadaware with settings s.
func loadAware(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:       "prodstack-loadaware",
		About:      "vLLM production-stack router --routing-logic loadaware: LMCache's matched fraction - beta x load relative to the fleet mean (beta 1.0); chat requests look up an empty prompt and fall back to the session ring or QPS",
		Family:     sim.FamilyKV,
		Reasons:    append([]string{reasonLMCacheScore}, fallbackReasons...),
		Draws:      true,
		Product:    display,
		Source:     "vllm-project/production-stack src/vllm_router/routers/routing_logic.py LoadAwareRouter (PR #1035; --loadaware-beta 1.0, env LOADAWARE_BETA), docs use_cases/loadaware-routing.rst; LMCache KVController.lookup; ROUTERS.md §3, SPEC §6",
		NeedsText:  true,
		ReadsIndex: true,
		Check: func(_ sim.Config, t *sim.Trace) error {
			if b := s.LoadBeta; math.IsNaN(b) || math.IsInf(b, 0) {
				return &sim.CannotRunError{Policy: "prodstack-loadaware", Trace: t.Name, Reason: fmt.Sprintf("--loadaware-beta %v is not a finite number: every score would be undefined", b)}
			}
			return nil
		},
		New: func(c sim.Config, _ int) sim.Policy {
			return &prodStackLoadAwarePolicy{key: s.SessionKey, beta: s.LoadBeta, ring: sessionRing{seed: c.Seed}}
		},
	}
}

// prodStackLoadAwarePolicy is LoadAwareRouter, a KvawareRouter that scores every engine. For each
// request:
//
//  1. Tokens and the LMCache lookup as kvaware (prodStackKVAwarePolicy): a chat request looks up
//     the empty string and gets no answer.
//  2. No instance in layout_info: the kvaware fallback (session ring, else lowest QPS).
//  3. Otherwise, for every engine i in order: load_i = its requests in flight (prefilling plus
//     decoding, from the router's request stats), mean = their mean, relative_i =
//     (load_i - mean) / max(1, mean), benefit_i = min(matched_i, tokens) / max(tokens, 1) with
//     matched_i the tokens layout_info credits to i (0 when absent), score_i = benefit_i -
//     beta * relative_i (LoadBeta, 1.0). The engine with the highest score, the first of equal
//     ones (URL order upstream; the replicas' order here). --kv-aware-threshold is not applied.
//
// An engine LMCache does not credit (it holds the chunks, but another instance stored them
// first) scores no benefit.
//
// Checked against the source: production-stack's main has no loadaware routing logic at the
// snapshot read (vllm-project/production-stack@a6c01db
// src/vllm_router/routers/routing_logic.py:52-58 lists roundrobin, session, kvaware,
// prefixaware and the two disaggregated ones); the router followed is LoadAwareRouter of PR
// #1035 as a stored copy has it (a subclass of KvawareRouter, "LOADAWARE PATCH"): every
// endpoint scored min(matched, prompt)/prompt - beta x (load - mean)/max(1, mean), load the
// requests in prefill or decoding, the first best in URL order, no kv_aware_threshold, the
// session ring or QPS when LMCache names no holder.
//
// Left out:
//   - the PR is not merged at the snapshot: a deployment of main cannot select loadaware;
//   - LMCache and the tokenizer, as prodstack-kvaware.
type prodStackLoadAwarePolicy struct {
	key  string
	beta float64
	ring sessionRing
	qps  qpsWindow
	lm   lmcacheIndex
}

// reasonLMCacheScore is prodstack-loadaware's reason for the engine of the best score over
// LMCache's answer.
const reasonLMCacheScore = "lmcache-score"

// Route implements sim.Policy. Reasons: lmcache-score (the best score over LMCache's answer),
// session-key or lowest-qps (prodStackFallback).
func (p *prodStackLoadAwarePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	layout := p.lm.lookup(f, j)
	n := f.Size()
	var rep int
	reason := reasonLMCacheScore
	if len(layout) == 0 {
		rep, reason = prodStackFallback(j, p.key, &p.ring, &p.qps, n)
	} else {
		tokens := j.Request().InputTokens
		mean := 0.0
		for i := range n {
			mean += float64(f.InFlight(i))
		}
		mean /= float64(n)
		best := -1.0
		for i := range n {
			matched := 0
			for _, h := range layout {
				if h.rep == i {
					matched = h.end
				}
			}
			benefit := float64(min(matched, tokens)) / float64(max(tokens, 1))
			score := benefit - p.beta*(float64(f.InFlight(i))-mean)/max(1, mean)
			if i == 0 || score > best {
				rep, best = i, score
			}
		}
	}
	p.qps.record(rep, j.Arrival())
	p.lm.sent(f, j, rep)
	return rep, reason
}
