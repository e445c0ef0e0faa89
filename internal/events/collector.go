package events

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/kvcheck/kvcheck/internal/blockhash"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// DefaultMaxBlocks bounds the tracked block state: about an hour of a busy replica storing
// 250 blocks a second, at about 145 bytes per tracked block (see BENCHMARKS.md).
const DefaultMaxBlocks = 1 << 20

// Options configure a Collector.
type Options struct {
	// MaxBlocks bounds the blocks tracked for the analyses (0 means DefaultMaxBlocks), for
	// the engine-hash index and the content index each. Blocks not used for the longest are
	// forgotten first, half the bound at a time, and counted in Analysis.ForgottenBlocks.
	MaxBlocks int
	// HashSeed is the PYTHONHASHSEED the engines run with, for the hash-parity check; nil
	// means unknown, and then only consistency across replicas is checked.
	HashSeed *string
	// TokensPerSec, when positive, asks for the bandwidth extrapolated to that store rate.
	TokensPerSec float64
	// Ordered says each publisher's batches arrive in sequence order, except replayed ones:
	// true for a live tap (one ordered connection per publisher) and one recording, false for
	// merged recordings, where a batch one tap lost can arrive late from another.
	Ordered bool
	// MaxMessage is the message-size bound the tap enforced (0 means DefaultMaxMessage), for
	// the findings.
	MaxMessage uint64
}

type pubKey struct{ source, topic string }

type pubState struct {
	Publisher
	seq      seqTracker
	firstTS  float64
	lastTS   float64
	offsetNs int64
	hasOff   bool
	tokens   uint64
	tsN      uint64 // batches with a plausible timestamp
	idx      int
	parityOK uint64
	parityN  uint64
	// eras and forms count by enum, turned into named maps for the report.
	eras  [EraMap + 1]uint64
	forms [HashBin + 1]uint64
	// blocks are this publisher's tracked blocks by engine hash; digests, the digests the
	// hash-parity check computed for them (only with a known seed), rotated with blocks.
	blocks                       generations[blockInfo]
	digests                      generations[blockhash.Digest]
	media, loras, kinds, unknown names
	// blockSizes is kept by number and turned into strings for the report; lastSize points at
	// the count of lastSizeOf, the size of the last event, which every event of a steady
	// stream shares (nil: not counted, or not looked up yet).
	blockSizes map[int64]*uint64
	lastSize   *uint64
	lastSizeOf int64
}

// names counts a handful of distinct values (media, LoRA names, spec kinds) seen on every
// event. A slice searched in order is cheaper than a map here and converts a value to a string
// only the first time it appears.
type names struct {
	keys   []string
	counts []uint64
}

// maxNames bounds names on a stream of ever-new values.
const maxNames = 1024

func (n *names) add(b []byte) {
	for i, k := range n.keys {
		if k == string(b) {
			n.counts[i]++
			return
		}
	}
	if len(n.keys) < maxNames {
		n.keys = append(n.keys, string(b))
		n.counts = append(n.counts, 1)
	}
}

func (n *names) fill(m map[string]uint64) {
	for i, k := range n.keys {
		m[k] = n.counts[i]
	}
}

// blockInfo is what a publisher's block index keeps of a block. It holds no pointer, so the
// collector does not scan the index and storing an entry costs no write barrier; the block's
// digest, when the hash-parity check computed one, is in the publisher's digests under the
// same engine hash (hasDigest).
type blockInfo struct {
	content   uint64
	depth     int32
	hasDigest bool
}

type contentInfo struct {
	present uint64 // publishers holding the block now (bit = publisher index mod 64)
	ever    uint64 // publishers that ever stored it
	hash    uint64 // the engine hash of the first store, for the cross-replica comparison
	hashPub int32
}

// Collector accounts for every message of a tap and runs the analyses. It is not safe for
// concurrent use: one goroutine feeds it.
type Collector struct {
	opts     Options
	pubs     map[pubKey]*pubState
	order    []*pubState
	batch    Batch
	noneHash blockhash.Digest
	last     *pubState

	// curBlocks counts the blocks in the current generation of every publisher's map.
	curBlocks int
	contents  generations[contentInfo]
	firstBlk  table[struct{}] // distinct first blocks, up to MaxBlocks

	a      Analysis
	seed   maphash.Seed
	secret [6]uint64 // contentKey's, random per collector
}

