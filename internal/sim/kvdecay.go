package sim

var kvDecayInfo = PolicyInfo{
	Name:       "kv-decay",
	About:      "Dynamo cost with overlap credit decaying with the replica's queue: overlap/(1+decay*queued)",
	ReadsIndex: true,
	Family:     FamilyKV,
	Reasons:    matchReasons,
	New: func(c Config, _ int) Policy {
		return kvDecayPolicy{weight: c.Params.OverlapWeight, decay: c.Params.CreditDecay}
	},
}

// kvDecayPolicy is the Dynamo cost with an overlap credit that shrinks as the replica's queue
// grows. With no decay (Dynamo's default) a replica holding the prefix keeps winning however long
// its queue, and a fresh replica, holding nothing, never wins; the decay lets queued work erode
// the credit. This is our reading of the idea, not Dynamo's exact formula.
type kvDecayPolicy struct{ weight, decay float64 }

// Route implements Policy. Reasons: prefix-match, no-match (matchReason).
func (p kvDecayPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	ovl := f.overlaps(j)
	best := f.best(func(i int) float64 {
		credit := float64(ovl[i]) / (1 + p.decay*float64(f.Queued(i)))
		return -dynamoCost(f, r, i, credit, p.weight)
	})
	return best, matchReason(ovl[best])
}
