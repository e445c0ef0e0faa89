package events

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kvcheck/kvcheck/internal/blockhash"
)

// storeEvent builds the BlockStored an engine with the given NONE_HASH sends for tokens.
func storeEvent(t *testing.T, none blockhash.Digest, tokens []int64, bs int) Event {
	t.Helper()
	ds, err := blockhash.Chain(none, tokens, bs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{Type: TypeBlockStored, TokenIDs: tokens, BlockSize: int64(bs), Medium: []byte("GPU")}
	for _, d := range ds {
		ev.BlockHashes = append(ev.BlockHashes, Hash{Form: HashInt, Value: d.Wire()})
	}
	return ev
}

func msg(source string, seq uint64, w Wire, evs ...Event) *Message {
	b := Batch{TS: 1000, Events: evs, HasDPRank: true}
	return &Message{Source: source, Seq: seq, Payload: AppendBatch(nil, &b, w), Frames: 3, SeqLen: 8, RecvNanos: 1000_500_000_000}
}

func toks(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

func TestCollectorFleet(t *testing.T) {
	seed := "0"
	seeded := blockhash.NoneHash(seed)
	unseeded := blockhash.NoneHash("random per process")
	shared := toks(1, 32)
	c := NewCollector(Options{HashSeed: &seed, TokensPerSec: 1000})
	w := Wire{Era: EraMap}
	// Replica a: stores the shared prefix, then its own continuation.
	sa := storeEvent(t, seeded, shared, 16)
	c.Add(msg("a", 0, w, sa))
	ext := storeEvent(t, seeded, append(append([]int64{}, shared...), toks(100, 16)...), 16)
	ext.BlockHashes = ext.BlockHashes[2:]
	ext.TokenIDs = ext.TokenIDs[32:]
	ext.Parent, ext.HasParent = sa.BlockHashes[1], true
	c.Add(msg("a", 1, w, ext))
	// Replica b (unseeded) stores the same prefix with other hashes: duplicated prefill.
	sb := storeEvent(t, unseeded, shared, 16)
	c.Add(msg("b", 5, Wire{Era: EraArray, StoredFields: 7}, sb))
	// a evicts its first block and stores it again: a re-store, and a duplicate of b's copy.
	c.Add(msg("a", 2, w, Event{Type: TypeBlockRemoved, BlockHashes: sa.BlockHashes[:1]}))
	c.Add(msg("a", 4, w, storeEvent(t, seeded, shared[:16], 16))) // seq 3 lost
	c.Add(msg("a", 4, w, storeEvent(t, seeded, shared[:16], 16))) // duplicate
	r := c.Report(60e9)

	a := r.Analysis
	type got struct {
		Stored, StoredTok, Dup, DupTok, Restores, Roots, FirstDistinct, PairsDiff uint64
		Reproducible, Consistent                                                  bool
		Checked, Matched                                                          uint64
	}
	g := got{a.StoredBlocks, a.StoredTokens, a.DuplicateBlocks, a.DuplicateTokens, a.Restores, a.RootStores, a.FirstBlocksDistinct, a.HashPairsDiffering,
		*a.HashParity.Reproducible, *a.HashParity.ConsistentAcrossReplicas, a.HashParity.CheckedBlocks, a.HashParity.MatchedBlocks}
	// Duplicates: b's two blocks while a held them, then a's re-store while b held it.
	want := got{6, 96, 3, 48, 1, 3, 1, 2, false, false, 6, 4}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("analysis (-want +got):\n%s", diff)
	}
	pa := r.Publishers[0]
	if pa.Batches != 4 || pa.LostBatches != 1 || pa.Gaps != 1 || pa.Duplicates != 1 || pa.Events.BlockStored != 3 || pa.Events.BlockRemoved != 1 {
		t.Errorf("publisher a: batches %d lost %d gaps %d dups %d stored %d removed %d; want 4 1 1 1 3 1",
			pa.Batches, pa.LostBatches, pa.Gaps, pa.Duplicates, pa.Events.BlockStored, pa.Events.BlockRemoved)
	}
	if pa.WireEra != "map" || r.Publishers[1].WireEra != "array" || pa.HashParity.Matched != 4 || r.Publishers[1].HashParity.Matched != 0 {
		t.Errorf("eras %q %q, parity a %+v b %+v", pa.WireEra, r.Publishers[1].WireEra, pa.HashParity, r.Publishers[1].HashParity)
	}
	if pa.ClockOffsetSeconds == nil || *pa.ClockOffsetSeconds != 0.5 {
		t.Errorf("clock offset = %v, want 0.5", pa.ClockOffsetSeconds)
	}
	codes := map[string]bool{}
	for _, f := range r.Findings {
		codes[f.Code] = true
	}
	for _, code := range []string{"batches-lost", "duplicate-batches", "hash-not-reproducible", "hash-inconsistent", "duplicate-prefill", "eviction-churn"} {
		if !codes[code] {
			t.Errorf("finding %s missing; got %v", code, codes)
		}
	}
}

func TestCollectorMalformedAndBound(t *testing.T) {
	c := NewCollector(Options{MaxBlocks: 4})
	c.Register("silent")
	c.Add(&Message{Source: "x", Seq: 0, Payload: []byte{0xc1}, Frames: 3, SeqLen: 8})
	c.Add(&Message{Source: "x", Seq: 1, Frames: 2, SeqLen: 8})
	for i := range 10 {
		c.Add(msg("x", uint64(2+i), Wire{Era: EraArray}, storeEvent(t, blockhash.NoneHash("0"), toks(i*16, 16), 16)))
	}
	r := c.Report(1e9)
	if r.Publishers[0].Messages != 0 || r.Publishers[1].Malformed != 2 {
		t.Errorf("silent messages %d, x malformed %d; want 0 and 2", r.Publishers[0].Messages, r.Publishers[1].Malformed)
	}
	// Ten blocks through a bound of 4 (two generations of 2): at most 4 remembered, the rest
	// forgotten and counted.
	if c.trackedBlocks() > 4 || c.contents.len() > 4 || r.Analysis.ForgottenBlocks != uint64(10-c.contents.len()) {
		t.Errorf("tracked %d blocks, %d contents, forgot %d; want at most 4, at most 4, and the rest (%d) forgotten",
			c.trackedBlocks(), c.contents.len(), r.Analysis.ForgottenBlocks, 10-c.contents.len())
	}
}

// TestCollectorChurnBounded stores and removes blocks many times over: the state stays within
// the bound.
func TestCollectorChurnBounded(t *testing.T) {
	c := NewCollector(Options{MaxBlocks: 16})
	for i := range 100000 {
		ev := Event{Type: TypeBlockStored, BlockSize: 1, TokenIDs: []int64{int64(i)}, BlockHashes: []Hash{{Form: HashInt, Value: uint64(i + 1)}}}
		rm := Event{Type: TypeBlockRemoved, BlockHashes: []Hash{{Form: HashInt, Value: uint64(i + 1)}}}
		c.Add(msg("x", uint64(i), Wire{Era: EraArray}, ev, rm))
	}
	if c.trackedBlocks() != 0 || c.contents.len() > 16 {
		t.Errorf("tracked %d blocks, %d contents; want 0 and at most 16", c.trackedBlocks(), c.contents.len())
	}
}

// TestCollectorResetIsNotChurn: blocks stored again after AllBlocksCleared are not re-stores,
// blocks stored again after their BlockRemoved are.
func TestCollectorResetIsNotChurn(t *testing.T) {
	none := blockhash.NoneHash("0")
	c := NewCollector(Options{})
	w := Wire{Era: EraMap}
	ev := storeEvent(t, none, toks(1, 32), 16)
	c.Add(msg("a", 0, w, ev))
	c.Add(msg("a", 1, w, Event{Type: TypeAllBlocksCleared}))
	c.Add(msg("a", 2, w, ev))
	c.Add(msg("a", 3, w, Event{Type: TypeBlockRemoved, BlockHashes: ev.BlockHashes}))
	c.Add(msg("a", 4, w, ev))
	if got := c.Report(1e9).Analysis.Restores; got != 2 {
		t.Errorf("re-stores = %d, want 2 (the two blocks stored again after their removal)", got)
	}
}

func TestGenerations(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testGenerations(t, newGenerations[int]()) })
	t.Run("filtered", func(t *testing.T) { testGenerations(t, newFilteredGenerations[int](4)) })
}

