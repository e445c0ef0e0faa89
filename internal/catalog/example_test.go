package catalog_test

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// How another command (hitrate, for one) asks about a name it found: look it up as written,
// judge it at the server's version, and take the exact replacement in the same spelling.
func ExampleCatalog_Lookup() {
	cat, err := catalog.Load()
	if err != nil {
		panic(err)
	}
	v, _ := catalog.ParseVersion("0.11")
	for _, written := range []string{"vllm:gpu_prefix_cache_hits_total", "ray_vllm_gpu_cache_usage_perc", "vllm:num_preemptions"} {
		m, ok := cat.Lookup(written)
		if !ok || m.Engine == nil {
			continue
		}
		st, since := m.Engine.StatusAt(v)
		repl, exact := m.ReplacementSeries()
		fmt.Printf("%s: %s since %q, exposed %v, replacement %q (exact %v)\n", written, st, since, m.Exposed, repl, exact)
	}
	// Output:
	// vllm:gpu_prefix_cache_hits_total: hidden since "0.11.0", exposed true, replacement "vllm:prefix_cache_hits_total" (exact true)
	// ray_vllm_gpu_cache_usage_perc: hidden since "0.11.0", exposed true, replacement "ray_vllm_kv_cache_usage_perc" (exact true)
	// vllm:num_preemptions: current since "", exposed false, replacement "" (exact false)
}
