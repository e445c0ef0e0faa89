package events

// The decoder as it was before field names were dispatched by number and common lead bytes
// were read inline (commit 8fd5a60), kept as the reference that TestDecodeVsReference and
// FuzzDecodeVsReference compare Decode with.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tinylib/msgp/msgp"
)

// errRefMalformed is returned by the walkers; refDecode converts it to a DecodeError with the offset.
var errRefMalformed = errors.New("malformed")

// refDecode decodes payload into b, reusing b's slices so a steady stream decodes without
// allocating. On error b holds a partial batch and must not be used.
func refDecode(payload []byte, b *Batch) error {
	d := refDecoder{all: payload}
	if err := d.batch(payload, b); err != nil {
		return &DecodeError{Offset: d.off, Reason: d.reason}
	}
	return nil
}

type refDecoder struct {
	all    []byte
	off    int
	reason string
}

func (d *refDecoder) fail(rest []byte, format string, args ...any) error {
	d.off = len(d.all) - len(rest)
	d.reason = fmt.Sprintf(format, args...)
	return errRefMalformed
}

func (d *refDecoder) wrap(rest []byte, what string, err error) error {
	return d.fail(rest, "%s: %v", what, err)
}

// arrayHeader reads an array header and checks that the claimed count fits in what is left
// (every element takes at least one byte) before anyone allocates for it.
func (d *refDecoder) arrayHeader(p []byte, what string) (int, []byte, error) {
	n, o, err := msgp.ReadArrayHeaderBytes(p)
	if err != nil {
		return 0, p, d.wrap(p, what, err)
	}
	if int64(n) > int64(len(o)) {
		return 0, p, d.fail(p, "%s claims %d elements but only %d bytes follow", what, n, len(o))
	}
	return int(n), o, nil
}

func (d *refDecoder) batch(p []byte, b *Batch) error {
	b.TS, b.DPRank, b.HasDPRank, b.Elements = 0, 0, false, 0
	b.Events = b.Events[:0]
	if msgp.NextType(p) != msgp.ArrayType {
		return d.fail(p, "batch is a %s, want an array [ts, events, dp_rank]", msgp.NextType(p))
	}
	n, p, err := d.arrayHeader(p, "batch")
	if err != nil {
		return err
	}
	if n < 2 {
		return d.fail(p, "batch has %d elements, want at least 2", n)
	}
	b.Elements = n
	switch msgp.NextType(p) {
	case msgp.Float64Type, msgp.Float32Type:
		if b.TS, p, err = msgp.ReadFloat64Bytes(p); err != nil {
			return d.wrap(p, "batch timestamp", err)
		}
	case msgp.IntType, msgp.UintType:
		var v int64
		if v, _, p, err = d.int(p, "batch timestamp"); err != nil {
			return err
		}
		b.TS = float64(v)
	default:
		return d.fail(p, "batch timestamp is a %s, want a float", msgp.NextType(p))
	}
	ne, p, err := d.arrayHeader(p, "events")
	if err != nil {
		return err
	}
	for range ne {
		b.Events = refGrow(b.Events)
		ev := &b.Events[len(b.Events)-1]
		if p, err = d.event(p, ev); err != nil {
			return err
		}
	}
	if n >= 3 {
		if msgp.IsNil(p) {
			p = p[1:]
		} else {
			if b.DPRank, _, p, err = d.int(p, "data_parallel_rank"); err != nil {
				return err
			}
			b.HasDPRank = true
		}
	}
	for i := 3; i < n; i++ {
		if p, err = msgp.Skip(p); err != nil {
			return d.wrap(p, "batch element", err)
		}
	}
	if len(p) != 0 {
		return d.fail(p, "%d bytes after the batch", len(p))
	}
	return nil
}

// refGrow extends s by one element, reusing the element's slices when the backing array has one.
func refGrow(s []Event) []Event {
	if len(s) < cap(s) {
		s = s[:len(s)+1]
		e := &s[len(s)-1]
		*e = Event{BlockHashes: e.BlockHashes[:0], TokenIDs: e.TokenIDs[:0]}
		return s
	}
	return append(s, Event{})
}