func testGenerations(t *testing.T, g generations[int]) {
	g.put(1, 10)
	g.put(2, 20)
	if n := g.rotate(); n != 0 {
		t.Fatalf("first rotate forgot %d, want 0", n)
	}
	if v, ok := g.get(1); !ok || v != 10 {
		t.Fatalf("get(1) after rotate = %d, %v; want 10, true", v, ok)
	}
	g.put(1, 12) // written again: kept in the current generation
	if v, _ := g.get(1); v != 12 {
		t.Fatalf("get(1) = %d, want the newer 12", v)
	}
	g.rotate() // 2 was not written again: forgotten
	if _, ok := g.get(2); ok {
		t.Error("2 survived two rotations without use")
	}
	if v, _ := g.get(1); v != 12 || !g.del(1) || g.len() != 0 {
		t.Errorf("1 = %d, then del and len %d; want 12 and 0", v, g.len())
	}
	// Across rotations every key put is found in its two generations, whatever the filter
	// says of others: sequential keys, as engine hashes can be.
	for round := range 3 {
		for k := range uint64(5000) {
			g.put(k+uint64(round)*5000, int(k))
		}
		g.rotate()
		for k := range uint64(5000) {
			if v, ok := g.get(k + uint64(round)*5000); !ok || v != int(k) {
				t.Fatalf("round %d: get(%d) = %d, %v after one rotation", round, k, v, ok)
			}
		}
	}
}