// NewCollector returns an empty collector.
func NewCollector(o Options) *Collector {
	if o.MaxBlocks <= 0 {
		o.MaxBlocks = DefaultMaxBlocks
	}
	if o.MaxMessage == 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	c := &Collector{
		opts:     o,
		pubs:     map[pubKey]*pubState{},
		contents: newFilteredGenerations[contentInfo](max(1, o.MaxBlocks/2)),
		seed:     maphash.MakeSeed(),
	}
	for i := range c.secret {
		// 64 random bits each, from the seed.
		c.secret[i] = maphash.Comparable(c.seed, i)
	}
	if o.HashSeed != nil {
		c.noneHash = blockhash.NoneHash(*o.HashSeed)
	}
	return c
}

func (c *Collector) pub(source string, topic []byte) *pubState {
	// Messages come in runs from one publisher: check the last one before building a key.
	if p := c.last; p != nil && p.Endpoint == source && p.Topic == string(topic) {
		return p
	}
	if p, ok := c.pubs[pubKey{source, string(topic)}]; ok {
		c.last = p
		return p
	}
	// A source registered before it sent anything takes the topic of its first message.
	if p, ok := c.pubs[pubKey{source, ""}]; ok && p.Messages == 0 && topic != nil {
		delete(c.pubs, pubKey{source, ""})
		p.Topic = string(topic)
		c.pubs[pubKey{source, string(topic)}] = p
		return p
	}
	if len(c.order) >= maxPublishers {
		// A listener can be sent any number of topics: past the bound they share one entry.
		key := pubKey{source, otherTopics}
		if p, ok := c.pubs[key]; ok {
			return p
		}
		topic = []byte(otherTopics)
	}
	p := &pubState{idx: len(c.order), blockSizes: map[int64]*uint64{}, blocks: newGenerations[blockInfo]()}
	p.Publisher = newPublisher(source, string(topic))
	p.seq.ordered = c.opts.Ordered
	c.pubs[pubKey{source, string(topic)}] = p
	c.order = append(c.order, p)
	return p
}

// maxPublishers bounds the publishers accounted apart; otherTopics names the entry that takes
// the rest.
const (
	maxPublishers = 1024
	otherTopics   = "(other topics)"
)

// Register makes a publisher known before any message arrives, so a silent one is reported.
func (c *Collector) Register(source string) { c.pub(source, nil) }

// Connection records what the tap's socket for source went through: how many times it
// connected (or bound, for a listener) and the last error when it could not.
func (c *Collector) Connection(source string, listen bool, connects uint64, lastErr string) {
	for _, p := range c.order {
		if p.Endpoint != source {
			continue
		}
		ok := connects > 0
		p.Connected = &ok
		p.Listening = listen
		p.Reconnects = max(connects, 1) - 1
		if !ok {
			p.ConnectError = lastErr
		}
	}
}

// OwnDrops records messages the tap itself dropped for source (its queue was full).
func (c *Collector) OwnDrops(source string, n uint64) {
	for _, p := range c.order {
		if p.Endpoint == source {
			p.OwnDrops += n
			return
		}
	}
	c.pub(source, nil).OwnDrops += n
}

// ListenPeers records the most publishers connected at once to the listener at source.
func (c *Collector) ListenPeers(source string, n int) {
	for _, p := range c.order {
		if p.Endpoint == source {
			p.ListenPeers = n
		}
	}
}

// OversizeMessages records connections dropped for source because the peer announced messages
// over the bound, the largest of which claimed largest bytes.
func (c *Collector) OversizeMessages(source string, n, largest uint64) {
	p := c.sourcePub(source)
	p.OversizeMessages += n
	p.LargestMessage = max(p.LargestMessage, largest)
}

// sourcePub returns the first publisher accounted under source, registering one if none is.
func (c *Collector) sourcePub(source string) *pubState {
	for _, p := range c.order {
		if p.Endpoint == source {
			return p
		}
	}
	return c.pub(source, nil)
}

