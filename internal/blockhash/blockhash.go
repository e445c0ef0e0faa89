package blockhash

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// Digest is a full sha256_cbor block digest. vLLM chains full digests, so a wire hash (the last
// eight bytes) cannot be extended: a chain must be recomputed from token 0.
type Digest [sha256.Size]byte

// Wire returns the value vLLM puts on the wire when VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES is "1"
// (the default): the last eight bytes of the digest, read big-endian.
func (d Digest) Wire() uint64 { return binary.BigEndian.Uint64(d[len(d)-8:]) }

// NoneHash returns the parent digest of block 0 when the engine runs with PYTHONHASHSEED=seed:
// sha256 over the CBOR text string of the seed. Without a pinned seed vLLM draws 32 random bytes
// per process, and no outside party can reproduce its hashes.
func NoneHash(seed string) Digest {
	buf := appendText(nil, seed)
	return sha256.Sum256(buf)
}

// Block returns the sha256_cbor digest of one full block: sha256 over the canonical CBOR of
// [parent, tokens, extra], where extra is nil or the block's extra keys (see AppendKey for the
// value types accepted).
func Block(parent Digest, tokens []int64, extra []any) (Digest, error) {
	buf := make([]byte, 0, 40+9*len(tokens))
	return blockInto(buf, parent, tokens, extra)
}

func blockInto(buf []byte, parent Digest, tokens []int64, extra []any) (Digest, error) {
	buf = append(buf, 0x83)
	buf = appendHead(buf, 2, uint64(len(parent)))
	buf = append(buf, parent[:]...)
	buf = appendHead(buf, 4, uint64(len(tokens)))
	for _, t := range tokens {
		buf = appendInt(buf, t)
	}
	if extra == nil {
		buf = append(buf, 0xf6)
	} else {
		var err error
		if buf, err = AppendKey(buf, extra); err != nil {
			return Digest{}, err
		}
	}
	return sha256.Sum256(buf), nil
}

// Chain computes the digests of the full blocks of tokens, starting from parent (NoneHash for a
// chain that starts at token 0). extra, when not nil, holds one entry per block: nil or that
// block's extra keys. A trailing partial block is not hashed, as in vLLM.
func Chain(parent Digest, tokens []int64, blockSize int, extra [][]any) ([]Digest, error) {
	if blockSize <= 0 {
		return nil, fmt.Errorf("block size %d: must be positive", blockSize)
	}
	n := len(tokens) / blockSize
	out := make([]Digest, 0, n)
	buf := make([]byte, 0, 40+9*blockSize)
	for i := range n {
		var ek []any
		if i < len(extra) {
			ek = extra[i]
		}
		d, err := blockInto(buf[:0], parent, tokens[i*blockSize:(i+1)*blockSize], ek)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		out = append(out, d)
		parent = d
	}
	return out, nil
}

// AppendKey appends the canonical CBOR encoding of an extra-key value, as Python's cbor2 writes
// it with canonical=True: nil, bool, integers, float64, string, []byte, and []any (tuples and
// lists). Other types are an error, because guessing would give a silently wrong hash.
func AppendKey(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, 0xf6), nil
	case bool:
		if x {
			return append(buf, 0xf5), nil
		}
		return append(buf, 0xf4), nil
	case int:
		return appendInt(buf, int64(x)), nil
	case int64:
		return appendInt(buf, x), nil
	case uint64:
		return appendHead(buf, 0, x), nil
	case float64:
		return appendFloat(buf, x), nil
	case string:
		return appendText(buf, x), nil
	case []byte:
		buf = appendHead(buf, 2, uint64(len(x)))
		return append(buf, x...), nil
	case []any:
		buf = appendHead(buf, 4, uint64(len(x)))
		var err error
		for _, e := range x {
			if buf, err = AppendKey(buf, e); err != nil {
				return buf, err
			}
		}
		return buf, nil
	}
	return buf, fmt.Errorf("extra key of type %T cannot be hashed", v)
}

func appendText(buf []byte, s string) []byte {
	buf = appendHead(buf, 3, uint64(len(s)))
	return append(buf, s...)
}

func appendInt(buf []byte, v int64) []byte {
	if v >= 0 {
		return appendHead(buf, 0, uint64(v))
	}
	return appendHead(buf, 1, uint64(-(v + 1)))
}

// appendFloat writes the shortest of half, single or double precision that keeps the value,
// which is what canonical cbor2 does.
func appendFloat(buf []byte, f float64) []byte {
	if f32 := float32(f); float64(f32) == f || math.IsNaN(f) {
		if h, ok := toHalf(f32); ok {
			return append(buf, 0xf9, byte(h>>8), byte(h))
		}
		buf = append(buf, 0xfa)
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(f32))
	}
	buf = append(buf, 0xfb)
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
}

// toHalf converts f to IEEE half precision when that is exact.
func toHalf(f float32) (uint16, bool) {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int((bits >> 23) & 0xff)
	mant := bits & 0x7fffff
	switch {
	case exp == 0xff: // inf or NaN
		if mant == 0 {
			return sign | 0x7c00, true
		}
		return 0x7e00, true
	case exp == 0 && mant == 0:
		return sign, true
	}
	e := exp - 127 + 15
	if e >= 31 {
		return 0, false
	}
	if e <= 0 { // subnormal half
		shift := uint(14 - e)
		m := mant | 0x800000
		if shift > 24 || m&((1<<shift)-1) != 0 {
			return 0, false
		}
		return sign | uint16(m>>shift), true
	}
	if mant&0x1fff != 0 {
		return 0, false
	}
	return sign | uint16(e)<<10 | uint16(mant>>13), true
}

func appendHead(buf []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(buf, m|byte(n))
	case n <= math.MaxUint8:
		return append(buf, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(buf, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(buf, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, m|27), n)
}