// TestKeyFilter: a filter never misses a key it was given, and says "maybe" of few others.
func TestKeyFilter(t *testing.T) {
	f := newKeyFilter(100000)
	for k := range uint64(100000) {
		f.add(k << 8)
	}
	for k := range uint64(100000) {
		if !f.has(k << 8) {
			t.Fatalf("key %d added and not found", k<<8)
		}
	}
	fp := 0
	for k := range uint64(100000) {
		if f.has(k<<8 | 1) {
			fp++
		}
	}
	if fp > 10000 {
		t.Errorf("%d of 100,000 keys never added were reported, want under 10%%", fp)
	}
}

// TestHugeMaxBlocks: --max-blocks far above what a stream fills (1e12) costs only what the
// stream stores. The content filters were sized from the bound up front: 1e12 asked for about
// a terabyte and the tap died out of memory at start. Now each filter is at most 16 MiB
// (maxFilterBits), and the same duplicate is still found across publishers.
func TestHugeMaxBlocks(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := NewCollector(Options{MaxBlocks: 1e12})
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("NewCollector(MaxBlocks: 1e12) allocated %d MB, want at most 64 MB (two 16 MiB filters and small tables)", grew>>20)
	}
	none := blockhash.NoneHash("0")
	ev := storeEvent(t, none, toks(1, 8), 1)
	c.Add(msg("a", 0, Wire{Era: EraMap}, ev))
	c.Add(msg("b", 0, Wire{Era: EraMap}, ev))
	if a := c.Report(1e9).Analysis; a.DuplicateBlocks == 0 {
		t.Errorf("the same 8 blocks stored by two publishers: no duplicate found (%+v)", a)
	}
}

