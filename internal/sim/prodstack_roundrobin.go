package sim

var prodStackRoundRobinInfo = PolicyInfo{
	Name:      "prodstack-roundrobin",
	About:     "vLLM production-stack router --routing-logic roundrobin (the Helm chart's default): a request counter modulo the engines",
	Product:   "vLLM production-stack",
	Source:    "vllm-project/production-stack src/vllm_router/routers/routing_logic.py RoundRobinRouter; helm/values.yaml routerSpec.routingLogic roundrobin; ROUTERS.md §3, SPEC §6",
	newPolicy: func(Config, int) policy { return &prodStackRoundRobinPolicy{} },
}

// prodStackRoundRobinPolicy is RoundRobinRouter: req_id starts at 0 and goes up by one per
// request; the request goes to the engines sorted by URL, at index req_id modulo their number.
// A log has no URLs: the replicas' order stands for the URLs' order, an added replica last (its
// real place among the sorted URLs is unknown). req_id is not reset when an engine joins, so the
// turn continues from req_id modulo the new count.
type prodStackRoundRobinPolicy struct{ reqID int }

func (p *prodStackRoundRobinPolicy) route(f *fleet, _ *job) int {
	i := p.reqID % f.size()
	p.reqID++
	return i
}