// Add accounts for one message. It returns the missing range when the message reveals a gap
// (Gap.To >= Gap.From), so the caller may ask a replay socket for it.
func (c *Collector) Add(m *Message) (Gap, bool) {
	for _, d := range m.OwnDropped {
		c.pub(m.Source, []byte(d.Topic)).seq.skip(d.From, d.To)
	}
	p := c.pub(m.Source, m.Topic)
	p.Messages++
	p.FrameBytes += uint64(m.Bytes())
	if m.Frames != 3 || m.SeqLen != 8 {
		p.Malformed++
		p.noteMalformed(fmt.Sprintf("message with %d frames and a %d-byte sequence, want 3 frames and 8 bytes", m.Frames, m.SeqLen), m.Seq)
		return Gap{}, false
	}
	verdict, gap := p.seq.observe(m.Seq, c.payloadID(m.Payload), m.Recovered)
	if verdict == seqDuplicate {
		return Gap{}, false
	}
	if m.Recovered && verdict == seqLate {
		p.RecoveredBatches++
	}
	if err := Decode(m.Payload, &c.batch); err != nil {
		p.Malformed++
		p.noteMalformed(err.Error(), m.Seq)
		return gap, verdict == seqGap
	}
	p.PayloadBytes += uint64(len(m.Payload))
	c.account(p, m)
	return gap, verdict == seqGap
}

// payloadID tells a batch sent twice from a different batch with the same sequence number
// (a restarted publisher). The head holds the batch's timestamp, so hashing it and the length
// suffices, and keeps the cost independent of the payload size.
func (c *Collector) payloadID(p []byte) uint64 {
	head := p[:min(len(p), 128)]
	return maphash.Bytes(c.seed, head) ^ uint64(len(p))*0x9e3779b97f4a7c15
}

// countSize counts an event's block size, up to maxNames distinct sizes.
func (p *pubState) countSize(bs int64) {
	if p.lastSize == nil || bs != p.lastSizeOf {
		n, ok := p.blockSizes[bs]
		if !ok && len(p.blockSizes) < maxNames {
			n = new(uint64)
			p.blockSizes[bs] = n
		}
		p.lastSize, p.lastSizeOf = n, bs
	}
	if p.lastSize != nil {
		*p.lastSize++
	}
}

func (p *pubState) noteMalformed(reason string, seq uint64) {
	if len(p.MalformedSamples) < 5 {
		p.MalformedSamples = append(p.MalformedSamples, MalformedSample{Seq: seq, Reason: reason})
	}
}

func (c *Collector) account(p *pubState, m *Message) {
	b := &c.batch
	p.Batches++
	if b.HasDPRank && (p.DPRank == nil || *p.DPRank != b.DPRank) {
		// A new pointer only when the rank changes: one allocation a batch otherwise.
		r := b.DPRank
		p.DPRank = &r
	}
	if plausibleTS(b.TS, m.RecvNanos) {
		if p.tsN == 0 || b.TS < p.firstTS {
			p.firstTS = b.TS
		}
		p.tsN++
		p.lastTS = max(p.lastTS, b.TS)
		off := m.RecvNanos - int64(b.TS*1e9)
		if m.RecvNanos > 0 && (!p.hasOff || off < p.offsetNs) {
			p.offsetNs, p.hasOff = off, true
		}
	} else {
		if p.BadTimestamps == 0 {
			p.FirstBadTimestamp = b.TS
		}
		p.BadTimestamps++
	}
	p.BatchSizes.add(len(b.Events))
	for i := range b.Events {
		ev := &b.Events[i]
		p.Events.add(ev.Type)
		p.eras[ev.Era]++
		p.UnknownFields += uint64(ev.Unknown)
		p.OddFields += uint64(ev.Odd)
		if ev.Type == TypeUnknown {
			p.unknown.add(ev.Tag)
			continue
		}
		for _, h := range ev.BlockHashes {
			p.forms[h.Form]++
			if h.Negative {
				p.SignedHashes++
			}
		}
		switch ev.Type {
		case TypeBlockStored:
			if ev.BlockSize <= 0 {
				p.BadBlockSizes++
			}
			p.countSize(ev.BlockSize)
			if ev.Medium != nil {
				p.media.add(ev.Medium)
			}
			if ev.HasLoRAName {
				p.loras.add(ev.LoRAName)
			}
			if ev.SpecKind != nil {
				p.kinds.add(ev.SpecKind)
			}
			p.tokens += uint64(len(ev.TokenIDs))
			c.stored(p, ev)
		case TypeBlockRemoved:
			c.removed(p, ev)
		case TypeAllBlocksCleared:
			c.cleared(p)
		}
	}
}

