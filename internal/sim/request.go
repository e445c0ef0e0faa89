package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Request is one request as the simulator sees it, whatever the trace source. Every adapter
// (Mooncake JSONL, Azure CSV, and later audit logs and tap recordings) produces these.
type Request struct {
	// Arrival is the time the request reaches the router, in seconds from the trace start.
	Arrival float64
	// Session identifies a conversation or user when the source knows it; empty otherwise.
	Session string
	// Blocks are the content keys of the prompt's blocks, block 0 first: equal keys mean equal
	// content from token 0 up to the end of that block (a chain, like vLLM's block hashes). The
	// last block may be partial (InputTokens not a multiple of the block size).
	Blocks []uint64
	// InputTokens and OutputTokens are the prompt and completion lengths.
	InputTokens, OutputTokens int
	// N is the number of parallel samples; n > 1 arrives as n sibling requests at once.
	N int
	// View is the request as a router that reads its body sees it, for sources that hold the
	// body (request logs); nil otherwise. See router.go.
	View *View
}

// Trace is a sequence of requests ordered by arrival time.
type Trace struct {
	// Name is what the user called the trace (usually its path).
	Name string
	// Format names the adapter that read it: "mooncake", "azure", "requests", "recording".
	Format string
	// Tokens says where the token ids behind the block keys came from, for sources that
	// tokenize: "exact" (the engine's /tokenize) or "estimated" (audit's byte estimate, and then
	// every token figure is an estimate); empty for traces that carry their blocks.
	Tokens string
	// LowerBound is set when the source misses reuse by construction (a tap recording does not
	// see requests that hit fully): every hit rate is then a lower bound.
	LowerBound bool
	// BlockSize is the number of tokens per block of Request.Blocks.
	BlockSize int
	// PrefixInfo is false when the source has lengths only: every block is then unique, the
	// unique-prefix case, and no policy can hit.
	PrefixInfo bool
	// Requests, in arrival order (ties keep the source's order).
	Requests []Request
	// SyntheticArrivals is set when the arrival times are made up (a request log without time
	// fields, replayed at --rate): the modelled load is then an assumption, and a hot spot is
	// judged on the imbalance alone (HotSpot).
	SyntheticArrivals bool
	// Notes are things the adapter saw and adjusted (reordering, inconsistent lengths) that a
	// reader of the results should know.
	Notes []string

	// noView says why a source that holds request bodies kept no Request.View (too much text).
	noView string
	// input, when the source was out of time order, is each request's place in it (Input).
	input []int32
	// maxRequests is the request limit the trace was read under (MaxRequests when 0): a
	// simulation of it sends at most as many requests, siblings included.
	maxRequests int

	internOnce sync.Once
	ids        []int32 // every request's blocks as dense ids 0..distinct-1, one after another
	idsFrom    []int   // request i's ids are ids[idsFrom[i]:idsFrom[i+1]]
	distinct   int
}

// blockIDs returns request i's blocks as dense ids. intern must have run.
func (t *Trace) blockIDs(i int) []int32 {
	return t.ids[t.idsFrom[i]:t.idsFrom[i+1]:t.idsFrom[i+1]]
}

// denseKeySpan is how much larger than the trace's block references its largest key may be for
// intern to number keys through a slice indexed by key (4 bytes per possible key) rather than a
// map: published traces number their blocks 0, 1, 2, ...
const denseKeySpan = 4

// intern numbers the trace's distinct block keys densely, in order of first appearance, once, so
// that caches and the block index work on small integers. It must run before the trace is
// simulated. Its working memory goes when it returns: a slice of 4 bytes per key up to the
// largest when keys are small integers (the Mooncake traces), else a map.
func (t *Trace) intern() {
	t.internOnce.Do(func() {
		n := 0
		var top uint64
		for i := range t.Requests {
			n += len(t.Requests[i].Blocks)
			for _, b := range t.Requests[i].Blocks {
				top = max(top, b)
			}
		}
		t.ids = make([]int32, 0, n)
		t.idsFrom = make([]int, len(t.Requests)+1)
		if n > 0 && top < math.MaxInt32 && top < uint64(denseKeySpan)*uint64(n) {
			dense := make([]int32, top+1) // key -> id+1
			for i := range t.Requests {
				for _, b := range t.Requests[i].Blocks {
					if dense[b] == 0 {
						t.distinct++
						dense[b] = int32(t.distinct)
					}
					t.ids = append(t.ids, dense[b]-1)
				}
				t.idsFrom[i+1] = len(t.ids)
			}
			return
		}
		dense := make(map[uint64]int32, n/2)
		for i := range t.Requests {
			for _, b := range t.Requests[i].Blocks {
				id, ok := dense[b]
				if !ok {
					id = int32(len(dense))
					dense[b] = id
				}
				t.ids = append(t.ids, id)
			}
			t.idsFrom[i+1] = len(t.ids)
		}
		t.distinct = len(dense)
	})
}

// sortByArrival sorts t's requests by arrival time when they are not in order, ties keeping
// the source's order, and keeps each request's place in the source (Input: 4 bytes a request,
// only for a source out of order); it reports whether it sorted.
func (t *Trace) sortByArrival() bool {
	rs := t.Requests
	if slices.IsSortedFunc(rs, func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) }) {
		return false
	}
	in := make([]int32, len(rs))
	for i := range in {
		in[i] = int32(i)
	}
	slices.SortStableFunc(in, func(a, b int32) int { return cmp.Compare(rs[a].Arrival, rs[b].Arrival) })
	// Request k of the sorted trace is rs[in[k]]: move them into place a cycle at a time,
	// marking the places done by complementing their entry, without a second copy.
	for k := range in {
		if in[k] < 0 || int(in[k]) == k {
			continue
		}
		first := rs[k]
		at := k
		for {
			from := int(in[at])
			in[at] = ^in[at]
			if from == k {
				rs[at] = first
				break
			}
			rs[at] = rs[from]
			at = from
		}
	}
	for k := range in {
		if in[k] < 0 {
			in[k] = ^in[k]
		}
	}
	t.input = in
	return true
}

