package advise

import "github.com/kvcheck/kvcheck/internal/finding"

// Input is the evidence one assess run gathered. Every part is optional; a nil part means the
// measurement was not made, and the recommendation says what it would settle.
type Input struct {
	Metrics    *Metrics
	Templates  *Templates
	Requests   *Requests
	Stream     *Stream
	Simulation *Simulation
}

// Metrics is what the replicas' Prometheus metrics said (kvcheck hitrate).
type Metrics struct {
	// Source names how they were read ("scrape", "prometheus", "file", "log") and Inputs what.
	Source string
	Inputs []string
	// Mode is "rate", "lifetime" or "log" (see promql.Mode).
	Mode     string
	Replicas []Replica
	// HitRate is the fleet's token-weighted hit rate, when known.
	HitRate *float64
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

// Simulation is one fleet of kvcheck simulate over a trace.
type Simulation struct {
	Trace      string
	Requests   int
	BlockSize  int
	PrefixInfo bool
	// Ceiling is the block hit rate one unbounded cache would reach.
	Ceiling float64
	// WorkingSetTokens is the distinct blocks of the trace in tokens.
	WorkingSetTokens int64
	Replicas         int
	// KVTokens is each replica's prefix-cache capacity in tokens; ReplicasFrom and KVFrom say
	// where the fleet's shape came from (a flag, what hitrate saw, or a default).
	KVTokens             int64
	ReplicasFrom, KVFrom string
	Policies             []Policy
}

// Family groups the policies by what a team would deploy.
type Family string

// The families.
const (
	FamilyBalance Family = "balance" // round-robin, random, least-loaded: no affinity
	FamilySession Family = "session" // session affinity, plain or with bounded load
	FamilyKV      Family = "kv"      // prefix- or KV-aware routers
)

// Policy is one policy's result on the simulated fleet.
type Policy struct {
	Name   string
	Family Family
	// HitRate is the share of prompt tokens served from cache; PrefillSaved the share of
	// round-robin's prefill this policy did not compute.
	HitRate, PrefillSaved float64
	LoadMaxOverMean       float64
	TTFTP99               float64
	HotSpot               bool
}
