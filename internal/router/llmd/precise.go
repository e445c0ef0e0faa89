package llmd

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// precise is llmd-precise with settings s.
func precise(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:       "llmd-precise",
		About:      "llm-d EPP with the precise producer (engine KV events): scorers queue 2, kv-utilisation 2, prefix 3; the default estimate tokenizer never matches the engine's blocks",
		Family:     sim.FamilyKV,
		Reasons:    reasons,
		Product:    display,
		Source:     "llm-d/llm-d-router@ebab687 pkg/epp/framework/plugins/requestcontrol/dataproducer/preciseprefixcache/producer.go, pkg/kvcache/kvblock_scorer.go, kvblock/token_processor.go, dataproducer/tokenizer/README.md; ROUTERS.md §2, SPEC §6",
		ReadsIndex: true,
		Check: func(_ sim.Config, t *sim.Trace) error {
			// NewChunkedTokenDatabase refuses a block size below 1 (0 is "not set" there, 16 here).
			if n := s.PreciseBlockSizeTokens; n <= 0 {
				return &sim.CannotRunError{Policy: "llmd-precise", Trace: t.Name, Reason: fmt.Sprintf("precise-prefix-cache-producer refuses to start: \"blockSizeTokens must be greater than 0, got %d\" (tokenProcessorConfig)", n)}
			}
			return nil
		},
		New: func(c sim.Config, blockSize int) sim.Policy {
			return &llmdPrecisePolicy{pick: newLLMDPicker(s, c.Seed), exact: s.Tokenizer == "vllm",
				noEvents: s.NoEngineEvents, block: s.PreciseBlockSizeTokens, traceBS: blockSize}
		},
	}
}

// llmdPrecisePolicy is the llm-d EPP configured with precise-prefix-cache-producer and a
// prefix-cache-scorer reading it (prefixMatchInfoProducerName), weights as shipped. Step by
// step (preciseprefixcache/producer.go Produce):
//
//  1. The request's tokens, from the token-producer, are cut into full blocks of
//     tokenProcessorConfig.blockSizeTokens (16) tokens, no partial block
//     (kvblock/token_processor.go chunkTokens), each keyed by a hash chained to the previous.
//  2. The index, built from the engines' KV events (the EPP recomputes keys from the events'
//     token ids at its own block size), gives for each key the pods holding it; a pod's match is
//     the number of keys it holds consecutively from block 0 (kvcache LongestPrefixScorer, GPU
//     tier weight 1).
//  3. The prefix scorer gets match / full blocks; the weighted scorers and the max-score picker
//     choose (llmd.go). Speculative indexing is off by default, so the index learns a request's
//     blocks only from the engine's events once they are stored: here, when its prefill ends.
//
// The token-producer's default backend is "estimate" (dataproducer/tokenizer/README.md): it
// packs about 4 bytes into a token id that is not the engine's. Keys hashed from those ids never
// equal the keys the EPP computes from the engine's events, so with Tokenizer "estimate" (or any
// value but "vllm") every pod's match is 0 and the EPP routes on queue and KV usage alone: the
// silent degradation the README warns of (lint rule LD-01). With "vllm" (the engine's render
// endpoints) the tokens are the engine's and the keys match.
//
// This is SPEC §6's "the exact scorer silently degrades unless the vllm backend is configured"
// and ROUTERS.md §2's tokenizer note, taken to its end: the degradation is total, the prefix
// scorer gives 0 to every endpoint. ROUTERS.md §2 also says the EPP's blockSize "need not match
// the engine" (the producer's README) while the June guide says it must; the emulation follows
// the README, reading the engines' blocks at the producer's own block size.
//
// The index is built only from the engines' KV events: when the engines publish none
// (NoEngineEvents) it stays empty and every pod's match is 0, as with the estimate tokenizer,
// whatever the backend (speculative indexing, off by default, is not modelled).
//
// The index here is the fleet's (every block each replica holds now, updated as blocks are
// stored and evicted, without the events' delay). Its blocks are the trace's; the match in the
// EPP's blocks is the tokens held consecutively from token 0 divided by blockSizeTokens, rounded
// down (exact when the trace's block size is a multiple of it, as 16 divides vLLM's sizes).
//
// Checked against llm-d/llm-d-router@ebab687:
//   - the pod's match is its longest run of keys held from block 0, tier-weighted (GPU 1)
//     (pkg/kvcache/kvblock_scorer.go:77-134);
//   - speculative indexing off by default (pkg/epp/framework/plugins/requestcontrol/
//     dataproducer/preciseprefixcache/producer.go:61-65, 215);
//   - scoring and picking as llmd.go says (the lines cited in llmd_approx.go).
//
// Left out:
//   - the events' latency and loss (the fleet's caches now stand for the index), the CPU and
//     disk tiers, speculative indexing when turned on, DP ranks.
type llmdPrecisePolicy struct {
	pick           llmdPicker
	exact          bool
	noEvents       bool
	block, traceBS int
	runs           []int
}

// Route implements sim.Policy.
func (p *llmdPrecisePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	total := j.Request().InputTokens / p.block
	if !p.exact || p.noEvents || total == 0 {
		return p.pick.pick(f, func(int) float64 { return 0 }), reason(0)
	}
	for len(p.runs) < f.Size() {
		p.runs = append(p.runs, 0)
	}
	f.Runs(j, j.FullBlocks(p.traceBS), p.runs)
	score := func(i int) float64 {
		return float64(min(p.runs[i]*p.traceBS/p.block, total)) / float64(total)
	}
	best := p.pick.pick(f, score)
	return best, reason(score(best))
}
