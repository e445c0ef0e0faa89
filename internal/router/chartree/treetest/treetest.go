// Package treetest is a second model of the character radix tree (chartree), written in terms of
// strings alone, for the tests of the tree and of the routers that keep one (SGLang, Ray).
package treetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"
)

// Brute is a second model of the radix tree, written from the description of tree.rs and
// prefix_tree.py in terms of strings alone: the tree is the set of its nodes' paths (the text from
// the root to a node's end), each with its holders and their times. A node's parent is the
// longest path in the set that is a proper prefix of it; its characters are its path's minus its
// Parent's. Every operation scans the whole set.
type Brute struct {
	Nodes map[string]*BruteNode
	// StampEnd: SGLang's insert stamps only the node the text ends in; a node before it gets 0
	// when the replica did not hold it and keeps its time when it did.
	StampEnd bool
	// BytesOf, when set, gives the text the emulation's tree holds for a path (a model that
	// writes each token page as one character): node salts and the order of ties come from it.
	BytesOf func(path string) string
}

func (b *Brute) bytes(p string) string {
	if b.BytesOf != nil {
		return b.BytesOf(p)
	}
	return p
}

type BruteNode struct {
	Holders map[int]float64
	Salt    uint64
}

func NewBrute() *Brute { return &Brute{Nodes: map[string]*BruteNode{}} }

// RunePrefix is the longest common prefix of a and b in whole characters, as bytes of a.
func RunePrefix(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	k := 0
	for k < len(ra) && k < len(rb) && ra[k] == rb[k] {
		k++
	}
	return len(string(ra[:k]))
}

func (b *Brute) Parent(p string) string {
	best := ""
	for q := range b.Nodes {
		if len(q) < len(p) && strings.HasPrefix(p, q) && len(q) > len(best) {
			best = q
		}
	}
	return best
}

func (b *Brute) Chars(p string) int {
	return utf8.RuneCountInString(p) - utf8.RuneCountInString(b.Parent(p))
}

func (b *Brute) Size(rep int) int {
	s := 0
	for p, n := range b.Nodes {
		if _, ok := n.Holders[rep]; ok {
			s += b.Chars(p)
		}
	}
	return s
}

func (b *Brute) Insert(text string, rep int, at float64) {
	// At most one node splits: the one the text leaves part-way. The part before the split is a
	// new node with the same holders and times (and order).
	var splits []string
	for p := range b.Nodes {
		if l := RunePrefix(text, p); len(b.Parent(p)) < l && l < len(p) {
			splits = append(splits, p)
		}
	}
	if len(splits) > 1 {
		panic(fmt.Sprintf("brute tree: %q splits %v", text, splits))
	}
	for _, p := range splits {
		n := b.Nodes[p]
		up := &BruteNode{Holders: map[int]float64{}, Salt: n.Salt}
		for r, t := range n.Holders {
			up.Holders[r] = t
		}
		b.Nodes[p[:RunePrefix(text, p)]] = up
	}
	if _, ok := b.Nodes[text]; !ok && text != "" {
		b.Nodes[text] = &BruteNode{Holders: map[int]float64{}, Salt: pathSalt(b.bytes(text))}
	}
	for p, n := range b.Nodes {
		if !strings.HasPrefix(text, p) {
			continue
		}
		if _, held := n.Holders[rep]; b.StampEnd && p != text {
			if !held {
				n.Holders[rep] = 0
			}
			continue
		}
		n.Holders[rep] = at
	}
}

// Match returns the path of the node a walk along text ends in ("" for the root) and the bytes
// matched: the match is the longest common prefix with any path, and the node the shortest path
// that holds all of it.
func (b *Brute) Match(text string) (string, int) {
	m := 0
	for p := range b.Nodes {
		m = max(m, RunePrefix(text, p))
	}
	if m == 0 {
		return "", 0
	}
	node := ""
	for p := range b.Nodes {
		if len(p) >= m && p[:m] == text[:m] && (node == "" || len(p) < len(node)) {
			node = p
		}
	}
	return node, m
}

