package prodstack

import (
	"hash/maphash"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// What the vLLM production-stack router emulations (roundrobin.go, session.go, prefixaware.go,
// kvaware.go, loadaware.go) share. Sources:
// vllm-project/production-stack src/vllm_router/routers/routing_logic.py (RoutingInterface,
// its _qps_routing and the session hash ring; production-stack main after PR #1035, which added
// loadaware), src/vllm_router/stats/request_stats.py (the QPS monitor),
// src/vllm_router/parsers/parser.py (--request-stats-window 60); ROUTERS.md §3, SPEC §6.

// prodStackWindow is --request-stats-window, the sliding window of the router's QPS figures, in
// seconds (60).
const prodStackWindow = 60

// qpsWindow is the router's request statistics as _qps_routing reads them. The router counts a
// request for an engine when it sends it there (on_new_request), whatever the routing logic.
//
// _qps_routing walks the engines in order: the first engine that never got a request is chosen
// at once ("this engine does not have any requests"); otherwise the engine with the fewest
// requests sent in the last window seconds (qps = count / window; a request sent at t counts
// while t >= now - window), the first of equal ones. The engines' order is service discovery's;
// here the replicas' order, an added replica last.
type qpsWindow struct {
	seen  []bool
	times []floatQueue
}

// floatQueue is a FIFO of times that reuses its backing array.
type floatQueue struct {
	items []float64
	head  int
}

func (q *floatQueue) len() int { return len(q.items) - q.head }

// dropBefore removes the times before t.
func (q *floatQueue) dropBefore(t float64) {
	for q.head < len(q.items) && q.items[q.head] < t {
		q.head++
	}
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}

func (w *qpsWindow) grow(n int) {
	for len(w.seen) < n {
		w.seen = append(w.seen, false)
		w.times = append(w.times, floatQueue{})
	}
}

// pick is _qps_routing at time now.
func (w *qpsWindow) pick(n int, now float64) int {
	w.grow(n)
	best, fewest := 0, -1
	for i := range n {
		if !w.seen[i] {
			return i
		}
		q := &w.times[i]
		q.dropBefore(now - prodStackWindow)
		if fewest < 0 || q.len() < fewest {
			best, fewest = i, q.len()
		}
	}
	return best
}

// record counts a request sent to replica i at time now.
func (w *qpsWindow) record(i int, now float64) {
	w.grow(i + 1)
	w.seen[i] = true
	w.times[i].items = append(w.times[i].items, now)
}

// prodStackRingPoints is the number of points each engine has on the session router's hash
// ring: uhashring's default of 40 vnodes of 4 points each.
const prodStackRingPoints = 160

// sessionRing is the session router's hash ring (uhashring.HashRing): an engine's points and a
// session id's position come from a hash, and the id goes to the engine owning the first point
// at or after it. Which engine a given id lands on depends on the engines' URLs, which a log
// does not hold: here the points are a seeded hash of the replica's index, so the assignment is
// as uniform and as stable as the real one (adding a replica moves only the ids that fall to its
// points) without being the same assignment.
type sessionRing struct {
	seed   uint64
	points []ringPoint
	n      int
}

func (r *sessionRing) node(id string, n int) int {
	if r.n != n {
		r.points = r.points[:0]
		for i := range n {
			for v := range prodStackRingPoints {
				r.points = append(r.points, ringPoint{h: sim.Mix64(r.seed ^ sim.Mix64(uint64(i)<<32|uint64(v)+0x5e5510)), rep: i})
			}
		}
		slices.SortFunc(r.points, ringOrder)
		r.n = n
	}
	h := sim.Mix64(fnvString(14695981039346656037, id) ^ sim.Mix64(r.seed))
	k, _ := slices.BinarySearchFunc(r.points, h, func(p ringPoint, h uint64) int {
		switch {
		case p.h < h:
			return -1
		case p.h > h:
			return 1
		}
		return 0
	})
	return r.points[k%len(r.points)].rep
}

// prodStackSession is extract_session_id: the header named by --session-key (HTTP header names
// are case-insensitive; the log's names are lower case), and ok false without a key or without
// the header. The body field of the same name, which the router also reads, is not kept by the
// log reader.
func prodStackSession(v *sim.View, key string) (string, bool) {
	if key == "" || v == nil {
		return "", false
	}
	s, ok := v.Headers[strings.ToLower(key)]
	return s, ok
}

// prodStackPrompt is the prompt production-stack's prefixaware router reads
// (vllm-project/production-stack@a6c01db src/vllm_router/routers/routing_logic.py:476-500): a
// completion's prompt; for a chat, one line per message joined with "\n" (495), no chat
// template and no role: a string content as it is (493-494); a list content's parts of type
// "text", their text members ("" without one) joined with " " (487-492), every other part
// skipped (an image, an input_text); a content of null skipped, no line at all (493); a message
// without content an empty line (484: message.get("content", "")). Tool calls and
// reasoning_content are not read. It is written into buf, which is returned for reuse.
func prodStackPrompt(v *sim.View, buf []byte) []byte {
	buf = buf[:0]
	if !v.Chat {
		return append(buf, v.Text...)
	}
	lines, parts := 0, 0 // lines written; text parts in the current list
	from := int32(0)
	for _, p := range v.Pieces {
		run := v.Text[from:p.End]
		from = p.End
		switch p.Kind {
		case sim.PieceString, sim.PieceList, sim.PieceAbsent:
			if lines > 0 {
				buf = append(buf, '\n')
			}
			lines++
			parts = 0
			buf = append(buf, run...)
		case sim.PiecePartText:
			if parts > 0 {
				buf = append(buf, ' ')
			}
			parts++
			buf = append(buf, run...)
		}
	}
	return buf
}

// prodStackChunk is the HashTrie's chunk size in characters (chunk_size=128).
const prodStackChunk = 128

// chunkHashes appends the hashes of text's chunks of prodStackChunk characters (Unicode code
// points, as Python slices a str; the last chunk may be shorter) to dst. The hash is of the
// chunk alone, as HashTrie's xxh64 of request[i:i+128]; the trie's path makes it a prefix.
func chunkHashes(dst []uint64, text []byte) []uint64 {
	start, chars := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i]&0xC0 == 0x80 { // a UTF-8 continuation byte: not a new character
			continue
		}
		if chars == prodStackChunk {
			dst = append(dst, maphash.Bytes(chunkSeed, text[start:i]))
			start, chars = i, 0
		}
		chars++
	}
	if chars > 0 {
		dst = append(dst, maphash.Bytes(chunkSeed, text[start:]))
	}
	return dst
}

