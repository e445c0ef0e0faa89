package report

import (
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// The JSON document of kvcheck tap: the report's own types, so that events' structs carry no
// output tags. Field names and order are the document's (schema_version 1); the doc types
// of plain records convert from events' types directly (same fields).

// tapDocument is the JSON document of kvcheck tap.
type tapDocument struct {
	SchemaVersion int `json:"schema_version"`
	tapReportDoc
}

type tapReportDoc struct {
	DurationSeconds float64           `json:"duration_seconds"`
	Publishers      []tapPublisherDoc `json:"publishers"`
	Analysis        tapAnalysisDoc    `json:"analysis"`
	Findings        []finding.Finding `json:"findings"`
}

type tapPublisherDoc struct {
	Endpoint             string                  `json:"endpoint"`
	Topic                string                  `json:"topic"`
	DPRank               *int64                  `json:"dp_rank"`
	Connected            *bool                   `json:"connected"`
	Listening            bool                    `json:"listening"`
	Reconnects           uint64                  `json:"reconnects"`
	ConnectError         string                  `json:"connect_error,omitempty"`
	ListenPeers          int                     `json:"listen_peers,omitempty"`
	Messages             uint64                  `json:"messages"`
	Batches              uint64                  `json:"batches"`
	Events               tapEventCountsDoc       `json:"events"`
	PayloadBytes         uint64                  `json:"payload_bytes"`
	FrameBytes           uint64                  `json:"frame_bytes"`
	BytesPerSec          float64                 `json:"bytes_per_sec"`
	FrameBytesPerSec     float64                 `json:"frame_bytes_per_sec"`
	EventsPerSec         float64                 `json:"events_per_sec"`
	StoredTokens         uint64                  `json:"stored_tokens"`
	TokensPerSec         float64                 `json:"tokens_per_sec"`
	BatchSizes           tapBatchSizesDoc        `json:"batch_sizes"`
	FirstSeq             *uint64                 `json:"first_seq"`
	LostBatches          uint64                  `json:"lost_batches"`
	Gaps                 uint64                  `json:"gaps"`
	Restarts             uint64                  `json:"restarts"`
	Duplicates           uint64                  `json:"duplicates"`
	LateBatches          uint64                  `json:"late_batches"`
	RecoveredBatches     uint64                  `json:"recovered_batches"`
	UnrecoverableBatches uint64                  `json:"unrecoverable_batches"`
	OwnDrops             uint64                  `json:"own_drops"`
	SequenceJumps        uint64                  `json:"sequence_jumps"`
	FirstJump            *tapGapDoc              `json:"first_jump,omitempty"`
	BadTimestamps        uint64                  `json:"bad_timestamps"`
	FirstBadTimestamp    float64                 `json:"first_bad_timestamp,omitempty"`
	BadBlockSizes        uint64                  `json:"bad_block_sizes"`
	OversizeMessages     uint64                  `json:"oversize_messages"`
	LargestMessage       uint64                  `json:"largest_oversize_message,omitempty"`
	Malformed            uint64                  `json:"malformed"`
	MalformedSamples     []tapMalformedSampleDoc `json:"malformed_samples"`
	BlockSizes           map[string]uint64       `json:"block_sizes"`
	Media                map[string]uint64       `json:"media"`
	LoRANames            map[string]uint64       `json:"lora_names"`
	SpecKinds            map[string]uint64       `json:"spec_kinds"`
	Eras                 map[string]uint64       `json:"eras"`
	WireEra              string                  `json:"wire_era"`
	HashForms            map[string]uint64       `json:"hash_forms"`
	HashForm             string                  `json:"hash_form"`
	SignedHashes         uint64                  `json:"signed_hashes"`
	UnknownTypes         map[string]uint64       `json:"unknown_types"`
	UnknownFields        uint64                  `json:"unknown_fields"`
	OddFields            uint64                  `json:"odd_fields"`
	BytesPerStoredToken  float64                 `json:"bytes_per_stored_token"`
	FirstEventTime       *time.Time              `json:"first_event_time"`
	LastEventTime        *time.Time              `json:"last_event_time"`
	ClockOffsetSeconds   *float64                `json:"clock_offset_seconds"`
	HashParity           *tapPublisherParityDoc  `json:"hash_parity,omitempty"`
}

type tapPublisherParityDoc struct {
	Checked uint64 `json:"checked_blocks"`
	Matched uint64 `json:"matched_blocks"`
}

type tapMalformedSampleDoc struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

type tapEventCountsDoc struct {
	BlockStored      uint64 `json:"BlockStored"`
	BlockRemoved     uint64 `json:"BlockRemoved"`
	AllBlocksCleared uint64 `json:"AllBlocksCleared"`
	Unknown          uint64 `json:"unknown"`
}

type tapBatchSizesDoc struct {
	Min  int    `json:"min"`
	Max  int    `json:"max"`
	Sum  uint64 `json:"sum"`
	N    uint64 `json:"n"`
	Le1  uint64 `json:"le_1"`
	Le4  uint64 `json:"le_4"`
	Le16 uint64 `json:"le_16"`
	Le64 uint64 `json:"le_64"`
	More uint64 `json:"more"`
}

type tapDepthCountDoc struct {
	Depth  int    `json:"depth"`
	Blocks uint64 `json:"blocks"`
}

type tapAnalysisDoc struct {
	StoredBlocks              uint64             `json:"stored_blocks"`
	StoredTokens              uint64             `json:"stored_tokens"`
	DuplicateBlocks           uint64             `json:"duplicate_blocks"`
	DuplicateTokens           uint64             `json:"duplicate_tokens"`
	DuplicateTokenFraction    *float64           `json:"duplicate_token_fraction"`
	DuplicateDepths           []tapDepthCountDoc `json:"duplicate_depths"`
	Restores                  uint64             `json:"restores"`
	RestoreFraction           *float64           `json:"restore_fraction"`
	StoredWhilePresent        uint64             `json:"stored_while_present"`
	RootStores                uint64             `json:"root_stores"`
	FirstBlockStores          uint64             `json:"first_block_stores"`
	FirstBlocksDistinct       uint64             `json:"first_blocks_distinct"`
	FirstBlocksPerMinute      float64            `json:"first_blocks_distinct_per_minute"`
	FirstBlockStoresPerMinute float64            `json:"first_block_stores_per_minute"`
	UnanchoredBlocks          uint64             `json:"unanchored_blocks"`
	UnalignedStores           uint64             `json:"unaligned_stores"`
	UnhashableStores          uint64             `json:"unhashable_stores"`
	UnknownRemovals           uint64             `json:"unknown_removals"`
	ForgottenBlocks           uint64             `json:"forgotten_blocks"`
	HashPairsDiffering        uint64             `json:"hash_pairs_differing"`
	BytesPerStoredToken       *float64           `json:"bytes_per_stored_token"`
	ExtrapolatedTokensPerSec  float64            `json:"extrapolated_tokens_per_sec,omitempty"`
	ExtrapolatedBytesPerSec   *float64           `json:"extrapolated_bytes_per_sec,omitempty"`
	HashParity                tapHashParityDoc   `json:"hash_parity"`
}

type tapHashParityDoc struct {
	SeedKnown                bool   `json:"seed_known"`
	Reproducible             *bool  `json:"reproducible"`
	ConsistentAcrossReplicas *bool  `json:"consistent_across_replicas"`
	CheckedBlocks            uint64 `json:"checked_blocks"`
	MatchedBlocks            uint64 `json:"matched_blocks"`
	ComparedAcrossReplicas   uint64 `json:"compared_across_replicas"`
}

type tapGapDoc struct {
	From uint64 `json:"From"`
	To   uint64 `json:"To"`
}

func newTapReportDoc(x events.Report) tapReportDoc {
	d := tapReportDoc{
		DurationSeconds: x.DurationSeconds,
		Analysis:        newTapAnalysisDoc(x.Analysis),
		Findings:        x.Findings,
	}
	if x.Publishers != nil {
		d.Publishers = make([]tapPublisherDoc, len(x.Publishers))
		for i, v := range x.Publishers {
			d.Publishers[i] = newTapPublisherDoc(v)
		}
	}
	return d
}

func newTapPublisherDoc(x events.Publisher) tapPublisherDoc {
	d := tapPublisherDoc{
		Endpoint:             x.Endpoint,
		Topic:                x.Topic,
		DPRank:               x.DPRank,
		Connected:            x.Connected,
		Listening:            x.Listening,
		Reconnects:           x.Reconnects,
		ConnectError:         x.ConnectError,
		ListenPeers:          x.ListenPeers,
		Messages:             x.Messages,
		Batches:              x.Batches,
		Events:               tapEventCountsDoc(x.Events),
		PayloadBytes:         x.PayloadBytes,
		FrameBytes:           x.FrameBytes,
		BytesPerSec:          x.BytesPerSec,
		FrameBytesPerSec:     x.FrameBytesPerSec,
		EventsPerSec:         x.EventsPerSec,
		StoredTokens:         x.StoredTokens,
		TokensPerSec:         x.TokensPerSec,
		BatchSizes:           tapBatchSizesDoc(x.BatchSizes),
		FirstSeq:             x.FirstSeq,
		LostBatches:          x.LostBatches,
		Gaps:                 x.Gaps,
		Restarts:             x.Restarts,
		Duplicates:           x.Duplicates,
		LateBatches:          x.LateBatches,
		RecoveredBatches:     x.RecoveredBatches,
		UnrecoverableBatches: x.UnrecoverableBatches,
		OwnDrops:             x.OwnDrops,
		SequenceJumps:        x.SequenceJumps,
		BadTimestamps:        x.BadTimestamps,
		FirstBadTimestamp:    x.FirstBadTimestamp,
		BadBlockSizes:        x.BadBlockSizes,
		OversizeMessages:     x.OversizeMessages,
		LargestMessage:       x.LargestMessage,
		Malformed:            x.Malformed,
		BlockSizes:           x.BlockSizes,
		Media:                x.Media,
		LoRANames:            x.LoRANames,
		SpecKinds:            x.SpecKinds,
		Eras:                 x.Eras,
		WireEra:              x.WireEra,
		HashForms:            x.HashForms,
		HashForm:             x.HashForm,
		SignedHashes:         x.SignedHashes,
		UnknownTypes:         x.UnknownTypes,
		UnknownFields:        x.UnknownFields,
		OddFields:            x.OddFields,
		BytesPerStoredToken:  x.BytesPerStoredToken,
		FirstEventTime:       x.FirstEventTime,
		LastEventTime:        x.LastEventTime,
		ClockOffsetSeconds:   x.ClockOffsetSeconds,
	}
	if x.FirstJump != nil {
		v := tapGapDoc(*x.FirstJump)
		d.FirstJump = &v
	}
	if x.MalformedSamples != nil {
		d.MalformedSamples = make([]tapMalformedSampleDoc, len(x.MalformedSamples))
		for i, v := range x.MalformedSamples {
			d.MalformedSamples[i] = tapMalformedSampleDoc(v)
		}
	}
	if x.HashParity != nil {
		v := tapPublisherParityDoc(*x.HashParity)
		d.HashParity = &v
	}
	return d
}

func newTapAnalysisDoc(x events.Analysis) tapAnalysisDoc {
	d := tapAnalysisDoc{
		StoredBlocks:              x.StoredBlocks,
		StoredTokens:              x.StoredTokens,
		DuplicateBlocks:           x.DuplicateBlocks,
		DuplicateTokens:           x.DuplicateTokens,
		DuplicateTokenFraction:    x.DuplicateTokenFraction,
		Restores:                  x.Restores,
		RestoreFraction:           x.RestoreFraction,
		StoredWhilePresent:        x.StoredWhilePresent,
		RootStores:                x.RootStores,
		FirstBlockStores:          x.FirstBlockStores,
		FirstBlocksDistinct:       x.FirstBlocksDistinct,
		FirstBlocksPerMinute:      x.FirstBlocksPerMinute,
		FirstBlockStoresPerMinute: x.FirstBlockStoresPerMinute,
		UnanchoredBlocks:          x.UnanchoredBlocks,
		UnalignedStores:           x.UnalignedStores,
		UnhashableStores:          x.UnhashableStores,
		UnknownRemovals:           x.UnknownRemovals,
		ForgottenBlocks:           x.ForgottenBlocks,
		HashPairsDiffering:        x.HashPairsDiffering,
		BytesPerStoredToken:       x.BytesPerStoredToken,
		ExtrapolatedTokensPerSec:  x.ExtrapolatedTokensPerSec,
		ExtrapolatedBytesPerSec:   x.ExtrapolatedBytesPerSec,
		HashParity:                tapHashParityDoc(x.HashParity),
	}
	if x.DuplicateDepths != nil {
		d.DuplicateDepths = make([]tapDepthCountDoc, len(x.DuplicateDepths))
		for i, v := range x.DuplicateDepths {
			d.DuplicateDepths[i] = tapDepthCountDoc(v)
		}
	}
	return d
}