// contentKey chains our own key over the tokens of a block: engine hashes differ between
// replicas without a pinned seed, token content does not. The key is process-local (keyed by
// the collector's random secrets), which is all the analyses need. lora is the key of the
// event's LoRA name (0 for none), computed once per event.
//
// It mixes four token ids (as vLLM's 32-bit ids) at a time with one 64x64->128-bit multiply,
// folded (the wyhash construction), chained through the state: about a quarter of the cost of
// building the bytes and hashing them with maphash, which was a tenth of the tap's CPU on a
// busy stream. The state is secret, so which token sequences collide cannot be chosen.
func (c *Collector) contentKey(parent uint64, tokens []int64, lora uint64) uint64 {
	k := &c.secret
	h := parent ^ lora ^ k[0]
	i := 0
	for ; i+4 <= len(tokens); i += 4 {
		a := uint64(uint32(tokens[i])) | uint64(uint32(tokens[i+1]))<<32
		b := uint64(uint32(tokens[i+2])) | uint64(uint32(tokens[i+3]))<<32
		h = fold(a^k[1], b^h)
	}
	for ; i < len(tokens); i++ {
		h = fold(uint64(uint32(tokens[i]))^k[2], h^k[3])
	}
	return fold(h^k[4], uint64(len(tokens))^k[5])
}

// fold multiplies a and b to 128 bits and xors the halves.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// loraKey keys a LoRA name for contentKey: 0 for none, so a block without one keys the same as
// before LoRA names were sent.
func (c *Collector) loraKey(name []byte) uint64 {
	if len(name) == 0 {
		return 0
	}
	return maphash.Bytes(c.seed, name) | 1
}

func (c *Collector) stored(p *pubState, ev *Event) {
	a := &c.a
	bs := int(ev.BlockSize)
	if bs <= 0 || len(ev.TokenIDs) == 0 {
		a.UnhashableStores++
		return
	}
	n := len(ev.BlockHashes)
	if len(ev.TokenIDs) != n*bs {
		// Hybrid models skip masked blocks, partial blocks are shorter: the tokens cannot be
		// matched to hashes block by block.
		a.UnalignedStores++
		return
	}
	var parentKey uint64
	var depth int32
	var parentDigest blockhash.Digest
	hasParentDigest := false
	if !ev.ParentIsRoot() {
		info, ok := p.blocks.get(ev.Parent.Value)
		if !ok {
			a.UnanchoredBlocks += uint64(n)
			return
		}
		parentKey, depth = info.content, info.depth+1
		if info.hasDigest {
			parentDigest, hasParentDigest = p.digests.get(ev.Parent.Value)
		}
	} else {
		a.RootStores++
	}
	var extra [][]any
	extraOK := true
	if ev.ExtraKeys != nil {
		var err error
		if extra, err = ExtraKeys(ev.ExtraKeys); err != nil {
			extraOK = false
		}
	} else if ev.HasLoRAName {
		extra = make([][]any, n)
		for i := range extra {
			extra[i] = []any{string(ev.LoRAName)}
		}
	}
	parity := c.opts.HashSeed != nil && extraOK && (ev.ParentIsRoot() || hasParentDigest)
	var digest blockhash.Digest
	if parity {
		if ev.ParentIsRoot() {
			digest = c.noneHash
		} else {
			digest = parentDigest
		}
	}
	lora := c.loraKey(ev.LoRAName)
	for i := range n {
		tok := ev.TokenIDs[i*bs : (i+1)*bs]
		key := c.contentKey(parentKey, tok, lora)
		h := ev.BlockHashes[i]
		a.StoredBlocks++
		a.StoredTokens += uint64(bs)
		if depth == 0 {
			a.FirstBlockStores++
			if c.firstBlk.n < c.opts.MaxBlocks {
				c.firstBlk.put(key)
			}
		}
		hasDigest := false
		if parity {
			var ek []any
			if i < len(extra) {
				ek = extra[i]
			}
			d, err := blockhash.Block(digest, tok, ek)
			if err != nil {
				parity = false
			} else {
				p.parityN++
				if (h.Form == HashInt && d.Wire() == h.Value) || (h.Form == HashBin && string(h.Bin) == string(d[:])) {
					p.parityOK++
				}
				digest, hasDigest = d, true
			}
		}
		c.content(p, key, h.Value, bs, depth)
		if hasDigest {
			p.digests.put(h.Value, digest)
		}
		c.track(p, h.Value, blockInfo{content: key, depth: depth, hasDigest: hasDigest})
		parentKey = key
		depth++
	}
}

