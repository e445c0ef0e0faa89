package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tinylib/msgp/msgp"
)

// Type is the kind of a KV-cache event, from its class-name tag.
type Type uint8

// The event types vLLM sends. TypeUnknown is a tag this decoder does not know: counted, skipped.
const (
	TypeUnknown Type = iota
	TypeBlockStored
	TypeBlockRemoved
	TypeAllBlocksCleared
)

// String returns vLLM's class name for the type.
func (t Type) String() string {
	switch t {
	case TypeBlockStored:
		return "BlockStored"
	case TypeBlockRemoved:
		return "BlockRemoved"
	case TypeAllBlocksCleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Era is the wire encoding of an event: a positional array (vLLM 0.9 to 0.23) or a map with a
// "type" key (0.24 and later).
type Era uint8

// The wire eras.
const (
	EraArray Era = iota + 1
	EraMap
)

// String returns "array" or "map".
func (e Era) String() string {
	switch e {
	case EraArray:
		return "array"
	case EraMap:
		return "map"
	}
	return "unknown"
}

// HashForm is how a block hash travels: a msgpack integer (the last 8 digest bytes, or before
// 0.10.2 a signed Python hash) or the whole digest as bin.
type HashForm uint8

// The hash forms.
const (
	HashInt HashForm = iota + 1
	HashBin
)

// String returns "int" or "bin".
func (f HashForm) String() string {
	switch f {
	case HashInt:
		return "int"
	case HashBin:
		return "bin"
	}
	return "unknown"
}

// Hash is a block hash as it was on the wire. For HashInt, Value holds the integer's 64 bits
// (Negative tells a signed value apart); for HashBin, Bin holds the whole digest and Value its
// last eight bytes read big-endian, which is what int mode would have sent.
type Hash struct {
	Form     HashForm
	Negative bool
	Value    uint64
	Bin      []byte
}

// Event is one decoded KV-cache event. Byte-slice fields point into the payload passed to
// Decode and are valid until the payload is reused. Has* flags tell nil/absent from zero.
type Event struct {
	Type Type
	Era  Era
	// Tag is the raw class name, kept for unknown types.
	Tag         []byte
	BlockHashes []Hash
	Parent      Hash
	HasParent   bool
	// TokenIDs are all tokens of the stored blocks, concatenated.
	TokenIDs         []int64
	BlockSize        int64
	LoRAID           int64
	HasLoRAID        bool
	Medium           []byte
	LoRAName         []byte
	HasLoRAName      bool
	ExtraKeys        []byte // raw msgpack of extra_keys when not nil
	GroupIdx         int64
	HasGroupIdx      bool
	SpecKind         []byte
	SlidingWindow    int64
	HasSlidingWindow bool
	Locality         []byte
	// Fields is the positional length (tag included) or the number of map keys.
	Fields int
	// Unknown counts map keys and positions this decoder does not know; Odd counts known fields
	// whose value had an unexpected type and was ignored.
	Unknown, Odd int
}

// ParentIsRoot reports whether the event's chain starts at token 0: parent nil, or 0 as some
// emulators send.
func (e *Event) ParentIsRoot() bool {
	return !e.HasParent || (e.Parent.Form == HashInt && e.Parent.Value == 0)
}

// Batch is one decoded event batch, [ts, events, data_parallel_rank].
type Batch struct {
	TS        float64
	DPRank    int64
	HasDPRank bool
	// Elements is the length of the batch array (2 in vLLM 0.9.0, 3 since).
	Elements int
	Events   []Event
}

// DecodeError describes a malformed payload: where and why it failed.
type DecodeError struct {
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("malformed batch at byte %d: %s", e.Offset, e.Reason)
}

// errMalformed is returned by the walkers; Decode converts it to a DecodeError with the offset.
var errMalformed = errors.New("malformed")

// Decode decodes payload into b, reusing b's slices so a steady stream decodes without
// allocating. On error b holds a partial batch and must not be used.
func Decode(payload []byte, b *Batch) error {
	d := decoder{all: payload}
	if err := d.batch(payload, b); err != nil {
		return &DecodeError{Offset: d.off, Reason: d.reason}
	}
	return nil
}

type decoder struct {
	// set says which of the current event's byte-slice fields were written (set* bits); the
	// others still hold the previous batch's and are cleared when the event is complete.
	set    uint8
	all    []byte
	off    int
	reason string
}

func (d *decoder) fail(rest []byte, format string, args ...any) error {
	d.off = len(d.all) - len(rest)
	d.reason = fmt.Sprintf(format, args...)
	return errMalformed
}

func (d *decoder) wrap(rest []byte, what string, err error) error {
	return d.fail(rest, "%s: %v", what, err)
}

// arrayHeader reads an array header and checks that the claimed count fits in what is left
// (every element takes at least one byte) before anyone allocates for it.
func (d *decoder) arrayHeader(p []byte, what string) (int, []byte, error) {
	n, o, err := msgp.ReadArrayHeaderBytes(p)
	if err != nil {
		return 0, p, d.wrap(p, what, err)
	}
	if int64(n) > int64(len(o)) {
		return 0, p, d.fail(p, "%s claims %d elements but only %d bytes follow", what, n, len(o))
	}
	return int(n), o, nil
}

func (d *decoder) batch(p []byte, b *Batch) error {
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
		b.Events = grow(b.Events)
		ev := &b.Events[len(b.Events)-1]
		d.set = 0
		if p, err = d.event(p, ev); err != nil {
			return err
		}
		ev.clearUnset(d.set)
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

// grow extends s by one element, reusing the element's slices when the backing array has one.
// A reused element's byte-slice fields are left for the decoder to overwrite or clear
// (clearUnset).
func grow(s []Event) []Event {
	if len(s) < cap(s) {
		s = s[:len(s)+1]
		s[len(s)-1].reset()
		return s
	}
	return append(s, Event{})
}

// The byte-slice fields of an Event, as bits of decoder.set.
const (
	setTag uint8 = 1 << iota
	setMedium
	setLoRAName
	setExtraKeys
	setSpecKind
	setLocality
)

// reset zeroes e's value fields and empties its slices, keeping their arrays. Its byte-slice
// fields are left as they are: storing a pointer costs a write barrier while the collector
// marks, and the decoder overwrites most of them, so it clears only those an event does not
// set (clearUnset). Assigning a whole Event here would write every pointer twice.
func (e *Event) reset() {
	e.Type, e.Era = 0, 0
	e.BlockHashes = e.BlockHashes[:0]
	e.HasParent, e.Parent.Form, e.Parent.Negative, e.Parent.Value = false, 0, false, 0
	if e.Parent.Bin != nil {
		e.Parent.Bin = nil
	}
	e.TokenIDs = e.TokenIDs[:0]
	e.BlockSize, e.LoRAID, e.HasLoRAID, e.HasLoRAName = 0, 0, false, false
	e.GroupIdx, e.HasGroupIdx, e.SlidingWindow, e.HasSlidingWindow = 0, false, 0, false
	e.Fields, e.Unknown, e.Odd = 0, 0, 0
}

// clearUnset clears the byte-slice fields the event just decoded did not set.
func (e *Event) clearUnset(set uint8) {
	if set&setTag == 0 && e.Tag != nil {
		e.Tag = nil
	}
	if set&setMedium == 0 && e.Medium != nil {
		e.Medium = nil
	}
	if set&setLoRAName == 0 && e.LoRAName != nil {
		e.LoRAName = nil
	}
	if set&setExtraKeys == 0 && e.ExtraKeys != nil {
		e.ExtraKeys = nil
	}
	if set&setSpecKind == 0 && e.SpecKind != nil {
		e.SpecKind = nil
	}
	if set&setLocality == 0 && e.Locality != nil {
		e.Locality = nil
	}
}

// int reads any msgpack integer. It returns the value as int64 and whether it was above
// MaxInt64 (then v holds the same 64 bits). The lead byte is decoded inline: token ids and
// hashes are most of every payload.
func (d *decoder) int(p []byte, what string) (int64, bool, []byte, error) {
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

func (d *decoder) hash(p []byte, h *Hash, what string) ([]byte, error) {
	if len(p) > 0 && p[0]-0xc4 < 3 { // bin 8, 16 or 32
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
		return p, err // an integer cut short: d.int's reason says so
	}
	// Field by field: assigning a whole Hash writes its Bin pointer, which costs a write
	// barrier while the collector marks, and hashes are most of a batch's values.
	h.Form, h.Value, h.Negative = HashInt, uint64(v), v < 0 && !big
	if h.Bin != nil {
		h.Bin = nil
	}
	return o, nil
}

func (d *decoder) hashes(p []byte, ev *Event) ([]byte, error) {
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

func (d *decoder) tokens(p []byte, ev *Event) ([]byte, error) {
	n, p, err := d.arrayHeader(p, "token_ids")
	if err != nil {
		return p, err
	}
	if cap(ev.TokenIDs) < n {
		ev.TokenIDs = make([]int64, n)
	}
	toks := ev.TokenIDs[:n]
	i, k, single := 0, 0, 0
	for k < len(toks) {
		// Runs of uint16 ids (0xcd and two bytes), the common form of a vocabulary's ids,
		// four at a time: one well-predicted branch on the four lead bytes together lets the
		// CPU run ahead, where the loop below waits on each lead byte for the next index.
		// On a random mix of forms the branch is rarely taken, so rarely mispredicted, and
		// after a miss the next four ids are read one at a time without looking for a run.
		if single == 0 && i >= 0 && i+12 <= len(p) && k+4 <= len(toks) {
			q := p[i : i+12]
			if (q[0]^0xcd)|(q[3]^0xcd)|(q[6]^0xcd)|(q[9]^0xcd) == 0 {
				t := toks[k : k+4]
				t[0] = int64(binary.BigEndian.Uint16(q[1:3]))
				t[1] = int64(binary.BigEndian.Uint16(q[4:6]))
				t[2] = int64(binary.BigEndian.Uint16(q[7:9]))
				t[3] = int64(binary.BigEndian.Uint16(q[10:12]))
				i += 12
				k += 4
				continue
			}
			single = 4
		}
		single--
		// Token ids are positive fixints or uint8/16/32 as Python writes them. Their mix is
		// random, so a branch per form mispredicts half the time: read eight bytes and shift
		// and mask by the form's width instead (a fixint's value is its lead byte). Near the
		// end, or for other forms, d.int decides.
		//
		// The next index depends only on the lead byte, so it is computed from it (1 for a
		// fixint; 2, 3, 5 for uint8/16/32 at 0xcc-0xce: 1+1<<(c-0xcc)) rather than loaded
		// from the table: the loop is a chain of dependent index updates, and a table load
		// in that chain was most of the time of this loop in the tap's profile.
		if i >= 0 && i+9 <= len(p) {
			c := p[i]
			if c < 0x80 || c-0xcc < 3 {
				f := &tokenForm[c]
				word := binary.BigEndian.Uint64(p[i : i+9][1:])
				toks[k] = int64(word>>(f.shift&63)&f.mask | f.fix)
				i += 1 + int(c>>7)<<((c-0xcc)&7)
				k++
				continue
			}
		}
		v, _, rest, err := d.int(p[i:], "token id")
		if err != nil {
			return p[i:], err
		}
		toks[k] = v
		i = len(p) - len(rest)
		k++
	}
	p = p[i:]
	ev.TokenIDs = toks
	return p, nil
}

// tokenForm says, for each lead byte of a positive fixint or uint8/16/32, how to take the
// value from the eight bytes after it: shift right, then mask; or the lead byte's own value,
// fix, for a positive fixint. (The size is computed from the lead byte, see tokens.)
var tokenForm = func() (t [256]struct {
	shift     uint8
	mask, fix uint64
}) {
	for c := range 0x80 {
		t[c].fix = uint64(c)
	}
	t[0xcc].shift, t[0xcc].mask = 56, 0xff
	t[0xcd].shift, t[0xcd].mask = 48, 0xffff
	t[0xce].shift, t[0xce].mask = 32, 0xffffffff
	return t
}()

// optInt reads an int-or-nil field; other types are skipped and counted as odd.
func (d *decoder) optInt(p []byte, ev *Event, v *int64, has *bool, what string) ([]byte, error) {
	if len(p) > 0 && p[0] < 0x80 { // positive fixint, as block sizes and group indexes are
		*v, *has = int64(p[0]), true
		return p[1:], nil
	}
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
func (d *decoder) optStr(p []byte, ev *Event, v *[]byte, bit uint8, has *bool, what string) ([]byte, error) {
	if s, o, ok := fixstr(p); ok {
		*v = s
		d.set |= bit
		if has != nil {
			*has = true
		}
		return o, nil
	}
	switch msgp.NextType(p) {
	case msgp.NilType:
		return p[1:], nil
	case msgp.StrType:
		s, o, err := msgp.ReadStringZC(p)
		if err != nil {
			return p, d.wrap(p, what, err)
		}
		*v = s
		d.set |= bit
		if has != nil {
			*has = true
		}
		return o, nil
	}
	return d.odd(p, ev, what)
}

func (d *decoder) odd(p []byte, ev *Event, what string) ([]byte, error) {
	ev.Odd++
	o, err := msgp.Skip(p)
	if err != nil {
		return p, d.wrap(p, what, err)
	}
	return o, nil
}

func (d *decoder) skip(p []byte, ev *Event) ([]byte, error) {
	ev.Unknown++
	o, err := msgp.Skip(p)
	if err != nil {
		return p, d.wrap(p, "unknown field", err)
	}
	return o, nil
}

func typeOf(tag []byte) Type {
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

func (d *decoder) event(p []byte, ev *Event) ([]byte, error) {
	switch msgp.NextType(p) {
	case msgp.ArrayType:
		return d.arrayEvent(p, ev)
	case msgp.MapType:
		return d.mapEvent(p, ev)
	}
	return p, d.fail(p, "event is a %s, want an array or a map", msgp.NextType(p))
}

// fieldID numbers the event fields the decoder knows, so that dispatching a field is a jump on
// a number rather than string comparisons (twelve fields an event, a hundred a batch).
type fieldID uint8

// The known fields; fieldUnknown is any other.
const (
	fieldUnknown fieldID = iota
	fieldBlockHashes
	fieldParent
	fieldTokenIDs
	fieldBlockSize
	fieldLoRAID
	fieldMedium
	fieldLoRAName
	fieldExtraKeys
	fieldGroupIdx
	fieldSpecKind
	fieldSlidingWindow
	fieldLocality
)

// fieldNames spells the known fields as vLLM does, for the map era's keys and for messages.
var fieldNames = [...]string{fieldUnknown: "", fieldBlockHashes: "block_hashes",
	fieldParent: "parent_block_hash", fieldTokenIDs: "token_ids", fieldBlockSize: "block_size",
	fieldLoRAID: "lora_id", fieldMedium: "medium", fieldLoRAName: "lora_name",
	fieldExtraKeys: "extra_keys", fieldGroupIdx: "group_idx", fieldSpecKind: "kv_cache_spec_kind",
	fieldSlidingWindow: "kv_cache_spec_sliding_window", fieldLocality: "locality"}

// storedIDs and removedIDs are storedFields and removedFields by number.
var (
	storedIDs  = [...]fieldID{fieldBlockHashes, fieldParent, fieldTokenIDs, fieldBlockSize, fieldLoRAID, fieldMedium, fieldLoRAName, fieldExtraKeys, fieldGroupIdx, fieldSpecKind, fieldSlidingWindow, fieldLocality}
	removedIDs = [...]fieldID{fieldBlockHashes, fieldMedium, fieldGroupIdx, fieldLocality}
)

// storedFields and removedFields name the positional fields after the tag (SPEC §1.5).
var (
	storedFields = [...]string{"block_hashes", "parent_block_hash", "token_ids", "block_size",
		"lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
		"kv_cache_spec_sliding_window", "locality"}
	removedFields = [...]string{"block_hashes", "medium", "group_idx", "locality"}
)

func (d *decoder) arrayEvent(p []byte, ev *Event) ([]byte, error) {
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
	d.set |= setTag
	ev.Type = typeOf(ev.Tag)
	var ids []fieldID
	switch ev.Type {
	case TypeBlockStored:
		ids = storedIDs[:]
	case TypeBlockRemoved:
		ids = removedIDs[:]
	}
	for i := 1; i < n; i++ {
		if i-1 < len(ids) {
			p, err = d.field(p, ev, ids[i-1])
		} else {
			p, err = d.skip(p, ev)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func (d *decoder) mapEvent(p []byte, ev *Event) ([]byte, error) {
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
	if n > 0 && !bytesHasTypeKey(p) {
		if err := d.findType(p, n, ev); err != nil {
			return p, err
		}
	}
	for range n {
		key, o, ok := fixstr(p)
		if ok {
			p = o
		} else {
			if msgp.NextType(p) != msgp.StrType {
				if p, err = d.skip(p, ev); err != nil { // a non-string key and its value
					return p, err
				}
				if p, err = msgp.Skip(p); err != nil {
					return p, d.wrap(p, "event map value", err)
				}
				continue
			}
			if key, p, err = msgp.ReadStringZC(p); err != nil {
				return p, d.wrap(p, "event map key", err)
			}
		}
		if string(key) == "type" {
			if msgp.NextType(p) != msgp.StrType {
				return p, d.fail(p, "event type is a %s, want a string", msgp.NextType(p))
			}
			if ev.Tag, p, err = msgp.ReadStringZC(p); err != nil {
				return p, d.wrap(p, "event type", err)
			}
			d.set |= setTag
			ev.Type = typeOf(ev.Tag)
			continue
		}
		if p, err = d.field(p, ev, fieldOf(key)); err != nil {
			return p, err
		}
	}
	if d.set&setTag == 0 {
		return p, d.fail(p, "event map has no \"type\" key")
	}
	return p, nil
}

// bytesHasTypeKey reports whether p starts with the map key "type".
func bytesHasTypeKey(p []byte) bool {
	return len(p) >= 5 && p[0] == 0xa4 && string(p[1:5]) == "type"
}

// findType looks through a map event's n keys for "type" and sets the event's tag and type;
// a missing "type" is left for mapEvent to report.
func (d *decoder) findType(p []byte, n uint32, ev *Event) error {
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
				d.set |= setTag
				ev.Type = typeOf(ev.Tag)
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

// fieldOf returns the number of a known field name, fieldUnknown for others.
func fieldOf(key []byte) fieldID {
	switch string(key) {
	case "block_hashes":
		return fieldBlockHashes
	case "parent_block_hash":
		return fieldParent
	case "token_ids":
		return fieldTokenIDs
	case "block_size":
		return fieldBlockSize
	case "lora_id":
		return fieldLoRAID
	case "medium":
		return fieldMedium
	case "lora_name":
		return fieldLoRAName
	case "extra_keys":
		return fieldExtraKeys
	case "group_idx":
		return fieldGroupIdx
	case "kv_cache_spec_kind":
		return fieldSpecKind
	case "kv_cache_spec_sliding_window":
		return fieldSlidingWindow
	case "locality":
		return fieldLocality
	}
	return fieldUnknown
}

// fixstr reads a fixstr (a string of up to 31 bytes, the form of every field name and of
// vLLM's short values) when p starts with a whole one; ok is false for anything else, which
// the general readers then take.
func fixstr(p []byte) (s, rest []byte, ok bool) {
	if len(p) == 0 || p[0]&0xe0 != 0xa0 {
		return nil, p, false
	}
	n := int(p[0] & 0x1f)
	if n >= len(p) {
		return nil, p, false
	}
	return p[1 : 1+n], p[1+n:], true
}

// field decodes one field; the same numbers serve both eras. Fields that do not belong to the
// event's type are skipped as unknown.
func (d *decoder) field(p []byte, ev *Event, f fieldID) ([]byte, error) {
	stored := ev.Type == TypeBlockStored
	removed := ev.Type == TypeBlockRemoved
	name := fieldNames[f]
	switch f {
	case fieldBlockHashes:
		if !stored && !removed {
			break
		}
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		return d.hashes(p, ev)
	case fieldParent:
		if !stored {
			break
		}
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		ev.HasParent = true
		return d.hash(p, &ev.Parent, name)
	case fieldTokenIDs:
		if !stored {
			break
		}
		if msgp.IsNil(p) {
			return p[1:], nil
		}
		return d.tokens(p, ev)
	case fieldBlockSize:
		if !stored {
			break
		}
		var has bool
		return d.optInt(p, ev, &ev.BlockSize, &has, name)
	case fieldLoRAID:
		if !stored {
			break
		}
		return d.optInt(p, ev, &ev.LoRAID, &ev.HasLoRAID, name)
	case fieldMedium:
		if !stored && !removed {
			break
		}
		return d.optStr(p, ev, &ev.Medium, setMedium, nil, name)
	case fieldLoRAName:
		if !stored {
			break
		}
		return d.optStr(p, ev, &ev.LoRAName, setLoRAName, &ev.HasLoRAName, name)
	case fieldExtraKeys:
		if !stored {
			break
		}
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
		d.set |= setExtraKeys
		return o, nil
	case fieldGroupIdx:
		if !stored && !removed {
			break
		}
		return d.optInt(p, ev, &ev.GroupIdx, &ev.HasGroupIdx, name)
	case fieldSpecKind:
		if !stored {
			break
		}
		return d.optStr(p, ev, &ev.SpecKind, setSpecKind, nil, name)
	case fieldSlidingWindow:
		if !stored {
			break
		}
		return d.optInt(p, ev, &ev.SlidingWindow, &ev.HasSlidingWindow, name)
	case fieldLocality:
		if !stored && !removed {
			break
		}
		return d.optStr(p, ev, &ev.Locality, setLocality, nil, name)
	}
	return d.skip(p, ev)
}
