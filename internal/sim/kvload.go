package sim

var kvLoadInfo = PolicyInfo{
	Name:       "kv-load",
	About:      "load-aware KV: matched fraction - beta * in-flight load relative to the busiest replica",
	ReadsIndex: true,
	Family:     FamilyKV,
	Reasons:    matchReasons,
	New: func(c Config, _ int) Policy {
		return kvLoadPolicy{beta: c.Params.Beta}
	},
}

// kvLoadPolicy is production-stack's load-aware form, score = match - beta*load, with both terms
// in 0..1: match is the fraction of the prompt's tokens cached on the replica, load its requests
// in flight over the busiest replica's. Reasons: prefix-match, no-match (matchReason).
type kvLoadPolicy struct{ beta float64 }

func (p kvLoadPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	ovl := f.overlaps(j)
	busiest := 1
	for i := range f.Size() {
		busiest = max(busiest, f.InFlight(i))
	}
	best := f.best(func(i int) float64 {
		match := 0.0
		if r.InputTokens > 0 {
			match = float64(ovl[i]*f.blockSize) / float64(r.InputTokens)
		}
		return match - p.beta*float64(f.InFlight(i))/float64(busiest)
	})
	return best, matchReason(ovl[best])
}
