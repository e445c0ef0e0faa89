package aibrix

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// prefixCache is aibrix-prefix-cache with settings s.
func prefixCache(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name: "aibrix-prefix-cache",
		About: fmt.Sprintf("AIBrix gateway, routing strategy prefix-cache with the %s tokenizer: the prompt's bytes in %d-byte blocks, the pods holding the longest run of them "+
			"(then fewer running requests) unless above mean + %d standard deviations; least running requests when nothing matches, and only the least loaded pods once max - min > %d",
			s.Tokenizer, s.BlockSize, s.StdDevFactor, s.ImbalanceAbs),
		Family:    sim.FamilyKV,
		Product:   display,
		Source:    "vllm-project/aibrix@e3e10f9 pkg/plugins/gateway/algorithms/prefix_cache.go:365-1025, least_request.go:148-274, util.go:31-54; pkg/utils/prefixcacheindexer/hash.go:32-245; pkg/utils/lrustore/lru_store.go; pkg/plugins/gateway/util.go:91-268",
		NeedsText: true,
		Reasons:   []string{"prefix-match", "prefix-match-skipped", "no-match-least-request", "imbalanced-prefix-match", "imbalanced"},
		Check:     check(s),
		New: func(c sim.Config, _ int) sim.Policy {
			return &prefixCachePolicy{s: s, draws: rand.New(rand.NewPCG(c.Seed, drawStream)), store: newBlockStore(s)}
		},
	}
}

// drawStream is the PCG stream of the emulation's random draws (Go's math/rand upstream: the
// shuffle of matched pods, the choice among least-loaded ones), so that a second model can draw
// the same numbers in the same order.
const drawStream = 0x61696272 // "aibr"

// check refuses what the gateway refuses: a block size below one byte (the hash loop divides
// by it), a tokenizer other than character (kvcheck does not tokenize with tiktoken), and a
// completion whose prompt is a list (token ids or several prompts), which the gateway answers
// with 400 before routing: it reads prompt into a string (util.go:250-267).
func check(s Settings) func(sim.Config, *sim.Trace) error {
	return func(_ sim.Config, t *sim.Trace) error {
		refuse := func(why string) error {
			return &sim.CannotRunError{Policy: "aibrix-prefix-cache", Trace: t.Name, Reason: why}
		}
		switch {
		case s.Tokenizer != "character":
			return refuse(fmt.Sprintf("AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE %q: kvcheck emulates the character tokenizer only", s.Tokenizer))
		case s.BlockSize < 1:
			return refuse(fmt.Sprintf("AIBRIX_PREFIX_CACHE_BLOCK_SIZE %d: want 1 or more", s.BlockSize))
		case s.BlockNumber < 1:
			return refuse(fmt.Sprintf("AIBRIX_PREFIX_CACHE_BLOCK_NUMBER %d: want 1 or more", s.BlockNumber))
		}
		lists := 0
		for i := range t.Requests {
			if v := t.Requests[i].View; v != nil && !v.Chat && (v.PromptIDs > 0 || v.BatchLeft > 0) {
				lists++
			}
		}
		if lists > 0 {
			return refuse(fmt.Sprintf("%d of %d requests are completions whose prompt is a list (token ids or a batch): the gateway reads prompt as a string and answers them 400, so they never reach an engine; simulate the log without them", lists, len(t.Requests)))
		}
		return nil
	}
}

// message is the text the gateway routes a request by (routingCtx.Message,
// gateway_req_body.go:74-75): a completion's prompt; a chat's messages' contents joined with
// one space (parseChatMessages, util.go:91-125): a string content unquoted, a list content as
// its JSON as sent, a null content as "null", a message without content as nothing. Roles,
// tool calls and reasoning are not read.
func message(v *sim.View) string {
	if !v.Chat {
		return v.Text
	}
	var b strings.Builder
	start, list, msgs := 0, 0, 0
	for _, p := range v.Pieces {
		run := v.Text[start:p.End]
		start = int(p.End)
		if p.Kind > sim.PieceAbsent {
			continue // a list's parts and reasoning: the list's JSON stands for them
		}
		if msgs > 0 {
			b.WriteByte(' ')
		}
		msgs++
		switch p.Kind {
		case sim.PieceString:
			b.WriteString(run)
		case sim.PieceList:
			if list < len(v.Lists) {
				b.WriteString(v.Lists[list])
			}
			list++
		case sim.PieceNull:
			b.WriteString("null")
		}
	}
	return b.String()
}

