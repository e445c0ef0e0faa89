package sim

import (
	"fmt"
	"math"
)

// Model is the service model of one replica. It is deliberately simple: it exists so that
// queues form where a policy concentrates load, not to predict absolute latencies.
//
// A replica admits at most MaxRunning requests at once (vLLM's max_num_seqs, or the KV budget);
// the rest wait in FIFO order. Admitted requests are prefilled one at a time, because prefill is
// compute-bound and a real engine's prefill throughput is shared, at PrefillPerToken seconds per
// prompt token not found in the prefix cache. The cache is consulted when the prefill starts, so a
// request sees every block computed before it, on that replica only. The computed blocks enter
// the cache when the prefill ends. Decode then takes DecodePerToken seconds per output token and
// runs in parallel with other decodes (continuous batching). The TTFT proxy is the time from
// arrival to the end of the prefill: queueing plus uncached prefill.
type Model struct {
	// PrefillPerToken is the prefill time per uncached prompt token, in seconds.
	PrefillPerToken float64
	// DecodePerToken is the time per output token of one request, in seconds.
	DecodePerToken float64
	// MaxRunning is the number of requests a replica serves at once.
	MaxRunning int
}

// DefaultModel returns the documented default constants: 100 µs per uncached prompt token
// (10k tokens/s of prefill per replica, an 8B-class model on one modern GPU), 20 ms per output
// token, 32 concurrent requests per replica.
func DefaultModel() Model {
	return Model{PrefillPerToken: 100e-6, DecodePerToken: 20e-3, MaxRunning: 32}
}

func (m Model) validate() error {
	switch {
	case m.PrefillPerToken < 0 || math.IsNaN(m.PrefillPerToken) || math.IsInf(m.PrefillPerToken, 0):
		return fmt.Errorf("prefill cost %v per token must be a non-negative number of seconds", m.PrefillPerToken)
	case m.DecodePerToken < 0 || math.IsNaN(m.DecodePerToken) || math.IsInf(m.DecodePerToken, 0):
		return fmt.Errorf("decode cost %v per token must be a non-negative number of seconds", m.DecodePerToken)
	case m.MaxRunning < 1:
		return fmt.Errorf("max running %d must be at least 1", m.MaxRunning)
	}
	return nil
}

// MaxReplicas is the largest fleet the simulator models. The block index keeps one bit per
// replica per resident block, and every routing decision of a prefix-aware policy reads every
// replica, so the cost of a replay grows with the fleet.
const MaxReplicas = 1024

// Config is one simulated fleet: its size, cache, service model and policy parameters.
type Config struct {
	// Replicas is the number of replicas at the start.
	Replicas int
	// KVBlocks is each replica's prefix-cache capacity in blocks of the trace's block size.
	KVBlocks int
	// Model is the service model.
	Model Model
	// Seed drives every random choice; equal seeds give equal results.
	Seed uint64
	// AddReplicaAt adds one empty replica at this time (seconds from the trace start); negative
	// means never. It shows whether a policy starves a freshly scaled replica.
	AddReplicaAt float64
	// Siblings sends every request as this many identical requests at once (parallel sampling
	// with n > 1 split by the client); 0 or 1 keeps the trace's own n.
	Siblings int
	// Params tunes the policies.
	Params Params
	// MeasureFrom is the arrival time (seconds from the trace start) from which a result's
	// steady figures (Result.SteadyInputTokens, SteadyHitTokens) count requests: what comes
	// before warms the caches up. 0 counts every request.
	MeasureFrom float64
	// MeasureFromRequest, when above 0, also leaves the trace's requests before this index out of
	// the steady figures (siblings go with their request): a warm-up of "the first half of the
	// requests" that holds when many arrive at the same instant (a burst, a log with coarse
	// timestamps), where no arrival time separates them.
	MeasureFromRequest int
}

// Params are the policy knobs exposed as flags.
type Params struct {
	// Beta weighs load against prefix match in the load-aware KV policy (match - Beta*load).
	Beta float64
	// Epsilon is the load slack of consistent hashing with bounded load: no replica takes more
	// than ceil((1+Epsilon) * average) requests in flight.
	Epsilon float64
	// OverlapWeight weighs prefill blocks against decode blocks in the Dynamo-style cost.
	OverlapWeight float64
	// CreditDecay shrinks a replica's overlap credit by 1/(1+CreditDecay*queued requests).
	CreditDecay float64
	// ApproxTokens is the capacity, in tokens per replica, of the approximate router's own
	// index; 0 means the replica's KV capacity.
	ApproxTokens int
}

// DefaultParams returns the defaults: beta 1 (production-stack), epsilon 0.25, overlap weight
// 1 (Dynamo), credit decay 0.5.
func DefaultParams() Params {
	return Params{Beta: 1, Epsilon: 0.25, OverlapWeight: 1, CreditDecay: 0.5}
}

func (c Config) validate() error {
	if c.Replicas < 1 || c.Replicas > MaxReplicas || (c.AddReplicaAt >= 0 && c.Replicas+1 > MaxReplicas) {
		return fmt.Errorf("replicas %d: want 1 to %d (one fewer with an added replica)", c.Replicas, MaxReplicas)
	}
	if c.KVBlocks < 1 {
		return fmt.Errorf("kv blocks %d: want at least 1", c.KVBlocks)
	}
	if c.Siblings < 0 || c.Siblings > 1024 {
		return fmt.Errorf("siblings %d: want 0 to 1024", c.Siblings)
	}
	if c.Params.Beta < 0 || c.Params.Epsilon < 0 || c.Params.OverlapWeight < 0 || c.Params.CreditDecay < 0 || c.Params.ApproxTokens < 0 {
		return fmt.Errorf("policy parameters must not be negative")
	}
	return c.Model.validate()
}
