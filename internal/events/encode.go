package events

import (
	"github.com/tinylib/msgp/msgp"
)

// Wire selects how AppendBatch encodes a batch, so emulators and tests can speak any vLLM
// version's dialect.
type Wire struct {
	// Era is EraArray (vLLM up to 0.23) or EraMap (0.24 and later).
	Era Era
	// StoredFields is the positional length of a BlockStored, tag included (6 to 12; see
	// SPEC §1.5); 0 means 12. Map-era events carry the fields that length includes.
	StoredFields int
	// BinHashes sends hashes as bin (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0): Hash.Bin when set,
	// else Value as 8 big-endian bytes.
	BinHashes bool
	// TwoElements writes the 0.9.0 batch [ts, events] without the data-parallel rank.
	TwoElements bool
}

// RemovedFields returns the positional length of a BlockRemoved for the vLLM version whose
// BlockStored has storedFields positions.
func RemovedFields(storedFields int) int {
	switch {
	case storedFields >= 12:
		return 5
	case storedFields >= 10:
		return 4
	case storedFields >= 7:
		return 3
	}
	return 2
}

// AppendBatch appends the msgpack encoding of b to dst as vLLM would send it.
func AppendBatch(dst []byte, b *Batch, w Wire) []byte {
	n := uint32(3)
	if w.TwoElements {
		n = 2
	}
	dst = msgp.AppendArrayHeader(dst, n)
	dst = msgp.AppendFloat64(dst, b.TS)
	dst = msgp.AppendArrayHeader(dst, uint32(len(b.Events)))
	for i := range b.Events {
		dst = appendEvent(dst, &b.Events[i], w)
	}
	if n == 3 {
		if b.HasDPRank {
			dst = appendInt(dst, b.DPRank)
		} else {
			dst = msgp.AppendNil(dst)
		}
	}
	return dst
}

func appendHash(dst []byte, h Hash, bin bool) []byte {
	if bin {
		if h.Bin != nil {
			return msgp.AppendBytes(dst, h.Bin)
		}
		var b [8]byte
		for i := range 8 {
			b[i] = byte(h.Value >> (56 - 8*i))
		}
		return msgp.AppendBytes(dst, b[:])
	}
	if h.Negative {
		return msgp.AppendInt64(dst, int64(h.Value))
	}
	return msgp.AppendUint64(dst, h.Value)
}

// appendInt writes non-negative integers in the unsigned forms, as Python's msgpack does.
func appendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return msgp.AppendUint64(dst, uint64(v))
	}
	return msgp.AppendInt64(dst, v)
}

func appendOptStr(dst []byte, s []byte) []byte {
	if s == nil {
		return msgp.AppendNil(dst)
	}
	return msgp.AppendStringFromBytes(dst, s)
}

func appendOptInt(dst []byte, v int64, has bool) []byte {
	if !has {
		return msgp.AppendNil(dst)
	}
	return appendInt(dst, v)
}

func appendEvent(dst []byte, ev *Event, w Wire) []byte {
	fields := w.StoredFields
	if fields <= 0 || fields > 12 {
		fields = 12
	}
	var names []string
	switch ev.Type {
	case TypeBlockStored:
		names = storedFields[:fields-1]
	case TypeBlockRemoved:
		names = removedFields[:RemovedFields(fields)-1]
	}
	if w.Era == EraMap {
		// Fields whose default is nil are left out when nil, as vLLM 0.24+ does.
		keep := names[:0:0]
		for _, name := range names {
			if !nilField(ev, name) {
				keep = append(keep, name)
			}
		}
		dst = msgp.AppendMapHeader(dst, uint32(len(keep)+1))
		dst = msgp.AppendString(dst, "type")
		dst = msgp.AppendString(dst, ev.Type.String())
		for _, name := range keep {
			dst = msgp.AppendString(dst, name)
			dst = appendField(dst, ev, name, w)
		}
		return dst
	}
	dst = msgp.AppendArrayHeader(dst, uint32(len(names)+1))
	dst = msgp.AppendString(dst, ev.Type.String())
	for _, name := range names {
		dst = appendField(dst, ev, name, w)
	}
	return dst
}

func nilField(ev *Event, name string) bool {
	switch name {
	case "parent_block_hash":
		return !ev.HasParent
	case "lora_id":
		return !ev.HasLoRAID
	case "lora_name":
		return !ev.HasLoRAName
	case "extra_keys":
		return ev.ExtraKeys == nil
	case "medium":
		return ev.Medium == nil
	case "group_idx":
		return !ev.HasGroupIdx
	case "kv_cache_spec_sliding_window":
		return !ev.HasSlidingWindow
	case "locality":
		return ev.Locality == nil
	}
	return false
}

func appendField(dst []byte, ev *Event, name string, w Wire) []byte {
	switch name {
	case "block_hashes":
		dst = msgp.AppendArrayHeader(dst, uint32(len(ev.BlockHashes)))
		for _, h := range ev.BlockHashes {
			dst = appendHash(dst, h, w.BinHashes)
		}
		return dst
	case "parent_block_hash":
		if !ev.HasParent {
			return msgp.AppendNil(dst)
		}
		return appendHash(dst, ev.Parent, w.BinHashes)
	case "token_ids":
		dst = msgp.AppendArrayHeader(dst, uint32(len(ev.TokenIDs)))
		for _, t := range ev.TokenIDs {
			dst = appendInt(dst, t)
		}
		return dst
	case "block_size":
		return appendInt(dst, ev.BlockSize)
	case "lora_id":
		return appendOptInt(dst, ev.LoRAID, ev.HasLoRAID)
	case "medium":
		return appendOptStr(dst, ev.Medium)
	case "lora_name":
		if !ev.HasLoRAName {
			return msgp.AppendNil(dst)
		}
		return msgp.AppendStringFromBytes(dst, ev.LoRAName)
	case "extra_keys":
		if ev.ExtraKeys == nil {
			return msgp.AppendNil(dst)
		}
		return append(dst, ev.ExtraKeys...)
	case "group_idx":
		return appendOptInt(dst, ev.GroupIdx, ev.HasGroupIdx)
	case "kv_cache_spec_kind":
		if ev.SpecKind == nil {
			return msgp.AppendString(dst, "full_attention")
		}
		return msgp.AppendStringFromBytes(dst, ev.SpecKind)
	case "kv_cache_spec_sliding_window":
		return appendOptInt(dst, ev.SlidingWindow, ev.HasSlidingWindow)
	case "locality":
		return appendOptStr(dst, ev.Locality)
	}
	return msgp.AppendNil(dst)
}
