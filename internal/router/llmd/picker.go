package llmd

import (
	"math/rand/v2"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// The llm-d router (EPP) as it ships: the default EndpointPickerConfig, one scheduling profile
// with three weighted scorers and the max-score picker (ROUTERS.md §2, SPEC §6). Read in
// llm-d/llm-d-router@ebab687 (2026-08-22):
//   - pkg/epp/config/loader/defaults.go: with no configuration the profile is queue-scorer
//     weight 2, kv-cache-utilization-scorer 2, prefix-cache-scorer 3;
//   - pkg/epp/scheduling/scheduler_profile.go runScorerPlugins: each endpoint's score is the sum,
//     scorer by scorer in that order, of the scorer's value clamped to [0, 1] times its weight;
//   - scheduling/scorer/queuedepth/queue.go: (max - waiting) / (max - min) over the candidates'
//     waiting queues, 1 for every endpoint when all queues are equal;
//   - scheduling/scorer/kvcacheutilization/kvcache_utilization.go: 1 - KV-cache usage;
//   - scheduling/scorer/prefix/plugin.go: matched blocks / total blocks as the producer reports
//     them, 0 when the producer has no total (matchLengthWeight 0 by default);
//   - scheduling/picker/maxscore/picker.go: the endpoints are shuffled, then stably sorted by
//     score, so ties go to a uniformly random one of the highest.
// The waiting queue is vllm:num_requests_waiting: the requests a replica has not admitted (Model:
// beyond MaxRunning). Admitted requests whose prefill waits for the replica's serial prefill are
// running in vLLM's terms (they share its prefill batches), so they are not counted; kv-llmd, the
// idealised family, counts them. KV usage is vllm:kv_cache_usage_perc: the admitted requests'
// blocks over the replica's (fleet.usage).
//
// The two llm-d emulations differ only in the producer of the prefix match (approx.go,
// precise.go). Reasons: prefix-match (the replica chosen got a prefix score above 0), no-match
// (it got 0: queue and KV usage chose). Metrics are read as they are at the instant of routing (the EPP scrapes them
// every few tens of milliseconds).

// llmdPicker is the EPP's scoring and picking, with the settings' weights and a seeded picker.
type llmdPicker struct {
	queueW, kvW, prefixW float64
	rng                  *rand.Rand
	ties                 []int
}

func newLLMDPicker(s Settings, seed uint64) llmdPicker {
	return llmdPicker{queueW: s.QueueWeight, kvW: s.KVUtilWeight, prefixW: s.PrefixWeight, rng: rand.New(rand.NewPCG(seed, 0x6c6c6d64))}
}

// clamp01 is the scheduler's enforceScoreRange.
func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// pick returns the endpoint with the highest weighted score; prefix(i) is the prefix scorer's
// value for replica i.
func (p *llmdPicker) pick(f *sim.Pool, prefix func(i int) float64) int {
	waiting := f.Waiting
	minQ, maxQ := waiting(0), waiting(0)
	for i := 1; i < f.Size(); i++ {
		minQ, maxQ = min(minQ, waiting(i)), max(maxQ, waiting(i))
	}
	best := 0.0
	p.ties = p.ties[:0]
	for i := range f.Size() {
		q := 1.0
		if maxQ != minQ {
			q = float64(maxQ-waiting(i)) / float64(maxQ-minQ)
		}
		s := 0.0
		s += clamp01(q) * p.queueW
		s += clamp01(1-f.Usage(i)) * p.kvW
		s += clamp01(prefix(i)) * p.prefixW
		switch {
		case len(p.ties) == 0 || s > best:
			best = s
			p.ties = append(p.ties[:0], i)
		case s == best:
			p.ties = append(p.ties, i)
		}
	}
	if len(p.ties) == 1 {
		return p.ties[0]
	}
	return p.ties[p.rng.IntN(len(p.ties))]
}

// reasons are the reasons the picker gives (reason).
var reasons = []string{sim.ReasonPrefixMatch, sim.ReasonNoMatch}

// reason names the picker's choice: prefix-match when the prefix scorer gave the replica chosen
// more than 0 (part of its prefix is held there), else no-match (queue and KV usage alone).
func reason(prefix float64) string {
	if prefix > 0 {
		return sim.ReasonPrefixMatch
	}
	return sim.ReasonNoMatch
}
