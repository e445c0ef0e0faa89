package events

import (
	"fmt"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Report is the result of a tap: one entry per publisher, the fleet-wide analyses and the
// findings. The report package renders it.
type Report struct {
	DurationSeconds float64
	Publishers      []Publisher
	Analysis        Analysis
	Findings        []finding.Finding
}

// Publisher is the accounting of one publisher socket and topic.
type Publisher struct {
	Endpoint string
	Topic    string
	DPRank   *int64
	// Connected says whether the tap's socket ever connected (or bound, when Listening); nil
	// for recordings. Reconnects counts the connections after the first.
	Connected    *bool
	Listening    bool
	Reconnects   uint64
	ConnectError string
	// ListenPeers is, for a listener, the most publishers connected at once.
	ListenPeers int
	// Messages counts everything received; Batches the messages decoded and accounted.
	Messages         uint64
	Batches          uint64
	Events           EventCounts
	PayloadBytes     uint64
	FrameBytes       uint64
	BytesPerSec      float64
	FrameBytesPerSec float64
	EventsPerSec     float64
	StoredTokens     uint64
	TokensPerSec     float64
	BatchSizes       BatchSizes
	FirstSeq         *uint64
	LostBatches      uint64
	Gaps             uint64
	Restarts         uint64
	Duplicates       uint64
	LateBatches      uint64
	RecoveredBatches uint64
	// LateBatches filled a gap after it was seen: recovered by replay (RecoveredBatches counts
	// those) or received by another tap whose recording was merged with this one.
	// UnrecoverableBatches were lost and never arrived: LostBatches less LateBatches.
	UnrecoverableBatches uint64
	OwnDrops             uint64
	// SequenceJumps counts sequence numbers implausibly far ahead (more than 16M batches):
	// a corrupt sequence frame or a publisher numbering anew, never counted as lost batches.
	// FirstJump is the first one, from the last number before it to the number jumped to.
	SequenceJumps uint64
	FirstJump     *Gap
	// BadTimestamps counts batches whose timestamp is not plausible Unix seconds (see
	// plausibleTS), left out of the event times and the clock offset; FirstBadTimestamp is
	// the first such value.
	BadTimestamps     uint64
	FirstBadTimestamp float64
	// BadBlockSizes counts BlockStored events with a block size of 0 or below, which no
	// engine sends: they are left out of the content analyses.
	BadBlockSizes uint64
	// OversizeMessages counts connections the tap dropped because the peer announced a ZMTP
	// message over the --max-message bound; LargestMessage is the largest size announced.
	OversizeMessages    uint64
	LargestMessage      uint64
	Malformed           uint64
	MalformedSamples    []MalformedSample
	BlockSizes          map[string]uint64
	Media               map[string]uint64
	LoRANames           map[string]uint64
	SpecKinds           map[string]uint64
	Eras                map[string]uint64
	WireEra             string
	HashForms           map[string]uint64
	HashForm            string
	SignedHashes        uint64
	UnknownTypes        map[string]uint64
	UnknownFields       uint64
	OddFields           uint64
	BytesPerStoredToken float64
	FirstEventTime      *time.Time
	LastEventTime       *time.Time
	// ClockOffsetSeconds is the smallest (receive time - event time) seen: the publisher's
	// clock lag behind ours plus the network latency.
	ClockOffsetSeconds *float64
	HashParity         *PublisherParity
}

func newPublisher(source, topic string) Publisher {
	return Publisher{
		Endpoint: source, Topic: topic,
		MalformedSamples: []MalformedSample{},
		BlockSizes:       map[string]uint64{}, Media: map[string]uint64{}, LoRANames: map[string]uint64{},
		SpecKinds: map[string]uint64{}, Eras: map[string]uint64{}, HashForms: map[string]uint64{},
		UnknownTypes: map[string]uint64{},
	}
}

// PublisherParity is the hash-parity check of one publisher.
type PublisherParity struct {
	Checked uint64
	Matched uint64
}

// MalformedSample is one malformed message, kept to tell the operator what was wrong.
type MalformedSample struct {
	Seq    uint64
	Reason string
}

// EventCounts counts events by type.
type EventCounts struct {
	BlockStored      uint64
	BlockRemoved     uint64
	AllBlocksCleared uint64
	Unknown          uint64
}

func (e *EventCounts) add(t Type) {
	switch t {
	case TypeBlockStored:
		e.BlockStored++
	case TypeBlockRemoved:
		e.BlockRemoved++
	case TypeAllBlocksCleared:
		e.AllBlocksCleared++
	default:
		e.Unknown++
	}
}

// Total is the number of events of every type.
func (e EventCounts) Total() uint64 {
	return e.BlockStored + e.BlockRemoved + e.AllBlocksCleared + e.Unknown
}

// BatchSizes is the distribution of events per batch.
type BatchSizes struct {
	Min  int
	Max  int
	Sum  uint64
	N    uint64
	Le1  uint64
	Le4  uint64
	Le16 uint64
	Le64 uint64
	More uint64
}

func (b *BatchSizes) add(n int) {
	if b.N == 0 || n < b.Min {
		b.Min = n
	}
	b.Max = max(b.Max, n)
	b.Sum += uint64(n)
	b.N++
	switch {
	case n <= 1:
		b.Le1++
	case n <= 4:
		b.Le4++
	case n <= 16:
		b.Le16++
	case n <= 64:
		b.Le64++
	default:
		b.More++
	}
}

// Mean is the mean number of events per batch.
func (b BatchSizes) Mean() float64 {
	if b.N == 0 {
		return 0
	}
	return float64(b.Sum) / float64(b.N)
}

// DepthCount counts duplicated blocks at one chain depth (0 = the first block of a prompt;
// MaxDuplicateDepth and deeper are counted together at MaxDuplicateDepth).
type DepthCount struct {
	Depth  int
	Blocks uint64
}

// Analysis holds the fleet-wide analyses of the stored blocks.
type Analysis struct {
	StoredBlocks uint64
	StoredTokens uint64
	// DuplicateBlocks were stored by a replica while another replica held the same content
	// (stored and not yet removed): prefill a KV-aware router could have saved.
	DuplicateBlocks        uint64
	DuplicateTokens        uint64
	DuplicateTokenFraction *float64
	DuplicateDepths        []DepthCount
	// Restores counts content stored again on the same replica after it was removed there.
	Restores           uint64
	RestoreFraction    *float64
	StoredWhilePresent uint64
	RootStores         uint64
	FirstBlockStores   uint64
	// FirstBlocksDistinct counts distinct first blocks (chains starting at token 0).
	FirstBlocksDistinct       uint64
	FirstBlocksPerMinute      float64
	FirstBlockStoresPerMinute float64
	// UnanchoredBlocks continue chains whose start the tap did not see (it joined late or
	// forgot them); they are left out of the content analyses.
	UnanchoredBlocks         uint64
	UnalignedStores          uint64
	UnhashableStores         uint64
	UnknownRemovals          uint64
	ForgottenBlocks          uint64
	HashPairsCompared        uint64
	HashPairsDiffering       uint64
	BytesPerStoredToken      *float64
	ExtrapolatedTokensPerSec float64
	ExtrapolatedBytesPerSec  *float64
	HashParity               HashParity
}

// MaxDuplicateDepth is the deepest chain depth counted apart in Analysis.DuplicateDepths; the
// bucket at this depth also counts every deeper block, so the list stays bounded and complete.
const MaxDuplicateDepth = 255

func (a *Analysis) duplicateDepth(d int) {
	d = min(d, MaxDuplicateDepth)
	for i := range a.DuplicateDepths {
		if a.DuplicateDepths[i].Depth == d {
			a.DuplicateDepths[i].Blocks++
			return
		}
	}
	a.DuplicateDepths = append(a.DuplicateDepths, DepthCount{Depth: d, Blocks: 1})
}

// HashParity says whether the stream's hashes can be reproduced outside the engine
// (sha256_cbor with the given seed) and whether identical content carries identical hashes on
// every replica: the fleet's readiness for an exact KV-aware router. Nil means not determined.
type HashParity struct {
	SeedKnown                bool
	Reproducible             *bool
	ConsistentAcrossReplicas *bool
	CheckedBlocks            uint64
	MatchedBlocks            uint64
	ComparedAcrossReplicas   uint64
}

func newFinding(s finding.Severity, code, subject, format string, args ...any) finding.Finding {
	return finding.Finding{Severity: s, Code: code, Subject: subject, Message: fmt.Sprintf(format, args...)}
}

// findings turns the numbers into what an operator should act on.
func findings(r *Report, o Options) []finding.Finding {
	out := []finding.Finding{}
	add := func(f finding.Finding) { out = append(out, f) }
	// A listener tells its publishers apart only by topic (zmq4 does not say which peer sent
	// a message): more peers at once than topics means interleaved sequences.
	topics := map[string]int{}
	for _, p := range r.Publishers {
		if p.Listening && p.Messages > 0 {
			topics[p.Endpoint]++
		}
	}
	warned := map[string]bool{}
	for _, p := range r.Publishers {
		if p.Listening && p.ListenPeers > topics[p.Endpoint] && topics[p.Endpoint] > 0 && !warned[p.Endpoint] {
			warned[p.Endpoint] = true
			add(newFinding(finding.Error, "listen-shared-topic", p.Endpoint,
				"%d publishers were connected at once but sent only %d distinct topic(s): a listener tells publishers apart by topic only, so their sequences interleave and the loss, restart and duplicate counts of those topics are wrong. Give each publisher its own topic (llm-d's kv@<pod-ip>:<port>@<model>) or tap them in dial mode",
				p.ListenPeers, topics[p.Endpoint]))
		}
	}
	for _, p := range r.Publishers {
		subj := p.Endpoint
		if p.Topic != "" {
			subj += " topic " + p.Topic
		}
		if p.OversizeMessages > 0 {
			add(newFinding(finding.Error, "message-too-large", subj,
				"%d times the peer announced a ZMTP message over the %d-byte bound (at least %d bytes) and the tap dropped the connection before allocating it; what it sent then is lost. A vLLM batch is a few KB to a few MB: this is not a vLLM publisher, or raise --max-message",
				p.OversizeMessages, o.MaxMessage, p.LargestMessage))
		}
		if p.Messages == 0 {
			switch {
			case p.Connected != nil && !*p.Connected && p.Listening:
				add(newFinding(finding.Error, "no-connection", subj, "could not listen on this address (%s): is it in use, or not an address of this host?", p.ConnectError))
			case p.Connected != nil && !*p.Connected && strings.Contains(p.ConnectError, "ZMTP"):
				add(newFinding(finding.Error, "no-connection", subj,
					"something answers there but the ZMQ handshake failed (%s): it is not a ZMQ publisher (an HTTP or metrics port?) or not a well-behaved one; vLLM's KV events are on the port of --kv-events-config's endpoint, 5557 by default",
					p.ConnectError))
			case p.Connected != nil && !*p.Connected:
				add(newFinding(finding.Error, "no-connection", subj,
					"could not connect (%s): nothing publishes there. vLLM publishes only with --kv-events-config '{\"enable_kv_cache_events\":true,...}' (and \"publisher\":\"zmq\" up to 0.11.0), on tcp://*:5557 by default, port+r for data-parallel rank r; a publisher that dials out needs --listen",
					p.ConnectError))
			case p.Listening && p.ListenPeers == 0:
				add(newFinding(finding.Error, "no-events", subj,
					"listening, but no publisher connected: a vLLM publisher dials out only when its endpoint has no '*' (for example tcp://<this host>:5557); check that it names this address and port"))
			default:
				add(newFinding(finding.Error, "no-events", subj,
					"connected but nothing received: no traffic reached the prefix cache, prefix caching is off (almost no events then), the --topic prefix does not match, or the publisher dials a collector and this tap should --listen"))
			}
			continue
		}
		// Late batches fill gaps after the fact: recovered by replay, or received by another
		// tap whose recording was merged with this one.
		late := p.LateBatches - min(p.LateBatches, p.RecoveredBatches)
		if p.UnrecoverableBatches > 0 {
			filled := ""
			if p.LateBatches > 0 {
				filled = fmt.Sprintf(" (besides %d recovered by replay and %d received late)", p.RecoveredBatches, late)
			}
			add(newFinding(finding.Error, "batches-lost", subj,
				"%d batches lost in %d gap(s)%s: the publisher dropped them at its high-water mark or the tap joined late; a KV-aware router on this stream has a wrong view of the caches",
				p.UnrecoverableBatches, p.Gaps, filled))
		} else if p.LostBatches > 0 {
			how := "recovered by replay"
			if late > 0 {
				how = fmt.Sprintf("arrived later: %d recovered by replay, %d received late (from another merged recording)", p.RecoveredBatches, late)
			}
			add(newFinding(finding.Info, "batches-recovered", subj, "%d batches lost and all %s", p.LostBatches, how))
		}
		if p.OwnDrops > 0 {
			add(newFinding(finding.Error, "tap-dropped", subj,
				"the tap itself dropped %d messages because its decoder fell behind; these are not publisher losses", p.OwnDrops))
		}
		if p.SequenceJumps > 0 {
			add(newFinding(finding.Warning, "sequence-jump", subj,
				"the sequence number jumped %d times implausibly far ahead (first from %d to %d, more than %d batches): a corrupt sequence frame or a publisher numbering anew, not a loss; counting went on from the new number",
				p.SequenceJumps, p.FirstJump.From, p.FirstJump.To, maxJump))
		}
		if p.BadTimestamps > 0 {
			add(newFinding(finding.Warning, "bad-timestamps", subj,
				"%d batches carry a timestamp that is not plausible Unix seconds (first %g%s): left out of the event times and the clock offset",
				p.BadTimestamps, p.FirstBadTimestamp, tsHint(p.FirstBadTimestamp)))
		}
		if p.BadBlockSizes > 0 {
			add(newFinding(finding.Warning, "bad-block-size", subj,
				"%d BlockStored events carry a block size of 0 or below, which no engine sends: malformed events, left out of the content analyses", p.BadBlockSizes))
		}
		if p.Restarts > 0 {
			add(newFinding(finding.Warning, "publisher-restarted", subj, "the sequence went back %d times: the publisher restarted and its cache state was reset", p.Restarts))
		}
		if p.Duplicates > 0 {
			add(newFinding(finding.Info, "duplicate-batches", subj, "%d batches arrived twice and were counted once", p.Duplicates))
		}
		if p.Malformed > 0 {
			reason := ""
			if len(p.MalformedSamples) > 0 {
				reason = fmt.Sprintf(" (seq %d: %s)", p.MalformedSamples[0].Seq, p.MalformedSamples[0].Reason)
			}
			add(newFinding(finding.Error, "malformed-batches", subj, "%d messages could not be decoded and were skipped%s", p.Malformed, reason))
		}
		if len(p.UnknownTypes) > 0 || p.UnknownFields > 0 || p.OddFields > 0 {
			add(newFinding(finding.Info, "unknown-fields", subj,
				"%d unknown event types, %d unknown fields, %d fields of unexpected type were ignored: a newer vLLM than this kvcheck knows",
				len(p.UnknownTypes), p.UnknownFields, p.OddFields))
		}
		if p.WireEra == "mixed" {
			add(newFinding(finding.Info, "mixed-eras", subj, "array-era and map-era events in one stream"))
		}
		if p.HashForms["bin"] > 0 {
			add(newFinding(finding.Info, "bin-hashes", subj, "hashes travel as full digests (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0); consumers that expect integers will not match them"))
		}
		if p.SignedHashes > 0 {
			add(newFinding(finding.Warning, "signed-hashes", subj, "%d negative block hashes: Python hash() of vLLM 0.10.1 or older, not reproducible across processes", p.SignedHashes))
		}
		if p.HashParity != nil && p.HashParity.Matched < p.HashParity.Checked {
			add(newFinding(finding.Error, "hash-not-reproducible", subj,
				"%d of %d blocks do not match sha256_cbor with seed %q: the engine uses another --prefix-caching-hash-algo or another PYTHONHASHSEED",
				p.HashParity.Checked-p.HashParity.Matched, p.HashParity.Checked, *o.HashSeed))
		}
	}
	a := r.Analysis
	if c := a.HashParity.ConsistentAcrossReplicas; c != nil && !*c {
		add(newFinding(finding.Error, "hash-inconsistent", "fleet",
			"%d of %d blocks stored on several replicas carry different hashes: pin PYTHONHASHSEED on every replica or an exact KV-aware router never matches across replicas",
			a.HashPairsDiffering, a.HashParity.ComparedAcrossReplicas))
	}
	if f := a.DuplicateTokenFraction; f != nil && *f >= 0.05 {
		sev := finding.Info
		if *f >= 0.2 {
			sev = finding.Warning
		}
		where := "deep in prompts"
		if shallow(a.DuplicateDepths) {
			where = "mostly in the first blocks (a shared system prompt)"
		}
		add(newFinding(sev, "duplicate-prefill", "fleet",
			"%.1f%% of stored tokens were prefilled again on another replica, %s: prefill a KV-aware router could save", *f*100, where))
	}
	if a.FirstBlockStores >= 20 && float64(a.FirstBlocksDistinct) >= 0.9*float64(a.FirstBlockStores) {
		add(newFinding(finding.Warning, "block-zero-breaker", "fleet",
			"%d of %d first blocks are distinct: something in the first block differs on every request (a date, a request id), so no prefix is ever shared",
			a.FirstBlocksDistinct, a.FirstBlockStores))
	}
	if f := a.RestoreFraction; f != nil && *f >= 0.1 {
		add(newFinding(finding.Warning, "eviction-churn", "fleet",
			"%.1f%% of stored blocks were stored again after being evicted on the same replica: the KV cache is too small for the working set", *f*100))
	}
	if a.ForgottenBlocks > 0 {
		add(newFinding(finding.Info, "state-bounded", "fleet",
			"%d blocks were forgotten to stay within --max-blocks; content analyses cover the most recent blocks only", a.ForgottenBlocks))
	}
	return out
}

// tsHint guesses the unit of an implausible timestamp.
func tsHint(ts float64) string {
	switch {
	case ts >= minPlausibleTS*1e3 && ts < maxPlausibleTS*1e3:
		return ": milliseconds sent as seconds?"
	case ts >= minPlausibleTS*1e6 && ts < maxPlausibleTS*1e6:
		return ": microseconds sent as seconds?"
	case ts >= minPlausibleTS*1e9 && ts < maxPlausibleTS*1e9:
		return ": nanoseconds sent as seconds?"
	case ts >= 0 && ts < minPlausibleTS:
		return ": seconds since boot, or a clock not set?"
	}
	return ""
}

// shallow reports whether most duplicated blocks sit in the first four blocks of a chain.
func shallow(ds []DepthCount) bool {
	var near, all uint64
	for _, d := range ds {
		all += d.Blocks
		if d.Depth < 4 {
			near += d.Blocks
		}
	}
	return all > 0 && near*2 > all
}

// NoneConnected reports whether a live tap had publishers and never connected to (or bound)
// any: then every figure is zero because nothing was measured.
func (r *Report) NoneConnected() bool {
	if len(r.Publishers) == 0 {
		return false
	}
	for _, p := range r.Publishers {
		if p.Connected == nil || *p.Connected || p.Messages > 0 {
			return false
		}
	}
	return true
}
