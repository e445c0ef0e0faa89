package prodstack

import "github.com/kvcheck/kvcheck/internal/sim"

// session is prodstack-session with settings s.
func session(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "prodstack-session",
		About:     "vLLM production-stack router --routing-logic session: the --session-key header on a hash ring; without it the engine with the lowest QPS",
		Family:    sim.FamilySession,
		Reasons:   fallbackReasons,
		Draws:     true,
		Product:   display,
		Source:    "vllm-project/production-stack src/vllm_router/routers/routing_logic.py SessionRouter, RoutingInterface._qps_routing, extract_session_id; stats/request_stats.py; parsers/parser.py (--session-key, --request-stats-window 60); ROUTERS.md §3, SPEC §6",
		NeedsText: true,
		Check: func(_ sim.Config, t *sim.Trace) error {
			if s.SessionKey == "" {
				return &sim.CannotRunError{Policy: "prodstack-session", Trace: t.Name, Reason: `production-stack's session router refuses to start without a session key: SessionRouter raises ValueError("SessionRouter must be initialized with a session_key") when --session-key (Helm routerSpec.sessionKey) is not set; give the header your clients send`}
			}
			return nil
		},
		New: func(c sim.Config, _ int) sim.Policy {
			return &prodStackSessionPolicy{key: s.SessionKey, ring: sessionRing{seed: c.Seed}}
		},
	}
}

// prodStackSessionPolicy is SessionRouter. For each request:
//
//  1. The session id is the request's header named by --session-key (ProdStackSettings.SessionKey,
//     case-insensitive); the router would also read a body field of that name, which the log
//     reader does not keep.
//  2. With an id: the engine that owns the id on the hash ring (sessionRing: 160 points per
//     engine, as uhashring places 40 vnodes of 4 points), so one session always lands on one
//     engine while the fleet is unchanged, however loaded that engine is.
//  3. Without one: _qps_routing (qpsWindow): the first engine that has had no request yet, else
//     the one with the fewest requests sent in the last 60 s (--request-stats-window), the first
//     of equal ones.
//
// The router counts every request it sends for the QPS figures. Without a session key the
// router does not start (check returns the error, no figure).
//
// Checked against vllm-project/production-stack@a6c01db (routing_logic.py is
// src/vllm_router/routers/routing_logic.py; other paths from the repository root):
//   - the id is the header named by the session key, case-insensitive (routing_logic.py:107-115);
//   - with an id, the engine owning it on a uhashring ring, updated to the engines of the moment
//     (routing_logic.py:86-105, 236-247);
//   - without one, _qps_routing: the first engine with no request stats, else the lowest QPS,
//     the first of equals (routing_logic.py:62-84), over --request-stats-window 60 s
//     (src/vllm_router/parsers/parser.py:319; src/vllm_router/stats/request_stats.py:80-86,
//     238-258: a request at t counts while t >= now - 60);
//   - no session key: SessionRouter raises ValueError (routing_logic.py:204-208).
//
// Left out:
//   - the body member of the session key's name (routing_logic.py:115: read when the header is
//     absent): the log reader keeps no arbitrary body member;
//   - the ring's real points (md5 of the engines' URLs, which a log does not have): a seeded
//     stand-in as uniform and as stable (sessionRing).
type prodStackSessionPolicy struct {
	key  string
	ring sessionRing
	qps  qpsWindow
}

// Route implements sim.Policy. Reasons: session-key (the id on the ring), lowest-qps (no id:
// _qps_routing).
func (p *prodStackSessionPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	rep, reason := 0, sim.ReasonSessionKey
	if id, ok := prodStackSession(j.Request().View, p.key); ok {
		rep = p.ring.node(id, f.Size())
	} else {
		rep, reason = p.qps.pick(f.Size(), j.Arrival()), reasonLowestQPS
	}
	p.qps.record(rep, j.Arrival())
	return rep, reason
}
