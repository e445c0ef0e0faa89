// Package events receives and decodes vLLM's ZMQ KV-event stream and accounts for every batch
// (loss, restarts, replay, the tap's own drops), records it and merges recordings in receive-time
// order (Merge); its Collector's Report holds what the stream says about the fleet and the
// findings kvcheck tap reports.
package events