// TestCollectorManyTopics: a listener sent endless new topics keeps a bounded set of publishers.
func TestCollectorManyTopics(t *testing.T) {
	c := NewCollector(Options{})
	for i := range maxPublishers + 500 {
		m := msg("listen", uint64(i), Wire{Era: EraMap}, Event{Type: TypeAllBlocksCleared})
		m.Topic = []byte(fmt.Sprintf("kv@%d", i))
		c.Add(m)
	}
	r := c.Report(1e9)
	last := r.Publishers[len(r.Publishers)-1]
	if len(r.Publishers) != maxPublishers+1 || last.Topic != otherTopics || last.Batches != 500 {
		t.Errorf("%d publishers, last %q with %d batches; want %d, %q with 500", len(r.Publishers), last.Topic, last.Batches, maxPublishers+1, otherTopics)
	}
}

// TestDuplicateDepthsComplete: the depth histogram accounts for every duplicated block, also
// in prompts deeper than the number of depths it keeps apart (the deepest bucket takes them).
func TestDuplicateDepthsComplete(t *testing.T) {
	c := NewCollector(Options{})
	none := blockhash.NoneHash("0")
	ev := storeEvent(t, none, toks(1, 300), 1) // a 300-block chain, one token per block
	c.Add(msg("a", 0, Wire{Era: EraMap}, ev))
	c.Add(msg("b", 0, Wire{Era: EraMap}, ev))
	a := c.Report(1e9).Analysis
	var sum uint64
	for _, d := range a.DuplicateDepths {
		sum += d.Blocks
	}
	last := a.DuplicateDepths[len(a.DuplicateDepths)-1]
	if a.DuplicateBlocks != 300 || sum != 300 || last.Depth != MaxDuplicateDepth || last.Blocks != 300-MaxDuplicateDepth {
		t.Errorf("duplicate blocks %d, sum over depths %d, deepest bucket %+v; want 300, 300, {%d %d}",
			a.DuplicateBlocks, sum, last, MaxDuplicateDepth, 300-MaxDuplicateDepth)
	}
}

// TestCollectorRates checks every rate and derived number of the report against values
// computed by hand from the messages sent.
func TestCollectorRates(t *testing.T) {
	none := blockhash.NoneHash("0")
	c := NewCollector(Options{TokensPerSec: 1000})
	w := Wire{Era: EraMap}
	s1 := storeEvent(t, none, toks(1, 32), 16)  // 2 blocks, 32 tokens
	s2 := storeEvent(t, none, toks(50, 16), 16) // 1 block, 16 tokens
	rm := Event{Type: TypeBlockRemoved, BlockHashes: s1.BlockHashes[:1]}
	m1 := msg("a", 0, w, s1)
	m1.Topic = []byte("kv@a@m")
	b2 := Batch{TS: 1010, HasDPRank: true, Events: []Event{s2, rm, {Type: TypeAllBlocksCleared}}}
	m2 := &Message{Source: "a", Topic: []byte("kv@a@m"), Seq: 1, Payload: AppendBatch(nil, &b2, w), Frames: 3, SeqLen: 8, RecvNanos: 1010_200_000_000}
	c.Add(m1)
	c.Add(m2)
	r := c.Report(2e9) // two seconds
	p := r.Publishers[0]
	payload := float64(len(m1.Payload) + len(m2.Payload))
	frames := payload + 2*(6+8)
	type nums struct {
		BytesPerSec, FrameBytesPerSec, EventsPerSec, TokensPerSec, BytesPerStoredToken float64
		BatchMin, BatchMax                                                             int
		BatchMean                                                                      float64
		First, Last                                                                    time.Time
		Offset                                                                         float64
		BPT, Extrapolated, FirstPerMin, FirstStoresPerMin                              float64
	}
	got := nums{p.BytesPerSec, p.FrameBytesPerSec, p.EventsPerSec, p.TokensPerSec, p.BytesPerStoredToken,
		p.BatchSizes.Min, p.BatchSizes.Max, p.BatchSizes.Mean(), *p.FirstEventTime, *p.LastEventTime, *p.ClockOffsetSeconds,
		*r.Analysis.BytesPerStoredToken, *r.Analysis.ExtrapolatedBytesPerSec, r.Analysis.FirstBlocksPerMinute, r.Analysis.FirstBlockStoresPerMinute}
	want := nums{payload / 2, frames / 2, 4.0 / 2, 48.0 / 2, payload / 48,
		1, 3, 2,
		time.Unix(1000, 0).UTC(), time.Unix(1010, 0).UTC(), 0.2, // offsets 0.5 s and 0.2 s: the smaller
		payload / 48, payload / 48 * 1000, 2 / (2.0 / 60), 2 / (2.0 / 60)}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
}

