package dynamo

import "github.com/kvcheck/kvcheck/internal/sim"

// roundRobin is dynamo-round-robin.
func roundRobin() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "dynamo-round-robin",
		About:   "NVIDIA Dynamo frontend as shipped (--router-mode round-robin): a request counter modulo the workers available",
		Family:  sim.FamilyBalance,
		Reasons: []string{sim.ReasonRoundRobin},
		Product: display,
		Source:  "ai-dynamo/dynamo lib/runtime/src/pipeline/network/egress/push_router.rs@020ac7fc PushRouter::round_robin (counter modulo the available instances); components/src/dynamo/common/configuration/groups/router_args.py@028cab4 (--router-mode default round-robin); ROUTERS.md §4, SPEC §6",
		New:     func(sim.Config, int) sim.Policy { return &dynamoRoundRobinPolicy{} },
	}
}

// dynamoRoundRobinPolicy is Dynamo's default router mode: PushRouter::round_robin takes a
// counter that starts at 0 and goes up by one per request, and sends the request to
// instance_ids[counter % count] of the instances available now. The counter is not reset when a
// worker joins, so after an added replica the turn continues from counter mod the new count (not
// from the replica after the last one chosen, as kvcheck's round-robin does). Reason:
// round-robin.
//
// Checked against the source:
//   - a counter fetch_add'ed per request, from 0, never reset; the free instances at counter %
//     count (ai-dynamo/dynamo@020ac7fc:lib/runtime/src/pipeline/network/egress/push_router.rs,
//     round_robin and select_next_worker);
//   - round-robin is the frontend's default --router-mode (RouterMode's #[default]).
//
// Left out:
//   - instances filtered out as busy or overloaded (free_ids against routable_ids): every
//     replica is free; the instances' order (their ids): the replicas' order.
type dynamoRoundRobinPolicy struct{ counter int }

// Route implements sim.Policy.
func (p *dynamoRoundRobinPolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	i := p.counter % f.Size()
	p.counter++
	return i, sim.ReasonRoundRobin
}