func (c *Collector) content(p *pubState, key, hash uint64, bs int, depth int32) {
	a := &c.a
	bit := uint64(1) << (p.idx % 64)
	ci, ok := c.contents.ref(key, true)
	if !ok {
		*ci = contentInfo{hash: hash, hashPub: int32(p.idx)}
	} else {
		if ci.hashPub != int32(p.idx) {
			a.HashPairsCompared++
			if ci.hash != hash {
				a.HashPairsDiffering++
			}
		}
		switch {
		case ci.present&bit != 0:
			a.StoredWhilePresent++
		case ci.ever&bit != 0:
			a.Restores++
		}
		// Another replica holds the block right now: a KV-aware router could have sent the
		// request there instead of prefilling it here.
		if ci.present&^bit != 0 && ci.present&bit == 0 {
			a.DuplicateBlocks++
			a.DuplicateTokens += uint64(bs)
			a.duplicateDepth(int(depth))
		}
	}
	ci.present |= bit
	ci.ever |= bit
	if c.contents.curLen() >= max(1, c.opts.MaxBlocks/2) {
		c.a.ForgottenBlocks += uint64(c.contents.rotate())
	}
}

// trackedBlocks counts the blocks remembered under engine hashes, for tests of the bound.
func (c *Collector) trackedBlocks() int {
	n := 0
	for _, p := range c.order {
		n += p.blocks.len()
	}
	return n
}

// track remembers a block under its engine hash. The bound counts all publishers together:
// when their current generations hold half of it, every publisher forgets its older one.
func (c *Collector) track(p *pubState, hash uint64, info blockInfo) {
	n := p.blocks.curLen()
	p.blocks.put(hash, info)
	c.curBlocks += p.blocks.curLen() - n
	if c.curBlocks >= max(1, c.opts.MaxBlocks/2) {
		for _, pp := range c.order {
			pp.blocks.rotate()
			pp.digests.rotate()
		}
		c.curBlocks = 0
	}
}

func (c *Collector) removed(p *pubState, ev *Event) {
	bit := uint64(1) << (p.idx % 64)
	for _, h := range ev.BlockHashes {
		info, ok := p.blocks.get(h.Value)
		if !ok {
			c.a.UnknownRemovals++
			continue
		}
		if p.blocks.inCur(h.Value) {
			c.curBlocks--
		}
		p.blocks.del(h.Value)
		p.digests.del(h.Value)
		if ci, ok := c.contents.ref(info.content, false); ok {
			ci.present &^= bit
		}
	}
}

func (c *Collector) cleared(p *pubState) {
	bit := uint64(1) << (p.idx % 64)
	c.curBlocks -= p.blocks.curLen()
	p.blocks.clear()
	p.digests.clear()
	// A reset is not eviction: what this replica stores again afterwards is not churn.
	c.contents.each(func(_ uint64, ci *contentInfo) {
		ci.present &^= bit
		ci.ever &^= bit
	})
}

