package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/events"
)

// DefaultRecordingBlocks bounds the engine hashes the recording adapter remembers to find a
// stored chain's parent: two generations of this many, about 80 bytes each, so 160 MB.
const DefaultRecordingBlocks = 1 << 20

// RecordingOptions configures ReadRecordings.
type RecordingOptions struct {
	// OutputTokens is every request's output length: events carry none
	// (DefaultOutputTokens when 0).
	OutputTokens int
	// MaxBlocks bounds the remembered engine hashes (DefaultRecordingBlocks when 0).
	MaxBlocks int
	// MaxBlockRefs is the most block references the trace may hold (MaxBlockRefs when 0):
	// recordings that expand to more are refused with an error naming the limit and
	// --max-block-refs.
	MaxBlockRefs int
	// MaxTraceRequests is the most requests the trace may hold (MaxRequests when 0):
	// recordings that make more are refused with an error naming the limit and
	// --max-trace-requests.
	MaxTraceRequests int
}

// ReadRecordings turns kvcheck tap recordings into a trace. Every BlockStored event is a
// prefill that happened on the replica that published it: its blocks, after the chain of its
// parent block, are one request's prompt. The chains are rebuilt by content: a block's key
// is chained from its token ids (and LoRA name and extra keys) and its parent's key, not the
// engine's hash, because without a pinned PYTHONHASHSEED replicas hash the same content
// differently (SPEC §2.2). A stored event that extends the chain the same replica's previous
// event for a request ended (chunked prefill, blocks filled during decode) continues that
// request rather than starting one: counting it as a new request would credit hits the engine
// never had.
//
// The result is a lower bound (Trace.LowerBound): a request whose prompt was all in cache
// stores nothing, and vLLM does not report hits by default (SPEC §1.7), so the recording never
// shows it. Recordings are merged by receive time, as kvcheck tap --from does, into one stream
// per publisher (source and topic): consecutive recordings of a fleet continue each other, and
// a batch in two overlapping recordings counts once.
//
// Memory: one record at a time, 2*MaxBlocks remembered engine hashes (about 80 bytes each),
// and the trace: 8 bytes per block reference plus about 100 per request, up to
// opts.MaxBlockRefs references and opts.MaxTraceRequests requests.
func ReadRecordings(ctx context.Context, recs []events.Recording, opts RecordingOptions) (*Trace, error) {
	if opts.OutputTokens <= 0 {
		opts.OutputTokens = DefaultOutputTokens
	}
	if opts.MaxBlocks <= 0 {
		opts.MaxBlocks = DefaultRecordingBlocks
	}
	if opts.MaxBlockRefs <= 0 {
		opts.MaxBlockRefs = MaxBlockRefs
	}
	if opts.MaxTraceRequests <= 0 {
		opts.MaxTraceRequests = MaxRequests
	}
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Name
	}
	rp := &replay{
		opts:  opts,
		pubs:  map[pubID]*publisher{},
		index: newTwoGen(opts.MaxBlocks),
		t: &Trace{
			Name: strings.Join(names, ", "), Format: "recording", PrefixInfo: true, LowerBound: true,
			maxRequests: opts.MaxTraceRequests,
		},
		first: math.Inf(1),
		seed:  maphash.MakeSeed(),
	}
	if err := rp.merge(ctx, recs); err != nil {
		return nil, err
	}
	return rp.finish()
}

// pubID names one publisher: the socket it came from and its topic.
type pubID struct{ source, topic string }

type publisher struct {
	id      uint32
	seq     uint64
	seen    bool
	lost    uint64
	restart int
	// recent maps the latest sequence numbers to a hash of their payload, to tell a batch
	// seen twice from a restarted publisher reusing its numbers.
	recent map[uint64]uint64
}

// maxRecent bounds each publisher's remembered sequence numbers.
const maxRecent = 1 << 16

// blockRef locates a remembered engine block: which request stored it and where in that
// request's chain it sits.
type blockRef struct {
	req int32
	pos int32
}