// blockHashes are getPrefixHashes (hash.go:206-241): the text's bytes (the character
// tokenizer's tokens, local_characters.go:22-28) in whole blocks of size bytes, each block's
// key chained on the one before. Upstream hashes with xxhash64 seeded at random per gateway;
// only equality matters to routing, so kvcheck chains FNV-1a instead.
func blockHashes(text string, size int) []uint64 {
	n := len(text) / size
	out := make([]uint64, n)
	parent := uint64(14695981039346656037)
	var pb [8]byte
	for i := range n {
		h := uint64(14695981039346656037)
		binary.LittleEndian.PutUint64(pb[:], parent)
		for _, c := range pb {
			h = (h ^ uint64(c)) * 1099511628211
		}
		for k := i * size; k < (i+1)*size; k++ {
			h = (h ^ uint64(text[k])) * 1099511628211
		}
		out[i], parent = h, h
	}
	return out
}

// prefixCachePolicy is prefixCacheRouter.routeOriginal (prefix_cache.go:373-473), the local
// hash table the gateway routes with unless KV event sync is on. For each request:
//
//  1. The running requests of each pod: the gateway's own count of the requests it sent there
//     that have not ended (getRequestCounts, least_request.go:262-274).
//  2. Load imbalance (getTargetPodListOnLoadImbalance, prefix_cache.go:991-1025): when the
//     busiest pod runs more than AIBRIX_PREFIX_CACHE_POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT
//     requests beyond the idlest, only the idlest pods (all those at the minimum) may match.
//  3. The match (MatchPrefix, hash.go:129-204): the blocks in order, while the block is in the
//     table and some candidate pod holds it; a pod's match is (blocks it matched) x 100 /
//     (the prompt's blocks), in whole percent, and a pod leaves the candidates at the first
//     block it does not hold. A prompt shorter than a block matches nothing.
//  4. With matches (getTargetPodFromMatchedPods, prefix_cache.go:950-987): the matched pods
//     shuffled, then sorted by match (highest first) and running requests (fewest first), the
//     shuffle breaking ties; the first whose running requests are at most the mean over all
//     pods plus AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR sample standard deviations.
//  5. Without a match, or when no matched pod is within that bound: one of the pods with the
//     fewest running requests, drawn uniformly (selectTargetPodWithLeastRequestCount,
//     least_request.go:148-167).
//  6. The prompt's blocks are written for the pod chosen (PostRouteUpdate, AddPrefix,
//     hash.go:161-190), as it is routed, not when it ends.
//
// The table (lru_store.go) holds AIBRIX_PREFIX_CACHE_BLOCK_NUMBER blocks in all, shared by
// every pod (not per pod, as the readme says): a write moves a block to the front and the
// least recently written goes when it is full; a lookup does not refresh a block. Every
// AIBRIX_PREFIX_CACHE_EVICTION_INTERVAL_SECONDS (1 s, ticks from the start) the blocks not
// written for AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS (20 min) go. A pod stays on a block
// until the block goes.
//
// The random draws (Go's math/rand upstream) are the policy's PCG: the shuffle is
// Fisher-Yates from the last pod down (IntN(i+1)), the least-loaded choice one IntN over those
// pods in replica order. Memory: the table, at most BlockNumber blocks of a bit per replica.
//
// Reasons: prefix-match, prefix-match-skipped (matches, none within the load bound),
// no-match-least-request, and when imbalanced imbalanced-prefix-match and imbalanced (the
// least-request choice).
type prefixCachePolicy struct {
	s     Settings
	draws *rand.Rand
	store *blockStore
	// scratch
	counts  []int
	cands   []bool
	matched []int // replica -> percent, -1 when not matched
	order   []int
}

// Route implements sim.Policy.
func (p *prefixCachePolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	n := f.Size()
	now := j.Arrival()
	p.store.sweep(now)
	hashes := blockHashes(message(j.Request().View), p.s.BlockSize)
	p.counts = p.counts[:0]
	lo, hi := math.MaxInt, math.MinInt
	for i := range n {
		c := f.InFlight(i)
		p.counts = append(p.counts, c)
		lo, hi = min(lo, c), max(hi, c)
	}
	imbalanced := hi-lo > p.s.ImbalanceAbs
	p.cands = p.cands[:0]
	for i := range n {
		p.cands = append(p.cands, !imbalanced || p.counts[i] == lo)
	}
	p.match(hashes, n)
	rep, reason := p.pickMatched(n)
	switch {
	case rep >= 0 && imbalanced:
		reason = "imbalanced-prefix-match"
	case rep < 0:
		rep = p.leastRequest(lo)
		switch {
		case imbalanced:
			reason = "imbalanced"
		case reason == "":
			reason = "no-match-least-request"
		}
	}
	p.store.add(hashes, rep, now)
	return rep, reason
}