// Head is the trace of t's first n requests (all of them when n is larger), sharing t's
// requests and its dense block ids: block ids are numbered in order of first appearance, so
// the first n requests' ids are already dense, and the head costs no copy of the trace. A
// replay of the head is the replay of the traffic up to its n-th request.
func (t *Trace) Head(n int) *Trace {
	n = min(max(n, 0), len(t.Requests))
	t.intern()
	h := &Trace{Name: t.Name, Format: t.Format, Tokens: t.Tokens, LowerBound: t.LowerBound, BlockSize: t.BlockSize, PrefixInfo: t.PrefixInfo,
		Requests: t.Requests[:n:n], SyntheticArrivals: t.SyntheticArrivals, Notes: t.Notes, noView: t.noView, maxRequests: t.maxRequests}
	if t.input != nil {
		h.input = t.input[:n:n]
	}
	h.internOnce.Do(func() {
		end := t.idsFrom[n]
		h.ids, h.idsFrom = t.ids[:end:end], t.idsFrom[:n+1:n+1]
		for _, id := range h.ids {
			h.distinct = max(h.distinct, int(id)+1)
		}
	})
	return h
}

// Input is request i's place in the order the source gave its requests, from 0: i itself,
// unless the source was out of time order and the trace sorted it.
func (t *Trace) Input(i int) int {
	if t.input == nil {
		return i
	}
	return int(t.input[i])
}

// MaxRequests is the default bound on the requests a trace source may hold, as MaxBlockRefs
// bounds its block references (--max-trace-requests raises it): the simulator holds the trace
// in memory at traceBytesPerRequest (88) bytes per request, so 352 MB, and a simulation sends at
// most as many requests, siblings (--n) included.
const MaxRequests = 1 << 22

// traceBytesPerRef and traceBytesPerRequest are what a trace costs in memory once read and
// interned: a block key (8 bytes) and its dense id (4) per reference; a Request and its offset
// into the ids per request (session ids not counted; a request log's views are bounded by
// MaxViewBytes on their own, see viewBytes).
const (
	traceBytesPerRef     = 12
	traceBytesPerRequest = 88
)

// refsLimitError is the error of a reader that reached the block-reference limit at where (the
// input, and its line when it has lines): it names the limit, the memory reading up to it really
// took (memoryTaken), the flag that raises it, and part, how to simulate a part of the input
// instead. Every trace source (--trace, --requests, --recording) stops at the same limit with
// this error.
func refsLimitError(where string, limit int, part string) error {
	return fmt.Errorf("%s: more than %d block references, the most this run holds in memory (%s): raise the limit with --max-block-refs if the machine has the memory, or %s",
		where, limit, memoryTaken(limit, "reference", traceBytesPerRef), part)
}

// requestsLimitError is refsLimitError's twin for the request limit (--max-trace-requests):
// every trace source stops at it with this error.
func requestsLimitError(where string, limit int, part string) error {
	return fmt.Errorf("%s: more than %d requests, the most this run holds in memory (%s): raise the limit with --max-trace-requests if the machine has the memory, or %s",
		where, limit, memoryTaken(limit, "request", traceBytesPerRequest), part)
}

// memoryTaken says what reading up to a limit of n items took: the process's largest resident
// set so far (peakResident) and that per item. It is several times what the items hold once read
// (held bytes each): while they are read, the growing list is copied to a larger one and
// the old one is still there, a request log keeps what routers read of each request, and the
// garbage collector lets the heap reach twice what is live before it collects. Reading 4 Mi
// requests of a Mooncake trace (one block each) took 1.4 GB, about 330 bytes a request; of a
// request log, 2.1 GB, about 500 bytes a request. Without a figure from the system it gives
// the held size only, as a floor.
func memoryTaken(n int, item string, held int64) string {
	rss := peakResident()
	if rss == 0 {
		return fmt.Sprintf("%d bytes a %s once read, %d MB, and more while reading", held, item, int64(n)*held>>20)
	}
	return fmt.Sprintf("reading them took this process to %d MB, its largest resident size so far: about %d bytes a %s, where %d bytes each stay once read",
		rss>>20, rss/uint64(max(n, 1)), item, held)
}

// Limits bound what a trace source may hold in memory; a source past either is refused with an
// error naming the limit and the flag that raises it. A zero field takes its default.
type Limits struct {
	// BlockRefs bounds the block references (--max-block-refs; MaxBlockRefs when 0).
	BlockRefs int
	// Requests bounds the requests (--max-trace-requests; MaxRequests when 0). A simulation of
	// the trace sends at most as many, siblings (--n) included.
	Requests int
}

// orDefault fills the zero fields with the defaults.
func (l Limits) orDefault() Limits {
	if l.BlockRefs <= 0 {
		l.BlockRefs = MaxBlockRefs
	}
	if l.Requests <= 0 {
		l.Requests = MaxRequests
	}
	return l
}

// fullBlocks is the number of complete blocks in a prompt: only those are ever cached.
func fullBlocks(r *Request, blockSize int) int {
	return min(len(r.Blocks), r.InputTokens/blockSize)
}

// hitLimit is the largest number of blocks a prompt can hit: the last token is always
// recomputed, so at most floor((N-1)/block_size) blocks (SPEC §5).
func hitLimit(r *Request, blockSize int) int {
	if r.InputTokens <= 0 {
		return 0
	}
	return min(len(r.Blocks), (r.InputTokens-1)/blockSize)
}
