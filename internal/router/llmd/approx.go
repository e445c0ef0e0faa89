package llmd

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// approx is llmd-approx with settings s.
func approx(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "llmd-approx",
		About:   "llm-d EPP as shipped: scorers queue 2, kv-utilisation 2, prefix 3, prefix from the router's own LRU of its decisions (blocks of at least 64 tokens)",
		Family:  sim.FamilyKV,
		Reasons: reasons,
		Product: display,
		Source:  "llm-d/llm-d-router@ebab687 pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix (plugin.go, indexer.go, types.go), dataproducer/prefixhash/hashing.go; ROUTERS.md §2, SPEC §6",
		Check:   func(_ sim.Config, t *sim.Trace) error { return approxRefused(s, t) },
		New: func(c sim.Config, blockSize int) sim.Policy {
			return newLLMDApproxPolicy(s, c, blockSize)
		},
	}
}

// approxRefused refuses what the producer refuses at start (newDataProducer): a block size
// of 0 or less with autoTune off, a negative maxPrefixTokensToMatch.
func approxRefused(s Settings, t *sim.Trace) error {
	if !s.AutoTune && s.BlockSizeTokens <= 0 {
		return &sim.CannotRunError{Policy: "llmd-approx", Trace: t.Name, Reason: fmt.Sprintf("approx-prefix-cache-producer refuses to start: \"BlockSizeTokens must be > 0 when AutoTune is disabled (current value: %d)\"", s.BlockSizeTokens)}
	}
	if s.MaxPrefixTokensToMatch < 0 {
		return &sim.CannotRunError{Policy: "llmd-approx", Trace: t.Name, Reason: fmt.Sprintf("approx-prefix-cache-producer refuses to start: \"MaxPrefixTokensToMatch must be >= 0 (current value: %d)\"", s.MaxPrefixTokensToMatch)}
	}
	return nil
}

// llmdApproxMinBlock is the approximate producer's floor on its block size in tokens
// (minBlockSizeTokens, approximateprefix/plugin.go:52). A variable, as in the source, only so
// that a test can show what the floor changes; nothing else sets it.
var llmdApproxMinBlock = 64

// llmdApproxPolicy is the llm-d EPP with its default prefix producer, approx-prefix-cache-producer,
// which the framework creates when nothing else produces the prefix match. Step by step, as
// approximateprefix/plugin.go does it:
//
//  1. Block size: with autoTune (the default) the engine's block size (the trace's, which is the
//     engine's vllm:cache_config_info block_size), else blockSizeTokens (16); either way raised to
//     64 tokens if smaller (GetBlockSize). So on vLLM's default 16-token blocks the router works
//     in blocks of 64.
//  2. The prompt is cut into blocks of that size from token 0, the last one partial if the
//     prompt does not fill it, at most maxPrefixTokensToMatch/blockSize blocks (131072 tokens;
//     maxPrefixBlocksToMatch only when the token cap is 0), and each block is keyed by a hash of
//     its tokens chained to the previous key (prefixhash.GetBlockHashes).
//  3. Match: walking the keys from block 0, every server the index holds the key for counts one
//     block; the walk stops at the first key no server holds (matchLongestPrefix). A server is
//     not required to hold the earlier keys itself.
//  4. The prefix scorer gets matched / total keys; the weighted scorers and the max-score picker
//     choose (llmd.go).
//  5. After the choice every key of the request is added to the chosen server's LRU, most
//     recent first, evicting the least recently added beyond its capacity (PreRequest,
//     indexer.Add). Capacity: with autoTune the engine's number of GPU blocks (Config.KVBlocks,
//     counted in the engine's blocks although the LRU holds the router's larger ones), else
//     lruCapacityPerServer (31250).
//
// ROUTERS.md §2 and SPEC §6 say the same in brief: the approximate producer is the default
// (auto-created), a router-side LRU with lruCapacityPerServer 31250 and blockSizeTokens 16 raised
// to 64 at request time. Where they give blockSizeTokens as the size that is floored, the source
// (GetBlockSize) first replaces it with the engine's block size under autoTune, which is on by
// default; on vLLM's 16-token blocks both readings give 64, on larger engine blocks (64 FlashMLA,
// 128 CUTLASS MLA) the source's is the engine's. SPEC §6's "do not run active-active" is about
// several EPP replicas each keeping an LRU; the emulation is one EPP (the chart's default of one
// replica, or active-passive).
//
// The index is what the router decided, not what the engines hold: it never sees an eviction,
// and an engine that evicted a prefix still scores for it until the LRU pushes it out.
//
// Keys on a trace of block hashes: router block m ends at token e = min((m+1)*R, prompt) and is
// keyed by the trace block holding token e-1 together with e. Trace keys are chains, so equal
// keys mean equal content up to e. When R is a multiple of the trace's block size (64 on 16, or
// autoTune's R equal to it) this is exactly the source's chain of hashes; when it is not (a trace
// of 512-token blocks with autoTune off), two prompts that share the first R tokens but differ
// later in the same trace block count as different: matches are then undercounted to whole trace
// blocks. The source hashes the estimate tokenizer's tokens (about 4 bytes each), not the
// engine's; the emulation counts the trace's tokens, the same on average.
//
// Memory: one keyLRU per replica of at most the capacity's keys, about 55 bytes a key (a map
// entry and a list node; 52 measured on a million keys).
//
// Not modelled: the index update is asynchronous in the source (it lands a moment after the
// routing decision; here before the next request); the periodic removal of pods that left; a
// request longer than the whole LRU (the source then keeps its evicted keys in hashToPods).
//
// Checked against llm-d/llm-d-router@ebab687 (lines without a path are in
// pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix/plugin.go):
//   - the block size: the engine's with autoTune, else blockSizeTokens, floored at 64
//     (GetBlockSize, 344-357; minBlockSizeTokens 52);
//   - the cap on blocks hashed: maxPrefixTokensToMatch / block size, else
//     maxPrefixBlocksToMatch, 0 and 0 unlimited (resolveMaxBlocks, 366-376);
//   - the match: walk the keys while any server holds one, each holder counting one block
//     (matchLongestPrefix, 316-331); matched / total to the scorer (Produce, 228-255);
//   - after the choice, every key added to the chosen server's LRU of the engine's GPU blocks
//     with autoTune, else lruCapacityPerServer (PreRequest 258-290, makeserver 302-313);
//   - a start refused on a block size <= 0 without autoTune or a negative token cap (146-151);
//   - scoring and picking as llmd.go says (pkg/epp/config/loader/defaults.go:48-50,
//     pkg/epp/scheduling/scheduler_profile.go:202-253; in pkg/epp/framework/plugins/scheduling:
//     scorer/kvcacheutilization/kvcache_utilization.go:84-87, picker/maxscore/picker.go:87-92).
//
// Left out:
//   - the asynchronous index update (PreRequest's goroutine), the P/D prefill profile's second
//     server, several prompts in one request, pods leaving.
type llmdApproxPolicy struct {
	pick      llmdPicker
	block     int // router block size in tokens
	traceBS   int
	maxBlocks int
	capacity  int
	lru       []keyLRU
	keys      []uint64
	match     []int
}

