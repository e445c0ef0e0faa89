package events

import (
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tinylib/msgp/msgp"
)

func sampleStored() Event {
	return Event{
		Type:        TypeBlockStored,
		BlockHashes: []Hash{{Form: HashInt, Value: 15760518052499183552}, {Form: HashInt, Value: 7}},
		TokenIDs:    []int64{1, 2, 3, 300, 70000, 5, 6, 7},
		BlockSize:   4,
		Medium:      []byte("GPU"),
		GroupIdx:    0, HasGroupIdx: true,
		SpecKind: []byte("full_attention"),
	}
}

// TestDecodeRoundTrip encodes one batch in every vLLM dialect and checks that the decoder gets
// back what each dialect carries.
func TestDecodeRoundTrip(t *testing.T) {
	for _, fields := range []int{6, 7, 8, 9, 10, 12} {
		for _, era := range []Era{EraArray, EraMap} {
			for _, bin := range []bool{false, true} {
				name := era.String() + "-" + string(rune('0'+fields/10)) + string(rune('0'+fields%10))
				if bin {
					name += "-bin"
				}
				t.Run(name, func(t *testing.T) {
					in := Batch{TS: 1.5, DPRank: 1, HasDPRank: true, Elements: 3, Events: []Event{
						sampleStored(),
						{Type: TypeBlockRemoved, BlockHashes: []Hash{{Form: HashInt, Value: 7}}, Medium: []byte("GPU")},
						{Type: TypeAllBlocksCleared},
					}}
					p := AppendBatch(nil, &in, Wire{Era: era, StoredFields: fields, BinHashes: bin})
					var got Batch
					if err := Decode(p, &got); err != nil {
						t.Fatalf("Decode: %v", err)
					}
					want := in
					want.Events = append([]Event(nil), in.Events...)
					for i := range want.Events {
						e := &want.Events[i]
						e.Era = era
						e.Tag = []byte(e.Type.String())
						if bin {
							hs := make([]Hash, len(e.BlockHashes))
							for j, h := range e.BlockHashes {
								b := make([]byte, 8)
								for k := range 8 {
									b[k] = byte(h.Value >> (56 - 8*k))
								}
								hs[j] = Hash{Form: HashBin, Value: h.Value, Bin: b}
							}
							e.BlockHashes = hs
						}
						if e.Type == TypeBlockStored && fields < 7 {
							e.Medium = nil
						}
						if e.Type == TypeBlockRemoved && fields < 7 {
							e.Medium = nil
						}
						if fields < 10 {
							e.HasGroupIdx = false
						}
						if fields < 11 && e.Type == TypeBlockStored {
							e.SpecKind = nil
						}
					}
					opts := []cmp.Option{
						cmpopts.IgnoreFields(Event{}, "Fields"),
						cmpopts.EquateEmpty(),
					}
					if diff := cmp.Diff(want, got, opts...); diff != "" {
						t.Errorf("decoded batch (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestDecodeTolerant covers shapes the decoder must accept without failing the batch.
func TestDecodeTolerant(t *testing.T) {
	tests := []struct {
		name  string
		build func() []byte
		check func(t *testing.T, b *Batch)
	}{
		{
			name: "two-element batch (0.9.0)",
			build: func() []byte {
				in := Batch{TS: 2, Events: []Event{sampleStored()}}
				return AppendBatch(nil, &in, Wire{Era: EraArray, StoredFields: 6, TwoElements: true})
			},
			check: func(t *testing.T, b *Batch) {
				if b.Elements != 2 || b.HasDPRank || len(b.Events) != 1 {
					t.Errorf("got elements %d, dp %v, events %d; want 2, false, 1", b.Elements, b.HasDPRank, len(b.Events))
				}
			},
		},
		{
			name: "longer batch and longer event array",
			build: func() []byte {
				p := msgp.AppendArrayHeader(nil, 5)
				p = msgp.AppendFloat64(p, 1)
				p = msgp.AppendArrayHeader(p, 1)
				p = msgp.AppendArrayHeader(p, 16)
				p = msgp.AppendString(p, "BlockStored")
				p = msgp.AppendArrayHeader(p, 1)
				p = msgp.AppendUint64(p, 1<<63+5)
				p = msgp.AppendInt(p, 0) // parent 0, as some emulators send
				p = msgp.AppendArrayHeader(p, 2)
				p = msgp.AppendInt(p, 1)
				p = msgp.AppendInt(p, 2)
				p = msgp.AppendInt(p, 2)
				for range 11 {
					p = msgp.AppendString(p, "future")
				}
				p = msgp.AppendNil(p)
				p = msgp.AppendString(p, "extra")
				p = msgp.AppendMapHeader(p, 0)
				return p
			},
			check: func(t *testing.T, b *Batch) {
				e := b.Events[0]
				if e.BlockHashes[0].Value != 1<<63+5 || !e.ParentIsRoot() || e.Unknown != 3 || e.Odd != 4 {
					t.Errorf("got hash %d root %v unknown %d odd %d; want %d true 3 4", e.BlockHashes[0].Value, e.ParentIsRoot(), e.Unknown, e.Odd, uint64(1<<63+5))
				}
			},
		},
		{
			name: "map with unknown keys and signed hash",
			build: func() []byte {
				p := msgp.AppendArrayHeader(nil, 3)
				p = msgp.AppendFloat32(p, 3)
				p = msgp.AppendArrayHeader(p, 2)
				p = msgp.AppendMapHeader(p, 4)
				p = msgp.AppendString(p, "ownership")
				p = msgp.AppendString(p, "x")
				p = msgp.AppendString(p, "type")
				p = msgp.AppendString(p, "BlockRemoved")
				p = msgp.AppendString(p, "block_hashes")
				p = msgp.AppendArrayHeader(p, 1)
				p = msgp.AppendInt64(p, -42)
				p = msgp.AppendInt(p, 9) // non-string key
				p = msgp.AppendInt(p, 9)
				p = msgp.AppendMapHeader(p, 1)
				p = msgp.AppendString(p, "type")
				p = msgp.AppendString(p, "SomethingNew")
				p = msgp.AppendNil(p)
				return p
			},
			check: func(t *testing.T, b *Batch) {
				if b.TS != 3 || b.Events[0].Type != TypeBlockRemoved || !b.Events[0].BlockHashes[0].Negative || b.Events[0].Unknown != 2 {
					t.Errorf("got %+v", b.Events[0])
				}
				if b.Events[1].Type != TypeUnknown || string(b.Events[1].Tag) != "SomethingNew" {
					t.Errorf("got type %v tag %q, want unknown SomethingNew", b.Events[1].Type, b.Events[1].Tag)
				}
			},
		},
		{
			// msgspec writes the tag first, but a map is unordered: another encoder (an
			// emulator, a proxy re-encoding a dict) may put "type" anywhere.
			name: "map with type last",
			build: func() []byte {
				p := msgp.AppendArrayHeader(nil, 3)
				p = msgp.AppendFloat64(p, 1)
				p = msgp.AppendArrayHeader(p, 1)
				p = msgp.AppendMapHeader(p, 5)
				p = msgp.AppendString(p, "block_hashes")
				p = msgp.AppendArrayHeader(p, 1)
				p = msgp.AppendUint64(p, 77)
				p = msgp.AppendString(p, "token_ids")
				p = msgp.AppendArrayHeader(p, 2)
				p = msgp.AppendInt(p, 5)
				p = msgp.AppendInt(p, 6)
				p = msgp.AppendString(p, "block_size")
				p = msgp.AppendInt(p, 2)
				p = msgp.AppendString(p, "medium")
				p = msgp.AppendString(p, "CPU")
				p = msgp.AppendString(p, "type")
				p = msgp.AppendString(p, "BlockStored")
				p = msgp.AppendInt(p, 0)
				return p
			},
			check: func(t *testing.T, b *Batch) {
				e := b.Events[0]
				got := []any{e.Type, len(e.BlockHashes), e.TokenIDs, e.BlockSize, string(e.Medium), e.Unknown, e.Odd}
				want := []any{TypeBlockStored, 1, []int64{5, 6}, int64(2), "CPU", 0, 0}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("type, hashes, tokens, block size, medium, unknown, odd (-want +got):\n%s", diff)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Batch
			if err := Decode(tt.build(), &b); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tt.check(t, &b)
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct{ name, hex string }{
		{"empty", ""},
		{"not an array", "a3616263"},
		{"one element", "91cb3ff0000000000000"},
		{"huge event count", "93cb3ff0000000000000dd7fffffff"},
		{"huge token count", "93cb3ff000000000000091" + "95ab426c6f636b53746f726564" + "90c0dd7fffffff"},
		{"event not array", "93cb3ff000000000000091c3c0"},
		{"trailing bytes", "93cb3ff000000000000090c0c0"},
		{"bad hash type", "93cb3ff000000000000091" + "92ac426c6f636b52656d6f766564" + "91a178c0"},
		{"map without type", "93cb3ff00000000000009181a16101c0"},
		{"truncated", "93cb3ff0000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := hex.DecodeString(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			var b Batch
			err = Decode(p, &b)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%s) = %v, want a DecodeError", tt.hex, err)
			}
		})
	}
}

func TestExtraKeys(t *testing.T) {
	p := msgp.AppendArrayHeader(nil, 2)
	p = msgp.AppendArrayHeader(p, 2)
	p = msgp.AppendString(p, "my-lora")
	p = msgp.AppendArrayHeader(p, 2)
	p = msgp.AppendString(p, "img")
	p = msgp.AppendInt(p, 3)
	p = msgp.AppendNil(p)
	got, err := ExtraKeys(p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"my-lora", []any{"img", int64(3)}}, nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExtraKeys (-want +got):\n%s", diff)
	}
	if _, err := ExtraKeys([]byte{0xdd, 0x7f, 0xff, 0xff, 0xff}); err == nil {
		t.Error("ExtraKeys accepted an array claiming 2^31 entries in 0 bytes")
	}
}

// FuzzDecode feeds arbitrary payloads to the decoder: it must return or fail, never panic, and
// a payload it accepts must survive a re-encode and decode with the same event count.
func FuzzDecode(f *testing.F) {
	for _, era := range []Era{EraArray, EraMap} {
		in := Batch{TS: 1, Events: []Event{sampleStored(), {Type: TypeBlockRemoved, BlockHashes: []Hash{{Form: HashInt, Value: 3}}}, {Type: TypeAllBlocksCleared}}}
		f.Add(AppendBatch(nil, &in, Wire{Era: era}))
		f.Add(AppendBatch(nil, &in, Wire{Era: era, StoredFields: 6, BinHashes: true, TwoElements: true}))
	}
	f.Add([]byte{0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		var b Batch
		if err := Decode(p, &b); err != nil {
			return
		}
		for i := range b.Events {
			_, _ = ExtraKeys(b.Events[i].ExtraKeys)
		}
		q := AppendBatch(nil, &b, Wire{Era: EraMap})
		var b2 Batch
		if err := Decode(q, &b2); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(b2.Events) != len(b.Events) {
			t.Fatalf("re-encoded batch has %d events, want %d", len(b2.Events), len(b.Events))
		}
	})
}

// TestDecodeTokenForms: token ids in every integer form an encoder may use (fixint, uint8 to
// uint64, negative and signed forms), at every position relative to the end of the payload,
// where the eight-byte read stops fitting, decode to their values.
func TestDecodeTokenForms(t *testing.T) {
	vals := []int64{0, 5, 127, 128, 255, 256, 65535, 65536, 151000, 1<<32 - 1, 1 << 32, 1<<62 + 3, -1, -33, -200, -70000}
	for n := 1; n <= len(vals); n++ {
		for _, signed := range []bool{false, true} {
			p := msgp.AppendArrayHeader(nil, uint32(n))
			for _, v := range vals[:n] {
				if signed || v < 0 {
					p = msgp.AppendInt64(p, v)
				} else {
					p = msgp.AppendUint64(p, uint64(v))
				}
			}
			var ev Event
			d := decoder{all: p}
			rest, err := d.tokens(p, &ev)
			if err != nil || len(rest) != 0 {
				t.Fatalf("%d tokens (signed %v): %v, %d bytes left", n, signed, err, len(rest))
			}
			if diff := cmp.Diff(vals[:n], ev.TokenIDs); diff != "" {
				t.Errorf("%d tokens (signed %v) (-want +got):\n%s", n, signed, diff)
			}
		}
	}
}

// tokensRef is the reference for decoder.tokens: every id read by decoder.int, one at a time.
func tokensRef(d *decoder, p []byte) ([]int64, []byte, error) {
	n, p, err := d.arrayHeader(p, "token_ids")
	if err != nil {
		return nil, p, err
	}
	toks := make([]int64, n)
	for k := range toks {
		if toks[k], _, p, err = d.int(p, "token id"); err != nil {
			return nil, p, err
		}
	}
	return toks, p, nil
}

// checkTokens decodes p with decoder.tokens and with tokensRef and fails on any difference:
// values, the bytes left, and for a malformed array the offset and reason.
func checkTokens(t *testing.T, p []byte) {
	t.Helper()
	d, dr := decoder{all: p}, decoder{all: p}
	ev := Event{TokenIDs: []int64{9, 9, 9}} // a reused slice, as a steady stream has
	rest, err := d.tokens(p, &ev)
	want, wantRest, wantErr := tokensRef(&dr, p)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("% x: error %v, reference %v", p, err, wantErr)
	}
	if err != nil {
		if d.off != dr.off || d.reason != dr.reason {
			t.Fatalf("% x: failed at %d (%s), reference at %d (%s)", p, d.off, d.reason, dr.off, dr.reason)
		}
		return
	}
	if len(rest) != len(wantRest) {
		t.Fatalf("% x: %d bytes left, reference %d", p, len(rest), len(wantRest))
	}
	if !slices.Equal(ev.TokenIDs, want) {
		t.Fatalf("% x: tokens %v, reference %v", p, ev.TokenIDs, want)
	}
}

// TestDecodeTokensVsReference: the token loop's fast paths (runs of four uint16 ids, the
// eight-byte read) give what reading each id on its own gives, on random mixes of every form
// with long and short runs of each, cut at every length, and followed by other bytes.
func TestDecodeTokensVsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	forms := []func() int64{
		func() int64 { return rng.Int64N(128) },             // fixint
		func() int64 { return 128 + rng.Int64N(128) },       // uint8
		func() int64 { return 256 + rng.Int64N(65536-256) }, // uint16
		func() int64 { return 65536 + rng.Int64N(1<<20) },   // uint32
		func() int64 { return 1<<32 + rng.Int64N(1<<40) },   // uint64
		func() int64 { return -1 - rng.Int64N(70000) },      // negative forms
	}
	for round := range 3000 {
		n := rng.IntN(40)
		p := msgp.AppendArrayHeader(nil, uint32(n))
		// Mostly uint16 in runs, as a vocabulary sends them, with any other form mixed in.
		for range n {
			f := 2
			if rng.IntN(4) == 0 {
				f = rng.IntN(len(forms))
			}
			v := forms[f]()
			if round%2 == 0 && v >= 0 {
				p = msgp.AppendUint64(p, uint64(v))
			} else {
				p = msgp.AppendInt64(p, v)
			}
		}
		checkTokens(t, p)
		for cut := range len(p) {
			checkTokens(t, p[:cut])
		}
		checkTokens(t, append(p, 0xcd, 0x01, 0x02, 0xc0))
		// A lead byte 0xcd where an id should start but a string follows.
		if n > 0 {
			q := slices.Clone(p)
			q[len(q)-1] = 0xa1
			checkTokens(t, q)
		}
	}
}

// FuzzDecodeTokens: on any bytes, decoder.tokens agrees with reading each id on its own.
func FuzzDecodeTokens(f *testing.F) {
	f.Add([]byte{0x94, 0xcd, 1, 2, 0xcd, 3, 4, 0xcd, 5, 6, 0xcd, 7, 8})
	f.Add([]byte{0x95, 0xcd, 1, 2, 0xcd, 3, 4, 0xcd, 5, 6, 0xcd, 7, 8, 0x05})
	f.Add([]byte{0x95, 0xcd, 1, 2, 0xcd, 3, 4, 0xcd, 5, 6, 0xcd, 7, 0xce, 1, 2, 3, 4, 5})
	f.Add([]byte{0x93, 0x01, 0xcc, 0xff, 0xce, 1, 2, 3, 4, 0xd2, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) { checkTokens(t, p) })
}

// checkVsReference decodes p with Decode and with the decoder before its fast paths
// (refDecode) and fails on any difference: the error (offset and reason) or the batch. Decode
// decodes into reused, as a stream does, so nothing of an earlier batch may be left over.
func checkVsReference(t *testing.T, p []byte, reused *Batch) {
	t.Helper()
	var want Batch
	err := Decode(p, reused)
	// A copy with empty slices as nil, as a fresh batch has them, so that DeepEqual can
	// compare it; cmp, which can tell them apart, is only asked when DeepEqual differs.
	got := *reused
	got.Events = slices.Clone(got.Events)
	if len(got.Events) == 0 {
		got.Events = nil
	}
	for i := range got.Events {
		if e := &got.Events[i]; len(e.BlockHashes) == 0 {
			e.BlockHashes = nil
		}
		if e := &got.Events[i]; len(e.TokenIDs) == 0 {
			e.TokenIDs = nil
		}
	}
	wantErr := refDecode(p, &want)
	for i := range want.Events {
		if e := &want.Events[i]; len(e.TokenIDs) == 0 {
			e.TokenIDs = nil
		}
	}
	// A NaN timestamp decodes alike in both, but is unequal to itself.
	if math.IsNaN(got.TS) && math.IsNaN(want.TS) {
		got.TS, want.TS = 0, 0
	}
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("% x: error %v, reference %v", p, err, wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("% x: %v, reference %v", p, err, wantErr)
		}
		return
	}
	if reflect.DeepEqual(want, got) {
		return
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("% x: (-reference +got):\n%s", p, diff)
	}
}

// randomEvent makes an event of any type with any field set or not, short and long strings,
// small and large integers, int and bin hashes.
func randomEvent(rng *rand.Rand) Event {
	str := func() []byte {
		if rng.IntN(4) == 0 {
			return []byte(strings.Repeat("x", 25+rng.IntN(20))) // across the fixstr limit
		}
		return []byte("GPU"[:rng.IntN(4)])
	}
	num := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Int64N(128)
		case 1:
			return -rng.Int64N(1000)
		}
		return rng.Int64()
	}
	ev := Event{Type: []Type{TypeBlockStored, TypeBlockStored, TypeBlockRemoved, TypeAllBlocksCleared, TypeUnknown}[rng.IntN(5)]}
	if ev.Type == TypeUnknown {
		ev.Tag = []byte("BlockMoved")
	}
	for range rng.IntN(5) {
		h := Hash{Form: HashInt, Value: rng.Uint64() >> (rng.IntN(4) * 20)}
		if rng.IntN(4) == 0 {
			h = Hash{Form: HashBin, Bin: []byte("0123456789abcdef0123456789abcdef")[:rng.IntN(33)]}
		}
		ev.BlockHashes = append(ev.BlockHashes, h)
	}
	if rng.IntN(2) == 0 {
		ev.HasParent, ev.Parent = true, Hash{Form: HashInt, Value: rng.Uint64()}
	}
	for range rng.IntN(40) {
		ev.TokenIDs = append(ev.TokenIDs, rng.Int64N(151000))
	}
	ev.BlockSize = num()
	ev.LoRAID, ev.HasLoRAID = num(), rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		ev.Medium = str()
	}
	if rng.IntN(3) == 0 {
		ev.LoRAName, ev.HasLoRAName = str(), true
	}
	ev.GroupIdx, ev.HasGroupIdx = num(), rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		ev.SpecKind = str()
	}
	ev.SlidingWindow, ev.HasSlidingWindow = num(), rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		ev.Locality = str()
	}
	return ev
}

