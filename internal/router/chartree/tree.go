// Package chartree is the character radix tree SGLang's model gateway (cache_aware), vLLM
// Router (cache_aware, forked from SGLang's) and Ray Serve LLM's PrefixCacheAffinityRouter keep
// in the router, shared by their emulations (internal/router/sglang, internal/router/vllmrouter,
// internal/router/ray), and the cache_aware choice SGLang's older gateway and vLLM Router make
// over it (CacheAware).
package chartree

import (
	"cmp"
	"container/heap"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Tree is the character radix tree that SGLang's model gateway (cache_aware) and Ray Serve
// LLM's PrefixCacheAffinityRouter keep in the router: one tree shared by every replica (a
// "tenant"), each node a run of characters with, for every replica that was sent a text passing
// through it, the last time it did. It stands for nothing the engines hold: it is the router's
// memory of its own decisions. Both upstream trees work the same way (sgl-model-gateway
// src/policies/tree.rs; ray python/ray/llm/_internal/serve/routing_policies/prefix_aware/
// prefix_tree.py), and so does this one:
//   - insert(text, replica, t) walks down from the root along the text, splitting a node where
//     the text leaves it part-way and adding a leaf for the rest; every node on the path is
//     marked as held by the replica, at time t (Ray), or, with StampEnd (SGLang), at t for the
//     node the text ends in and 0 for a node passed that it did not hold yet; a replica's size
//     grows by the characters of each node it did not hold yet; a node remembers the replica
//     whose insert created it (SGLang's last_tenant; a split's upper part copies it);
//   - match(text) walks down as far as the text agrees with the tree, ending part-way into a
//     node when the text leaves it there; the characters agreed are the match, and the replicas
//     holding the node reached are the ones that hold the whole match;
//   - sizes are in characters (Unicode code points: Rust's chars(), Python's len), never bytes,
//     and a node is split only between characters;
//   - the two products evict differently (evictLRULeaves for SGLang, evictOldest for Ray).
//
// A node keeps its own characters only: a leaf copies the part of the text no node held yet,
// and a split cuts a label in two without copying, so the tree holds each character once,
// what the upstream trees hold, plus a node's fields (about 140 bytes plus 16 per holder), at
// most two nodes per text inserted. It never keeps an inserted text whole: a request's text is
// garbage once routed (a request log's texts are read back from a file one at a time: View).
// InsertFrom keeps not even the characters: given a text that is also on file (a request
// log's text file), a leaf's label is its place there, read back when a walk compares with
// it, and the tree's memory is its nodes' fields alone.
type Tree struct {
	root  Node
	size  []int // characters held per replica
	total int   // the sum of size
	nodes int
	// StampEnd is SGLang's insert (tree.rs@8905cbd:393-527): only the node the text ends in
	// gets the time; a node passed on the way that the replica did not hold gets time 0, one
	// it held keeps its time. Without it (Ray's) every node on the path gets the time.
	StampEnd bool
	// Unit is what the tree's texts are made of: 0 for characters (UTF-8), PageUnit for
	// pages of tokens written as 8-byte keys (smg's token tree); nodes split only between
	// units and sizes count units.
	Unit int
	buf  []byte // a label read back from its file
	err  error  // the first label that could not be read back
}

// PageUnit is the width of a page key in a token tree's text.
const PageUnit = 8

// Node is a run of characters (or page keys), its label; its path is the text from the
// root to its end, the labels on the way.
type Node struct {
	lab string // the label, when in memory (src nil)
	// src, when set, holds the label instead: size bytes at off (InsertFrom); first is its
	// first character.
	src     io.ReaderAt
	off     int64
	size    int
	first   rune
	depth   int // bytes of the path
	chars   int // characters in the label
	salt    uint64
	last    int // the replica whose insert created the node (SGLang's last_tenant)
	parent  *Node
	kids    []*Node
	holders []holder
}

// holder is a replica holding a node, and when it last inserted or matched through it.
type holder struct {
	rep int
	at  float64
}

// label is the node's own characters (read back from their file for a label kept there: for
// tests and messages; a walk compares with labelBytes).
func (n *Node) label() string {
	if n.src == nil {
		return n.lab
	}
	b := make([]byte, n.size)
	if _, err := n.src.ReadAt(b, n.off); err != nil {
		return ""
	}
	return string(b)
}

// labelLen is the length of the node's label in bytes.
func (n *Node) labelLen() int {
	if n.src == nil {
		return len(n.lab)
	}
	return n.size
}

// firstRune is the first character of the node's label.
func (n *Node) firstRune() rune {
	if n.src == nil {
		r, _ := utf8.DecodeRuneInString(n.lab)
		return r
	}
	return n.first
}

// path is the text from the root to n's end (made for tests and messages; the tree compares
// paths with pathCompare).
func (n *Node) path() string {
	var b []byte
	for ; n != nil; n = n.parent {
		b = append([]byte(n.label()), b...)
	}
	return string(b)
}

// ancestry is n and its ancestors up to the root's child, the root's child first.
func (n *Node) ancestry(buf []*Node) []*Node {
	buf = buf[:0]
	for ; n != nil && n.parent != nil; n = n.parent {
		buf = append(buf, n)
	}
	slices.Reverse(buf)
	return buf
}

// pathCompare compares the paths of two nodes of one tree as strings, without making them:
// down from the root they follow the same nodes until one ends (its path is a prefix of the
// other's, so the shorter) or they part into two children, whose labels start with different
// characters and so order the paths.
func pathCompare(a, b *Node) int {
	if a == b {
		return 0
	}
	var ab, bb [32]*Node
	pa, pb := a.ancestry(ab[:0]), b.ancestry(bb[:0])
	for i := range min(len(pa), len(pb)) {
		if pa[i] != pb[i] {
			// Siblings: their labels differ in their first character, which orders them
			// (UTF-8 orders as code points do; a page tree's labels are in memory).
			if pa[i].src == nil && pb[i].src == nil {
				return strings.Compare(pa[i].lab, pb[i].lab)
			}
			return cmp.Compare(pa[i].firstRune(), pb[i].firstRune())
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

// Holder returns the index of rep among n's holders, or -1.
func (n *Node) Holder(rep int) int {
	for k := range n.holders {
		if n.holders[k].rep == rep {
			return k
		}
	}
	return -1
}

// kid returns the child of n whose label starts with text's first unit, or nil.
func (t *Tree) kid(n *Node, text string) *Node {
	if t.Unit > 0 {
		for _, k := range n.kids {
			if k.label()[:t.Unit] == text[:t.Unit] {
				return k
			}
		}
		return nil
	}
	r, _ := utf8.DecodeRuneInString(text)
	for _, k := range n.kids {
		if k.firstRune() == r {
			return k
		}
	}
	return nil
}

// shared is the length in bytes of the longest common prefix of text and k's label in whole
// units, reading a label kept on file back; false when it cannot be read (Err says why).
func (t *Tree) shared(text string, k *Node) (int, bool) {
	if k.src == nil {
		return t.common(text, k.lab), true
	}
	// A character past the text's end too: a split needs the lower part's first.
	n := min(k.size, len(text)+utf8.UTFMax)
	t.buf = slices.Grow(t.buf[:0], n)[:n]
	if _, err := k.src.ReadAt(t.buf, k.off); err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("reading back a label of the router's tree (%d bytes at %d): %w", n, k.off, err)
		}
		return 0, false
	}
	return commonPrefix(text, t.buf), true
}

// Err is the first error reading a label back from its file (InsertFrom): after one the tree's
// answers are wrong and its caller must stop.
func (t *Tree) Err() error { return t.err }

// Count is the number of units of s: characters, or pages.
func (t *Tree) Count(s string) int {
	if t.Unit > 0 {
		return len(s) / t.Unit
	}
	return utf8.RuneCountInString(s)
}

// common is the length in bytes of the longest common prefix of a and b in whole units.
func (t *Tree) common(a, b string) int {
	if t.Unit > 0 {
		n := min(len(a), len(b))
		i := 0
		for i < n && a[i] == b[i] {
			i++
		}
		return i - i%t.Unit
	}
	return commonPrefix(a, b)
}

// SizeOf is the number of characters replica rep holds.
func (t *Tree) SizeOf(rep int) int {
	if rep < len(t.size) {
		return t.size[rep]
	}
	return 0
}

// hold marks n as held by rep at time at, growing rep's size when it did not hold n yet.
func (t *Tree) hold(n *Node, rep int, at float64) {
	if n == &t.root {
		return
	}
	if k := n.Holder(rep); k >= 0 {
		n.holders[k].at = at
		return
	}
	for len(t.size) <= rep {
		t.size = append(t.size, 0)
	}
	t.size[rep] += n.chars
	t.total += n.chars
	n.holders = append(n.holders, holder{rep: rep, at: at})
}

// commonPrefix is the length in bytes of the longest common prefix of a and b that ends between
// two characters of both.
func commonPrefix[B ~string | ~[]byte](a string, b B) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i < len(a) && i < len(b) {
		for i > 0 && (!utf8.RuneStart(a[i]) || !utf8.RuneStart(b[i])) {
			i--
		}
	}
	return i
}

// Valid is a text as a Rust String or a Python str holds it, valid UTF-8 by construction:
// each run of bytes that is not UTF-8 becomes one U+FFFD. The tree relies on it: two equal first
// characters mean equal bytes.
func Valid(t string) string {
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	return t
}

// Runes is the number of characters of s.
func Runes(s string) int { return utf8.RuneCountInString(s) }

// pathSalt is FNV-1a of a node's path when it is created: the seed of the order in which the
// node lists its holders (Node.Salt).
func pathSalt(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Insert adds text for replica rep at time at.
func (t *Tree) Insert(text string, rep int, at float64) { t.insert(text, nil, 0, rep, at) }

// InsertFrom adds text for replica rep at time at, text being the len(text) bytes at off of
// src: the new leaf's label stays there, read back when a walk compares with it (src must hold
// those bytes unchanged as long as the tree lives). A tree of pages (Unit) copies it as Insert
// does.
func (t *Tree) InsertFrom(text string, src io.ReaderAt, off int64, rep int, at float64) {
	if t.Unit > 0 {
		src = nil
	}
	t.insert(text, src, off, rep, at)
}

func (t *Tree) insert(text string, src io.ReaderAt, off int64, rep int, at float64) {
	if t.err != nil {
		return
	}
	n := &t.root
	i := 0
	for i < len(text) {
		k := t.kid(n, text[i:])
		if k == nil {
			leaf := &Node{depth: len(text), chars: t.Count(text[i:]), salt: pathSalt(text), last: rep, parent: n}
			if src != nil {
				leaf.src, leaf.off, leaf.size = src, off+int64(i), len(text)-i
				leaf.first, _ = utf8.DecodeRuneInString(text[i:])
			} else {
				leaf.lab = strings.Clone(text[i:])
			}
			n.kids = append(n.kids, leaf)
			t.nodes++
			t.hold(leaf, rep, at)
			return
		}
		shared, ok := t.shared(text[i:], k)
		if !ok {
			return
		}
		if shared < k.labelLen() {
			// Split k: its first shared bytes become a new node between n and k that every
			// holder of k holds, with k's times and creator (the upstream trees copy them).
			up := &Node{depth: i + shared, chars: t.Count(text[i : i+shared]),
				salt: k.salt, last: k.last, parent: n, kids: []*Node{k}, holders: slices.Clone(k.holders)}
			if k.src != nil {
				up.src, up.off, up.size, up.first = k.src, k.off, shared, k.first
				k.off += int64(shared)
				k.size -= shared
				k.first, _ = utf8.DecodeRune(t.buf[shared:])
			} else {
				up.lab = k.lab[:shared]
				k.lab = k.lab[shared:]
			}
			n.kids[slices.Index(n.kids, k)] = up
			k.chars -= up.chars
			k.parent = up
			t.nodes++
			k = up
		}
		if t.StampEnd {
			if k.Holder(rep) < 0 {
				t.hold(k, rep, 0)
			}
		} else {
			t.hold(k, rep, at)
		}
		n = k
		i += shared
	}
	if t.StampEnd {
		t.hold(n, rep, at)
	}
}

// Match returns the node the walk along text ends in (the root when not even the first
// character is in the tree) and the bytes of text matched. The node's holders hold the whole
// Match. A label that cannot be read back ends the walk (Err says why).
func (t *Tree) Match(text string) (*Node, int) {
	n := &t.root
	i := 0
	for i < len(text) {
		k := t.kid(n, text[i:])
		if k == nil {
			break
		}
		shared, ok := t.shared(text[i:], k)
		if !ok {
			break
		}
		n = k
		i += shared
		if shared < k.labelLen() {
			break
		}
	}
	return n, i
}

// isLeafOf reports whether rep holds n and none of n's children.
func (n *Node) isLeafOf(rep int) bool {
	if n.Holder(rep) < 0 {
		return false
	}
	for _, k := range n.kids {
		if k.Holder(rep) >= 0 {
			return false
		}
	}
	return true
}

// drop removes rep from n, and n from the tree when nobody holds it any more (it has no
// children then: a replica holding a child holds its parent).
func (t *Tree) drop(n *Node, rep int) {
	k := n.Holder(rep)
	if k < 0 {
		return
	}
	n.holders = slices.Delete(n.holders, k, k+1)
	t.size[rep] -= n.chars
	t.total -= n.chars
	if len(n.holders) == 0 && len(n.kids) == 0 {
		p := n.parent
		p.kids = slices.DeleteFunc(p.kids, func(c *Node) bool { return c == n })
		t.nodes--
	}
}

// walk calls f on every node but the root.
func (t *Tree) walk(f func(n *Node)) {
	stack := slices.Clone(t.root.kids)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f(n)
		stack = append(stack, n.kids...)
	}
}

// evictEntry is a leaf of one replica waiting for eviction.
type evictEntry struct {
	at  float64
	rep int
	n   *Node
}

// evictHeap orders leaves by last use, then replica, then path (upstream, leaves used at the
// same instant leave in the heap's order; here in the order of their text).
type evictHeap []evictEntry

func (h evictHeap) Len() int { return len(h) }
func (h evictHeap) Less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	if h[a].rep != h[b].rep {
		return h[a].rep < h[b].rep
	}
	return pathCompare(h[a].n, h[b].n) < 0
}
func (h evictHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *evictHeap) Push(x any)   { *h = append(*h, x.(evictEntry)) }
func (h *evictHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// EvictLRULeaves is SGLang's evict_tenant_by_size as the sgl-model-gateway fork has it: for
// every replica holding more than max characters, remove its least recently used leaf (a node
// it holds and none of whose children it holds), then the next, a parent joining the
// candidates when it becomes a leaf, until the replica holds max characters or fewer. A whole
// node goes at a time, so a replica may end below max.
func (t *Tree) EvictLRULeaves(max int) {
	t.evictLeaves(func(rep int) bool { return t.size[rep] > max })
}

// EvictTotal is smg's evict_tenant_by_size (kv_index string_tree.rs, "the budget is shared
// across all tenants"): while the units held by all replicas together are more than max,
// remove the least recently used leaf of any replica.
func (t *Tree) EvictTotal(max int) {
	if t.total > max {
		t.evictLeaves(func(int) bool { return t.total > max })
	}
}

// evictLeaves removes leaves, least recently used first, while over says the replica holding
// one is over its bound.
func (t *Tree) evictLeaves(over func(rep int) bool) {
	var h evictHeap
	t.walk(func(n *Node) {
		for _, ho := range n.holders {
			if over(ho.rep) && n.isLeafOf(ho.rep) {
				h = append(h, evictEntry{at: ho.at, rep: ho.rep, n: n})
			}
		}
	})
	heap.Init(&h)
	for h.Len() > 0 {
		e := heap.Pop(&h).(evictEntry)
		if !over(e.rep) {
			continue
		}
		p := e.n.parent
		t.drop(e.n, e.rep)
		if p != &t.root && p.isLeafOf(e.rep) {
			heap.Push(&h, evictEntry{at: p.holders[p.Holder(e.rep)].at, rep: e.rep, n: p})
		}
	}
}

// EvictOldest is Ray's evict_tenant_by_lru: remove rep's least recently used nodes, all those
// last used at the same instant together, until at least remove characters are gone (all of
// them when rep holds fewer). A node is never used later than its parent, so a group is whole
// subtrees.
func (t *Tree) EvictOldest(rep, remove int) int {
	remove = min(remove, t.SizeOf(rep))
	if remove <= 0 {
		return 0
	}
	type held struct {
		at float64
		n  *Node
	}
	var hs []held
	t.walk(func(n *Node) {
		if k := n.Holder(rep); k >= 0 {
			hs = append(hs, held{n.holders[k].at, n})
		}
	})
	// Oldest first; within an instant, deeper first, so that children go before their parent.
	slices.SortFunc(hs, func(a, b held) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(b.n.depth, a.n.depth)
	})
	removed := 0
	for g := 0; g < len(hs) && removed < remove; {
		at := hs[g].at
		for ; g < len(hs) && hs[g].at == at; g++ {
			removed += hs[g].n.chars
			t.drop(hs[g].n, rep)
		}
	}
	return removed
}