func newLLMDApproxPolicy(s Settings, c sim.Config, traceBS int) *llmdApproxPolicy {
	bs := s.BlockSizeTokens
	if s.AutoTune {
		bs = traceBS
	}
	bs = max(bs, llmdApproxMinBlock)
	maxBlocks := 1 << 40 // unlimited: both caps 0
	switch {
	case s.MaxPrefixTokensToMatch > 0:
		maxBlocks = s.MaxPrefixTokensToMatch / bs
	case s.MaxPrefixBlocksToMatch > 0:
		maxBlocks = s.MaxPrefixBlocksToMatch
	}
	capacity := s.LRUCapacityPerServer
	if s.AutoTune || capacity <= 0 {
		capacity = c.KVBlocks
	}
	if capacity <= 0 {
		capacity = 31250
	}
	return &llmdApproxPolicy{pick: newLLMDPicker(s, c.Seed), block: bs, traceBS: traceBS, maxBlocks: maxBlocks, capacity: capacity}
}

// requestKeys returns the router's block keys for the request (step 2).
func (p *llmdApproxPolicy) requestKeys(j *sim.Job) []uint64 {
	ids := j.IDs()
	tokens := min(j.Request().InputTokens, len(ids)*p.traceBS)
	n := 0
	if tokens > 0 {
		n = min((tokens+p.block-1)/p.block, p.maxBlocks)
	}
	p.keys = p.keys[:0]
	for m := range n {
		end := min((m+1)*p.block, tokens)
		t := (end - 1) / p.traceBS
		p.keys = append(p.keys, uint64(uint32(ids[t]))<<32|uint64(uint32(end)))
	}
	return p.keys
}

// Route implements sim.Policy.
func (p *llmdApproxPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	for len(p.lru) < f.Size() {
		p.lru = append(p.lru, newKeyLRU(p.capacity))
		p.match = append(p.match, 0)
	}
	keys := p.requestKeys(j)
	clear(p.match)
	for _, k := range keys {
		any := false
		for i := range f.Size() {
			if p.lru[i].has(k) {
				p.match[i]++
				any = true
			}
		}
		if !any {
			break
		}
	}
	total := len(keys)
	score := func(i int) float64 {
		if total == 0 {
			return 0
		}
		return float64(p.match[i]) / float64(total)
	}
	best := p.pick.pick(f, score)
	for _, k := range keys {
		p.lru[best].add(k)
	}
	return best, reason(score(best))
}

// keyLRU is one server's LRU of keys (hashicorp/golang-lru's Add: an existing key becomes the
// most recent; a new one beyond capacity evicts the least recent).
type keyLRU struct {
	capacity   int
	at         map[uint64]int32 // key -> node
	key        []uint64
	prev, next []int32 // node 0 is the sentinel: next[0] is the most recent, prev[0] the least
}

func newKeyLRU(capacity int) keyLRU {
	return keyLRU{capacity: max(capacity, 1), at: map[uint64]int32{}, key: []uint64{0}, prev: []int32{0}, next: []int32{0}}
}

func (l *keyLRU) has(k uint64) bool { _, ok := l.at[k]; return ok }

func (l *keyLRU) unlink(n int32) {
	l.next[l.prev[n]] = l.next[n]
	l.prev[l.next[n]] = l.prev[n]
}

func (l *keyLRU) pushFront(n int32) {
	l.prev[n], l.next[n] = 0, l.next[0]
	l.prev[l.next[0]] = n
	l.next[0] = n
}

func (l *keyLRU) add(k uint64) {
	if n, ok := l.at[k]; ok {
		l.unlink(n)
		l.pushFront(n)
		return
	}
	var n int32
	if len(l.at) >= l.capacity {
		n = l.prev[0] // reuse the least recent node
		l.unlink(n)
		delete(l.at, l.key[n])
	} else {
		n = int32(len(l.key))
		l.key, l.prev, l.next = append(l.key, 0), append(l.prev, 0), append(l.next, 0)
	}
	l.key[n] = k
	l.at[k] = n
	l.pushFront(n)
}
