package sim

var leastLoadedInfo = PolicyInfo{
	Name:    "least-loaded",
	About:   "fewest requests in flight",
	Family:  FamilyBalance,
	Reasons: []string{ReasonLeastLoaded},
	New:     func(Config, int) Policy { return leastLoadedPolicy{} },
}

// ReasonLeastLoaded is the reason of the replica with the fewest requests in flight.
const ReasonLeastLoaded = "least-loaded"

// leastLoadedPolicy picks the replica with the fewest requests in flight (Pool.Best breaks
// ties). Reason: least-loaded.
type leastLoadedPolicy struct{}

func (leastLoadedPolicy) Route(f *Pool, _ *Job) (int, string) {
	return f.Best(func(i int) float64 { return -float64(f.InFlight(i)) }), ReasonLeastLoaded
}
