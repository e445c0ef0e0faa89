package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// treeShape lists a tree's nodes as "path|label|holders" in the order of their paths, holders
// as rep@time.
func treeShape(t *radixTree) []string {
	nodes := map[string]string{}
	t.walk(func(n *radixNode) {
		hs := map[int]float64{}
		for _, h := range n.holders {
			hs[h.rep] = h.at
		}
		nodes[n.path()] = shapeLine(n.path(), n.label(), hs)
	})
	return byPath(nodes)
}

func shapeLine(path, label string, holders map[int]float64) string {
	var hs []string
	for r, at := range holders {
		hs = append(hs, fmt.Sprintf("%d@%g", r, at))
	}
	slices.Sort(hs)
	return path + "|" + label + "|" + strings.Join(hs, ",")
}

func byPath(nodes map[string]string) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(nodes)) {
		out = append(out, nodes[p])
	}
	return out
}

func sizes(t *radixTree, reps int) []int {
	out := make([]int, reps)
	for i := range out {
		out[i] = t.sizeOf(i)
	}
	return out
}

// TestRadixInsertMatch works through inserts, splits and matches by hand.
func TestRadixInsertMatch(t *testing.T) {
	var tr radixTree
	// "hello world" for replica 0 at 1: one leaf of 11 characters.
	tr.insert("hello world", 0, 1)
	// "hello there" for 1 at 2 leaves the leaf after "hello ": split into "hello " (held by 0
	// at 1, now by 1 at 2) and "world" (0 at 1), plus a leaf "there" for 1. Replica 1 holds
	// 6 + 5 = 11 characters, replica 0 still 11.
	tr.insert("hello there", 1, 2)
	// "help" for 0 at 3 leaves "hello " after "hel": split into "hel" (0 and 1, 0 now at 3)
	// and "lo " (0 at 1, 1 at 2), plus a leaf "p" for 0: replica 0 holds 12.
	tr.insert("help", 0, 3)
	want := []string{
		"hel|hel|0@3,1@2",
		"hello |lo |0@1,1@2",
		"hello there|there|1@2",
		"hello world|world|0@1",
		"help|p|0@3",
	}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{12, 11}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	if tr.nodes != 5 {
		t.Errorf("nodes = %d, want 5", tr.nodes)
	}
	cases := []struct {
		text    string
		path    string // node the match ends in; "" for the root
		matched int
		holders []int
	}{
		{"hello wor", "hello world", 9, []int{0}},     // part-way into "world"
		{"hello", "hello ", 5, []int{0, 1}},           // part-way into "lo "
		{"hello there!", "hello there", 11, []int{1}}, // the whole leaf, then nothing
		{"help me", "help", 4, []int{0}},
		{"hex", "hel", 2, []int{0, 1}},
		{"xyz", "", 0, nil},
		{"", "", 0, nil},
	}
	for _, c := range cases {
		n, m := tr.match(c.text)
		var hs []int
		for _, h := range n.holders {
			hs = append(hs, h.rep)
		}
		slices.Sort(hs)
		if n.path() != c.path || m != c.matched || !slices.Equal(hs, c.holders) {
			t.Errorf("match(%q) = node %q, %d bytes, holders %v; want %q, %d, %v", c.text, n.path(), m, hs, c.path, c.matched, c.holders)
		}
	}
}

