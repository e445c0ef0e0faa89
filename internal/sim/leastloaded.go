package sim

var leastLoadedInfo = PolicyInfo{
	Name:      "least-loaded",
	About:     "fewest requests in flight",
	newPolicy: func(Config, int) policy { return leastLoadedPolicy{} },
}

type leastLoadedPolicy struct{}

func (leastLoadedPolicy) route(f *fleet, _ *job) int {
	return f.best(func(i int) float64 { return -float64(f.inflight(i)) })
}