// indexKey is an engine hash made specific to its publisher: hashes are only meaningful
// within one engine. One uint64 keeps the map on its fast path; a false match needs a 64-bit
// collision.
func indexKey(pub uint32, hash uint64) uint64 {
	return hash ^ mix64(uint64(pub)+1)
}

// twoGen is a map bounded by keeping two generations: when the current one fills, it becomes
// the old one and the oldest is dropped, so recently used entries survive.
type twoGen struct {
	cur, old map[uint64]blockRef
	max      int
	dropped  int64
}

func newTwoGen(max int) *twoGen {
	return &twoGen{cur: make(map[uint64]blockRef), old: map[uint64]blockRef{}, max: max}
}

func (g *twoGen) get(k uint64) (blockRef, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.old[k]
	if ok {
		g.put(k, v)
	}
	return v, ok
}

func (g *twoGen) put(k uint64, v blockRef) {
	if len(g.cur) >= g.max {
		g.dropped += int64(len(g.old))
		g.old, g.cur = g.cur, make(map[uint64]blockRef, g.max/4)
	}
	g.cur[k] = v
}

// replay holds the adapter's state across recordings.
type replay struct {
	opts  RecordingOptions
	t     *Trace
	pubs  map[pubID]*publisher
	index *twoGen
	first float64
	refs  int

	pubOf []uint32 // the publisher of each request, while the trace is built
	// pending holds single-block stores until an event of several blocks gives the block
	// size (see store).
	pending []pendingStore
	seed    maphash.Seed
	batch   events.Batch
	toks    []uint32

	messages, malformed, undecodable, recovered, ownDrops, duplicates int64
	stored, removed, cleared, unknownTypes                            int64
	continued, orphans, skippedMedium, skippedGroup                   int64
	irregular, otherBlockSize, emptyStores                            int64
	ends                                                              []string
	firstDecodeErr                                                    string
}

// merge reads the recordings together in receive-time order (events.Merge), as kvcheck tap
// --from does, so that recordings taken at the same time by several taps interleave, and one
// publisher seen by two of them counts once.
func (rp *replay) merge(ctx context.Context, recs []events.Recording) error {
	m, err := events.NewMerge(recs)
	if err != nil {
		return err
	}
	for m.Next(ctx) {
		rec := m.Record()
		if rec.OwnDrops > 0 {
			rp.ownDrops += int64(rec.OwnDrops)
			continue
		}
		if err := rp.message(&rec.Message, m.Name()); err != nil {
			return err
		}
	}
	if err := m.Err(); err != nil {
		return err
	}
	// A recording read in part (cut short, records read past, a record it could not read,
	// recordings concatenated) says so in the trace's notes, with what was read.
	for _, e := range m.Ends() {
		for _, f := range e.Findings() {
			rp.ends = append(rp.ends, e.Name+": "+f.Message)
		}
	}
	return nil
}

func (rp *replay) message(m *events.Message, name string) error {
	rp.messages++
	if m.Frames != 3 || m.SeqLen != 8 {
		rp.malformed++
		return nil
	}
	id := pubID{m.Source, string(m.Topic)}
	p, ok := rp.pubs[id]
	if !ok {
		p = &publisher{id: uint32(len(rp.pubs)), recent: map[uint64]uint64{}}
		rp.pubs[id] = p
	}
	if m.Recovered {
		rp.recovered++
	}
	sum := maphash.Bytes(rp.seed, m.Payload)
	if prev, ok := p.recent[m.Seq]; ok && prev == sum {
		// The same batch twice: two taps, or a recording given twice.
		rp.duplicates++
		return nil
	}
	if len(p.recent) >= maxRecent {
		clear(p.recent)
	}
	p.recent[m.Seq] = sum
	switch {
	case !p.seen:
		p.seq, p.seen = m.Seq, true
	case m.Seq > p.seq:
		p.lost += m.Seq - p.seq - 1
		p.seq = m.Seq
	case p.lost > 0:
		// A late or recovered batch fills a gap.
		p.lost--
	default:
		p.restart++
		p.seq = m.Seq
	}
	if err := events.Decode(m.Payload, &rp.batch); err != nil {
		rp.undecodable++
		if rp.firstDecodeErr == "" {
			rp.firstDecodeErr = fmt.Sprintf("%s, publisher %s seq %d: %v", name, m.Source, m.Seq, err)
		}
		return nil
	}
	at := rp.batch.TS
	if at <= 0 || math.IsNaN(at) || math.IsInf(at, 0) {
		at = float64(m.RecvNanos) / 1e9
	}
	for i := range rp.batch.Events {
		ev := &rp.batch.Events[i]
		switch ev.Type {
		case events.TypeBlockStored:
			rp.stored++
			if err := rp.store(p, ev, at, name); err != nil {
				return err
			}
		case events.TypeBlockRemoved:
			rp.removed++
		case events.TypeAllBlocksCleared:
			rp.cleared++
		default:
			rp.unknownTypes++
		}
	}
	return nil
}

