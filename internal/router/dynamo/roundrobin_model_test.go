package dynamo

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// refDynamoRR is a second model of dynamo-round-robin, written from the source, not from the
// emulation's code: PushRouter::round_robin (ai-dynamo/dynamo@020ac7fc
// lib/runtime/src/pipeline/network/egress/push_router.rs, round_robin): fetch_add on a counter
// from 0, then the free instances at counter % count. The counter never resets.
type refDynamoRR struct{ counter int }

func (m *refDynamoRR) route(_ *sim.Request, n int) int {
	c := m.counter
	m.counter++
	return c % n
}

// TestRoundRobinModel: dynamo-round-robin agrees with its second model route by route on random
// traffic with an added replica.
func TestRoundRobinModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			tr := simtest.Spread(seed, 300)
			c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
			want := simtest.Replay(tr, c, (&refDynamoRR{}).route, simtest.NewRefFleet(simtest.Block, c.Model))
			if d := cmp.Diff(want, simtest.Routes(t, tr, c, roundRobin())); d != "" {
				t.Errorf("against the second model (-model +emulation):\n%s", d)
			}
			if slices.Max(want.Routes) < 3 {
				t.Errorf("the traffic should reach the added replica")
			}
		})
	}
}