// TestDecodeVsReference: Decode, with its fields dispatched by number and common lead bytes
// read inline, gives what the decoder before those changes gave, on random batches of every
// wire form, and on the same batches with a byte changed or cut short (malformed batches,
// fields of unexpected type, unknown keys).
func TestDecodeVsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var reused Batch
	for range 3000 {
		b := Batch{TS: 1.7e9, DPRank: int64(rng.IntN(3)), HasDPRank: true}
		for range rng.IntN(4) {
			b.Events = append(b.Events, randomEvent(rng))
		}
		w := Wire{Era: []Era{EraArray, EraMap}[rng.IntN(2)], StoredFields: 6 + rng.IntN(7), BinHashes: rng.IntN(4) == 0, TwoElements: rng.IntN(4) == 0}
		p := AppendBatch(nil, &b, w)
		checkVsReference(t, p, &reused)
		for range 20 {
			q := slices.Clone(p)
			q[rng.IntN(len(q))] = byte(rng.IntN(256))
			checkVsReference(t, q, &reused)
			checkVsReference(t, p[:rng.IntN(len(p))], &reused)
		}
	}
}

// FuzzDecodeVsReference: on any bytes, Decode and the decoder before its fast paths agree.
func FuzzDecodeVsReference(f *testing.F) {
	for _, era := range []Era{EraArray, EraMap} {
		in := Batch{TS: 1, Events: []Event{sampleStored(), {Type: TypeBlockRemoved, BlockHashes: []Hash{{Form: HashInt, Value: 3}}}, {Type: TypeAllBlocksCleared}}}
		f.Add(AppendBatch(nil, &in, Wire{Era: era}))
		f.Add(AppendBatch(nil, &in, Wire{Era: era, StoredFields: 6, BinHashes: true, TwoElements: true}))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var b Batch
		checkVsReference(t, p, &b)
		// The same bytes again into the batch just used: nothing may be left over.
		checkVsReference(t, p, &b)
	})
}