func (b *Brute) Holders(path string) []int {
	if path == "" {
		return nil
	}
	var out []int
	for r := range b.Nodes[path].Holders {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (b *Brute) Reps() []int {
	seen := map[int]bool{}
	for _, n := range b.Nodes {
		for r := range n.Holders {
			seen[r] = true
		}
	}
	var out []int
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// EvictLRULeaves: for each replica, while it holds more than max, take away its leaf (a path it
// holds with no longer path it holds starting with it) used longest ago, ties to the smaller path.
func (b *Brute) EvictLRULeaves(max int) {
	for _, rep := range b.Reps() {
		for b.Size(rep) > max {
			leaf := ""
			for p, n := range b.Nodes {
				at, ok := n.Holders[rep]
				if !ok {
					continue
				}
				if !b.leafOf(p, rep) {
					continue
				}
				if lat := b.Nodes[leaf]; leaf == "" || at < lat.Holders[rep] || (at == lat.Holders[rep] && b.bytes(p) < b.bytes(leaf)) {
					leaf = p
				}
			}
			delete(b.Nodes[leaf].Holders, rep)
			if len(b.Nodes[leaf].Holders) == 0 {
				delete(b.Nodes, leaf)
			}
		}
	}
}

// leafOf reports whether rep holds no longer path starting with p.
func (b *Brute) leafOf(p string, rep int) bool {
	for q, m := range b.Nodes {
		if _, held := m.Holders[rep]; held && len(q) > len(p) && strings.HasPrefix(q, p) {
			return false
		}
	}
	return true
}

// EvictTotal: while all replicas together hold more than max, take away the leaf of any
// replica used longest ago, ties to the lower replica, then the smaller path.
func (b *Brute) EvictTotal(max int) {
	total := func() int {
		t := 0
		for _, r := range b.Reps() {
			t += b.Size(r)
		}
		return t
	}
	for total() > max {
		leaf, lrep, lat := "", -1, 0.0
		for p, n := range b.Nodes {
			for rep, at := range n.Holders {
				if !b.leafOf(p, rep) {
					continue
				}
				if lrep < 0 || at < lat || (at == lat && (rep < lrep || rep == lrep && b.bytes(p) < b.bytes(leaf))) {
					leaf, lrep, lat = p, rep, at
				}
			}
		}
		delete(b.Nodes[leaf].Holders, lrep)
		if len(b.Nodes[leaf].Holders) == 0 {
			delete(b.Nodes, leaf)
		}
	}
}

// EvictOldest: take away every path rep last used at its oldest instant, instant after instant,
// until at least remove characters (at most all it holds) are gone.
func (b *Brute) EvictOldest(rep, remove int) int {
	remove = min(remove, b.Size(rep))
	removed := 0
	for removed < remove {
		oldest := 0.0
		first := true
		for _, n := range b.Nodes {
			if at, ok := n.Holders[rep]; ok && (first || at < oldest) {
				oldest, first = at, false
			}
		}
		var group []string
		for p, n := range b.Nodes {
			if at, ok := n.Holders[rep]; ok && at == oldest {
				group = append(group, p)
			}
		}
		for _, p := range group {
			removed += b.Chars(p)
		}
		for _, p := range group {
			delete(b.Nodes[p].Holders, rep)
		}
		for p, n := range b.Nodes {
			if len(n.Holders) == 0 {
				delete(b.Nodes, p)
			}
		}
	}
	return removed
}

// RandomText draws texts that share prefixes often: one of a few stems (ASCII and multi-byte),
// then random characters from a small alphabet, or an earlier text extended (a next turn).
func RandomText(rng *rand.Rand, earlier []string) string {
	if len(earlier) > 0 && rng.IntN(4) == 0 {
		return earlier[rng.IntN(len(earlier))] + RandomChars(rng, 1+rng.IntN(6))
	}
	stems := []string{"", "sys:", "sys:you are", "é", "éè", "日本"}
	return stems[rng.IntN(len(stems))] + RandomChars(rng, rng.IntN(10))
}

func RandomChars(rng *rand.Rand, n int) string {
	alphabet := []rune("abé日")
	var sb strings.Builder
	for range n {
		sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

// pathSalt is FNV-1a of a path: the salt a node gets when it is created.
func pathSalt(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