// store checks one BlockStored event and adds it (see add) once the block size is known.
func (rp *replay) store(p *publisher, ev *events.Event, at float64, name string) error {
	switch {
	case len(ev.Medium) > 0 && string(ev.Medium) != "GPU":
		// An offload tier copies blocks the GPU pool already reported.
		rp.skippedMedium++
		return nil
	case ev.HasGroupIdx && ev.GroupIdx != 0:
		// Hybrid models send one event per KV-cache group for the same tokens.
		rp.skippedGroup++
		return nil
	case len(ev.TokenIDs) == 0 || ev.BlockSize <= 0 || len(ev.BlockHashes) == 0:
		rp.emptyStores++
		return nil
	case ev.BlockSize > int64(len(ev.TokenIDs)) || int64(len(ev.TokenIDs)) != int64(len(ev.BlockHashes))*ev.BlockSize:
		// (The first test also keeps the product from overflowing into a false match.)
		// Masked blocks or partial-block entries: hashes and tokens do not line up.
		rp.irregular++
		return nil
	}
	if rp.t.BlockSize == 0 {
		// Only the last block of a request can be a partial-block entry, with a block size
		// below the engine's: the first event of two or more blocks sets the block size, and
		// single-block events wait for it (a few of them; past that, the first one's).
		if len(ev.BlockHashes) < 2 && len(rp.pending) < maxPending {
			rp.pending = append(rp.pending, pendingStore{p: p, ev: cloneEvent(ev), at: at})
			return nil
		}
		rp.t.BlockSize = int(ev.BlockSize)
		if len(ev.BlockHashes) < 2 && len(rp.pending) > 0 {
			rp.t.BlockSize = int(rp.pending[0].ev.BlockSize)
		}
		if err := rp.flushPending(name); err != nil {
			return err
		}
	}
	return rp.add(p, ev, at, name)
}

// maxPending bounds the single-block stores held until the block size is known.
const maxPending = 1024

// pendingStore is a single-block store held until the block size is known.
type pendingStore struct {
	p  *publisher
	ev events.Event
	at float64
}

// cloneEvent copies what add reads of an event out of the payload it points into.
func cloneEvent(ev *events.Event) events.Event {
	c := events.Event{
		Type: ev.Type, Parent: ev.Parent, HasParent: ev.HasParent, BlockSize: ev.BlockSize,
		BlockHashes: slices.Clone(ev.BlockHashes), TokenIDs: slices.Clone(ev.TokenIDs),
		LoRAName: bytes.Clone(ev.LoRAName), HasLoRAName: ev.HasLoRAName, ExtraKeys: bytes.Clone(ev.ExtraKeys),
	}
	c.Parent.Bin = nil
	for i := range c.BlockHashes {
		c.BlockHashes[i].Bin = nil
	}
	return c
}

// flushPending adds the held single-block stores, in their order, now that the block size is
// known.
func (rp *replay) flushPending(name string) error {
	pending := rp.pending
	rp.pending = nil
	for i := range pending {
		if err := rp.add(pending[i].p, &pending[i].ev, pending[i].at, name); err != nil {
			return err
		}
	}
	return nil
}

