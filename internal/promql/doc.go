// Package promql is where vLLM metrics come in: Open reads one source named by a Spec (the
// Prometheus HTTP API, direct /metrics scrapes, saved dumps, vLLM engine logs; Watcher refreshes
// it for hitrate --watch) into per-replica observations, and Analyze turns them into the hitrate
// report: rates, the fleet row and the findings. hitrate and assess both read metrics this way.
package promql
