package advise

import (
	"math"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Input is the evidence one assess run gathered. Every part is optional; a nil part means the
// measurement was not made, and the recommendation says what it would settle.
type Input struct {
	Metrics   *Metrics
	Templates *Templates
	Requests  *Requests
	Stream    *Stream
	// Replay is the counterfactual: the traffic (a request log, a trace or tap recordings,
	// as one trace) replayed on the fleet's shape under today's routing and each option.
	Replay *Replay
	// Fixed is the same traffic replayed as it would be once the divergence the request audit
	// found is replaced by a constant (FixedHow says what was replaced); nil when there is
	// nothing to replace or no request log.
	Fixed    *Replay
	FixedHow string
	// Config is what the router and engine configuration checks found (assess --config).
	Config *Config
}

// Metrics is what the replicas' Prometheus metrics said (kvcheck hitrate).
type Metrics struct {
	// Source names how they were read ("scrape", "prometheus", "file", "log") and Inputs what.
	Source string
	Inputs []string
	// Mode is "rate", "lifetime" or "log" (see promql.Mode).
	Mode     string
	Replicas []Replica
	// HitRate is the fleet's token-weighted hit rate, when known; Queries the prompt tokens it
	// is over and Requests the requests (vllm:request_success_total), nil when not every
	// replica says.
	HitRate           *float64
	Queries, Requests *float64
	// Down counts the inputs that could not be read.
	Down int
	// KVBlocks and KVBlockSize are the smallest replica's num_gpu_blocks and block_size from
	// vllm:cache_config_info; 0 when unknown.
	KVBlocks, KVBlockSize int
	// Warnings are the server's warnings (hitrate's server-warning findings: a Thanos or Mimir
	// partial response, for example): the figures above may miss series.
	Warnings []finding.Finding
}

// Replica is one replica's figures.
type Replica struct {
	Name             string
	Version          string
	PrefixCaching    *bool
	HitRate          *float64
	PreemptionsPer1k *float64
	KVUsage          *float64
	// BlockSize comes from vllm:cache_config_info; 0 when unknown.
	BlockSize int
	// Cold is set when hitrate found the replica far below the fleet's median hit rate;
	// NoPrefixMetrics when it exports no prefix-cache counters at all.
	Cold, NoPrefixMetrics bool
}

// Templates is the static template audit (kvcheck audit TEMPLATE...).
type Templates struct {
	Inputs []string
	// Verdicts counts the audited templates by verdict (breaker, early, late, clean, unknown).
	Verdicts map[string]int
	// Findings are the audit's findings; errors are block-zero breakers that change per call or
	// per user.
	Findings []finding.Finding
}

// Requests is the request-log audit (kvcheck audit --requests).
type Requests struct {
	Input     string
	Estimated bool
	Requests  int64
	Sessions  int64
	// RepeatedSessions counts the sessions of two requests or more, InSessions the requests
	// in them: a request no other continues is a session of one, not evidence of sessions.
	RepeatedSessions, InSessions int64
	// WithBlock counts requests of at least one full block; UniqueFirstBlock those whose first
	// block nobody else has.
	WithBlock, UniqueFirstBlock int64
	PromptTokens                int64
	// CacheableTokens is what an unbounded shared cache would serve; Cross and Within split it
	// by whether another session or the same one stored the block first.
	CacheableTokens, CrossSessionTokens, WithinSessionTokens int64
	Findings                                                 []finding.Finding
}

// Stream is what KV-event recordings said (kvcheck tap --from).
type Stream struct {
	Inputs       []string
	Publishers   int
	StoredBlocks uint64
	// SeedKnown says whether reproducibility could be checked (--hash-seed given).
	SeedKnown bool
	// Reproducible and Consistent are the hash-parity results; nil when not determined.
	Reproducible, Consistent *bool
	// LostBatches were lost and not recovered.
	LostBatches uint64
	// DuplicateFraction is the share of stored tokens prefilled again on another replica;
	// RestoreFraction the share of blocks stored again after eviction on the same replica.
	DuplicateFraction, RestoreFraction    *float64
	FirstBlockStores, FirstBlocksDistinct uint64
	// Findings are tap's own warnings and errors that the rules do not restate (a truncated
	// recording, a publisher restart, a tap that fell behind, ...): they qualify the figures.
	Findings []finding.Finding
}

// Replay is the traffic replayed on one fleet under today's routing and the options (the
// figures kvcheck simulate shows for the same trace and fleet).
type Replay struct {
	// Input names the traffic; Source is "requests", "trace" or "recording".
	Input, Source string
	Requests      int
	// Duration is the traffic's span in seconds; WarmupRequests the requests left out of the
	// steady figures (the first half, which warms the caches up) and WarmupSeconds the arrival
	// of the first request counted.
	Duration, WarmupSeconds float64
	WarmupRequests          int
	BlockSize               int
	// PrefixInfo is false for lengths-only traces, which cannot show reuse either way.
	PrefixInfo bool
	// Estimated: tokens are the 4-bytes-a-token estimate; LowerBound: tap recordings, which miss
	// requests that hit fully.
	Estimated, LowerBound bool
	// SessionsKnown is set when the traffic carries sessions (ids, or conversations that
	// continue an earlier request's): only then is session affinity measured.
	SessionsKnown bool
	// Ceiling is the block hit rate one unbounded cache would reach; WorkingSetTokens the
	// traffic's distinct blocks in tokens.
	Ceiling          float64
	WorkingSetTokens int64
	// PromptTokens is every request's prompt tokens; SteadyTokens those after the warm-up.
	PromptTokens, SteadyTokens int64
	// SharedTokens is the traffic's shared prefixes: its distinct blocks referenced by two
	// requests or more, in tokens; LateSharedTokens those first referenced after the warm-up.
	// They are the warm-up model's inputs (Amortise).
	SharedTokens, LateSharedTokens int64
	// Replicas and KVTokens (per replica) are the fleet's shape; ReplicasFrom and KVFrom say
	// where they came from: ShapeMetrics, ShapeFlag or ShapeAssumed.
	Replicas             int
	KVTokens             int64
	ReplicasFrom, KVFrom string
	// Today is the policy that stands for the routing that runs today.
	Today string
	// Overloaded is set when the modelled fleet queues whatever the routing (sim.OverloadedTTFT).
	Overloaded bool
	// Unused names traffic given but not replayed (a trace beside a request log): one trace is
	// replayed, the request log first, then a trace, then the recordings.
	Unused   []string
	Policies []Policy
	// Routers are the routers the ranking replayed on this traffic and ranked (rank.Ranking's
	// rows not left out), named by row (Policy.Name: the emulation's name, then its variant in
	// parentheses, as "(shipped, CLI defaults)"), each with its gain over today's routing in the ranking's own replays added
	// to today's hit rate here: options the verdict weighs beside the idealised policies, so
	// that a router the ranking puts first at the threshold's gain is never "nothing". Empty
	// without a ranking.
	Routers []Policy
	// SyntheticArrivals: the arrival times are made up (a request log replayed at --rate), so
	// the hot-spot rule read the imbalance alone, not whether requests waited (sim.Load).
	SyntheticArrivals bool
	// TwinRequests are the requests sent as copies of a prompt still in prefill (siblings sent
	// apart: sim.TwinsApart), TwinTokens their prompt tokens.
	TwinRequests int
	TwinTokens   int64
}

// SteadyRequests is the number of requests the steady figures count: those after the warm-up.
func (s *Replay) SteadyRequests() int { return max(s.Requests-s.WarmupRequests, 0) }

// MinSteadyRequests is the fewest requests after the warm-up on which a replay decides, and
// the fewest in the window on which metrics alone do: more than 1/MinGain, so that one request
// weighs on average less than the threshold (at 5 points, 21). With fewer, one request's
// placement (or hit) could move the figure by the whole threshold.
func (th Thresholds) MinSteadyRequests() int {
	if th.MinGain <= 0 {
		return 1
	}
	return int(math.Floor(1/th.MinGain+1e-9)) + 1
}

// Where the fleet's shape came from.
const (
	ShapeMetrics = "metrics"
	ShapeFlag    = "flag"
	ShapeAssumed = "assumed"
	// ShapeRecordings: the replica count is the publishers of the tap recordings.
	ShapeRecordings = "recordings"
)

// Family groups the policies by what a team would deploy: sim's families.
type Family = sim.Family

// The families.
const (
	FamilyBalance = sim.FamilyBalance // round-robin, random, least-loaded: no affinity
	FamilySession = sim.FamilySession // session affinity, plain or with bounded load
	FamilyKV      = sim.FamilyKV      // prefix- or KV-aware routers
)

// Policy is one policy's result on the replayed fleet.
type Policy struct {
	Name   string
	Family Family
	// HitRate is the share of all prompt tokens served from cache over the whole replay;
	// SteadyHitRate the same after the warm-up, which is what gains are judged on.
	HitRate, SteadyHitRate float64
	LoadMaxOverMean        float64
	TTFTP99                float64
	// HotSpot: the replay makes a hot spot (sim.Load.HotSpot at Thresholds.HotSpot); set for
	// today's routing too, which is never an option but may be a reason against keeping it.
	HotSpot bool
	// Idle: load max/mean at or above the hot-spot ratio, yet no hot spot only because its
	// busiest replica's requests seldom waited in the model (sim.Load.Idle); HotWaited is that
	// share, so the evidence can say why the imbalance was let through.
	Idle      bool
	HotWaited float64
}

// Amortise is the warm-up model, checkable by hand. When the working set fits in one replica's
// KV cache, blind routing computes each shared block at most once per replica instead of once:
// at most (Replicas-1) x SharedTokens extra prefill, paid once (OneOff). Over a run of T seconds
// at Rate prompt tokens a second that is OneOff / (Rate x T) of all prefill, under minGain once
// T passes HoldSeconds = OneOff / (Rate x minGain). The gain is warm-up alone (WarmupOnly) when,
// besides, the shared prefixes first seen after the warm-up could not cost minGain of the
// steady prompt tokens even if every replica computed them: (Replicas-1) x LateSharedTokens <
// minGain x SteadyTokens. Otherwise new shared content keeps arriving (conversations,
// documents), or the working set exceeds one replica (capacity misses), and the difference
// holds as long as the traffic keeps its shape.
type Amortise struct {
	Fits, WarmupOnly bool
	OneOff           int64
	Rate             float64 // prompt tokens a second
	HoldSeconds      float64 // 0 when Rate is unknown
}

// Amortise applies the warm-up model to the replay with the given threshold.
func (s *Replay) Amortise(minGain float64) Amortise {
	var a Amortise
	a.Fits = s.KVTokens > 0 && s.WorkingSetTokens <= s.KVTokens
	a.OneOff = int64(max(s.Replicas-1, 0)) * s.SharedTokens
	if s.Duration > 0 {
		a.Rate = float64(s.PromptTokens) / s.Duration
	}
	if a.Rate > 0 && minGain > 0 { // HoldSeconds 0 with OneOff 0: nothing to amortise
		a.HoldSeconds = float64(a.OneOff) / (a.Rate * minGain)
	}
	a.WarmupOnly = a.Fits && s.Replicas > 1 &&
		float64(int64(s.Replicas-1)*s.LateSharedTokens) < minGain*float64(s.SteadyTokens)
	return a
}