// int reads any msgpack integer. It returns the value as int64 and whether it was above
// MaxInt64 (then v holds the same 64 bits). The lead byte is decoded inline: token ids and
// hashes are most of every payload.
func (d *refDecoder) int(p []byte, what string) (int64, bool, []byte, error) {
	if len(p) == 0 {
		return 0, false, p, d.fail(p, "%s: no bytes left", what)
	}
	c := p[0]
	switch {
	case c < 0x80:
		return int64(c), false, p[1:], nil
	case c >= 0xe0:
		return int64(int8(c)), false, p[1:], nil
	}
	var n int
	switch c {
	case 0xcc, 0xd0:
		n = 1
	case 0xcd, 0xd1:
		n = 2
	case 0xce, 0xd2:
		n = 4
	case 0xcf, 0xd3:
		n = 8
	default:
		return 0, false, p, d.fail(p, "%s is a %s, want an integer", what, msgp.NextType(p))
	}
	if len(p) < 1+n {
		return 0, false, p, d.fail(p, "%s: %d bytes claimed, %d left", what, n, len(p)-1)
	}
	b := p[1 : 1+n]
	var u uint64
	switch n {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.BigEndian.Uint16(b))
	case 4:
		u = uint64(binary.BigEndian.Uint32(b))
	case 8:
		u = binary.BigEndian.Uint64(b)
	}
	if c >= 0xd0 { // signed: sign-extend from n bytes
		shift := 64 - 8*uint(n)
		return int64(u<<shift) >> shift, false, p[1+n:], nil
	}
	return int64(u), u > math.MaxInt64, p[1+n:], nil
}

func (d *refDecoder) hash(p []byte, h *Hash, what string) ([]byte, error) {
	switch msgp.NextType(p) {
	case msgp.BinType:
		v, o, err := msgp.ReadBytesZC(p)
		if err != nil {
			return p, d.wrap(p, what, err)
		}
		*h = Hash{Form: HashBin, Bin: v}
		for _, c := range v[max(0, len(v)-8):] {
			h.Value = h.Value<<8 | uint64(c)
		}
		return o, nil
	}
	v, big, o, err := d.int(p, what)
	if err != nil {
		if t := msgp.NextType(p); len(p) > 0 && t != msgp.IntType && t != msgp.UintType {
			return p, d.fail(p, "%s is a %s, want an integer or bin", what, t)
		}
		return p, err
	}
	*h = Hash{Form: HashInt, Value: uint64(v), Negative: v < 0 && !big}
	return o, nil
}

