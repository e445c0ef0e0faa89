package prodstack

import (
	"math/bits"
	"math/rand/v2"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// prefixAware is prodstack-prefixaware with settings s.
func prefixAware(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "prodstack-prefixaware",
		About:     "vLLM production-stack router --routing-logic prefixaware: longest match of 128-character chunks of the raw text in a trie that never evicts, random among the engines holding it, no load term",
		Family:    sim.FamilyKV,
		Reasons:   []string{sim.ReasonPrefixMatch, reasonNoMatchRandom, reasonLowestQPS},
		Draws:     true,
		Product:   display,
		Source:    "vllm-project/production-stack src/vllm_router/routers/routing_logic.py PrefixAwareRouter (main after PR #1035, with prefix_min_match_length), src/vllm_router/prefix/hashtrie.py HashTrie(chunk_size=128); parsers/parser.py --prefix-min-match-length 0; ROUTERS.md §3, SPEC §6",
		NeedsText: true,
		New: func(c sim.Config, _ int) sim.Policy {
			most := c.Replicas
			if c.AddReplicaAt >= 0 {
				most++ // the replica added
			}
			return &prodStackPrefixPolicy{
				minMatch: s.PrefixMinMatch,
				rng:      rand.New(rand.NewPCG(c.Seed, 0x707265666978)),
				trie:     newChunkTrie(most),
			}
		},
	}
}

// prodStackPrefixPolicy is PrefixAwareRouter. For each request:
//
//  1. The prompt (prodStackPrompt, routing_logic.py@a6c01db:476-500): a completion's prompt;
//     for a chat, one line per message joined with "\n": a string content, or a list's parts of
//     type "text" joined with " " (images and other parts skipped); a null content adds no line,
//     a missing one an empty line. No chat template, no role, no tool calls.
//  2. The prompt is cut into chunks of 128 characters (the last may be shorter) and each chunk
//     hashed on its own (chunkHashes). A trie keyed by those hashes holds, at every node, the
//     engines a prompt with that prefix of chunks was sent to.
//  3. Longest match: starting with every engine, walk the trie chunk by chunk; at each chunk, if
//     the child exists and holds one of the engines still selected, keep only those and count
//     128 characters; stop at the first chunk that fails. With no chunk matched every engine is
//     selected.
//  4. If the matched length is below --prefix-min-match-length (Settings.PrefixMinMatch,
//     0 by default, so never), the engine is _qps_routing's (qpsWindow); otherwise one of the
//     selected engines chosen at random (random.choice: uniform; here the k-th selected in the
//     replicas' order, k drawn from a PCG seeded with Config.Seed).
//  5. The whole prompt is inserted for the chosen engine, whichever way it was chosen.
//
// The trie never evicts ("we assume that there is no eviction of prefix cache"): an engine that
// evicted a prefix long ago still draws every request that shares it, and nothing weighs load,
// so a popular prefix makes a hot spot. One differing character in the first 128 makes chunk 0
// differ and the match 0. Memory is the trie: one node per distinct chunk path (about 40 bytes
// and one bit per replica each), bounded by the log's text.
//
// Checked against vllm-project/production-stack@a6c01db (routing_logic.py is
// src/vllm_router/routers/routing_logic.py; other paths from the repository root):
//   - the prompt as prodStackPrompt builds it (routing_logic.py:476-500);
//   - chunks of 128 characters hashed one by one, a trie of them holding the endpoints each
//     chunk path was sent to (src/vllm_router/prefix/hashtrie.py:37-75);
//   - the longest match: walk while the child exists and shares an endpoint with those still
//     selected, 128 characters a chunk (hashtrie.py:77-104);
//   - below --prefix-min-match-length (0: never) the QPS choice, else random.choice over the
//     selected; the prompt inserted for the engine chosen either way (routing_logic.py:507-522;
//     parser.py:451);
//   - no eviction (routing_logic.py:436).
//
// Left out:
//   - a completion whose prompt is a list (a batch, or token ids): upstream hashes the list and
//     fails; here its first prompt's text;
//   - which of the selected endpoints random.choice returns for a given seed (Python's set
//     order and random state): a uniform draw from Config.Seed.
type prodStackPrefixPolicy struct {
	minMatch int
	rng      *rand.Rand
	trie     *chunkTrie
	qps      qpsWindow
	buf      []byte
	hashes   []uint64
	sel      []uint64
}