// Report summarises everything seen so far over the given wall-clock duration.
func (c *Collector) Report(d time.Duration) *Report {
	secs := d.Seconds()
	r := &Report{DurationSeconds: secs, Publishers: []Publisher{}, Findings: []finding.Finding{}}
	var payload, tokens uint64
	for _, p := range c.order {
		pp := p.Publisher
		pp.LostBatches = p.seq.lost
		pp.Gaps = p.seq.gapCount
		pp.Restarts = p.seq.restarts
		pp.SequenceJumps = p.seq.jumps
		if p.seq.jumps > 0 {
			pp.FirstJump = &Gap{From: p.seq.jumpFrom, To: p.seq.jumpTo}
		}
		pp.Duplicates = p.seq.dups
		pp.LateBatches = p.seq.late
		pp.UnrecoverableBatches = pp.LostBatches - min(pp.LostBatches, pp.LateBatches)
		if p.seq.started {
			first := p.seq.first
			pp.FirstSeq = &first
		}
		if secs > 0 {
			pp.BytesPerSec = float64(pp.PayloadBytes) / secs
			pp.FrameBytesPerSec = float64(pp.FrameBytes) / secs
			pp.EventsPerSec = float64(pp.Events.Total()) / secs
			pp.TokensPerSec = float64(p.tokens) / secs
		}
		p.media.fill(pp.Media)
		p.loras.fill(pp.LoRANames)
		p.kinds.fill(pp.SpecKinds)
		p.unknown.fill(pp.UnknownTypes)
		for bs, n := range p.blockSizes {
			pp.BlockSizes[fmt.Sprint(bs)] = *n
		}
		pp.StoredTokens = p.tokens
		if p.tokens > 0 {
			pp.BytesPerStoredToken = float64(pp.PayloadBytes) / float64(p.tokens)
		}
		for _, e := range []Era{EraArray, EraMap} {
			if n := p.eras[e]; n > 0 {
				pp.Eras[e.String()] = n
			}
		}
		for _, f := range []HashForm{HashInt, HashBin} {
			if n := p.forms[f]; n > 0 {
				pp.HashForms[f.String()] = n
			}
		}
		pp.WireEra = eraSummary(pp.Eras)
		pp.HashForm = formSummary(pp.HashForms)
		if pp.Batches > 0 {
			pp.FirstEventTime = unixTime(p.firstTS)
			pp.LastEventTime = unixTime(p.lastTS)
		}
		if p.hasOff {
			off := float64(p.offsetNs) / 1e9
			pp.ClockOffsetSeconds = &off
		}
		if c.opts.HashSeed != nil && p.parityN > 0 {
			pp.HashParity = &PublisherParity{Checked: p.parityN, Matched: p.parityOK}
		}
		payload += pp.PayloadBytes
		tokens += p.tokens
		r.Publishers = append(r.Publishers, pp)
	}
	a := c.a
	a.DuplicateDepths = slices.Clone(c.a.DuplicateDepths)
	if a.DuplicateDepths == nil {
		a.DuplicateDepths = []DepthCount{}
	}
	a.FirstBlocksDistinct = uint64(c.firstBlk.n)
	if a.StoredTokens > 0 {
		a.DuplicateTokenFraction = ratio(a.DuplicateTokens, a.StoredTokens)
	}
	if a.StoredBlocks > 0 {
		a.RestoreFraction = ratio(a.Restores, a.StoredBlocks)
	}
	if secs > 0 {
		m := secs / 60
		a.FirstBlocksPerMinute = float64(a.FirstBlocksDistinct) / m
		a.FirstBlockStoresPerMinute = float64(a.FirstBlockStores) / m
	}
	if tokens > 0 {
		bpt := float64(payload) / float64(tokens)
		a.BytesPerStoredToken = &bpt
		if c.opts.TokensPerSec > 0 {
			bw := bpt * c.opts.TokensPerSec
			a.ExtrapolatedBytesPerSec = &bw
			a.ExtrapolatedTokensPerSec = c.opts.TokensPerSec
		}
	}
	a.HashParity = c.parity()
	r.Analysis = a
	r.Findings = findings(r, c.opts)
	return r
}

func (c *Collector) parity() HashParity {
	hp := HashParity{SeedKnown: c.opts.HashSeed != nil, ComparedAcrossReplicas: c.a.HashPairsCompared}
	var checked, matched uint64
	for _, p := range c.order {
		checked += p.parityN
		matched += p.parityOK
	}
	hp.CheckedBlocks, hp.MatchedBlocks = checked, matched
	if checked > 0 {
		ok := matched == checked
		hp.Reproducible = &ok
	}
	if c.a.HashPairsCompared > 0 {
		ok := c.a.HashPairsDiffering == 0
		hp.ConsistentAcrossReplicas = &ok
	}
	return hp
}

// Batch timestamps are Unix seconds. One more than 30 days from when it was received (or,
// when the receive time is unknown, outside 2000 to 2100) is not a clock offset anyone has:
// milliseconds or nanoseconds sent as seconds, seconds since boot, or a corrupt field. Such
// timestamps are counted and named, and left out of the event times and the clock offset.
const (
	minPlausibleTS = 946684800  // 2000-01-01
	maxPlausibleTS = 4102444800 // 2100-01-01
	maxClockSkew   = 30 * 86400
)

func plausibleTS(ts float64, recvNanos int64) bool {
	if recvNanos <= 0 {
		return ts >= minPlausibleTS && ts < maxPlausibleTS
	}
	return ts > 0 && math.Abs(float64(recvNanos)/1e9-ts) <= maxClockSkew
}

func ratio(a, b uint64) *float64 {
	v := float64(a) / float64(b)
	return &v
}

func unixTime(ts float64) *time.Time {
	if ts <= 0 {
		return nil
	}
	t := time.Unix(0, int64(ts*1e9)).UTC()
	return &t
}

func eraSummary(m map[string]uint64) string {
	switch len(m) {
	case 0:
		return ""
	case 1:
		for k := range m {
			return k
		}
	}
	return "mixed"
}

func formSummary(m map[string]uint64) string { return eraSummary(m) }
