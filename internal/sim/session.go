package sim

var sessionInfo = PolicyInfo{
	Name:  "session",
	About: "session affinity: hash of the session id, else of block 0, modulo the replicas",
	newPolicy: func(c Config, _ int) policy {
		return &sessionPolicy{seed: c.Seed}
	},
}

// sessionPolicy is sticky routing as gateways do it (LiteLLM session_affinity, production-stack
// session): a hash of the key modulo the fleet size. Without session ids the key falls back to
// block 0, which for traffic sharing a system prompt is one key for everything.
type sessionPolicy struct {
	seed uint64
	next int // for requests with neither a session nor a block
}

func (p *sessionPolicy) route(f *fleet, j *job) int {
	r := j.req
	h, ok := keyHash(r, p.seed)
	if !ok {
		p.next++
		return p.next % f.size()
	}
	return int(h % uint64(f.size()))
}