func (d *refDecoder) hashes(p []byte, ev *Event) ([]byte, error) {
	n, p, err := d.arrayHeader(p, "block_hashes")
	if err != nil {
		return p, err
	}
	ev.BlockHashes = ev.BlockHashes[:0]
	if cap(ev.BlockHashes) < n {
		ev.BlockHashes = make([]Hash, 0, n)
	}
	for range n {
		ev.BlockHashes = ev.BlockHashes[:len(ev.BlockHashes)+1]
		if p, err = d.hash(p, &ev.BlockHashes[len(ev.BlockHashes)-1], "block hash"); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (d *refDecoder) tokens(p []byte, ev *Event) ([]byte, error) {
	n, p, err := d.arrayHeader(p, "token_ids")
	if err != nil {
		return p, err
	}
	// One id at a time through the general integer reader: the oracle for Decode's token
	// fast paths (runs of four uint16s, the shift-and-mask read) must not share them.
	toks := make([]int64, n)
	for k := range toks {
		v, _, rest, err := d.int(p, "token id")
		if err != nil {
			return p, err
		}
		toks[k], p = v, rest
	}
	ev.TokenIDs = toks
	return p, nil
}

// optInt reads an int-or-nil field; other types are skipped and counted as odd.
func (d *refDecoder) optInt(p []byte, ev *Event, v *int64, has *bool, what string) ([]byte, error) {
	switch msgp.NextType(p) {
	case msgp.NilType:
		return p[1:], nil
	case msgp.IntType, msgp.UintType:
		x, _, o, err := d.int(p, what)
		if err != nil {
			return p, err
		}
		*v, *has = x, true
		return o, nil
	}
	return d.odd(p, ev, what)
}

// optStr reads a string-or-nil field; other types are skipped and counted as odd.
func (d *refDecoder) optStr(p []byte, ev *Event, v *[]byte, has *bool, what string) ([]byte, error) {
	switch msgp.NextType(p) {
	case msgp.NilType:
		return p[1:], nil
	case msgp.StrType:
		s, o, err := msgp.ReadStringZC(p)
		if err != nil {
			return p, d.wrap(p, what, err)
		}
		*v = s
		if has != nil {
			*has = true
		}
		return o, nil
	}
	return d.odd(p, ev, what)
}

func (d *refDecoder) odd(p []byte, ev *Event, what string) ([]byte, error) {
	ev.Odd++
	o, err := msgp.Skip(p)
	if err != nil {
		return p, d.wrap(p, what, err)
	}
	return o, nil
}

func (d *refDecoder) skip(p []byte, ev *Event) ([]byte, error) {
	ev.Unknown++
	o, err := msgp.Skip(p)
	if err != nil {
		return p, d.wrap(p, "unknown field", err)
	}
	return o, nil
}

func refTypeOf(tag []byte) Type {
	switch string(tag) {
	case "BlockStored":
		return TypeBlockStored
	case "BlockRemoved":
		return TypeBlockRemoved
	case "AllBlocksCleared":
		return TypeAllBlocksCleared
	}
	return TypeUnknown
}

func (d *refDecoder) event(p []byte, ev *Event) ([]byte, error) {
	switch msgp.NextType(p) {
	case msgp.ArrayType:
		return d.arrayEvent(p, ev)
	case msgp.MapType:
		return d.mapEvent(p, ev)
	}
	return p, d.fail(p, "event is a %s, want an array or a map", msgp.NextType(p))
}

// refStoredFields and refRemovedFields name the positional fields after the tag (SPEC §1.5).
var (
	refStoredFields = [...]string{"block_hashes", "parent_block_hash", "token_ids", "block_size",
		"lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
		"kv_cache_spec_sliding_window", "locality"}
	refRemovedFields = [...]string{"block_hashes", "medium", "group_idx", "locality"}
)

func (d *refDecoder) arrayEvent(p []byte, ev *Event) ([]byte, error) {
	n, p, err := d.arrayHeader(p, "event")
	if err != nil {
		return p, err
	}
	if n == 0 {
		return p, d.fail(p, "event array is empty, want a tag first")
	}
	ev.Era, ev.Fields = EraArray, n
	if msgp.NextType(p) != msgp.StrType {
		return p, d.fail(p, "event tag is a %s, want a string", msgp.NextType(p))
	}
	if ev.Tag, p, err = msgp.ReadStringZC(p); err != nil {
		return p, d.wrap(p, "event tag", err)
	}
	ev.Type = refTypeOf(ev.Tag)
	var names []string
	switch ev.Type {
	case TypeBlockStored:
		names = refStoredFields[:]
	case TypeBlockRemoved:
		names = refRemovedFields[:]
	}
	for i := 1; i < n; i++ {
		if i-1 < len(names) {
			p, err = d.field(p, ev, names[i-1])
		} else {
			p, err = d.skip(p, ev)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func (d *refDecoder) mapEvent(p []byte, ev *Event) ([]byte, error) {
	n, o, err := msgp.ReadMapHeaderBytes(p)
	if err != nil {
		return p, d.wrap(p, "event map", err)
	}
	if int64(n)*2 > int64(len(o)) {
		return p, d.fail(p, "event map claims %d keys but only %d bytes follow", n, len(o))
	}
	p = o
	ev.Era, ev.Fields = EraMap, int(n)
	// Fields are decoded by the event's type, so it must be known first. msgspec writes
	// "type" first; other encoders may not, and then one pass over the keys finds it.
	if n > 0 && !refBytesHasTypeKey(p) {
		if err := d.findType(p, n, ev); err != nil {
			return p, err
		}
	}
	for range n {
		if msgp.NextType(p) != msgp.StrType {
			if p, err = d.skip(p, ev); err != nil { // a non-string key and its value
				return p, err
			}
			if p, err = msgp.Skip(p); err != nil {
				return p, d.wrap(p, "event map value", err)
			}
			continue
		}
		var key []byte
		if key, p, err = msgp.ReadStringZC(p); err != nil {
			return p, d.wrap(p, "event map key", err)
		}
		if string(key) == "type" {
			if msgp.NextType(p) != msgp.StrType {
				return p, d.fail(p, "event type is a %s, want a string", msgp.NextType(p))
			}
			if ev.Tag, p, err = msgp.ReadStringZC(p); err != nil {
				return p, d.wrap(p, "event type", err)
			}
			ev.Type = refTypeOf(ev.Tag)
			continue
		}
		if p, err = d.field(p, ev, refKnownName(key)); err != nil {
			return p, err
		}
	}
	if ev.Tag == nil {
		return p, d.fail(p, "event map has no \"type\" key")
	}
	return p, nil
}

// refBytesHasTypeKey reports whether p starts with the map key "type".
func refBytesHasTypeKey(p []byte) bool {
	return len(p) >= 5 && p[0] == 0xa4 && string(p[1:5]) == "type"
}

// findType looks through a map event's n keys for "type" and sets the event's tag and type;
// a missing "type" is left for mapEvent to report.
func (d *refDecoder) findType(p []byte, n uint32, ev *Event) error {
	for range n {
		var err error
		if msgp.NextType(p) == msgp.StrType {
			var key []byte
			if key, p, err = msgp.ReadStringZC(p); err != nil {
				return d.wrap(p, "event map key", err)
			}
			if string(key) == "type" && msgp.NextType(p) == msgp.StrType {
				if ev.Tag, _, err = msgp.ReadStringZC(p); err != nil {
					return d.wrap(p, "event type", err)
				}
				ev.Type = refTypeOf(ev.Tag)
				return nil
			}
		} else if p, err = msgp.Skip(p); err != nil {
			return d.wrap(p, "event map key", err)
		}
		if p, err = msgp.Skip(p); err != nil {
			return d.wrap(p, "event map value", err)
		}
	}
	return nil
}

// refKnownName returns the constant spelling of a known field name, "" for others, so looking a
// map key up does not allocate a string.
func refKnownName(key []byte) string {
	switch string(key) {
	case "block_hashes":
		return "block_hashes"
	case "parent_block_hash":
		return "parent_block_hash"
	case "token_ids":
		return "token_ids"
	case "block_size":
		return "block_size"
	case "lora_id":
		return "lora_id"
	case "medium":
		return "medium"
	case "lora_name":
		return "lora_name"
	case "extra_keys":
		return "extra_keys"
	case "group_idx":
		return "group_idx"
	case "kv_cache_spec_kind":
		return "kv_cache_spec_kind"
	case "kv_cache_spec_sliding_window":
		return "kv_cache_spec_sliding_window"
	case "locality":
		return "locality"
	}
	return ""
}

// field decodes one named field; the same names serve both eras. Fields that do not belong to
// the event's type are skipped as unknown.
func (d *refDecoder) field(p []byte, ev *Event, name string) ([]byte, error) {
	stored := ev.Type == TypeBlockStored
	removed := ev.Type == TypeBlockRemoved
	switch {
	case name == "block_hashes" && (stored || removed):
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		return d.hashes(p, ev)
	case name == "parent_block_hash" && stored:
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		ev.HasParent = true
		return d.hash(p, &ev.Parent, "parent_block_hash")
	case name == "token_ids" && stored:
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		return d.tokens(p, ev)
	case name == "block_size" && stored:
		var has bool
		return d.optInt(p, ev, &ev.BlockSize, &has, name)
	case name == "lora_id" && stored:
		return d.optInt(p, ev, &ev.LoRAID, &ev.HasLoRAID, name)
	case name == "medium" && (stored || removed):
		return d.optStr(p, ev, &ev.Medium, nil, name)
	case name == "lora_name" && stored:
		return d.optStr(p, ev, &ev.LoRAName, &ev.HasLoRAName, name)
	case name == "extra_keys" && stored:
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		if msgp.NextType(p) != msgp.ArrayType {
			return d.odd(p, ev, name)
		}
		o, err := msgp.Skip(p)
		if err != nil {
			return p, d.wrap(p, name, err)
		}
		ev.ExtraKeys = p[:len(p)-len(o)]
		return o, nil
	case name == "group_idx" && (stored || removed):
		return d.optInt(p, ev, &ev.GroupIdx, &ev.HasGroupIdx, name)
	case name == "kv_cache_spec_kind" && stored:
		return d.optStr(p, ev, &ev.SpecKind, nil, name)
	case name == "kv_cache_spec_sliding_window" && stored:
		return d.optInt(p, ev, &ev.SlidingWindow, &ev.HasSlidingWindow, name)
	case name == "locality" && (stored || removed):
		return d.optStr(p, ev, &ev.Locality, nil, name)
	}
	return d.skip(p, ev)
}