// TestFieldIDs: the decoder's field numbers name the encoder's fields, in the same positions.
func TestFieldIDs(t *testing.T) {
	for i, f := range storedIDs {
		if fieldNames[f] != storedFields[i] || fieldOf([]byte(storedFields[i])) != f {
			t.Errorf("stored position %d: %q by number, %q by name", i, fieldNames[f], storedFields[i])
		}
	}
	for i, f := range removedIDs {
		if fieldNames[f] != removedFields[i] {
			t.Errorf("removed position %d: %q by number, %q by name", i, fieldNames[f], removedFields[i])
		}
	}
}

// TestEventReset: an event reused for the next one in a batch (reset, then clearUnset with
// nothing set) has every field zero but its two slices, which are empty and keep their arrays.
// Every field is set through reflection, so a field added to Event later is covered too.
func TestEventReset(t *testing.T) {
	var e Event
	v := reflect.ValueOf(&e).Elem()
	var fill func(f reflect.Value)
	fill = func(f reflect.Value) {
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(7)
		case reflect.Uint8, reflect.Uint64:
			f.SetUint(7)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 4))
		case reflect.Struct:
			for i := range f.NumField() {
				fill(f.Field(i))
			}
		default:
			t.Fatalf("field of kind %s: teach this test to fill it", f.Kind())
		}
	}
	fill(v)
	e.Parent.Bin = []byte{1}
	e.reset()
	e.clearUnset(0)
	if len(e.BlockHashes) != 0 || cap(e.BlockHashes) != 4 || len(e.TokenIDs) != 0 || cap(e.TokenIDs) != 4 {
		t.Fatalf("slices len %d cap %d, len %d cap %d; want empty, arrays kept", len(e.BlockHashes), cap(e.BlockHashes), len(e.TokenIDs), cap(e.TokenIDs))
	}
	e.BlockHashes, e.TokenIDs = nil, nil
	if !reflect.ValueOf(e).IsZero() {
		t.Errorf("fields left after reset: %+v", e)
	}
}

// TestDecodeTruncatedHash: a block hash cut short inside its integer (a uint64's lead byte and
// three of its eight bytes) is reported as truncated, not as a hash of the wrong type: the
// integer reader's reason was overwritten with "block hash is a uint, want an integer or bin",
// which names an integer as what is wanted when an integer is what is there.
func TestDecodeTruncatedHash(t *testing.T) {
	for _, tt := range []struct{ name, hex, want string }{
		{"uint64 cut short", "93cb3ff000000000000091" + "92ac426c6f636b52656d6f766564" + "91cf010203",
			"block hash: 8 bytes claimed, 3 left"},
		{"not an integer", "93cb3ff000000000000091" + "92ac426c6f636b52656d6f766564" + "91a178c0",
			"block hash is a str, want an integer or bin"},
		{"parent cut short", "93cb3ff000000000000091" + "93ab426c6f636b53746f726564" + "9101" + "d201",
			"parent_block_hash: 4 bytes claimed, 1 left"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := hex.DecodeString(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			var b Batch
			err = Decode(p, &b)
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != tt.want {
				t.Fatalf("Decode = %v, want the reason %q", err, tt.want)
			}
		})
	}
}