// chunkSeed seeds the chunk hash: a run's routes do not depend on it (only equal chunks must
// hash equally), short of a 64-bit collision.
var chunkSeed = maphash.MakeSeed()

// lmcacheChunk is LMCache's chunk size in tokens (chunk_size 256): its controller keys the KV
// cache by chunks of the prompt's tokens, each key covering the prefix up to the chunk's end.
const lmcacheChunk = 256

// lmcacheIndex is the LMCache controller as the kvaware and loadaware routers ask it (LookupMsg:
// KVController.lookup in lmcache/v1/cache_controller). For the prompt's tokens it walks the
// whole chunks in order; each chunk is credited to the first instance that stored it
// (kv_pool[key][0]) and the walk stops at the first chunk no instance holds. The answer,
// layout_info, lists the credited instances in the order first credited, each with the end, in
// tokens, of the last chunk credited to it.
//
// The engines' own prefix caches stand for what their LMCache workers hold (a worker stores a
// chunk as its engine computes it; its CPU tier, usually larger than the GPU's, evicts later):
// a replica holds a chunk when its cache holds every block of the prompt up to the chunk's end.
// kvcheck keeps, per chunk, the replicas in the order it sent the chunk to them (a replica the
// chunk was evicted from keeps its place and is skipped while it does not hold it). A chunk is
// 256/block-size blocks (at least one block); the last, partial chunk is not looked up (it
// matches only a prompt of the very same length).
type lmcacheIndex struct {
	holders map[int32][]int // a chunk's key (its last block's id) -> replicas it was sent to
	layout  []lmcacheHit
}