// reasonNoMatchRandom is prodstack-prefixaware's reason for a prompt whose first chunk no
// engine holds: one of every engine, at random.
const reasonNoMatchRandom = "no-match-random"

// Route implements sim.Policy. Reasons: prefix-match (4, a chunk matched: one of the engines
// holding it), no-match-random (4, none matched: one of every engine), lowest-qps (4, under
// --prefix-min-match-length).
func (p *prodStackPrefixPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	p.buf = prodStackPrompt(j.Request().View, p.buf)
	p.hashes = chunkHashes(p.hashes[:0], p.buf)
	n := f.Size()
	matched := p.trie.match(p.hashes, n, &p.sel)
	var rep int
	reason := sim.ReasonPrefixMatch
	if matched < p.minMatch {
		rep, reason = p.qps.pick(n, j.Arrival()), reasonLowestQPS
	} else {
		k := p.rng.IntN(countBits(p.sel))
		rep = nthBit(p.sel, k)
		if matched == 0 {
			reason = reasonNoMatchRandom
		}
	}
	p.qps.record(rep, j.Arrival())
	p.trie.insert(p.hashes, rep)
	return rep, reason
}

// chunkTrie is HashTrie: nodes numbered from 0 (the root), children found by (parent, chunk
// hash), each node's engines as a bit set of words words.
type chunkTrie struct {
	words    int
	children map[trieEdge]int32
	eps      []uint64 // node i's engines: eps[i*words:(i+1)*words]
}

type trieEdge struct {
	parent int32
	h      uint64
}

func newChunkTrie(replicas int) *chunkTrie {
	w := (replicas + 63) / 64
	return &chunkTrie{words: w, children: map[trieEdge]int32{}, eps: make([]uint64, w)}
}

// match is longest_prefix_match over the first n engines: the characters matched (128 per
// chunk) and, in sel, the engines selected.
func (t *chunkTrie) match(hashes []uint64, n int, sel *[]uint64) int {
	s := (*sel)[:0]
	for w := range t.words {
		switch m := n - 64*w; {
		case m >= 64:
			s = append(s, ^uint64(0))
		case m > 0:
			s = append(s, uint64(1)<<m-1)
		default:
			s = append(s, 0)
		}
	}
	*sel = s
	node, length := int32(0), 0
	for _, h := range hashes {
		child, ok := t.children[trieEdge{node, h}]
		if !ok {
			break
		}
		eps := t.eps[int(child)*t.words : int(child+1)*t.words]
		held := false
		for w := range s {
			held = held || eps[w]&s[w] != 0
		}
		if !held {
			break
		}
		for w := range s {
			s[w] &= eps[w]
		}
		node = child
		length += prodStackChunk
	}
	return length
}

// insert adds engine rep to the root and every node on the prompt's path, creating nodes.
func (t *chunkTrie) insert(hashes []uint64, rep int) {
	w, bit := rep/64, uint64(1)<<(rep%64)
	t.eps[w] |= bit
	node := int32(0)
	for _, h := range hashes {
		e := trieEdge{node, h}
		child, ok := t.children[e]
		if !ok {
			child = int32(len(t.eps) / t.words)
			t.children[e] = child
			t.eps = append(t.eps, make([]uint64, t.words)...)
		}
		t.eps[int(child)*t.words+w] |= bit
		node = child
	}
}

func countBits(s []uint64) int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// nthBit is the index of the k-th (from 0) set bit of s.
func nthBit(s []uint64, k int) int {
	for w, x := range s {
		c := bits.OnesCount64(x)
		if k >= c {
			k -= c
			continue
		}
		for ; k > 0; k-- {
			x &= x - 1
		}
		return 64*w + bits.TrailingZeros64(x)
	}
	return -1
}