// Root is the tree's root: the node a match of no character ends in.
func (t *Tree) Root() *Node { return &t.root }

// Stamp sets when rep, which holds n, last used it.
func (n *Node) Stamp(rep int, at float64) {
	if k := n.Holder(rep); k >= 0 {
		n.holders[k].at = at
	}
}

// Tenant is SGLang's tenant of a match ending in n (tree.rs@8905cbd:570-597): n's last tenant
// (the replica whose insert created it) while that replica still holds n, else n's first holder
// in the order rank gives them (the lowest first; rank reads n's salt, fixed when n was
// created), which becomes its last tenant; -1 for a node no replica holds (the root).
func (n *Node) Tenant(rank func(salt uint64, rep int) uint64) int {
	if len(n.holders) == 0 {
		return -1
	}
	if n.Holder(n.last) >= 0 {
		return n.last
	}
	first := n.holders[0].rep
	for _, h := range n.holders[1:] {
		if rank(n.salt, h.rep) < rank(n.salt, first) {
			first = h.rep
		}
	}
	n.last = first
	return first
}

// Holders appends the replicas holding n to dst, in the order they came to hold it.
func (n *Node) Holders(dst []int) []int {
	for _, h := range n.holders {
		dst = append(dst, h.rep)
	}
	return dst
}

// Salt is n's salt: a hash of the text that created it, kept by the upper half of a split (what
// a node's map order is drawn from).
func (n *Node) Salt() uint64 { return n.salt }
