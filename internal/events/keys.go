package events

import (
	"fmt"

	"github.com/tinylib/msgp/msgp"
)

// maxKeyDepth bounds the nesting of extra keys; vLLM's are at most a tuple inside a list.
const maxKeyDepth = 8

// ExtraKeys decodes an event's raw extra_keys (one entry per block: nil or an array of keys)
// into values blockhash.AppendKey accepts.
func ExtraKeys(raw []byte) ([][]any, error) {
	if raw == nil {
		return nil, nil
	}
	n, p, err := msgp.ReadArrayHeaderBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("extra_keys: %w", err)
	}
	if int64(n) > int64(len(p)) {
		return nil, fmt.Errorf("extra_keys claims %d entries in %d bytes", n, len(p))
	}
	out := make([][]any, n)
	for i := range out {
		var v any
		if v, p, err = keyValue(p, 0); err != nil {
			return nil, fmt.Errorf("extra_keys[%d]: %w", i, err)
		}
		switch x := v.(type) {
		case nil:
		case []any:
			out[i] = x
		default:
			return nil, fmt.Errorf("extra_keys[%d] is a %T, want nil or an array", i, v)
		}
	}
	return out, nil
}

func keyValue(p []byte, depth int) (any, []byte, error) {
	if depth > maxKeyDepth {
		return nil, p, fmt.Errorf("nested deeper than %d", maxKeyDepth)
	}
	switch msgp.NextType(p) {
	case msgp.NilType:
		return nil, p[1:], nil
	case msgp.BoolType:
		return msgp.ReadBoolBytes(p)
	case msgp.IntType:
		return msgp.ReadInt64Bytes(p)
	case msgp.UintType:
		return msgp.ReadUint64Bytes(p)
	case msgp.Float32Type, msgp.Float64Type:
		return msgp.ReadFloat64Bytes(p)
	case msgp.StrType:
		return msgp.ReadStringBytes(p)
	case msgp.BinType:
		return msgp.ReadBytesBytes(p, nil)
	case msgp.ArrayType:
		n, o, err := msgp.ReadArrayHeaderBytes(p)
		if err != nil {
			return nil, p, err
		}
		if int64(n) > int64(len(o)) {
			return nil, p, fmt.Errorf("array claims %d elements in %d bytes", n, len(o))
		}
		arr := make([]any, n)
		for i := range arr {
			if arr[i], o, err = keyValue(o, depth+1); err != nil {
				return nil, p, err
			}
		}
		return arr, o, nil
	}
	return nil, p, fmt.Errorf("unsupported extra key type %s", msgp.NextType(p))
}