// match fills p.matched with each candidate pod's match percent (-1 for none).
func (p *prefixCachePolicy) match(hashes []uint64, n int) {
	p.matched = p.matched[:0]
	for range n {
		p.matched = append(p.matched, -1)
	}
	for i, h := range hashes {
		e := p.store.m[h]
		if e == nil {
			return
		}
		pct := (i + 1) * 100 / len(hashes)
		any := false
		for rep := range n {
			if !p.cands[rep] {
				continue
			}
			if e.holds(rep) {
				p.matched[rep], any = pct, true
			} else {
				p.cands[rep] = false
			}
		}
		if !any {
			return
		}
	}
}

// pickMatched is step 4: the replica, or -1 with reason prefix-match-skipped when pods matched
// but none is within the load bound, or -1 and "" when none matched.
func (p *prefixCachePolicy) pickMatched(n int) (int, string) {
	p.order = p.order[:0]
	for rep := range n {
		if p.matched[rep] >= 0 {
			p.order = append(p.order, rep)
		}
	}
	if len(p.order) == 0 {
		return -1, ""
	}
	for i := len(p.order) - 1; i > 0; i-- {
		k := p.draws.IntN(i + 1)
		p.order[i], p.order[k] = p.order[k], p.order[i]
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		if p.matched[a] != p.matched[b] {
			return p.matched[b] - p.matched[a]
		}
		return p.counts[a] - p.counts[b]
	})
	bound := meanStd(p.counts, float64(p.s.StdDevFactor))
	for _, rep := range p.order {
		if float64(p.counts[rep]) <= bound {
			return rep, "prefix-match"
		}
	}
	return -1, "prefix-match-skipped"
}

// meanStd is the mean of counts plus k sample standard deviations (util.go:31-54: the standard
// deviation of one value is 0).
func meanStd(counts []int, k float64) float64 {
	sum := 0.0
	for _, c := range counts {
		sum += float64(c)
	}
	mean := sum / float64(len(counts))
	if len(counts) <= 1 {
		return mean
	}
	ss := 0.0
	for _, c := range counts {
		ss += (float64(c) - mean) * (float64(c) - mean)
	}
	return mean + k*math.Sqrt(ss/float64(len(counts)-1))
}

// leastRequest is one of the pods with the fewest running requests, lo, drawn uniformly.
func (p *prefixCachePolicy) leastRequest(lo int) int {
	p.order = p.order[:0]
	for rep, c := range p.counts {
		if c == lo {
			p.order = append(p.order, rep)
		}
	}
	return p.order[p.draws.IntN(len(p.order))]
}

// blockStore is the gateway's PrefixHashTable over its LRU store (hash.go:61-190,
// lru_store.go): block -> the pods that were sent it, least recently written at the back.
type blockStore struct {
	cap        int
	ttl, every float64
	swept      float64 // the last sweep tick run
	m          map[uint64]*block
	head       block // sentinel: head.next is the most recently written
}

type block struct {
	key        uint64
	written    float64
	pods       []uint64 // bit set of replicas
	prev, next *block
}

func newBlockStore(s Settings) *blockStore {
	st := &blockStore{cap: s.BlockNumber, ttl: s.EvictionMins * 60, every: s.EvictionSecs, m: map[uint64]*block{}}
	st.head.prev, st.head.next = &st.head, &st.head
	return st
}

func (b *block) holds(rep int) bool {
	return rep/64 < len(b.pods) && b.pods[rep/64]&(1<<(rep%64)) != 0
}

func (s *blockStore) unlink(b *block) { b.prev.next, b.next.prev = b.next, b.prev }

func (s *blockStore) front(b *block) {
	b.prev, b.next = &s.head, s.head.next
	s.head.next.prev = b
	s.head.next = b
}

// sweep runs the eviction ticks up to now: a block not written for more than the TTL at the
// latest tick goes (the earlier ticks evict a subset: nothing was written between them). The
// least recently written blocks are at the back, so the sweep stops at the first younger one.
func (s *blockStore) sweep(now float64) {
	if s.every <= 0 {
		return
	}
	tick := math.Floor(now/s.every) * s.every
	if tick <= s.swept {
		return
	}
	s.swept = tick
	for b := s.head.prev; b != &s.head && tick-b.written > s.ttl; b = s.head.prev {
		s.unlink(b)
		delete(s.m, b.key)
	}
}

// add is AddPrefix: every block written for rep at now, in order, each moved to the front (and
// the least recently written dropped when the store is over its capacity).
func (s *blockStore) add(hashes []uint64, rep int, now float64) {
	for _, h := range hashes {
		b := s.m[h]
		if b == nil {
			b = &block{key: h}
			s.m[h] = b
		} else {
			s.unlink(b)
		}
		b.written = now
		for len(b.pods) <= rep/64 {
			b.pods = append(b.pods, 0)
		}
		b.pods[rep/64] |= 1 << (rep % 64)
		s.front(b)
		if len(s.m) > s.cap {
			last := s.head.prev
			s.unlink(last)
			delete(s.m, last.key)
		}
	}
}
