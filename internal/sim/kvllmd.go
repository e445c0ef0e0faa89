package sim

var kvLLMDInfo = PolicyInfo{
	Name:       "kv-llmd",
	About:      "exact KV-aware, llm-d weighted scorers: queue 2, kv-utilisation 2, prefix 3",
	ReadsIndex: true,
	Family:     FamilyKV,
	Reasons:    matchReasons,
	New:        func(Config, int) Policy { return kvLLMDPolicy{} },
}

// llm-d's default scorer weights (SPEC §6).
const (
	llmdQueueWeight  = 2
	llmdKVUtilWeight = 2
	llmdPrefixWeight = 3
)

// kvLLMDPolicy scores replicas the way llm-d's endpoint picker does with its exact (event-fed)
// prefix index: each scorer gives 0..1, the weighted sum wins.
// kvLLMDPolicy scores every replica as llm-d's scorers do (llmdPick) with the prefix match
// from the block index. Reasons: prefix-match, no-match (matchReason).
type kvLLMDPolicy struct{}

func (kvLLMDPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	ovl := f.overlaps(j)
	best := llmdPick(f, func(i int) float64 { return prefixFraction(ovl[i], len(r.Blocks)) })
	return best, matchReason(ovl[best])
}

func prefixFraction(matched, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(matched) / float64(total)
}

// llmdPick combines llm-d's three scorers: queue (waiting requests, scaled between the fleet's
// minimum and maximum), KV utilisation (1 - usage) and prefix (fraction of blocks matched).
func llmdPick(f *Pool, prefix func(i int) float64) int {
	minQ, maxQ := f.Queued(0), f.Queued(0)
	for i := 1; i < f.Size(); i++ {
		minQ, maxQ = min(minQ, f.Queued(i)), max(maxQ, f.Queued(i))
	}
	return f.best(func(i int) float64 {
		q := 1.0
		if maxQ > minQ {
			q = float64(maxQ-f.Queued(i)) / float64(maxQ-minQ)
		}
		return llmdQueueWeight*q + llmdKVUtilWeight*(1-f.Usage(i)) + llmdPrefixWeight*prefix(i)
	})
}