// TestRadixCharacters: sizes and splits count characters, not bytes. "é" is C3 A9 and "è" C3 A8:
// they share a byte but no character.
func TestRadixCharacters(t *testing.T) {
	var tr radixTree
	tr.insert("café", 0, 1) // 4 characters, 5 bytes
	tr.insert("cafè", 1, 2) // splits after "caf", not after the shared byte C3
	want := []string{"caf|caf|0@1,1@2", "cafè|è|1@2", "café|é|0@1"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{4, 4}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	n, m := tr.match("cafêx") // ê is C3 AA: matches "caf" only
	if n.path() != "caf" || m != 3 {
		t.Errorf("match(cafêx) = %q, %d; want caf, 3", n.path(), m)
	}
	n, m = tr.match("café crème")
	if n.path() != "café" || runeCount("café crème"[:m]) != 4 {
		t.Errorf("match(café crème) = %q, %d bytes; want café, 4 characters", n.path(), m)
	}
}

// TestRadixEvictLRULeaves works SGLang's eviction through by hand.
func TestRadixEvictLRULeaves(t *testing.T) {
	var tr radixTree
	tr.insert("aaaa", 0, 1)     // leaf aaaa (4) for 0
	tr.insert("aaaabbbb", 0, 2) // leaf bbbb under aaaa; 0 holds 8
	tr.insert("aaaacc", 0, 3)   // leaf cc; 0 holds 10
	tr.insert("zz", 1, 4)       // 1 holds 2
	// Replica 0's leaves: bbbb (at 2) and cc (at 3); aaaa (at 3) is not a leaf. To at most 5:
	// bbbb goes (10 -> 6), then cc (6 -> 4), and aaaa, a leaf now, stays since 4 <= 5.
	// Replica 1 holds 2 <= 5: untouched.
	tr.evictLRULeaves(5)
	want := []string{"aaaa|aaaa|0@3", "zz|zz|1@4"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{4, 2}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	// A node held by two replicas loses one holder and stays for the other.
	tr.insert("aaaa", 1, 5) // 1 holds aaaa too: 6
	tr.evictLRULeaves(2)    // 0: aaaa (4 > 2) goes from 0; 1: aaaa at 5 is newer than zz at 4, zz goes (6 -> 4), then aaaa (4 -> 0)
	if d := cmp.Diff([]string(nil), treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{0, 0}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	if tr.nodes != 0 {
		t.Errorf("nodes = %d, want 0", tr.nodes)
	}
}

// TestRadixEvictOldest works Ray's eviction through by hand: a whole instant goes at a time.
func TestRadixEvictOldest(t *testing.T) {
	var tr radixTree
	tr.insert("abcdef", 0, 1) // abcdef at 1
	tr.insert("abcxyz", 0, 2) // abc at 2, def at 1, xyz at 2
	tr.insert("q", 0, 2)      // q at 2
	tr.insert("abcdef", 1, 3) // 1 holds abc, def
	// Replica 0 holds 10. Remove at least 1: the oldest instant is 1 (def, 3 characters).
	if got := tr.evictOldest(0, 1); got != 3 {
		t.Errorf("evictOldest(0, 1) = %d, want 3", got)
	}
	// Remove at least 2 more: instant 2 is abc, xyz and q (7) together, all of replica 0.
	if got := tr.evictOldest(0, 2); got != 7 {
		t.Errorf("evictOldest(0, 2) = %d, want 7", got)
	}
	want := []string{"abc|abc|1@3", "abcdef|def|1@3"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	// More than a replica holds removes what it holds.
	if got := tr.evictOldest(1, 100); got != 6 {
		t.Errorf("evictOldest(1, 100) = %d, want 6", got)
	}
	if tr.nodes != 0 || tr.sizeOf(1) != 0 {
		t.Errorf("after evicting everything: %d nodes, replica 1 holds %d", tr.nodes, tr.sizeOf(1))
	}
}

// bruteTree is a second model of the radix tree, written from the description of tree.rs and
// prefix_tree.py in terms of strings alone: the tree is the set of its nodes' paths (the text from
// the root to a node's end), each with its holders and their times. A node's parent is the
// longest path in the set that is a proper prefix of it; its characters are its path's minus its
// parent's. Every operation scans the whole set.
type bruteTree struct {
	nodes map[string]*bruteNode
	// stampEnd: SGLang's insert stamps only the node the text ends in; a node before it gets 0
	// when the replica did not hold it and keeps its time when it did.
	stampEnd bool
	// bytesOf, when set, gives the text the emulation's tree holds for a path (a model that
	// writes each token page as one character): node salts and the order of ties come from it.
	bytesOf func(path string) string
}

func (b *bruteTree) bytes(p string) string {
	if b.bytesOf != nil {
		return b.bytesOf(p)
	}
	return p
}

type bruteNode struct {
	holders map[int]float64
	salt    uint64
}

func newBruteTree() *bruteTree { return &bruteTree{nodes: map[string]*bruteNode{}} }

// runePrefix is the longest common prefix of a and b in whole characters, as bytes of a.
func runePrefix(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	k := 0
	for k < len(ra) && k < len(rb) && ra[k] == rb[k] {
		k++
	}
	return len(string(ra[:k]))
}

func (b *bruteTree) parent(p string) string {
	best := ""
	for q := range b.nodes {
		if len(q) < len(p) && strings.HasPrefix(p, q) && len(q) > len(best) {
			best = q
		}
	}
	return best
}

func (b *bruteTree) chars(p string) int {
	return utf8.RuneCountInString(p) - utf8.RuneCountInString(b.parent(p))
}

func (b *bruteTree) size(rep int) int {
	s := 0
	for p, n := range b.nodes {
		if _, ok := n.holders[rep]; ok {
			s += b.chars(p)
		}
	}
	return s
}

func (b *bruteTree) insert(text string, rep int, at float64) {
	// At most one node splits: the one the text leaves part-way. The part before the split is a
	// new node with the same holders and times (and order).
	var splits []string
	for p := range b.nodes {
		if l := runePrefix(text, p); len(b.parent(p)) < l && l < len(p) {
			splits = append(splits, p)
		}
	}
	if len(splits) > 1 {
		panic(fmt.Sprintf("brute tree: %q splits %v", text, splits))
	}
	for _, p := range splits {
		n := b.nodes[p]
		up := &bruteNode{holders: map[int]float64{}, salt: n.salt}
		for r, t := range n.holders {
			up.holders[r] = t
		}
		b.nodes[p[:runePrefix(text, p)]] = up
	}
	if _, ok := b.nodes[text]; !ok && text != "" {
		b.nodes[text] = &bruteNode{holders: map[int]float64{}, salt: pathSalt(b.bytes(text))}
	}
	for p, n := range b.nodes {
		if !strings.HasPrefix(text, p) {
			continue
		}
		if _, held := n.holders[rep]; b.stampEnd && p != text {
			if !held {
				n.holders[rep] = 0
			}
			continue
		}
		n.holders[rep] = at
	}
}

// match returns the path of the node a walk along text ends in ("" for the root) and the bytes
// matched: the match is the longest common prefix with any path, and the node the shortest path
// that holds all of it.
func (b *bruteTree) match(text string) (string, int) {
	m := 0
	for p := range b.nodes {
		m = max(m, runePrefix(text, p))
	}
	if m == 0 {
		return "", 0
	}
	node := ""
	for p := range b.nodes {
		if len(p) >= m && p[:m] == text[:m] && (node == "" || len(p) < len(node)) {
			node = p
		}
	}
	return node, m
}

func (b *bruteTree) holders(path string) []int {
	if path == "" {
		return nil
	}
	var out []int
	for r := range b.nodes[path].holders {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (b *bruteTree) reps() []int {
	seen := map[int]bool{}
	for _, n := range b.nodes {
		for r := range n.holders {
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

// evictLRULeaves: for each replica, while it holds more than max, take away its leaf (a path it
// holds with no longer path it holds starting with it) used longest ago, ties to the smaller path.
func (b *bruteTree) evictLRULeaves(max int) {
	for _, rep := range b.reps() {
		for b.size(rep) > max {
			leaf := ""
			for p, n := range b.nodes {
				at, ok := n.holders[rep]
				if !ok {
					continue
				}
				if !b.leafOf(p, rep) {
					continue
				}
				if lat := b.nodes[leaf]; leaf == "" || at < lat.holders[rep] || (at == lat.holders[rep] && b.bytes(p) < b.bytes(leaf)) {
					leaf = p
				}
			}
			delete(b.nodes[leaf].holders, rep)
			if len(b.nodes[leaf].holders) == 0 {
				delete(b.nodes, leaf)
			}
		}
	}
}

// leafOf reports whether rep holds no longer path starting with p.
func (b *bruteTree) leafOf(p string, rep int) bool {
	for q, m := range b.nodes {
		if _, held := m.holders[rep]; held && len(q) > len(p) && strings.HasPrefix(q, p) {
			return false
		}
	}
	return true
}

// evictTotal: while all replicas together hold more than max, take away the leaf of any
// replica used longest ago, ties to the lower replica, then the smaller path.
func (b *bruteTree) evictTotal(max int) {
	total := func() int {
		t := 0
		for _, r := range b.reps() {
			t += b.size(r)
		}
		return t
	}
	for total() > max {
		leaf, lrep, lat := "", -1, 0.0
		for p, n := range b.nodes {
			for rep, at := range n.holders {
				if !b.leafOf(p, rep) {
					continue
				}
				if lrep < 0 || at < lat || (at == lat && (rep < lrep || rep == lrep && b.bytes(p) < b.bytes(leaf))) {
					leaf, lrep, lat = p, rep, at
				}
			}
		}
		delete(b.nodes[leaf].holders, lrep)
		if len(b.nodes[leaf].holders) == 0 {
			delete(b.nodes, leaf)
		}
	}
}

// evictOldest: take away every path rep last used at its oldest instant, instant after instant,
// until at least remove characters (at most all it holds) are gone.
func (b *bruteTree) evictOldest(rep, remove int) int {
	remove = min(remove, b.size(rep))
	removed := 0
	for removed < remove {
		oldest := 0.0
		first := true
		for _, n := range b.nodes {
			if at, ok := n.holders[rep]; ok && (first || at < oldest) {
				oldest, first = at, false
			}
		}
		var group []string
		for p, n := range b.nodes {
			if at, ok := n.holders[rep]; ok && at == oldest {
				group = append(group, p)
			}
		}
		for _, p := range group {
			removed += b.chars(p)
		}
		for _, p := range group {
			delete(b.nodes[p].holders, rep)
		}
		for p, n := range b.nodes {
			if len(n.holders) == 0 {
				delete(b.nodes, p)
			}
		}
	}
	return removed
}

// randomText draws texts that share prefixes often: one of a few stems (ASCII and multi-byte),
// then random characters from a small alphabet, or an earlier text extended (a next turn).
func randomText(rng *rand.Rand, earlier []string) string {
	if len(earlier) > 0 && rng.IntN(4) == 0 {
		return earlier[rng.IntN(len(earlier))] + randomChars(rng, 1+rng.IntN(6))
	}
	stems := []string{"", "sys:", "sys:you are", "é", "éè", "日本"}
	return stems[rng.IntN(len(stems))] + randomChars(rng, rng.IntN(10))
}

func randomChars(rng *rand.Rand, n int) string {
	alphabet := []rune("abé日")
	var sb strings.Builder
	for range n {
		sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

// TestRadixAgreesWithBruteForce runs random inserts, matches and evictions through the tree and
// the brute-force model, as Ray uses the tree (every node on an insert's path stamped, both
// evictions) and as SGLang does (the last node stamped, a match stamping the node it ends in,
// leaves evicted), and compares everything each time.
func TestRadixAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 99))
		var tr radixTree
		b := newBruteTree()
		tr.stampEnd, b.stampEnd = seed%2 == 1, seed%2 == 1
		var texts []string
		at := 0.0
		for step := range 120 {
			if rng.IntN(3) == 0 {
				at++ // otherwise the same instant as the step before
			}
			text := randomText(rng, texts)
			texts = append(texts, text)
			rep := rng.IntN(3)
			switch op := rng.IntN(10); {
			case op < 6:
				tr.insert(text, rep, at)
				b.insert(text, rep, at)
			case op < 8:
				n, m := tr.match(text)
				bp, bm := b.match(text)
				var hs []int
				for _, h := range n.holders {
					hs = append(hs, h.rep)
				}
				slices.Sort(hs)
				if n.path() != bp || m != bm || !slices.Equal(hs, b.holders(bp)) {
					t.Fatalf("seed %d step %d: match(%q) = %q %d %v, brute force %q %d %v", seed, step, text, n.path(), m, hs, bp, bm, b.holders(bp))
				}
				if len(hs) > 0 && tr.stampEnd { // SGLang's match stamps the node it returns
					n.holders[n.holder(hs[0])].at = at
					b.nodes[bp].holders[hs[0]] = at
				}
			case op < 9:
				max := rng.IntN(20)
				tr.evictLRULeaves(max)
				b.evictLRULeaves(max)
			case tr.stampEnd: // SGLang evicts leaves only
			default:
				remove := rng.IntN(20)
				got, want := tr.evictOldest(rep, remove), b.evictOldest(rep, remove)
				if got != want {
					t.Fatalf("seed %d step %d: evictOldest(%d, %d) = %d, brute force %d", seed, step, rep, remove, got, want)
				}
			}
			bs := map[string]string{}
			for p, n := range b.nodes {
				bs[p] = shapeLine(p, p[len(b.parent(p)):], n.holders)
			}
			if d := cmp.Diff(byPath(bs), treeShape(&tr)); d != "" {
				t.Fatalf("seed %d step %d (%q): tree (-brute force +tree):\n%s", seed, step, text, d)
			}
			for r := range 3 {
				if tr.sizeOf(r) != b.size(r) {
					t.Fatalf("seed %d step %d: replica %d holds %d, brute force %d", seed, step, r, tr.sizeOf(r), b.size(r))
				}
			}
			if tr.nodes != len(b.nodes) {
				t.Fatalf("seed %d step %d: %d nodes, brute force %d", seed, step, tr.nodes, len(b.nodes))
			}
		}
	}
}

// FuzzRadixTree runs operations read from arbitrary bytes (texts that need not be UTF-8, made
// valid as the routers' string types make them) through the tree and the brute-force model: no
// hang, no panic, and the same shape, matches and sizes.
func FuzzRadixTree(f *testing.F) {
	f.Add([]byte("\x00hello world\x01hello there\x02help\x03\x04"))
	f.Add([]byte("\x00caf\xc3\xa9\x01caf\xc3\xa8\x00caf\xff\xfe\x02caf\xc3"))
	f.Add([]byte("\x00\xef\xbf\xbdx\x01\xffy\x02\xef\xbf\xbd\x05\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tr radixTree
		b := newBruteTree()
		ops := strings.Split(string(data), "\x00")
		if len(ops) > 40 {
			ops = ops[:40]
		}
		for step, op := range ops {
			if op == "" {
				continue
			}
			code, text := op[0], validText(op[1:min(len(op), 40)])
			rep, at := int(code>>4)%3, float64(step/2)
			switch code % 4 {
			case 0:
				tr.insert(text, rep, at)
				b.insert(text, rep, at)
			case 1:
				n, m := tr.match(text)
				bp, bm := b.match(text)
				if n.path() != bp || m != bm {
					t.Fatalf("step %d: match(%q) = %q %d, brute force %q %d", step, text, n.path(), m, bp, bm)
				}
			case 2:
				tr.evictLRULeaves(len(text))
				b.evictLRULeaves(len(text))
			default:
				if got, want := tr.evictOldest(rep, len(text)), b.evictOldest(rep, len(text)); got != want {
					t.Fatalf("step %d: evictOldest = %d, brute force %d", step, got, want)
				}
			}
			bs := map[string]string{}
			for p, n := range b.nodes {
				bs[p] = shapeLine(p, p[len(b.parent(p)):], n.holders)
			}
			if d := cmp.Diff(byPath(bs), treeShape(&tr)); d != "" {
				t.Fatalf("step %d: tree (-brute force +tree):\n%s", step, d)
			}
			for r := range 3 {
				if tr.sizeOf(r) != b.size(r) {
					t.Fatalf("step %d: replica %d holds %d, brute force %d", step, r, tr.sizeOf(r), b.size(r))
				}
			}
		}
	})
}