// add turns one well-formed store into a new request, or the continuation of one.
func (rp *replay) add(p *publisher, ev *events.Event, at float64, name string) error {
	bs := int(ev.BlockSize)
	if bs != rp.t.BlockSize {
		rp.otherBlockSize++
		return nil
	}
	rp.toks = rp.toks[:0]
	for _, id := range ev.TokenIDs {
		if id < 0 || id > math.MaxUint32 {
			rp.irregular++
			return nil
		}
		rp.toks = append(rp.toks, uint32(id))
	}
	var extra [][]any
	if ev.ExtraKeys != nil {
		var err error
		if extra, err = events.ExtraKeys(ev.ExtraKeys); err != nil {
			rp.irregular++
			return nil
		}
	}

	reqs := &rp.t.Requests
	var (
		parentKey uint64
		idx       = -1
		prefix    []uint64
	)
	if ev.ParentIsRoot() {
		if len(ev.LoRAName) > 0 {
			// The LoRA name enters every block's hash in vLLM; here it seeds the chain.
			parentKey = chainBytes(0, ev.LoRAName)
		}
	} else if ref, ok := rp.index.get(indexKey(p.id, ev.Parent.Value)); ok && int(ref.req) < len(*reqs) && int(ref.pos) < len((*reqs)[ref.req].Blocks) {
		owner := &(*reqs)[ref.req]
		parentKey = owner.Blocks[ref.pos]
		if int(ref.pos) == len(owner.Blocks)-1 && rp.pubOf[ref.req] == p.id {
			idx = int(ref.req) // the parent ends this request: continue it
			rp.continued++
		} else {
			prefix = owner.Blocks[:ref.pos+1]
		}
	} else {
		// The parent was stored before the recording began, lost in a gap, or forgotten: the
		// chain starts here, and only this publisher's later events can match it.
		rp.orphans++
		parentKey = mix64(uint64(p.id)<<32 ^ ev.Parent.Value ^ 0x5bd1e995)
	}
	// A new request copies its parent's chain: that counts as much as the blocks stored.
	if rp.refs+len(prefix)+len(ev.BlockHashes) > rp.opts.MaxBlockRefs {
		return refsLimitError("recording "+name, rp.opts.MaxBlockRefs, "replay fewer or shorter recordings")
	}
	if idx < 0 {
		if len(*reqs) >= rp.opts.MaxTraceRequests {
			return requestsLimitError("recording "+name, rp.opts.MaxTraceRequests, "replay fewer or shorter recordings")
		}
		blocks := make([]uint64, len(prefix), len(prefix)+len(ev.BlockHashes))
		copy(blocks, prefix)
		*reqs = append(*reqs, Request{Arrival: at, Blocks: blocks, OutputTokens: rp.opts.OutputTokens, N: 1})
		rp.pubOf = append(rp.pubOf, p.id)
		idx = len(*reqs) - 1
		rp.first = min(rp.first, at)
	}
	r := &(*reqs)[idx]
	for i, h := range ev.BlockHashes {
		key := chainKey(parentKey, rp.toks[i*bs:(i+1)*bs])
		if i < len(extra) && extra[i] != nil {
			key = chainBytes(key, []byte(fmt.Sprint(extra[i]...)))
		}
		r.Blocks = append(r.Blocks, key)
		rp.index.put(indexKey(p.id, h.Value), blockRef{req: int32(idx), pos: int32(len(r.Blocks) - 1)})
		parentKey = key
	}
	rp.refs += len(ev.BlockHashes) + len(prefix)
	r.InputTokens = len(r.Blocks) * bs
	return nil
}

// chainBytes folds bytes into a chain key.
func chainBytes(h uint64, b []byte) uint64 {
	h = mix64(h ^ uint64(len(b))<<40 ^ 0x27d4eb2f165667c5)
	for _, c := range b {
		h = mix64(h ^ uint64(c))
	}
	return h
}

