package vllmrouter

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The hash vLLM Router's consistent_hash and rendezvous_hash route by: Facebook mcrouter's
// furc_hash (lib/fbi/hash.c) into 2^23 - 1 buckets, the bucket then spread over 64 bits by
// MurmurHash64A (vllm-project/router@e667ebb src/policies/consistent_hash.rs:44-247). Every
// function here is the source's, operation for operation, so that a key lands on the ring
// point it lands on upstream.

const (
	murmurM    = 0xc6a4a7935bd1e995
	murmurR    = 47
	furcSeed   = 4193360111 // hash.c's seed, also furc_get_bit's and fbi_hash's
	furcShift  = 23
	furcTries  = 32
	furcLimit  = 1<<23 - 1 // fbi_hash's modulus: the largest furc_hash takes
	furcOrders = 64        // bits per link of furc_get_bit's hash chain
)

// murmur64A is MurmurHash64A (consistent_hash.rs:44-127): 8-byte little-endian chunks, then
// the 1-7 byte tail, then the final mix.
func murmur64A(key []byte, seed uint32) uint64 {
	h := uint64(seed) ^ uint64(len(key))*uint64(murmurM)
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= murmurM
		k ^= k >> murmurR
		k *= murmurM
		h ^= k
		h *= murmurM
	}
	if tail := key[n:]; len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint64(tail[i]) << (8 * i)
		}
		h *= murmurM
	}
	h ^= h >> murmurR
	h *= murmurM
	h ^= h >> murmurR
	return h
}

// murmurRehash is murmur_rehash_64a (consistent_hash.rs:129-150): MurmurHash64A of one uint64
// with hash.c's seed, the next link of furc_get_bit's chain.
func murmurRehash(k uint64) uint64 {
	m := uint64(murmurM)
	h := uint64(furcSeed) ^ 8*m // wrapping, as sizeof(uint64_t) * M in hash.c
	k *= murmurM
	k ^= k >> murmurR
	k *= murmurM
	h ^= k
	h *= murmurM
	h ^= h >> murmurR
	h *= murmurM
	h ^= h >> murmurR
	return h
}

// furcBits is furc_get_bit's cache (consistent_hash.rs:203-230): link 0 is MurmurHash64A of
// the key, link n the rehash of link n-1, and bit idx is bit idx%64 of link idx/64.
type furcBits struct {
	key   []byte
	links []uint64
}

func (b *furcBits) bit(idx uint32) bool {
	ord := int(idx >> 6)
	for n := len(b.links); n <= ord; n++ {
		if n == 0 {
			b.links = append(b.links, murmur64A(b.key, furcSeed))
		} else {
			b.links = append(b.links, murmurRehash(b.links[n-1]))
		}
	}
	return b.links[ord]>>(idx&(furcOrders-1))&1 != 0
}

// furcHash is furc_hash (consistent_hash.rs:153-200): a bucket in [0, m) for key.
func furcHash(key []byte, m uint32) uint32 {
	if m <= 1 {
		return 0
	}
	b := furcBits{key: key}
	var d uint32
	for m > 1<<d {
		d++
	}
	a := d
	for range furcTries {
		for !b.bit(a) {
			if d == 0 {
				return 0
			}
			d--
			a = d
		}
		a += furcShift
		num := uint32(1)
		for i := uint32(1); i < d; i++ { // d.saturating_sub(1) more bits
			num <<= 1
			if b.bit(a) {
				num |= 1
			}
			a += furcShift
		}
		if num < m {
			return num
		}
	}
	return 0
}

// fbiHash is fbi_hash (consistent_hash.rs:233-247): furc_hash into 2^23 - 1 buckets, the
// bucket's four little-endian bytes hashed again with MurmurHash64A. There are only 2^23 - 1
// values, so distinct keys (and ring points) collide more often than 64 bits suggest.
func fbiHash(key string) uint64 {
	var le [4]byte
	binary.LittleEndian.PutUint32(le[:], furcHash([]byte(key), furcLimit))
	return murmur64A(le[:], furcSeed)
}

// ring is consistent_hash's BTreeMap of points (update_hash_ring, consistent_hash.rs:249-288):
// for each worker in order, points fbi_hash("<url>:<i>") for i below the virtual nodes; a
// later worker's point replaces an earlier one's at the same hash, as BTreeMap::insert does.
type ring struct {
	points []ringPoint // by hash, one per distinct hash
	urls   []string
}

type ringPoint struct {
	h   uint64
	rep int
}

