package sim

var roundRobinInfo = PolicyInfo{
	Name:     "round-robin",
	About:    "replicas in turn; the baseline for prefill tokens saved",
	Baseline: true,
	Family:   FamilyBalance,
	Reasons:  []string{ReasonRoundRobin},
	New:      func(Config, int) Policy { return &roundRobinPolicy{} },
}

// ReasonRoundRobin is the reason of a replica taken in turn.
const ReasonRoundRobin = "round-robin"

// roundRobinPolicy sends each request to the replica after the last one chosen. Reason:
// round-robin.
type roundRobinPolicy struct{ next int }

func (p *roundRobinPolicy) Route(f *Pool, _ *Job) (int, string) {
	i := p.next % f.Size()
	p.next = i + 1
	return i, ReasonRoundRobin
}