// TestNoConnectionWording: a port that refuses is told apart from one that answers without
// speaking ZMTP (an HTTP port given by mistake), and a listener nobody dialled from one whose
// publishers sent nothing.
func TestNoConnectionWording(t *testing.T) {
	c := NewCollector(Options{})
	c.Register("tcp://h:5557")
	c.Register("tcp://h:8000")
	c.Connection("tcp://h:5557", false, 0, "dial tcp 127.0.0.1:5557: connect: connection refused")
	c.Connection("tcp://h:8000", false, 0, "zmq4: could not open a ZMTP connection: could not read ZMTP greeting: EOF")
	c.Register("tcp://0.0.0.0:5557")
	c.Connection("tcp://0.0.0.0:5557", true, 1, "")
	c.ListenPeers("tcp://0.0.0.0:5557", 0)
	msgs := map[string]string{}
	for _, f := range c.Report(1e9).Findings {
		msgs[f.Subject] = f.Message
	}
	if !strings.Contains(msgs["tcp://h:5557"], "nothing publishes there") || !strings.Contains(msgs["tcp://h:8000"], "handshake failed") ||
		!strings.Contains(msgs["tcp://0.0.0.0:5557"], "no publisher connected") {
		t.Errorf("findings %v: want 'nothing publishes there' for the refused port, 'handshake failed' for the other, 'no publisher connected' for the listener", msgs)
	}
}

