package prodstack

import "github.com/kvcheck/kvcheck/internal/sim"

// RoundRobin is the name of the emulation of the router's default routing logic (the demo's
// today's routing names it).
const RoundRobin = "prodstack-roundrobin"

// roundRobin is prodstack-roundrobin.
func roundRobin() sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    RoundRobin,
		About:   "vLLM production-stack router --routing-logic roundrobin (the Helm chart's default): a request counter modulo the engines, one counter per set of engines",
		Family:  sim.FamilyBalance,
		Reasons: []string{sim.ReasonRoundRobin},
		Product: display,
		Source:  "vllm-project/production-stack@a6c01db src/vllm_router/routers/routing_logic.py:139-195 RoundRobinRouter; helm/values.yaml routerSpec.routingLogic roundrobin; ROUTERS.md §3, SPEC §6",
		New:     func(sim.Config, int) sim.Policy { return &prodStackRoundRobinPolicy{} },
	}
}

// prodStackRoundRobinPolicy is RoundRobinRouter (production-stack@a6c01db
// src/vllm_router/routers/routing_logic.py:139-195): the engines' URLs sorted (_endpoint_key,
// 154-166), and a counter per set of engines (_next_index, keyed by that sorted tuple) that
// starts at 0 and goes up by one per request; the request goes to the URL at the counter
// modulo their number (187-195). A log has no URLs: the replicas' order stands for the URLs'
// order, an added replica last (its real place among the sorted URLs is unknown). When an engine
// joins, the new set's counter starts at 0: the turn restarts at the first engine (the set
// before keeps its counter, for if it came back). The cache of sets is cleared at 1,024 sets,
// which one added replica never reaches.
//
// Checked against vllm-project/production-stack@a6c01db (routing_logic.py is
// src/vllm_router/routers/routing_logic.py; other paths from the repository root):
//   - one counter per set of engines, from 0, the URLs sorted (routing_logic.py:154-166,
//     187-195);
//   - the request goes to the URL at the counter modulo the engines (routing_logic.py:195);
//   - roundrobin is the Helm chart's default (helm/values.yaml:550).
//
// Left out:
//   - the engines' real order (sorted URLs): the replicas' order stands for it;
//   - the cache of sets cleared past 1,024 (routing_logic.py:143-145, 162-163, 189-193): never
//     reached.
type prodStackRoundRobinPolicy struct{ next map[int]int }

// Route implements sim.Policy. Reason: round-robin.
func (p *prodStackRoundRobinPolicy) Route(f *sim.Pool, _ *sim.Job) (int, string) {
	if p.next == nil {
		p.next = map[int]int{}
	}
	n := f.Size() // the replicas are the first n: one set per size
	i := p.next[n] % n
	p.next[n]++
	return i, sim.ReasonRoundRobin
}
