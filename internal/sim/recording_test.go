package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/events"
)

// stored is a BlockStored event of 4-token blocks for fixtures: parent 0 means the chain
// starts at token 0; tokens are given per block.
type stored struct {
	parent uint64
	hashes []uint64
	blocks [][]int64
	medium string
	group  int64
	bs     int64 // block size when not 4
	lora   string
}

func (s stored) event() events.Event {
	ev := events.Event{Type: events.TypeBlockStored, BlockSize: 4, HasGroupIdx: true, GroupIdx: s.group}
	if s.bs != 0 {
		ev.BlockSize = s.bs
	}
	if s.parent != 0 {
		ev.Parent, ev.HasParent = events.Hash{Form: events.HashInt, Value: s.parent}, true
	}
	for _, h := range s.hashes {
		ev.BlockHashes = append(ev.BlockHashes, events.Hash{Form: events.HashInt, Value: h})
	}
	for _, b := range s.blocks {
		ev.TokenIDs = append(ev.TokenIDs, b...)
	}
	ev.Medium = []byte("GPU")
	if s.medium != "" {
		ev.Medium = []byte(s.medium)
	}
	if s.lora != "" {
		ev.LoRAName, ev.HasLoRAName = []byte(s.lora), true
	}
	return ev
}

// msg is one recorded message: a batch of events from a publisher.
type msg struct {
	source string
	seq    uint64
	ts     float64
	wire   events.Wire
	events []stored
	raw    [][]byte // frames as they are, instead of a batch
}

