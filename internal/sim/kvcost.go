package sim

var kvCostInfo = PolicyInfo{
	Name:       "kv-cost",
	About:      "exact KV-aware, Dynamo-style cost: overlap-weight * prefill blocks + decode blocks (lowest wins); formerly kv-dynamo",
	ReadsIndex: true,
	Family:     FamilyKV,
	Reasons:    matchReasons,
	New: func(c Config, _ int) Policy {
		return kvCostPolicy{weight: c.Params.OverlapWeight}
	},
}

// kvCostPolicy is the idealised form of Dynamo's KV router at temperature 0 (the emulation of
// the router itself is dynamo-kv, in internal/router/dynamo; this policy was named kv-dynamo, a
// name Aliases still takes): the cost of a replica is the blocks it
// would have to prefill (prompt blocks not cached there) times the overlap weight, plus the
// blocks it would hold for decoding (its active blocks plus this request's).
type kvCostPolicy struct{ weight float64 }

// Route implements Policy. Reasons: prefix-match, no-match (matchReason).
func (p kvCostPolicy) Route(f *Pool, j *Job) (int, string) {
	r := j.req
	ovl := f.overlaps(j)
	best := f.best(func(i int) float64 { return -dynamoCost(f, r, i, float64(ovl[i]), p.weight) })
	return best, matchReason(ovl[best])
}

// dynamoCost is the cost of sending r to replica i when overlap blocks are credited as cached.
func dynamoCost(f *Pool, r *Request, i int, overlap, weight float64) float64 {
	bs := float64(f.blockSize)
	prefill := (float64(r.InputTokens) - overlap*bs) / bs
	decode := float64(f.reps[i].active) + float64(len(r.Blocks))
	return weight*prefill + decode
}
