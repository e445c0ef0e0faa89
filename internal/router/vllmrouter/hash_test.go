package vllmrouter

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMurmur64AVerification is SMHasher's verification of MurmurHash64A: the hashes of the
// keys 0, 0 1, 0 1 2, ... (256 keys, key i of length i hashed with seed 256-i), themselves
// hashed with seed 0; the low 32 bits of that are 0x1F0D3804 for a correct MurmurHash64A
// (SMHasher main.cpp, "Murmur2B").
func TestMurmur64AVerification(t *testing.T) {
	key := make([]byte, 256)
	hashes := make([]byte, 8*256)
	for i := range 256 {
		key[i] = byte(i)
		binary.LittleEndian.PutUint64(hashes[8*i:], murmur64A(key[:i], uint32(256-i)))
	}
	if got := uint32(murmur64A(hashes, 0)); got != 0x1F0D3804 {
		t.Errorf("verification %#08x, want 0x1F0D3804", got)
	}
}

// refFurc is a second model of vLLM Router's furc_hash, written from mcrouter hash.c's
// description rather than from hash.go: the bit stream is a chain of 64-bit words, word 0
// MurmurHash64A(key, seed), word n the hash of word n-1's eight little-endian bytes with the
// seed, rebuilt from scratch for every bit; d is the bits of the bucket count, and a try reads
// a leading 1 at bit position d (stepping d down while it reads 0, giving 0 below bit 1, the
// Rust port's order), then d-1 more bits 23 positions apart.
func refFurc(key []byte, m uint32) uint32 {
	word := func(n int) uint64 {
		w := refMurmur(key, furcSeed)
		for range n {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], w)
			w = refMurmur(b[:], furcSeed)
		}
		return w
	}
	bit := func(i uint32) uint64 { return word(int(i/64)) >> (i % 64) & 1 }
	if m < 2 {
		return 0
	}
	d := uint32(0)
	for uint64(m) > uint64(1)<<d {
		d++
	}
	pos := d
	for try := 0; try < 32; try++ {
		for bit(pos) == 0 {
			if d == 0 {
				return 0
			}
			d--
			pos = d
		}
		pos += 23
		num := uint32(1)
		for k := uint32(0); k+1 < d; k++ {
			num = num<<1 | uint32(bit(pos))
			pos += 23
		}
		if num < m {
			return num
		}
	}
	return 0
}

// refMurmur is MurmurHash64A written from its description: mix every whole 8-byte word into h,
// then the tail bytes (byte i at bits 8i), then the final avalanche.
func refMurmur(data []byte, seed uint32) uint64 {
	const m, r = uint64(0xc6a4a7935bd1e995), 47
	h := uint64(seed) ^ uint64(len(data))*m
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data) * m
		k = (k ^ k>>r) * m
		h = (h ^ k) * m
		data = data[8:]
	}
	if len(data) > 0 {
		var tail uint64
		for i, c := range data {
			tail |= uint64(c) << (8 * i)
		}
		h = (h ^ tail) * m
	}
	h = (h ^ h>>r) * m
	return h ^ h>>r
}

func refFBI(s string) uint64 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], refFurc([]byte(s), 1<<23-1))
	return refMurmur(b[:], furcSeed)
}

// TestFBIHash: fbi_hash agrees with the second model on random keys, and with values worked
// out apart from both (a Python transcription of hash.c's algorithm).
func TestFBIHash(t *testing.T) {
	for _, tt := range []struct {
		key  string
		furc uint32
		want uint64
	}{
		{"test_session_123", 2200169, 0xbcc9b06b6bade78a},
		{"header:x-session-id:alice", 0, 0x909cd779a0a62987},
		{"request:", 0, 0x13b2f1ae12a8b5ab},
	} {
		if got := fbiHash(tt.key); got != tt.want {
			t.Errorf("fbiHash(%q) = %016x, want %016x", tt.key, got, tt.want)
		}
		if got := furcHash([]byte(tt.key), furcLimit); tt.furc != 0 && got != tt.furc {
			t.Errorf("furcHash(%q) = %d, want %d", tt.key, got, tt.furc)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		b := make([]byte, rng.IntN(40))
		for k := range b {
			b[k] = byte(rng.IntN(256))
		}
		key := string(b)
		if i%3 == 0 {
			key = fmt.Sprintf("http://vllm-%d:8000:%d", rng.IntN(64), rng.IntN(160))
		}
		if got, want := fbiHash(key), refFBI(key); got != want {
			t.Fatalf("fbiHash(%q) = %016x, second model %016x", key, got, want)
		}
		m := 1 + rng.Uint32N(1<<23)
		if got, want := furcHash([]byte(key), m), refFurc([]byte(key), m); got != want {
			t.Fatalf("furcHash(%q, %d) = %d, second model %d", key, m, got, want)
		}
	}
}

// TestHashKey: the key consistent_hash routes a request by, each case from hash_key.rs.
func TestHashKey(t *testing.T) {
	long := ""
	for range 11 {
		long += "0123456789"
	}
	tests := []struct {
		name, text  string
		headers     map[string]string
		key, reason string
	}{
		// hash_key.rs:29-40: headers first, in SESSION_HEADER_NAMES' order, empty skipped.
		{"x-session-id first", "", map[string]string{"x-request-id": "r1", "x-session-id": "s1"}, "header:x-session-id:s1", "session-header"},
		{"empty header skipped", "", map[string]string{"x-session-id": "", "x-user-id": "u1"}, "header:x-user-id:u1", "session-header"},
		{"x-correlation-id before x-request-id", "", map[string]string{"x-request-id": "r", "x-correlation-id": "c"}, "header:x-correlation-id:c", "session-header"},
		{"other headers ignored", "", map[string]string{"x-litellm-session-id": "abcdefgh"}, "request:", "empty-text"},
		// hash_key.rs:43-51: no field: the text itself up to 100 bytes, else its hash.
		{"session id as text", "chat-42", nil, "request:chat-42", "text-hash"},
		{"101 bytes hashed", long[:101], nil, fmt.Sprintf("request_hash:%016x", refFBI(long[:101])), "text-hash"},
		{"100 bytes kept", long[:100], nil, "request:" + long[:100], "text-hash"},
		// hash_key.rs:176-229 on the text: a "user" followed by a colon is a field.
		{"user in a prompt", "user: alice says hi", nil, "user:alice", "session-field"},
		{"quoted field", `{"session_id": "abc", "x": 1}`, nil, "session:abc", "session-field"},
		{"nested first", `{"session_params": {"session_id": "n"}, "session_id": "d"}`, nil, "session:n", "session-field"},
		// Only the first occurrence of a pattern counts: "user" with no colon after it (a chat
		// role) hides a later "user": field from the quoted patterns, and the bare pattern
		// finds the same place.
		{"first occurrence only", `{"role": "user", "user": "bob"}`, nil, `request:{"role": "user", "user": "bob"}`, "text-hash"},
		{"single quotes", `{'user_id': 'u9'}`, nil, "user:u9", "session-field"},
		{"unquoted until delimiter", `user_id: 77, more`, nil, "user:77", "session-field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, from := hashKey(tt.text, tt.headers)
			if key != tt.key || keyReason(tt.text, from) != tt.reason {
				t.Errorf("hashKey(%q) = %q (%s), want %q (%s)", tt.text, key, keyReason(tt.text, from), tt.key, tt.reason)
			}
		})
	}
}
