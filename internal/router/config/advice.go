package config

import "strings"

// HashParityAdvice is the vLLM engines' line in assess's advice when the evidence recommends a
// KV-aware router and no KV-event stream has shown the replicas hashing alike: exact, the
// routers' parts that match the engines' block hashes (product.Advice.Exact, in the registry's
// order), see only what every engine hashes the same way and publishes (the flags of the
// vllm/ rules VL-01, VL-02 and VL-05).
func HashParityAdvice(exact []string) string {
	who := ""
	if len(exact) > 0 {
		who = " (" + strings.Join(exact, ", ") + ")"
	}
	return "exact KV-aware routers" + who + " match block hashes: every replica needs the same PYTHONHASHSEED and --prefix-caching-hash-algo, and --kv-events-config switched on (up to vLLM 0.11.0 also \"publisher\":\"zmq\")"
}
