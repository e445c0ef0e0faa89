package chartree

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/router/chartree/treetest"
)

// treeShape lists a tree's nodes as "path|label|holders" in the order of their paths, holders
// as rep@time.
func treeShape(t *Tree) []string {
	nodes := map[string]string{}
	t.walk(func(n *Node) {
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

func sizes(t *Tree, reps int) []int {
	out := make([]int, reps)
	for i := range out {
		out[i] = t.SizeOf(i)
	}
	return out
}

// TestRadixInsertMatch works through inserts, splits and matches by hand.
func TestRadixInsertMatch(t *testing.T) {
	var tr Tree
	// "hello world" for replica 0 at 1: one leaf of 11 characters.
	tr.Insert("hello world", 0, 1)
	// "hello there" for 1 at 2 leaves the leaf after "hello ": split into "hello " (held by 0
	// at 1, now by 1 at 2) and "world" (0 at 1), plus a leaf "there" for 1. Replica 1 holds
	// 6 + 5 = 11 characters, replica 0 still 11.
	tr.Insert("hello there", 1, 2)
	// "help" for 0 at 3 leaves "hello " after "hel": split into "hel" (0 and 1, 0 now at 3)
	// and "lo " (0 at 1, 1 at 2), plus a leaf "p" for 0: replica 0 holds 12.
	tr.Insert("help", 0, 3)
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
		n, m := tr.Match(c.text)
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
	var tr Tree
	tr.Insert("café", 0, 1) // 4 characters, 5 bytes
	tr.Insert("cafè", 1, 2) // splits after "caf", not after the shared byte C3
	want := []string{"caf|caf|0@1,1@2", "cafè|è|1@2", "café|é|0@1"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{4, 4}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	n, m := tr.Match("cafêx") // ê is C3 AA: matches "caf" only
	if n.path() != "caf" || m != 3 {
		t.Errorf("match(cafêx) = %q, %d; want caf, 3", n.path(), m)
	}
	n, m = tr.Match("café crème")
	if n.path() != "café" || Runes("café crème"[:m]) != 4 {
		t.Errorf("match(café crème) = %q, %d bytes; want café, 4 characters", n.path(), m)
	}
}

// TestRadixEvictLRULeaves works SGLang's eviction through by hand.
func TestRadixEvictLRULeaves(t *testing.T) {
	var tr Tree
	tr.Insert("aaaa", 0, 1)     // leaf aaaa (4) for 0
	tr.Insert("aaaabbbb", 0, 2) // leaf bbbb under aaaa; 0 holds 8
	tr.Insert("aaaacc", 0, 3)   // leaf cc; 0 holds 10
	tr.Insert("zz", 1, 4)       // 1 holds 2
	// Replica 0's leaves: bbbb (at 2) and cc (at 3); aaaa (at 3) is not a leaf. To at most 5:
	// bbbb goes (10 -> 6), then cc (6 -> 4), and aaaa, a leaf now, stays since 4 <= 5.
	// Replica 1 holds 2 <= 5: untouched.
	tr.EvictLRULeaves(5)
	want := []string{"aaaa|aaaa|0@3", "zz|zz|1@4"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{4, 2}, sizes(&tr, 2)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	// A node held by two replicas loses one holder and stays for the other.
	tr.Insert("aaaa", 1, 5) // 1 holds aaaa too: 6
	tr.EvictLRULeaves(2)    // 0: aaaa (4 > 2) goes from 0; 1: aaaa at 5 is newer than zz at 4, zz goes (6 -> 4), then aaaa (4 -> 0)
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
	var tr Tree
	tr.Insert("abcdef", 0, 1) // abcdef at 1
	tr.Insert("abcxyz", 0, 2) // abc at 2, def at 1, xyz at 2
	tr.Insert("q", 0, 2)      // q at 2
	tr.Insert("abcdef", 1, 3) // 1 holds abc, def
	// Replica 0 holds 10. Remove at least 1: the oldest instant is 1 (def, 3 characters).
	if got := tr.EvictOldest(0, 1); got != 3 {
		t.Errorf("evictOldest(0, 1) = %d, want 3", got)
	}
	// Remove at least 2 more: instant 2 is abc, xyz and q (7) together, all of replica 0.
	if got := tr.EvictOldest(0, 2); got != 7 {
		t.Errorf("evictOldest(0, 2) = %d, want 7", got)
	}
	want := []string{"abc|abc|1@3", "abcdef|def|1@3"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	// More than a replica holds removes what it holds.
	if got := tr.EvictOldest(1, 100); got != 6 {
		t.Errorf("evictOldest(1, 100) = %d, want 6", got)
	}
	if tr.nodes != 0 || tr.SizeOf(1) != 0 {
		t.Errorf("after evicting everything: %d nodes, replica 1 holds %d", tr.nodes, tr.SizeOf(1))
	}
}

// textFile is a file of texts written one after another, as a request log's text file is.
type textFile struct{ b []byte }

// put appends text and returns where it starts.
func (f *textFile) put(text string) int64 {
	f.b = append(f.b, text...)
	return int64(len(f.b) - len(text))
}

func (f *textFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(f.b)) {
		return 0, fmt.Errorf("read of %d bytes at %d past the end (%d)", len(p), off, len(f.b))
	}
	return copy(p, f.b[off:]), nil
}

// badFile fails every read.
type badFile struct{}

func (badFile) ReadAt([]byte, int64) (int, error) { return 0, errors.New("disk gone") }

// TestInsertFromKeepsNoText: labels inserted from a file are not in memory, are read back for
// every walk, and split there as in memory: "hello" then "help" on file make "hel" with "lo"
// and "p" below it, each at its place in the file ("hello" at 0, "help" at 5, so "p" at 8).
// A label that cannot be read back stops the walk and the inserts, and Err says why.
func TestInsertFromKeepsNoText(t *testing.T) {
	var tr Tree
	f := &textFile{}
	tr.InsertFrom("hello", f, f.put("hello"), 0, 1)
	tr.InsertFrom("help", f, f.put("help"), 1, 2)
	want := []string{"hel|hel|0@1,1@2", "hello|lo|0@1", "help|p|1@2"}
	if d := cmp.Diff(want, treeShape(&tr)); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	tr.walk(func(n *Node) {
		if n.lab != "" || n.src == nil {
			t.Errorf("node %q keeps its label in memory", n.path())
		}
	})
	if p := tr.root.kids[0].kids[1]; p.off != 8 || p.size != 1 {
		t.Errorf(`"p" is %d bytes at %d, want 1 at 8`, p.size, p.off)
	}
	if n, m := tr.Match("helm"); n.path() != "hel" || m != 3 {
		t.Errorf("match(helm) = %q, %d; want hel, 3", n.path(), m)
	}
	if tr.Err() != nil {
		t.Errorf("Err() = %v", tr.Err())
	}

	var bad Tree
	bad.InsertFrom("abc", badFile{}, 0, 0, 1)
	if n, m := bad.Match("abd"); n != bad.Root() || m != 0 || bad.Err() == nil || !strings.Contains(bad.Err().Error(), "disk gone") {
		t.Errorf("match over an unreadable label = %q, %d, err %v; want the root, 0 and the read's error", n.path(), m, bad.Err())
	}
	bad.Insert("abx", 1, 2)
	if bad.nodes != 1 {
		t.Errorf("an insert after a failed read changed the tree: %d nodes", bad.nodes)
	}
}

// TestRadixAgreesWithBruteForce runs random inserts, matches and evictions through the tree and
// the brute-force model, as Ray uses the tree (every node on an insert's path stamped, both
// evictions) and as SGLang does (the last node stamped, a match stamping the node it ends in,
// leaves evicted), and compares everything each time.
func TestRadixAgreesWithBruteForce(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 99))
		var tr Tree
		b := treetest.NewBrute()
		tr.StampEnd, b.StampEnd = seed%2 == 1, seed%2 == 1
		file := &textFile{}
		var texts []string
		at := 0.0
		for step := range 120 {
			if rng.IntN(3) == 0 {
				at++ // otherwise the same instant as the step before
			}
			text := treetest.RandomText(rng, texts)
			texts = append(texts, text)
			rep := rng.IntN(3)
			switch op := rng.IntN(10); {
			case op < 6 && seed%4 >= 2: // the labels on file
				tr.InsertFrom(text, file, file.put(text), rep, at)
				b.Insert(text, rep, at)
			case op < 6:
				tr.Insert(text, rep, at)
				b.Insert(text, rep, at)
			case op < 8:
				n, m := tr.Match(text)
				bp, bm := b.Match(text)
				var hs []int
				for _, h := range n.holders {
					hs = append(hs, h.rep)
				}
				slices.Sort(hs)
				if n.path() != bp || m != bm || !slices.Equal(hs, b.Holders(bp)) {
					t.Fatalf("seed %d step %d: match(%q) = %q %d %v, brute force %q %d %v", seed, step, text, n.path(), m, hs, bp, bm, b.Holders(bp))
				}
				if len(hs) > 0 && tr.StampEnd { // SGLang's match stamps the node it returns
					n.holders[n.Holder(hs[0])].at = at
					b.Nodes[bp].Holders[hs[0]] = at
				}
			case op < 9:
				max := rng.IntN(20)
				tr.EvictLRULeaves(max)
				b.EvictLRULeaves(max)
			case tr.StampEnd: // SGLang evicts leaves only
			default:
				remove := rng.IntN(20)
				got, want := tr.EvictOldest(rep, remove), b.EvictOldest(rep, remove)
				if got != want {
					t.Fatalf("seed %d step %d: evictOldest(%d, %d) = %d, brute force %d", seed, step, rep, remove, got, want)
				}
			}
			bs := map[string]string{}
			for p, n := range b.Nodes {
				bs[p] = shapeLine(p, p[len(b.Parent(p)):], n.Holders)
			}
			if d := cmp.Diff(byPath(bs), treeShape(&tr)); d != "" {
				t.Fatalf("seed %d step %d (%q): tree (-brute force +tree):\n%s", seed, step, text, d)
			}
			for r := range 3 {
				if tr.SizeOf(r) != b.Size(r) {
					t.Fatalf("seed %d step %d: replica %d holds %d, brute force %d", seed, step, r, tr.SizeOf(r), b.Size(r))
				}
			}
			if tr.nodes != len(b.Nodes) {
				t.Fatalf("seed %d step %d: %d nodes, brute force %d", seed, step, tr.nodes, len(b.Nodes))
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
		var tr Tree
		b := treetest.NewBrute()
		file := &textFile{}
		ops := strings.Split(string(data), "\x00")
		if len(ops) > 40 {
			ops = ops[:40]
		}
		for step, op := range ops {
			if op == "" {
				continue
			}
			code, text := op[0], Valid(op[1:min(len(op), 40)])
			rep, at := int(code>>4)%3, float64(step/2)
			switch code % 4 {
			case 0:
				if code&8 != 0 {
					tr.InsertFrom(text, file, file.put(text), rep, at)
				} else {
					tr.Insert(text, rep, at)
				}
				b.Insert(text, rep, at)
			case 1:
				n, m := tr.Match(text)
				bp, bm := b.Match(text)
				if n.path() != bp || m != bm {
					t.Fatalf("step %d: match(%q) = %q %d, brute force %q %d", step, text, n.path(), m, bp, bm)
				}
			case 2:
				tr.EvictLRULeaves(len(text))
				b.EvictLRULeaves(len(text))
			default:
				if got, want := tr.EvictOldest(rep, len(text)), b.EvictOldest(rep, len(text)); got != want {
					t.Fatalf("step %d: evictOldest = %d, brute force %d", step, got, want)
				}
			}
			bs := map[string]string{}
			for p, n := range b.Nodes {
				bs[p] = shapeLine(p, p[len(b.Parent(p)):], n.Holders)
			}
			if d := cmp.Diff(byPath(bs), treeShape(&tr)); d != "" {
				t.Fatalf("step %d: tree (-brute force +tree):\n%s", step, d)
			}
			for r := range 3 {
				if tr.SizeOf(r) != b.Size(r) {
					t.Fatalf("step %d: replica %d holds %d, brute force %d", step, r, tr.SizeOf(r), b.Size(r))
				}
			}
		}
	})
}
