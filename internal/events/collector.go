package events

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/kvcheck/kvcheck/internal/blockhash"
)

// DefaultMaxBlocks bounds the tracked block state: about an hour of a busy replica storing
// 250 blocks a second, at roughly 150 bytes per tracked block (see BENCHMARKS.md).
const DefaultMaxBlocks = 1 << 20

// Options configure a Collector.
type Options struct {
	// MaxBlocks bounds the blocks tracked for the analyses (0 means DefaultMaxBlocks); the
	// oldest are forgotten first and counted in Report.Analysis.ForgottenBlocks.
	MaxBlocks int
	// HashSeed is the PYTHONHASHSEED the engines run with, for the hash-parity check; nil
	// means unknown, and then only consistency across replicas is checked.
	HashSeed *string
	// TokensPerSec, when positive, asks for the bandwidth extrapolated to that store rate.
	TokensPerSec float64
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
	firstRx  int64
	lastRx   int64
	idx      int
	parityOK uint64
	parityN  uint64
}

// blockRef names a block as one publisher's engine hashed it.
type blockRef struct {
	pub  int32
	hash uint64
}

type blockInfo struct {
	content uint64
	depth   int32
	digest  *blockhash.Digest
}

type contentInfo struct {
	present  uint64 // publishers holding the block now (bit = publisher index, up to 64)
	ever     uint64 // publishers that ever stored it
	hash     uint64 // the engine hash of the first store, for the cross-replica comparison
	hashPub  int32
	firstRxs int64
}

// Collector accounts for every message of a tap and runs the analyses. It is not safe for
// concurrent use: one goroutine feeds it.
type Collector struct {
	opts     Options
	pubs     map[pubKey]*pubState
	order    []*pubState
	batch    Batch
	noneHash blockhash.Digest

	blocks     map[blockRef]blockInfo
	blockFIFO  []blockRef
	blockHead  int
	contents   map[uint64]*contentInfo
	contentFIF []uint64
	contentHd  int
	firstBlk   map[uint64]struct{}

	a Analysis
}

// NewCollector returns an empty collector.
func NewCollector(o Options) *Collector {
	if o.MaxBlocks <= 0 {
		o.MaxBlocks = DefaultMaxBlocks
	}
	c := &Collector{
		opts:     o,
		pubs:     map[pubKey]*pubState{},
		blocks:   map[blockRef]blockInfo{},
		contents: map[uint64]*contentInfo{},
		firstBlk: map[uint64]struct{}{},
	}
	if o.HashSeed != nil {
		c.noneHash = blockhash.NoneHash(*o.HashSeed)
	}
	return c
}

func (c *Collector) pub(source string, topic []byte) *pubState {
	if p, ok := c.pubs[pubKey{source, string(topic)}]; ok {
		return p
	}
	// A source registered before it sent anything takes the topic of its first message.
	if p, ok := c.pubs[pubKey{source, ""}]; ok && p.Messages == 0 && topic != nil {
		delete(c.pubs, pubKey{source, ""})
		p.Topic = string(topic)
		c.pubs[pubKey{source, string(topic)}] = p
		return p
	}
	p := &pubState{idx: len(c.order)}
	p.Publisher = newPublisher(source, string(topic))
	c.pubs[pubKey{source, string(topic)}] = p
	c.order = append(c.order, p)
	return p
}

// Register makes a publisher known before any message arrives, so a silent one is reported.
func (c *Collector) Register(source string) { c.pub(source, nil) }

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

