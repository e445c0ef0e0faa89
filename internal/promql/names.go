package promql

import "fmt"

// Generation is the family of metric names a replica's prefix-cache figures came from.
type Generation string

// The generations, newest first. The empty generation means no prefix-cache metric was found.
const (
	Current    Generation = "current"    // vllm:prefix_cache_* (vLLM 0.9.2 and later)
	Deprecated Generation = "deprecated" // vllm:gpu_prefix_cache_* counters (V1 up to 0.11)
	V0         Generation = "v0"         // vllm:*_prefix_cache_hit_rate gauges (V0 engine)
)

// MarshalJSON writes the generation, or null when none was found.
func (g Generation) MarshalJSON() ([]byte, error) {
	if g == "" {
		return []byte("null"), nil
	}
	return fmt.Appendf(nil, "%q", string(g)), nil
}

// quantity is what a metric measures, whatever its name.
type quantity int

const (
	qQueries quantity = iota
	qHits
	qExtQueries
	qExtHits
	qPreemptions
	qRequests
	qKVUsage
	qRunning
	qWaiting
	qV0GPUHitRate
	qV0CPUHitRate
)

// metricName is one exposition name for a quantity, with its life cycle (SPEC §3.3).
type metricName struct {
	name     string
	q        quantity
	counter  bool
	gen      Generation
	life     string // "deprecated in X, hidden in Y, removed in Z" for old names
	instead  string // what to use instead
	weighted bool   // gauge averaged over engines rather than summed
	note     string // what else a reader of this name must know
}

// names is the only place hitrate knows vLLM's metric names. Within a quantity the first name
// present on a replica wins, so current names come first. It is kept small on purpose so that
// it can later be derived from the metric catalog.
var names = []metricName{
	{name: "vllm:prefix_cache_queries_total", q: qQueries, counter: true, gen: Current},
	{name: "vllm:gpu_prefix_cache_queries_total", q: qQueries, counter: true, gen: Deprecated,
		life: "deprecated in vLLM 0.9.2, hidden in 0.11.0, removed in 0.12.0", instead: "vllm:prefix_cache_queries_total",
		note: "vLLM 0.7.3 to 0.8.5 counted these in blocks, not tokens"},
	{name: "vllm:prefix_cache_hits_total", q: qHits, counter: true, gen: Current},
	{name: "vllm:gpu_prefix_cache_hits_total", q: qHits, counter: true, gen: Deprecated,
		life: "deprecated in vLLM 0.9.2, hidden in 0.11.0, removed in 0.12.0", instead: "vllm:prefix_cache_hits_total",
		note: "vLLM 0.7.3 to 0.8.5 counted these in blocks, not tokens"},
	{name: "vllm:external_prefix_cache_queries_total", q: qExtQueries, counter: true, gen: Current},
	{name: "vllm:external_prefix_cache_hits_total", q: qExtHits, counter: true, gen: Current},
	{name: "vllm:num_preemptions_total", q: qPreemptions, counter: true, gen: Current},
	{name: "vllm:request_success_total", q: qRequests, counter: true, gen: Current},
	{name: "vllm:kv_cache_usage_perc", q: qKVUsage, gen: Current, weighted: true},
	{name: "vllm:gpu_cache_usage_perc", q: qKVUsage, gen: Deprecated, weighted: true,
		life: "deprecated in vLLM 0.9.2, hidden in 0.11.0, removed in 0.12.0", instead: "vllm:kv_cache_usage_perc"},
	{name: "vllm:num_requests_running", q: qRunning, gen: Current},
	{name: "vllm:num_requests_waiting", q: qWaiting, gen: Current},
	{name: "vllm:gpu_prefix_cache_hit_rate", q: qV0GPUHitRate, gen: V0, weighted: true,
		life:    "V0 engine only: deprecated in vLLM 0.8.0, hidden in 0.8.3, removed in 0.9.1",
		instead: "rate(vllm:prefix_cache_hits_total) / rate(vllm:prefix_cache_queries_total)"},
	{name: "vllm:cpu_prefix_cache_hit_rate", q: qV0CPUHitRate, gen: V0, weighted: true,
		life:    "V0 engine only: deprecated in vLLM 0.8.0, hidden in 0.8.3, removed in 0.9.1",
		instead: "the external_prefix_cache_* counters of a KV connector"},
}

// configInfo is the info metric carrying the cache settings as labels.
const configInfo = "vllm:cache_config_info"

func lookupName(n string) (metricName, bool) {
	for _, m := range names {
		if m.name == n {
			return m, true
		}
	}
	return metricName{}, false
}