// TestContentKey: the content key tells blocks apart by parent, every token and its position,
// and LoRA name, and is the same for the same content; 200,000 random blocks give 200,000 keys.
func TestContentKey(t *testing.T) {
	c := NewCollector(Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	block := func() []int64 {
		b := make([]int64, 16)
		for i := range b {
			b[i] = int64(rng.IntN(151000))
		}
		return b
	}
	toks := block()
	k := c.contentKey(7, toks, 0)
	if c.contentKey(7, slices.Clone(toks), 0) != k {
		t.Fatal("the same content keyed twice differs")
	}
	if c.contentKey(8, toks, 0) == k {
		t.Error("another parent keys the same")
	}
	if c.contentKey(7, toks, c.loraKey([]byte("adapter"))) == k || c.loraKey([]byte("a")) == c.loraKey([]byte("b")) {
		t.Error("a LoRA name does not change the key")
	}
	for i := range toks {
		for _, d := range []int64{1, 1 << 20} {
			o := slices.Clone(toks)
			o[i] += d
			if c.contentKey(7, o, 0) == k {
				t.Errorf("token %d changed by %d keys the same", i, d)
			}
		}
		if i > 0 && toks[i] != toks[i-1] {
			o := slices.Clone(toks)
			o[i], o[i-1] = o[i-1], o[i]
			if c.contentKey(7, o, 0) == k {
				t.Errorf("tokens %d and %d swapped key the same", i-1, i)
			}
		}
	}
	if c.contentKey(7, toks[:15], 0) == c.contentKey(7, append(slices.Clone(toks[:15]), 0), 0) {
		t.Error("a trailing token 0 keys the same as none")
	}
	seen := map[uint64]bool{}
	for range 200000 {
		seen[c.contentKey(0, block(), 0)] = true
	}
	if len(seen) != 200000 {
		t.Errorf("%d keys for 200,000 random blocks", len(seen))
	}
}

// TestCollectorBlockSizes: block sizes are counted per event whether they repeat, alternate or
// are new, and past maxNames distinct sizes the new ones are not counted, the others still are.
func TestCollectorBlockSizes(t *testing.T) {
	c := NewCollector(Options{})
	want := map[string]uint64{}
	seq := uint64(0)
	send := func(bs int64) {
		c.Add(msg("a", seq, Wire{Era: EraMap}, Event{Type: TypeBlockStored, BlockSize: bs}))
		seq++
	}
	for _, bs := range []int64{16, 16, 16, 32, 16, 32, 32, 0, -4, 16} {
		send(bs)
		want[fmt.Sprint(bs)]++
	}
	for bs := range int64(maxNames + 10) {
		send(1000 + bs)
		if bs < maxNames-4 { // four sizes are already counted
			want[fmt.Sprint(1000+bs)]++
		}
	}
	send(16)
	send(2000 + maxNames) // not counted: the bound is reached
	send(32)
	want["16"]++
	want["32"]++
	if diff := cmp.Diff(want, c.Report(time.Second).Publishers[0].BlockSizes); diff != "" {
		t.Errorf("block sizes (-want +got):\n%s", diff)
	}
}

// TestCollectorParityAcrossRotation: a block stored after its parent's generation rotated out
// of the current one is still checked against the parent's digest (the digests rotate with the
// blocks), and one whose parent was removed is not checked.
func TestCollectorParityAcrossRotation(t *testing.T) {
	seed := "0"
	none := blockhash.NoneHash(seed)
	c := NewCollector(Options{HashSeed: &seed, MaxBlocks: 4}) // rotates every 2 blocks
	all := toks(1, 64)
	parent := storeEvent(t, none, all[:32], 16)
	c.Add(msg("a", 0, Wire{Era: EraMap}, parent)) // 2 blocks: the generation rotates
	child := storeEvent(t, none, all, 16)
	child.BlockHashes, child.TokenIDs = child.BlockHashes[2:3], child.TokenIDs[32:48]
	child.Parent, child.HasParent = parent.BlockHashes[1], true
	c.Add(msg("a", 1, Wire{Era: EraMap}, child))
	c.Add(msg("a", 2, Wire{Era: EraMap}, Event{Type: TypeBlockRemoved, BlockHashes: child.BlockHashes}))
	orphan := storeEvent(t, none, all, 16)
	orphan.BlockHashes, orphan.TokenIDs = orphan.BlockHashes[3:], orphan.TokenIDs[48:]
	orphan.Parent, orphan.HasParent = child.BlockHashes[0], true
	c.Add(msg("a", 3, Wire{Era: EraMap}, orphan))
	hp := c.Report(time.Second).Analysis.HashParity
	if hp.CheckedBlocks != 3 || hp.MatchedBlocks != 3 {
		t.Errorf("parity checked %d, matched %d; want 3 and 3 (the parent's two blocks and the child; the orphan's parent was removed)", hp.CheckedBlocks, hp.MatchedBlocks)
	}
}

// TestCollectorDPRank: a publisher's data-parallel rank is the last one it sent, and a report
// taken earlier keeps the rank it saw.
func TestCollectorDPRank(t *testing.T) {
	c := NewCollector(Options{})
	send := func(seq uint64, rank int64) {
		b := Batch{TS: 1000, HasDPRank: true, DPRank: rank, Events: []Event{{Type: TypeAllBlocksCleared}}}
		c.Add(&Message{Source: "a", Seq: seq, Payload: AppendBatch(nil, &b, Wire{Era: EraMap}), Frames: 3, SeqLen: 8, RecvNanos: 1000_500_000_000})
	}
	send(0, 0)
	send(1, 0)
	early := c.Report(time.Second)
	send(2, 2)
	late := c.Report(time.Second)
	if r := early.Publishers[0].DPRank; r == nil || *r != 0 {
		t.Errorf("rank before the change = %v, want 0", r)
	}
	if r := late.Publishers[0].DPRank; r == nil || *r != 2 {
		t.Errorf("rank after the change = %v, want 2", r)
	}
}
