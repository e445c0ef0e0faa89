package sim

var roundRobinInfo = PolicyInfo{
	Name:      "round-robin",
	About:     "replicas in turn; the baseline for prefill tokens saved",
	Baseline:  true,
	newPolicy: func(Config, int) policy { return &roundRobinPolicy{} },
}

type roundRobinPolicy struct{ next int }

func (p *roundRobinPolicy) route(f *fleet, _ *job) int {
	i := p.next % f.size()
	p.next = i + 1
	return i
}