// Add accounts for one message. It returns the missing range when the message reveals a gap
// (Gap.To >= Gap.From), so the caller may ask a replay socket for it.
func (c *Collector) Add(m *Message) (Gap, bool) {
	p := c.pub(m.Source, m.Topic)
	p.Messages++
	p.FrameBytes += uint64(m.Bytes())
	if p.firstRx == 0 || m.RecvNanos < p.firstRx {
		p.firstRx = m.RecvNanos
	}
	p.lastRx = max(p.lastRx, m.RecvNanos)
	if m.Frames != 3 || m.SeqLen != 8 {
		p.Malformed++
		p.noteMalformed(fmt.Sprintf("message with %d frames and a %d-byte sequence, want 3 frames and 8 bytes", m.Frames, m.SeqLen), m.Seq)
		return Gap{}, false
	}
	verdict, gap := p.seq.observe(m.Seq, payloadHash(m.Payload))
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

func (p *pubState) noteMalformed(reason string, seq uint64) {
	if len(p.MalformedSamples) < 5 {
		p.MalformedSamples = append(p.MalformedSamples, MalformedSample{Seq: seq, Reason: reason})
	}
}

func (c *Collector) account(p *pubState, m *Message) {
	b := &c.batch
	p.Batches++
	if b.HasDPRank {
		r := b.DPRank
		p.DPRank = &r
	}
	if p.Batches == 1 || b.TS < p.firstTS {
		p.firstTS = b.TS
	}
	p.lastTS = max(p.lastTS, b.TS)
	if b.TS > 0 {
		off := m.RecvNanos - int64(b.TS*1e9)
		if !p.hasOff || off < p.offsetNs {
			p.offsetNs, p.hasOff = off, true
		}
	}
	p.BatchSizes.add(len(b.Events))
	for i := range b.Events {
		ev := &b.Events[i]
		p.Events.add(ev.Type)
		p.Eras[ev.Era.String()]++
		p.UnknownFields += uint64(ev.Unknown)
		p.OddFields += uint64(ev.Odd)
		if ev.Type == TypeUnknown {
			p.UnknownTypes[string(ev.Tag)]++
			continue
		}
		for _, h := range ev.BlockHashes {
			p.HashForms[h.Form.String()]++
			if h.Negative {
				p.SignedHashes++
			}
		}
		switch ev.Type {
		case TypeBlockStored:
			p.BlockSizes[fmt.Sprint(ev.BlockSize)]++
			if ev.Medium != nil {
				p.Media[string(ev.Medium)]++
			}
			if ev.HasLoRAName {
				p.LoRANames[string(ev.LoRAName)]++
			}
			if ev.SpecKind != nil {
				p.SpecKinds[string(ev.SpecKind)]++
			}
			p.tokens += uint64(len(ev.TokenIDs))
			c.stored(p, ev, m.RecvNanos)
		case TypeBlockRemoved:
			c.removed(p, ev)
		case TypeAllBlocksCleared:
			c.cleared(p)
		}
	}
}

// contentKey chains our own key over the tokens of a block: engine hashes differ between
// replicas without a pinned seed, token content does not.
func contentKey(parent uint64, tokens []int64, lora []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], parent)
	h.Write(b[:])
	h.Write(lora)
	var buf [256]byte
	n := 0
	for _, t := range tokens {
		if n+4 > len(buf) {
			h.Write(buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint32(buf[n:], uint32(t))
		n += 4
	}
	h.Write(buf[:n])
	return h.Sum64()
}

func (c *Collector) stored(p *pubState, ev *Event, rx int64) {
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
	var parentDigest *blockhash.Digest
	if !ev.ParentIsRoot() {
		info, ok := c.blocks[blockRef{int32(p.idx), ev.Parent.Value}]
		if !ok {
			a.UnanchoredBlocks += uint64(n)
			return
		}
		parentKey, depth, parentDigest = info.content, info.depth+1, info.digest
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
	parity := c.opts.HashSeed != nil && extraOK && (ev.ParentIsRoot() || parentDigest != nil)
	var digest blockhash.Digest
	if parity {
		if ev.ParentIsRoot() {
			digest = c.noneHash
		} else {
			digest = *parentDigest
		}
	}
	for i := range n {
		tok := ev.TokenIDs[i*bs : (i+1)*bs]
		key := contentKey(parentKey, tok, ev.LoRAName)
		h := ev.BlockHashes[i]
		a.StoredBlocks++
		a.StoredTokens += uint64(bs)
		if depth == 0 {
			a.FirstBlockStores++
			if _, ok := c.firstBlk[key]; !ok && len(c.firstBlk) < c.opts.MaxBlocks {
				c.firstBlk[key] = struct{}{}
			}
		}
		var dptr *blockhash.Digest
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
				digest = d
				dd := d
				dptr = &dd
			}
		}
		c.content(p, key, h.Value, bs, depth, rx)
		c.track(blockRef{int32(p.idx), h.Value}, blockInfo{content: key, depth: depth, digest: dptr})
		parentKey = key
		depth++
	}
}