func newRing(urls []string, vnodes int) ring {
	at := make(map[uint64]int, len(urls)*vnodes)
	for rep, u := range urls {
		for i := range vnodes {
			at[fbiHash(fmt.Sprintf("%s:%d", u, i))] = rep
		}
	}
	r := ring{points: make([]ringPoint, 0, len(at)), urls: slices.Clone(urls)}
	for h, rep := range at {
		r.points = append(r.points, ringPoint{h, rep})
	}
	slices.SortFunc(r.points, func(a, b ringPoint) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	return r
}

// owner is the worker of the first point at or after key's hash, wrapping to the first point
// (find_worker_by_hash, consistent_hash.rs:290-316), as the index of the first worker with
// that URL (select_worker_with_headers matches by URL, consistent_hash.rs:383-398).
func (r ring) owner(key string) int {
	h := fbiHash(key)
	i, _ := slices.BinarySearchFunc(r.points, h, func(p ringPoint, h uint64) int {
		switch {
		case p.h < h:
			return -1
		case p.h > h:
			return 1
		}
		return 0
	})
	if i == len(r.points) {
		i = 0
	}
	return slices.Index(r.urls, r.urls[r.points[i].rep])
}

// sessionHeaders are SESSION_HEADER_NAMES (hash_key.rs:11-18), in the order they are tried.
var sessionHeaders = []string{"x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id", "x-trace-id"}

// hashKey is extract_hash_key (hash_key.rs:29-52): the first non-empty header of
// sessionHeaders ("header:<name>:<value>"), else a field read out of the routing text
// (keyFromText), else the text itself ("request:<text>") or, past 100 bytes, its fbi_hash
// ("request_hash:<16 hex digits>"). The routing text is what the router extracts from the body
// (routingText), not the body: the body's own user or session_id fields are never read.
func hashKey(text string, headers map[string]string) (key, from string) {
	for _, name := range sessionHeaders {
		if v := headers[name]; v != "" {
			return "header:" + name + ":" + v, "session-header"
		}
	}
	if k := keyFromText(text); k != "" {
		return k, "session-field"
	}
	if len(text) > 100 {
		return fmt.Sprintf("request_hash:%016x", fbiHash(text)), "text-hash"
	}
	return "request:" + text, "text-hash"
}

// keyFromText is extract_hash_key_from_body (hash_key.rs:73-105) run on the routing text:
// session_params.session_id, then user, session_id and user_id, each read by fieldValue's
// first-occurrence search; "" when none is found.
func keyFromText(text string) string {
	if text == "" {
		return ""
	}
	if v, ok := nestedFieldValue(text, "session_params", "session_id"); ok {
		return "session:" + v
	}
	for _, f := range []struct{ field, prefix string }{{"user", "user:"}, {"session_id", "session:"}, {"user_id", "user:"}} {
		if v, ok := fieldValue(text, f.field); ok {
			return f.prefix + v
		}
	}
	return ""
}

// nestedFieldValue is extract_nested_field_value (hash_key.rs:108-122): after the parent's
// colon, the first "{" anywhere later, the object it opens, and the child's value in it.
func nestedFieldValue(text, parent, child string) (string, bool) {
	start, ok := fieldStart(text, parent)
	if !ok {
		return "", false
	}
	open := strings.IndexByte(text[start:], '{')
	if open < 0 {
		return "", false
	}
	obj, ok := jsonObject(text[start+open:])
	if !ok {
		return "", false
	}
	return fieldValue(obj, child)
}

// fieldStart is find_field_start (hash_key.rs:125-141): the first occurrence of "name", else
// of 'name', counts only when a colon follows it after nothing but white space; the offset
// after the colon.
func fieldStart(text, name string) (int, bool) {
	for _, pat := range []string{`"` + name + `"`, "'" + name + "'"} {
		at := strings.Index(text, pat)
		if at < 0 {
			continue
		}
		after := at + len(pat)
		for i, r := range text[after:] {
			if r == ':' {
				return after + i + 1, true
			}
			if !unicode.IsSpace(r) {
				break
			}
		}
	}
	return 0, false
}

// jsonObject is extract_json_object (hash_key.rs:144-173): braces counted from the "{" that
// starts text (strings and escapes are not told apart) to the one that closes it.
func jsonObject(text string) (string, bool) {
	if !strings.HasPrefix(text, "{") {
		return "", false
	}
	depth := 0
	for i, r := range text {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return text[:i+1], true
			}
		}
	}
	return "", false
}

// fieldValue is extract_field_value (hash_key.rs:176-229): the first occurrence of "name",
// then 'name', then the bare name, counts only when a colon follows after white space; the
// value is a quoted string up to its closing quote (no escapes), or a bare run up to one of
// , space } ] \n \r \t.
func fieldValue(text, name string) (string, bool) {
	for _, pat := range []string{`"` + name + `"`, "'" + name + "'", name} {
		at := strings.Index(text, pat)
		if at < 0 {
			continue
		}
		after := text[at+len(pat):]
		colon := -1
		for i, r := range after {
			if r == ':' {
				colon = i
				break
			}
			if !unicode.IsSpace(r) {
				break
			}
		}
		if colon < 0 {
			continue
		}
		v := strings.TrimLeftFunc(after[colon+1:], unicode.IsSpace)
		switch {
		case strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "'"):
			if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
				return v[1 : 1+end], true
			}
		default:
			end := strings.IndexAny(v, ", }]\n\r\t")
			if end < 0 {
				end = len(v)
			}
			if end > 0 {
				return v[:end], true
			}
		}
	}
	return "", false
}