func (rp *replay) finish() (*Trace, error) {
	t := rp.t
	if len(rp.pending) > 0 {
		t.BlockSize = int(rp.pending[0].ev.BlockSize)
		if err := rp.flushPending(t.Name); err != nil {
			return nil, err
		}
	}
	if len(t.Requests) == 0 {
		msg := fmt.Sprintf("recording %s: no usable BlockStored event in %d messages", t.Name, rp.messages)
		if rp.firstDecodeErr != "" {
			msg += " (first undecodable: " + rp.firstDecodeErr + ")"
		}
		if len(rp.ends) > 0 {
			msg += " (" + strings.Join(rp.ends, "; ") + ")"
		}
		return nil, errors.New(msg + ": record a fleet with KV events on (--kv-events-config) while it serves traffic")
	}
	t.Notes = append(t.Notes,
		"lower bound: vLLM's KV events report stored blocks, not hits (unless every request asks for kv_cache_report_mode full); a request whose prompt was all cached stores nothing and is missing here",
		fmt.Sprintf("%d BlockStored events from %d publishers became %d requests (%s the request its parent block ended: chunked prefill or decode)", rp.stored, len(rp.pubs), len(t.Requests), count(rp.continued, "event continued", "events continued")),
		fmt.Sprintf("blocks keyed by content (token ids, LoRA name, extra keys), not engine hashes; output lengths: --output-tokens %d (events carry none); no sessions", rp.opts.OutputTokens),
	)
	if rp.orphans > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s a parent block the recording never showed (stored before it began, or lost): replayed from there, matching only that publisher's later events", count(rp.orphans, "stored chain continues", "stored chains continue")))
	}
	var lost uint64
	restarts := 0
	for _, p := range rp.pubs {
		lost += p.lost
		restarts += p.restart
	}
	if lost > 0 {
		t.Notes = append(t.Notes, count(int64(lost), "batch", "batches")+" lost in sequence gaps: their prefills are missing")
	}
	if rp.ownDrops > 0 {
		t.Notes = append(t.Notes, count(rp.ownDrops, "message", "messages")+" dropped by the tap itself: their prefills are missing")
	}
	if restarts > 0 {
		t.Notes = append(t.Notes, count(int64(restarts), "publisher restart", "publisher restarts")+" (sequence went back)")
	}
	if rp.duplicates > 0 {
		t.Notes = append(t.Notes, count(rp.duplicates, "batch was", "batches were")+" seen twice (overlapping recordings) and counted once")
	}
	if rp.recovered > 0 {
		t.Notes = append(t.Notes, count(rp.recovered, "batch was", "batches were")+" recovered from replay sockets")
	}
	skipped := []struct {
		n    int64
		what string
	}{
		{rp.malformed, "malformed messages (not 3 frames with an 8-byte sequence)"},
		{rp.undecodable, "undecodable batches (first: " + rp.firstDecodeErr + ")"},
		{rp.skippedMedium, "stores to an offload tier (medium other than GPU)"},
		{rp.skippedGroup, "stores of KV-cache groups other than 0 (hybrid models)"},
		{rp.emptyStores, "stores without tokens (connector placeholders)"},
		{rp.irregular, "stores whose tokens do not fill their hashes' blocks (masked or partial blocks)"},
		{rp.otherBlockSize, fmt.Sprintf("stores with a block size other than %d", t.BlockSize)},
		{rp.unknownTypes, "events of unknown types"},
	}
	for _, s := range skipped {
		if s.n > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("skipped %d: %s", s.n, s.what))
		}
	}
	if rp.index.dropped > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d engine hashes were forgotten to bound memory; later children of them count as new chains", rp.index.dropped))
	}
	t.Notes = append(t.Notes, rp.ends...)
	for i := range t.Requests {
		t.Requests[i].Arrival -= rp.first
	}
	if t.sortByArrival() {
		t.Notes = append(t.Notes, "batches from different publishers interleave out of time order; requests were sorted by time")
	}
	return t, nil
}
