package prodstack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// Second models of the production-stack emulations whose routing reads no cache:
// prodstack-roundrobin and prodstack-session, each written from the source (cited on the model),
// not from the emulation's code. The session router's ring is kvcheck's stand-in (uhashring's
// md5 of URLs a log does not have), so that routes can be compared one by one; the rest is the
// model's own.

// refProdStackRR is RoundRobinRouter (production-stack@a6c01db routing_logic.py:139-195): a
// counter in _next_index per sorted tuple of URLs, from 0.
type refProdStackRR struct{ next map[string]int }

func (m *refProdStackRR) route(_ *sim.Request, n int) int {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://engine-%03d", i) // sorted as the replicas are ordered
	}
	key := strings.Join(urls, ",")
	idx := m.next[key]
	m.next[key] = idx + 1
	return idx % n
}

// refProdStackSession is SessionRouter (routing_logic.py@a6c01db:198-249, extract_session_id
// 107-115, _qps_routing 62-84): the header named by the session key (Starlette's headers are
// case-insensitive) picks the engine on the hash ring; without it, the first engine that has no
// request stats, else the lowest QPS over the last 60 s (request_stats.py), the first of equals.
// The ring is kvcheck's stand-in (sessionRing), as it must be for routes to compare.
type refProdStackSession struct {
	key  string
	ring sessionRing
	sent map[int][]float64
}

func (m *refProdStackSession) route(r *sim.Request, n int) int {
	var pick int
	if id, ok := r.View.Headers[strings.ToLower(m.key)]; ok {
		pick = m.ring.node(id, n)
	} else {
		pick = -1
		lowest := -1.0
		for e := range n {
			times, seen := m.sent[e]
			if !seen {
				pick = e
				break
			}
			k := 0
			for _, t := range times {
				if t >= r.Arrival-60 {
					k++
				}
			}
			if qps := float64(k) / 60; lowest < 0 || qps < lowest {
				pick, lowest = e, qps
			}
		}
	}
	m.sent[pick] = append(m.sent[pick], r.Arrival)
	return pick
}

// TestSimpleEmulationsModels: prodstack-roundrobin and prodstack-session agree with their second
// models route by route on random traffic, with an added replica, sessions with and without the
// header.
func TestSimpleEmulationsModels(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			tr := simtest.Spread(seed, 300)
			c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
			check := func(name string, want, got simtest.Outcome) {
				t.Helper()
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s against the second model (-model +emulation):\n%s", name, d)
				}
				if slices.Max(want.Routes) < 3 {
					t.Errorf("%s: the traffic should reach the added replica", name)
				}
			}
			e := simtest.NewRefFleet(simtest.Block, c.Model)
			check("prodstack-roundrobin", simtest.Replay(tr, c, (&refProdStackRR{next: map[string]int{}}).route, e), runTiny(t, tr, c, "prodstack-roundrobin"))
			e = simtest.NewRefFleet(simtest.Block, c.Model)
			sc := withProdStack(c, func(s *Settings) { s.SessionKey = "X-Session-Id" })
			check("prodstack-session", simtest.Replay(tr, c, (&refProdStackSession{key: "X-Session-Id", ring: sessionRing{seed: seed}, sent: map[int][]float64{}}).route, e),
				runTiny(t, tr, sc, "prodstack-session"))
		})
	}
}
