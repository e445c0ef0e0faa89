// Package fleet emulates vLLM replicas on loopback (metrics, /tokenize, KV events) for the demo and for tests.
//
// Each replica runs one or more engines that model vLLM's scheduler closely enough for the
// counters to move together as in a real server: requests with shared and private prefixes go
// through a fixed pool of KV blocks with prefix caching (least recently used free blocks are
// evicted, a finished request's blocks released tail first as vLLM frees them), decodes that find
// no free block preempt the newest running request, and the vLLM
// version chosen picks the metric names served (SPEC §3.3). That pool is a Cache, which an
// emulated KV-event publisher's traffic uses too (Publisher.Serve). Instead of the random
// Workload, a replica can serve given requests (Config.Traffic: a trace's share, in order, over
// and over). A fleet is deterministic
// for a seed; tests step it explicitly (Fleet.Step) to get exact counter deltas, the demo lets
// it tick.
package fleet
