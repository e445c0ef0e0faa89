// Package sim replays request traces through a model of a vLLM fleet under routing policies.
//
// A trace source is a small adapter that produces a Trace of Requests (arrival time, session,
// block chain of content keys, input and output lengths, n): ReadMooncake for Mooncake JSONL,
// ReadAzure for lengths-only CSV, ReadRequests for request logs tokenized by package audit
// (estimated or exact, and the trace says which), and ReadRecordings for `kvcheck tap`
// recordings (the prefills the engines reported: a lower bound, since hits store nothing).
//
// The fleet model (see Model) gives each replica an LRU prefix cache with vLLM's rules (only full
// blocks cached, hits only on the run from block 0, the last prompt token always recomputed),
// a concurrency limit, serial prefill and parallel decode, so that queues form where a policy
// concentrates load. Every policy is one file; Policies lists them in display order.
//
// Memory: the trace is held in memory (about 12 bytes per block reference plus 100 per
// request; every reader streams its input and stops at MaxBlockRefs references and MaxRequests
// requests, or the Limits given: --max-block-refs, --max-trace-requests). A simulation adds what the model holds, not what the trace
// holds: per replica, at most cacheBytesPerBlock (80) bytes per block of KV capacity (its
// tables grow as it fills) and 4 bytes per block of the prompts it runs at once; for the
// prefix-aware policies one block index over the blocks cached anywhere, at most
// indexBytesPerBlock bytes (96 up to 64 replicas, 160 up to 128) per block of the fleet's total
// capacity; 8 bytes per request sent (its TTFT, for the quantiles) and
// about 100 bytes per request in flight. None of it grows with the trace's distinct blocks, which
// cost 4 bytes each only while the trace is interned (and a bit each while a replay without the
// block index counts duplicate copies at its end). Sweep points run in parallel, one per core.
package sim