// record writes a recording of msgs.
func record(t testing.TB, msgs ...msg) []byte {
	t.Helper()
	var buf bytes.Buffer
	rec, err := events.NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		frames := m.raw
		if frames == nil {
			b := events.Batch{TS: m.ts}
			for _, s := range m.events {
				b.Events = append(b.Events, s.event())
			}
			wire := m.wire
			if wire.Era == 0 {
				wire.Era = events.EraMap
			}
			seq := binary.BigEndian.AppendUint64(nil, m.seq)
			frames = [][]byte{[]byte("kv@" + m.source), seq, events.AppendBatch(nil, &b, wire)}
		}
		em := events.FromFrames("tcp://"+m.source, frames, int64(m.ts*1e9))
		rec.Message(&em, frames)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tok returns a 4-token block whose ids all equal v.
func tok(v int64) []int64 { return []int64{v, v, v, v} }

func TestReadRecordings(t *testing.T) {
	cases := []struct {
		name  string
		msgs  []msg
		want  []Request // without blocks
		shape []string
		notes []string
	}{
		{
			name: "the same content on two replicas is the same block, whatever the engine hashes",
			msgs: []msg{
				{source: "a:5557", seq: 0, ts: 100, events: []stored{{hashes: []uint64{11, 12}, blocks: [][]int64{tok(1), tok(2)}}}},
				{source: "b:5557", seq: 0, ts: 101, events: []stored{{hashes: []uint64{21, 22}, blocks: [][]int64{tok(1), tok(2)}}}},
			},
			want:  []Request{{Arrival: 0, InputTokens: 8, OutputTokens: DefaultOutputTokens, N: 1}, {Arrival: 1, InputTokens: 8, OutputTokens: DefaultOutputTokens, N: 1}},
			shape: []string{"0 1", "0 1"},
			notes: []string{"lower bound", "2 BlockStored events from 2 publishers became 2 requests (0 events continued"},
		},
		{
			name: "a store that extends the chain a request ended continues it; one that branches is a new request with the prefix",
			msgs: []msg{
				{source: "a:5557", seq: 0, ts: 10, events: []stored{{hashes: []uint64{11}, blocks: [][]int64{tok(1)}}}},
				{source: "a:5557", seq: 1, ts: 10.5, wire: events.Wire{Era: events.EraArray, StoredFields: 7}, events: []stored{{parent: 11, hashes: []uint64{12}, blocks: [][]int64{tok(2)}}}},
				{source: "a:5557", seq: 2, ts: 12, events: []stored{{parent: 11, hashes: []uint64{13, 14}, blocks: [][]int64{tok(3), tok(4)}}}},
				// The other replica continues a's hash 12: engine hashes are per publisher, so
				// this parent is unknown there.
				{source: "b:5557", seq: 0, ts: 13, events: []stored{{parent: 12, hashes: []uint64{15}, blocks: [][]int64{tok(5)}}}},
			},
			want: []Request{
				{Arrival: 0, InputTokens: 8, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 2, InputTokens: 12, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 3, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0 1", "0 2 3", "4"},
			notes: []string{"(1 event continued", "1 stored chain continues a parent block the recording never showed"},
		},
		{
			name: "orphans of the same parent on one publisher match each other, not the root chain",
			msgs: []msg{
				{source: "a:5557", seq: 0, ts: 1, events: []stored{
					{parent: 99, hashes: []uint64{31}, blocks: [][]int64{tok(7)}},
					{parent: 99, hashes: []uint64{31}, blocks: [][]int64{tok(7)}},
					{hashes: []uint64{32}, blocks: [][]int64{tok(7)}},
				}},
			},
			want: []Request{
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0", "0", "1"},
			notes: []string{"2 stored chains continue a parent block"},
		},
		{
			name: "a partial-block entry first does not set the block size",
			msgs: []msg{
				{source: "a:5557", seq: 0, ts: 1, events: []stored{
					{parent: 50, hashes: []uint64{51}, blocks: [][]int64{{9, 9}}, bs: 2},
					{hashes: []uint64{1}, blocks: [][]int64{tok(1)}},
					{hashes: []uint64{2, 3}, blocks: [][]int64{tok(2), tok(3)}},
				}},
			},
			want: []Request{
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 0, InputTokens: 8, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0", "1 2"},
			notes: []string{"skipped 1: stores with a block size other than 4"},
		},
		{
			name: "LoRA adapters and other tiers, groups and shapes are kept apart or skipped, and said",
			msgs: []msg{
				{source: "a:5557", seq: 0, ts: 1, events: []stored{
					{hashes: []uint64{1}, blocks: [][]int64{tok(1)}},
					{hashes: []uint64{2}, blocks: [][]int64{tok(1)}, lora: "sql-adapter"},
					{hashes: []uint64{3}, blocks: [][]int64{tok(1)}, medium: "CPU"},
					{hashes: []uint64{4}, blocks: [][]int64{tok(1)}, group: 1},
					{hashes: []uint64{5}, blocks: nil},
					{hashes: []uint64{6, 7}, blocks: [][]int64{tok(1)}},
					{hashes: []uint64{8}, blocks: [][]int64{{1, 1, 1, 1, 1, 1, 1, 1}}, bs: 8},
				}},
				{source: "a:5557", seq: 5, ts: 2, events: []stored{{hashes: []uint64{9}, blocks: [][]int64{tok(2)}}}},
				{source: "a:5557", raw: [][]byte{[]byte("topic"), {1, 2}}},
				{source: "a:5557", seq: 6, raw: [][]byte{[]byte("kv@a:5557"), binary.BigEndian.AppendUint64(nil, 6), {0x93, 0xc1}}},
			},
			want: []Request{
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 0, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 1, InputTokens: 4, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0", "1", "2"},
			notes: []string{
				"skipped 1: stores to an offload tier", "skipped 1: stores of KV-cache groups other than 0",
				"skipped 1: stores without tokens", "skipped 1: stores whose tokens do not fill", "skipped 1: stores with a block size other than 4",
				"4 batches lost in sequence gaps", "skipped 1: malformed messages", "skipped 1: undecodable batches (first: a.rec, publisher tcp://a:5557 seq 6: malformed batch",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := record(t, tc.msgs...)
			tr, err := ReadRecordings(context.Background(), []events.Recording{{Name: "a.rec", R: bytes.NewReader(data)}}, RecordingOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != "recording" || !tr.LowerBound || tr.BlockSize != 4 || tr.Tokens != "" {
				t.Errorf("trace = %s, lower bound %v, block %d, tokens %q; want recording, true, 4, none", tr.Format, tr.LowerBound, tr.BlockSize, tr.Tokens)
			}
			if diff := cmp.Diff(tc.want, noBlocks(tr.Requests)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.shape, shape(tr)); diff != "" {
				t.Errorf("block shape (-want +got):\n%s", diff)
			}
			all := strings.Join(tr.Notes, "\n")
			for _, want := range tc.notes {
				if !strings.Contains(all, want) {
					t.Errorf("no note contains %q; notes:\n%s", want, all)
				}
			}
		})
	}
}

// TestReadRecordingsAcrossFiles continues one publisher's chains from one recording into the
// next, and reports a recording cut short.
func TestReadRecordingsAcrossFiles(t *testing.T) {
	first := record(t, msg{source: "a:5557", seq: 0, ts: 50, events: []stored{{hashes: []uint64{11}, blocks: [][]int64{tok(1)}}}})
	second := record(t,
		msg{source: "a:5557", seq: 1, ts: 60, events: []stored{{parent: 11, hashes: []uint64{12}, blocks: [][]int64{tok(2)}}}},
		msg{source: "a:5557", seq: 2, ts: 70, events: []stored{{parent: 11, hashes: []uint64{13}, blocks: [][]int64{tok(3)}}}},
	)
	tr, err := ReadRecordings(context.Background(), []events.Recording{
		{Name: "one.rec", R: bytes.NewReader(first)},
		{Name: "two.rec", R: bytes.NewReader(second[:len(second)-3])},
	}, RecordingOptions{OutputTokens: 9})
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{{Arrival: 0, InputTokens: 8, OutputTokens: 9, N: 1}}
	if diff := cmp.Diff(want, noBlocks(tr.Requests)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if tr.Name != "one.rec, two.rec" {
		t.Errorf("name %q, want both files", tr.Name)
	}
	all := strings.Join(tr.Notes, "\n")
	for _, want := range []string{"two.rec: the recording ends inside the record at byte", "--output-tokens 9"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note contains %q; notes:\n%s", want, all)
		}
	}
}

func TestReadRecordingsErrors(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"not a recording", []byte("{\"timestamp\": 0}\n"), "recording x.rec: not a kvcheck tap recording"},
		{"no stored blocks", record(t, msg{source: "a:1", seq: 0, ts: 1}), "recording x.rec: no usable BlockStored event in 1 messages"},
		// What was read before the record it could not read is kept and said: here nothing.
		{"corrupt record", append(record(t), 0x7f), "recording x.rec: no usable BlockStored event in 0 messages (x.rec: read 0 messages in 0 records, bytes 0 to 8; the record at byte 8 is a record of kind 0x7f"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRecordings(context.Background(), []events.Recording{{Name: "x.rec", R: bytes.NewReader(tc.data)}}, RecordingOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestRecordingBound forgets engine hashes past the bound and says so, instead of growing.
func TestRecordingBound(t *testing.T) {
	var msgs []msg
	for i := range 10 {
		msgs = append(msgs, msg{source: "a:1", seq: uint64(i), ts: float64(i), events: []stored{{hashes: []uint64{uint64(100 + i)}, blocks: [][]int64{tok(int64(i))}}}})
	}
	msgs = append(msgs, msg{source: "a:1", seq: 10, ts: 10, events: []stored{{parent: 100, hashes: []uint64{200}, blocks: [][]int64{tok(50)}}}})
	tr, err := ReadRecordings(context.Background(), []events.Recording{{Name: "x.rec", R: bytes.NewReader(record(t, msgs...))}}, RecordingOptions{MaxBlocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(tr.Notes, "\n")
	if !strings.Contains(all, "engine hashes were forgotten to bound memory") || !strings.Contains(all, "1 stored chain continues a parent block the recording never showed") {
		t.Errorf("notes do not say the first hash was forgotten:\n%s", all)
	}
}

// FuzzReadRecordings wraps two fuzzed batch payloads from one publisher in a valid recording
// (the record format and the batch decoder are fuzzed in package events): whatever events the
// decoder lets through, the adapter returns a consistent trace or an error, never a panic.
func FuzzReadRecordings(f *testing.F) {
	enc := func(ts float64, wire events.Wire, ss ...stored) []byte {
		b := events.Batch{TS: ts}
		for _, s := range ss {
			b.Events = append(b.Events, s.event())
		}
		return events.AppendBatch(nil, &b, wire)
	}
	mapEra, arrayEra := events.Wire{Era: events.EraMap}, events.Wire{Era: events.EraArray, StoredFields: 9}
	f.Add(enc(1, mapEra, stored{hashes: []uint64{1, 2}, blocks: [][]int64{tok(1), tok(2)}}),
		enc(2, arrayEra, stored{parent: 2, hashes: []uint64{3}, blocks: [][]int64{tok(3)}, lora: "x"}))
	f.Add(enc(1, mapEra, stored{parent: 7, hashes: []uint64{1}, blocks: [][]int64{tok(1)}, medium: "CPU"}),
		enc(0, arrayEra, stored{hashes: []uint64{1}, blocks: [][]int64{{1, 2, 3, 4, 5, 6, 7, 8}}, bs: 8}))
	// A block size whose product with the hash count overflows to the token count.
	f.Add(enc(1, mapEra, stored{hashes: []uint64{1, 2, 3, 4}, blocks: [][]int64{{1, 2, 3, 4}}, bs: 1<<62 + 1}), []byte{})
	f.Fuzz(func(t *testing.T, p1, p2 []byte) {
		var frames [][][]byte
		for i, p := range [][]byte{p1, p2} {
			frames = append(frames, [][]byte{[]byte("kv@a"), binary.BigEndian.AppendUint64(nil, uint64(i)), p})
		}
		data := record(t, msg{source: "a:1", raw: frames[0], ts: 1}, msg{source: "a:1", raw: frames[1], ts: 2})
		tr, err := ReadRecordings(context.Background(), []events.Recording{{Name: "f.rec", R: bytes.NewReader(data)}}, RecordingOptions{MaxBlocks: 64})
		if err != nil {
			return
		}
		for i, r := range tr.Requests {
			if r.InputTokens != len(r.Blocks)*tr.BlockSize || r.Arrival < 0 || tr.BlockSize <= 0 {
				t.Fatalf("request %d: %d tokens in %d blocks of %d, arrival %v", i, r.InputTokens, len(r.Blocks), tr.BlockSize, r.Arrival)
			}
		}
	})
}

// TestReadRecordingsOverlap merges two taps of the same publisher: the batches both saw count
// once, and a publisher that restarts (its sequence goes back with new content) is said.
func TestReadRecordingsOverlap(t *testing.T) {
	msgs := []msg{
		{source: "a:1", seq: 0, ts: 1, events: []stored{{hashes: []uint64{1}, blocks: [][]int64{tok(1)}}}},
		{source: "a:1", seq: 1, ts: 2, events: []stored{{hashes: []uint64{2}, blocks: [][]int64{tok(2)}}}},
	}
	restart := msg{source: "a:1", seq: 0, ts: 3, events: []stored{{hashes: []uint64{3}, blocks: [][]int64{tok(3)}}}}
	one, two := record(t, msgs...), record(t, append(msgs, restart)...)
	tr, err := ReadRecordings(context.Background(), []events.Recording{{Name: "one.rec", R: bytes.NewReader(one)}, {Name: "two.rec", R: bytes.NewReader(two)}}, RecordingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0", "1", "2"}, shape(tr)); diff != "" {
		t.Errorf("block shape (-want +got):\n%s", diff)
	}
	all := strings.Join(tr.Notes, "\n")
	for _, want := range []string{"2 batches were seen twice (overlapping recordings) and counted once", "1 publisher restart (sequence went back)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note contains %q; notes:\n%s", want, all)
		}
	}
}

// TestRecordingRefsBound: publisher a stores blocks 1 and 2 (2 references), continues that
// request with block 3 (3), then stores block 4 after block 1, a new request whose chain copies
// block 1: 5 references. A limit of 5 reads it; 4 refuses the third store, counting the copied
// block, with an error naming the limit and --max-block-refs.
func TestRecordingRefsBound(t *testing.T) {
	data := record(t,
		msg{source: "a:1", seq: 0, ts: 0, events: []stored{{hashes: []uint64{1, 2}, blocks: [][]int64{tok(1), tok(2)}}}},
		msg{source: "a:1", seq: 1, ts: 1, events: []stored{{parent: 2, hashes: []uint64{3}, blocks: [][]int64{tok(3)}}}},
		msg{source: "a:1", seq: 2, ts: 2, events: []stored{{parent: 1, hashes: []uint64{4}, blocks: [][]int64{tok(4)}}}},
	)
	read := func(limit int) (*Trace, error) {
		return ReadRecordings(context.Background(), []events.Recording{{Name: "x.rec", R: bytes.NewReader(data)}}, RecordingOptions{MaxBlockRefs: limit})
	}
	tr, err := read(5)
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(tr); !cmp.Equal(got, []string{"0 1 2", "0 3"}) {
		t.Fatalf("requests %q, want [0 1 2] and [0 3]", got)
	}
	_, err = read(4)
	if want := "recording x.rec: more than 4 block references"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--max-block-refs") {
		t.Errorf("error %v, want %q naming --max-block-refs", err, want)
	}
	// The continuation is not a request: one request is kept until the third store, and the
	// limit raised to the two requests reads the same trace as the default limit.
	_, err = ReadRecordings(context.Background(), []events.Recording{{Name: "x.rec", R: bytes.NewReader(data)}}, RecordingOptions{MaxTraceRequests: 1})
	if want := "recording x.rec: more than 1 requests"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--max-trace-requests") {
		t.Errorf("error %v, want %q naming --max-trace-requests", err, want)
	}
	raised, err := ReadRecordings(context.Background(), []events.Recording{{Name: "x.rec", R: bytes.NewReader(data)}}, RecordingOptions{MaxTraceRequests: 2})
	if err != nil {
		t.Fatalf("limit raised to 2 requests: %v", err)
	}
	if got := shape(raised); !cmp.Equal(got, shape(tr)) {
		t.Errorf("limit raised to 2 requests: %q, want %q", got, shape(tr))
	}
}
