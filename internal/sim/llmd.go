package sim

import "math/rand/v2"

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
// The two llm-d emulations differ only in the producer of the prefix match (llmd_approx.go,
// llmd_precise.go). Metrics are read as they are at the instant of routing (the EPP scrapes them
// every few tens of milliseconds).

// llmdPicker is the EPP's scoring and picking, with the settings' weights and a seeded picker.
type llmdPicker struct {
	queueW, kvW, prefixW float64
	rng                  *rand.Rand
	ties                 []int
}

func newLLMDPicker(s LLMDSettings, seed uint64) llmdPicker {
	return llmdPicker{queueW: s.QueueWeight, kvW: s.KVUtilWeight, prefixW: s.PrefixWeight, rng: rand.New(rand.NewPCG(seed, 0x6c6c6d64))}
}

// clamp01 is the scheduler's enforceScoreRange.
func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// pick returns the endpoint with the highest weighted score; prefix(i) is the prefix scorer's
// value for replica i.
func (p *llmdPicker) pick(f *fleet, prefix func(i int) float64) int {
	waiting := func(i int) int { return f.reps[i].waiting.len() }
	minQ, maxQ := waiting(0), waiting(0)
	for i := 1; i < f.size(); i++ {
		minQ, maxQ = min(minQ, waiting(i)), max(maxQ, waiting(i))
	}
	best := 0.0
	p.ties = p.ties[:0]
	for i := range f.size() {
		q := 1.0
		if maxQ != minQ {
			q = float64(maxQ-waiting(i)) / float64(maxQ-minQ)
		}
		s := 0.0
		s += clamp01(q) * p.queueW
		s += clamp01(1-f.usage(i)) * p.kvW
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

// indexRuns sets out[i] to the number of blocks, consecutive from block 0 and at most lim, that
// replica i caches now according to the fleet's block index (what a router fed by the engines'
// KV events knows).
func indexRuns(f *fleet, ids []int32, lim int, out []int) {
	clear(out)
	for k := range lim {
		set := f.where.lookup(ids[k])
		if set == nil {
			return
		}
		more := false
		for i := range out {
			if out[i] == k && set[i/64]&(1<<(i%64)) != 0 {
				out[i]++
				more = true
			}
		}
		if !more {
			return
		}
	}
}