// lmcacheHit is one entry of layout_info: an instance and the tokens credited to it.
type lmcacheHit struct{ rep, end int }

// chunking returns the blocks per LMCache chunk and the whole chunks of a prompt.
func lmcacheChunking(r *sim.Request, bs int) (per, chunks int) {
	per = max(1, lmcacheChunk/bs)
	return per, min(r.InputTokens/(per*bs), len(r.Blocks)/per)
}

// lookup answers the controller's lookup of the request's tokens. A chat request asks with the
// tokens of request_json.get("prompt", ""), an empty string: no chunk, no answer.
func (x *lmcacheIndex) lookup(f *sim.Pool, j *sim.Job) []lmcacheHit {
	x.layout = x.layout[:0]
	r := j.Request()
	if r.View == nil || r.View.Chat {
		return x.layout
	}
	per, chunks := lmcacheChunking(r, f.BlockSize())
	if chunks == 0 {
		return x.layout
	}
	ovl := f.Overlaps(j)
	ids := j.IDs()
	for c := range chunks {
		need := (c + 1) * per
		first := -1
		for _, r := range x.holders[ids[need-1]] {
			if r < f.Size() && ovl[r] >= need {
				first = r
				break
			}
		}
		if first < 0 {
			break
		}
		end := need * f.BlockSize()
		found := false
		for k := range x.layout {
			if x.layout[k].rep == first {
				x.layout[k].end, found = end, true
			}
		}
		if !found {
			x.layout = append(x.layout, lmcacheHit{first, end})
		}
	}
	return x.layout
}

// sent records that the request's whole chunks go to replica rep, which will store them.
func (x *lmcacheIndex) sent(f *sim.Pool, j *sim.Job, rep int) {
	r := j.Request()
	if r.View == nil || r.View.Chat {
		return // the engine stores the chat's chunks, but no chat lookup ever asks for them
	}
	if x.holders == nil {
		x.holders = map[int32][]int{}
	}
	per, chunks := lmcacheChunking(r, f.BlockSize())
	ids := j.IDs()
	for c := range chunks {
		key := ids[(c+1)*per-1]
		if l := x.holders[key]; !slices.Contains(l, rep) {
			x.holders[key] = append(l, rep)
		}
	}
}

// reasonLowestQPS is the reason of _qps_routing's engine: the first with no request yet, else
// the fewest requests in the stats window.
const reasonLowestQPS = "lowest-qps"

// fallbackReasons are the reasons prodStackFallback gives, and the session router's.
var fallbackReasons = []string{sim.ReasonSessionKey, reasonLowestQPS}

// prodStackFallback is the kvaware and loadaware routers' route without a usable answer from
// LMCache: the --session-key header's id on the hash ring (reason session-key), else
// _qps_routing (lowest-qps).
func prodStackFallback(j *sim.Job, key string, ring *sessionRing, qps *qpsWindow, n int) (int, string) {
	if id, ok := prodStackSession(j.Request().View, key); ok {
		return ring.node(id, n), sim.ReasonSessionKey
	}
	return qps.pick(n, j.Arrival()), reasonLowestQPS
}

// ringPoint is a point of a hash ring: its hash and the replica owning it.
type ringPoint struct {
	h   uint64
	rep int
}

// ringOrder sorts a ring's points by hash, and points of equal hash by replica.
func ringOrder(a, b ringPoint) int {
	if a.h != b.h {
		if a.h < b.h {
			return -1
		}
		return 1
	}
	return a.rep - b.rep
}

// fnvString is FNV-1a of s, continued from h.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