func (c *Collector) content(p *pubState, key, hash uint64, bs int, depth int32, rx int64) {
	a := &c.a
	bit := uint64(1) << (p.idx % 64)
	ci, ok := c.contents[key]
	if !ok {
		ci = &contentInfo{hash: hash, hashPub: int32(p.idx), firstRxs: rx}
		c.contents[key] = ci
		c.contentFIF = append(c.contentFIF, key)
		c.forgetContents()
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
		if ci.ever&^bit != 0 && ci.ever&bit == 0 {
			a.DuplicateBlocks++
			a.DuplicateTokens += uint64(bs)
			a.duplicateDepth(int(depth))
		}
	}
	ci.present |= bit
	ci.ever |= bit
}

func (c *Collector) forgetContents() {
	if len(c.contents) <= c.opts.MaxBlocks {
		return
	}
	for len(c.contents) > c.opts.MaxBlocks && c.contentHd < len(c.contentFIF) {
		delete(c.contents, c.contentFIF[c.contentHd])
		c.contentHd++
		c.a.ForgottenBlocks++
	}
	if c.contentHd > len(c.contentFIF)/2 {
		c.contentFIF = append(c.contentFIF[:0], c.contentFIF[c.contentHd:]...)
		c.contentHd = 0
	}
}

func (c *Collector) track(ref blockRef, info blockInfo) {
	if _, ok := c.blocks[ref]; !ok {
		c.blockFIFO = append(c.blockFIFO, ref)
	}
	c.blocks[ref] = info
	for len(c.blocks) > c.opts.MaxBlocks && c.blockHead < len(c.blockFIFO) {
		delete(c.blocks, c.blockFIFO[c.blockHead])
		c.blockHead++
	}
	if c.blockHead > len(c.blockFIFO)/2 && c.blockHead > 1024 {
		c.blockFIFO = append(c.blockFIFO[:0], c.blockFIFO[c.blockHead:]...)
		c.blockHead = 0
	}
}

func (c *Collector) removed(p *pubState, ev *Event) {
	bit := uint64(1) << (p.idx % 64)
	for _, h := range ev.BlockHashes {
		ref := blockRef{int32(p.idx), h.Value}
		info, ok := c.blocks[ref]
		if !ok {
			c.a.UnknownRemovals++
			continue
		}
		// The ref stays in the FIFO; forgetting a missing key later is harmless.
		delete(c.blocks, ref)
		if ci, ok := c.contents[info.content]; ok {
			ci.present &^= bit
		}
	}
}

func (c *Collector) cleared(p *pubState) {
	bit := uint64(1) << (p.idx % 64)
	for ref := range c.blocks {
		if ref.pub == int32(p.idx) {
			delete(c.blocks, ref)
		}
	}
	for _, ci := range c.contents {
		ci.present &^= bit
	}
}

// Report summarises everything seen so far over the given wall-clock duration.
func (c *Collector) Report(d time.Duration) *Report {
	secs := d.Seconds()
	r := &Report{DurationSeconds: secs, Publishers: []Publisher{}, Findings: []Finding{}}
	var payload, tokens uint64
	for _, p := range c.order {
		pp := p.Publisher
		pp.LostBatches = p.seq.lost
		pp.Gaps = p.seq.gapCount
		pp.Restarts = p.seq.restarts
		pp.Duplicates = p.seq.dups
		pp.LateBatches = p.seq.late
		pp.UnrecoverableBatches = pp.LostBatches - min(pp.LostBatches, pp.RecoveredBatches)
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
		pp.StoredTokens = p.tokens
		if p.tokens > 0 {
			pp.BytesPerStoredToken = float64(pp.PayloadBytes) / float64(p.tokens)
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
	a.FirstBlocksDistinct = uint64(len(c.firstBlk))
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
