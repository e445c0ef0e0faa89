// Package promql reads per-replica prefix-cache statistics from Prometheus, direct /metrics scrapes, saved dumps and vLLM engine logs.
package promql
