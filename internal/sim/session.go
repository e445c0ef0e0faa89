package sim

var sessionInfo = PolicyInfo{
	Name:    "session",
	About:   "session affinity: hash of the session id, else of block 0, modulo the replicas",
	Family:  FamilySession,
	Reasons: []string{ReasonSessionKey, ReasonFirstBlock, ReasonRoundRobin},
	Draws:   true,
	New: func(c Config, _ int) Policy {
		return &sessionPolicy{seed: c.Seed}
	},
}

// sessionPolicy is sticky routing as gateways do it (LiteLLM session_affinity, production-stack
// session): a hash of the key modulo the fleet size. Without session ids the key falls back to
// block 0, which for traffic sharing a system prompt is one key for everything.
//
// Reasons: session-key (the session id's hash), first-block (block 0's hash), round-robin (a
// request with neither).
type sessionPolicy struct {
	seed uint64
	next int // for requests with neither a session nor a block
}

func (p *sessionPolicy) Route(f *Pool, j *Job) (int, string) {
	h, ok := keyHash(j.req, p.seed)
	if !ok {
		p.next++
		return p.next % f.Size(), ReasonRoundRobin
	}
	return int(h % uint64(f.Size())), keyReason(j.req)
}

// The reasons of an affinity key: the request's session id (session-key, also the routers'
// reason for a session header or field), else its first block.
const (
	ReasonSessionKey = "session-key"
	ReasonFirstBlock = "first-block"
)

// keyReason names the affinity key keyHash hashes for r.
func keyReason(r *Request) string {
	if r.Session != "" {
		return ReasonSessionKey
	}
	return ReasonFirstBlock
}
