package sglang

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvcheck/kvcheck/internal/router/chartree/treetest"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// smgSetup is a fleet and the cache_aware settings its emulation runs with.
type smgSetup struct {
	sim.Config
	s Settings
}

// smgConfig is simtest.Config with smg's cache_aware set by f over the CLI's defaults.
func smgConfig(replicas int, _ uint64, f func(*Settings)) smgSetup {
	s := CLIDefaults()
	f(&s)
	return smgSetup{simtest.Config(replicas), s}
}

func seeded(c smgSetup, seed uint64) smgSetup {
	c.Seed = seed
	return c
}

// runTiny replays tr under the emulation named (sglang-cache-aware) with c's settings.
func runTiny(t *testing.T, tr *sim.Trace, c smgSetup, name string) simtest.Outcome {
	t.Helper()
	info := cacheAware(c.s)
	if info.Name != name {
		t.Fatalf("no emulation %s", name)
	}
	return simtest.Routes(t, tr, c.Config, info)
}

// The smg tests below work routes out by hand from smg@04def28 model_gateway/src/policies/
// cache_aware.rs (CA) and least_load.rs (LL). simtest.Config: prefill 10 ms a token, decode 1 s a
// token, so a request with output 0 leaves 0.1 s after it starts and one with output 100 stays
// 100 s. Texts are one token a character, blocks of 4. Where a route is a draw among equal
// expected waits (LL's reservoir tie-break), the test names the replica drawn (A, X) from the
// routes and checks what follows from it, over several seeds so that both draws happen.

// TestSMGAffinityAmongHolders: a match goes to the least expected wait among the holders of the
// node it ends in, not to the node's creator, and a holder loaded above the mean by both
// thresholds is passed over (CA select_matched_candidate, select_final_from_affinity,
// candidate_requires_spill). Two replicas, HTTP, threshold 0.5, spill gate abs 0 and rel 1.5.
func TestSMGAffinityAmongHolders(t *testing.T) {
	tr := simtest.CharTrace(
		// r0 at 0, in flight 100 s: empty tree; the poll at 0 reports both idle: a draw, A.
		// A is credited 1,024 tokens (HTTP's mean prefill).
		simtest.CharReq(0, 100, "abcdefgh"),
		// r1 at 1: matches all 8 of A's node: rate 1 > 0.5, candidates {A}. Loads A 1, B 0,
		// mean 0.5: A's 1 > 0.5 x 1.5 and 1 > 0.5 + 0: A spills; B (0) does not: B. The
		// node is now held by A and B.
		simtest.CharReq(1, 0, "abcdefgh"),
		// r2 at 2: 7 of 8 on the node (A, B); A still spills: B. The node splits: abcdefg
		// and h, both held by A and B.
		simtest.CharReq(2, 0, "abcdefgX"),
		// r3 at 200: r0 has left; the poll at 200 reports both idle and resets the credits.
		// Loads 0, 0: no spill. All 8 match node h, holders A and B: equal waits, a draw, X.
		simtest.CharReq(200, 0, "abcdefgh"),
		// r4 at 201: the same holders; X was credited 1,024 tokens since the poll (0.512 s at
		// 2,000 tokens/s), the other 0: the other. (The fork sends r3 and r4 both to the
		// node's creator, A.)
		simtest.CharReq(201, 0, "abcdefgh"),
	)
	firsts, draws := map[int]bool{}, map[int]bool{}
	for seed := range uint64(12) {
		c := seeded(smgConfig(2, seed, func(s *Settings) {
			s.CacheThreshold, s.BalanceAbsThreshold, s.BalanceRelThreshold = 0.5, 0, 1.5
		}), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		a, x := r[0], r[3]
		if r[1] != 1-a || r[2] != 1-a || r[4] != 1-x {
			t.Fatalf("seed %d: routes %v, want [A B B X not-X] with A=%d", seed, r, a)
		}
		firsts[a], draws[x] = true, true
	}
	if len(firsts) != 2 || len(draws) != 2 {
		t.Errorf("draws over 12 seeds: first %v, r3 %v: both replicas should come up", firsts, draws)
	}
	// The reasons name the branches: r0 no candidate; r1 passed over A, the only holder; r2 went
	// to B, a holder since r1, A passed over; r3 and r4 holders too.
	c0 := smgConfig(2, 0, func(s *Settings) {
		s.CacheThreshold, s.BalanceAbsThreshold, s.BalanceRelThreshold = 0.5, 0, 1.5
	})
	_, why := simtest.Run(t, tr, c0.Config, cacheAware(c0.s))
	if want := []string{"expected-wait", "spill", "prefix-match", "prefix-match", "prefix-match"}; !slices.Equal(why, want) {
		t.Errorf("reasons %q, want %q", why, want)
	}
	// The fork with the same settings: r1 and r2 go to B as imbalanced (1 - 0 > 0 and
	// 1 > 0 x 1.5), r3 and r4 to node h's creator, A (created by r0, kept through the split).
	c := smgConfig(2, 1, func(s *Settings) {
		s.Gateway, s.CacheThreshold, s.BalanceAbsThreshold, s.BalanceRelThreshold = Fork, 0.5, 0, 1.5
	})
	if got := runTiny(t, tr, c, "sglang-cache-aware").Routes; !slices.Equal(got, []int{0, 1, 1, 0, 0}) {
		t.Errorf("fork: routes %v, want [0 1 1 0 0]", got)
	}
}

// TestSMGExpectedWaitReadsQueuedTokens: the expected wait weighs the tokens waiting at a
// replica, not its requests (LL score: (queued tokens + tokens sent since the poll) /
// throughput + 0.15 k / (1 - k)). Two replicas running one request at a time.
func TestSMGExpectedWaitReadsQueuedTokens(t *testing.T) {
	tr := simtest.CharTrace(
		// r0 at 0: a draw, A (credited 1,024). It runs 100 s.
		simtest.CharReq(0, 100, "aaaaaaaa"),
		// r1 at 0.5: A 0.512 s, B 0: B (1,024). It runs 100 s.
		simtest.CharReq(0.5, 100, "bbbbbbbb"),
		// r2 at 1: both 0.512: a draw, X (now 1.024). It waits behind X's running request.
		simtest.CharReq(1, 100, "cccccccc"),
		// r3 at 1.5, 12 tokens: X 1.024, the other, Y, 0.512: Y. It waits behind Y's.
		simtest.CharReq(1.5, 0, "dddddddddddd"),
		// r4 at 10, the second poll: each replica has one request waiting and two in flight.
		// X waits on 8 uncached tokens, Y on 12; each decodes one request at 1 token/s (the
		// report's throughput) and holds the 2 blocks of its running request: k = 2/64,
		// 0.15 x k/(1-k) = 0.0048. X: 8/1 + 0.0048, Y: 12/1 + 0.0048: X, which counts of
		// waiting or in-flight requests would not tell apart.
		simtest.CharReq(10, 0, "eeeeeeee"),
	)
	draws := map[int]bool{}
	for seed := range uint64(12) {
		c := seeded(smgConfig(2, seed, func(*Settings) {}), seed)
		c.Model.MaxRunning = 1
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		a, x := r[0], r[2]
		if r[1] != 1-a || r[3] != 1-x || r[4] != x {
			t.Fatalf("seed %d: routes %v, want [A B X Y X] with A=%d, X=%d", seed, r, a, x)
		}
		draws[x] = true
	}
	if len(draws) != 2 {
		t.Errorf("r2's draw over 12 seeds: %v, want both replicas", draws)
	}
}

// TestSMGHashIndex: with --cache-index hash, gRPC requests sharing their first 8 tokens (the
// boundary) go to the replica last sent that head while it is live (180 s), and the head is
// forgotten after (CA select_worker_hash, live_holder_candidates, record_placement); HTTP
// requests carry no tokens and always take the expected wait.
func TestSMGHashIndex(t *testing.T) {
	tr := simtest.CharTrace(
		// r0 at 0: no holder for head "abcdefgh": expected wait, a draw, A; recorded at 0.
		simtest.CharReq(0, 0, "abcdefghXY"),
		// r1 at 1: the same head, A live: A (credited r0's and r1's 10 tokens each).
		simtest.CharReq(1, 0, "abcdefghZW"),
		// r2 at 2: 7 tokens, no boundary applies: expected wait: A has 20 tokens since the
		// poll, B none: B, not recorded.
		simtest.CharReq(2, 0, "abcdefg"),
		// r3 at 200: A's holding dates from 1, 199 s ago, more than 180: pruned, no holder.
		// The poll at 200 reset the credits: a draw, X, recorded.
		simtest.CharReq(200, 0, "abcdefghQQ"),
		// r4 at 201: X live: X.
		simtest.CharReq(201, 0, "abcdefghRR"),
	)
	for seed := range uint64(8) {
		c := seeded(smgConfig(2, seed, func(s *Settings) {
			s.Connection, s.CacheIndex, s.CacheBoundaries, s.BlockSize = GRPC, "hash", []int{8}, simtest.Block
		}), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a, x := r[0], r[3]; r[1] != a || r[2] != 1-a || r[4] != x {
			t.Fatalf("seed %d: gRPC routes %v, want [A A B X X]", seed, r)
		}
		// HTTP: every request by expected wait alone, credits of 1,024 each: r1 goes to the
		// replica r0 did not, r2 to either (equal), r4 to the one r3 did not.
		c = seeded(smgConfig(2, seed, func(s *Settings) {
			s.CacheIndex, s.CacheBoundaries = "hash", []int{8}
		}), seed)
		r = runTiny(t, tr, c, "sglang-cache-aware").Routes
		if r[1] != 1-r[0] || r[4] != 1-r[3] {
			t.Fatalf("seed %d: HTTP routes %v, want r1 away from r0 and r4 away from r3", seed, r)
		}
	}
}

// TestSMGTokenTree: over gRPC the tree holds whole token pages (BlockSize 4 here) and the rate
// is the tokens of whole pages matched over the request's tokens (CA select_worker_with_tokens).
func TestSMGTokenTree(t *testing.T) {
	tr := simtest.CharTrace(
		// r0: a draw, A.
		simtest.CharReq(0, 0, "abcdefgh"),
		// r1: its pages are "abcd" and "efgQ": one page matched, 4 of 8 tokens = 0.5, not
		// above 0.5: expected wait: A has 8 tokens since the poll, B none: B. (Over HTTP 7 of
		// 8 characters match: A.)
		simtest.CharReq(1, 0, "abcdefgQ"),
		// r2: 9 tokens, pages "abcd", "efgh" (the 9th token is no page): both match, 8/9,
		// held by A: A.
		simtest.CharReq(2, 0, "abcdefghZ"),
	)
	for seed := range uint64(6) {
		c := seeded(smgConfig(2, seed, func(s *Settings) {
			s.Connection, s.BlockSize, s.CacheThreshold = GRPC, simtest.Block, 0.5
		}), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a := r[0]; r[1] != 1-a || r[2] != a {
			t.Fatalf("seed %d: gRPC routes %v, want [A B A]", seed, r)
		}
		c = seeded(smgConfig(2, seed, func(s *Settings) { s.CacheThreshold = 0.5 }), seed)
		r = runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a := r[0]; r[1] != a || r[2] != a {
			t.Fatalf("seed %d: HTTP routes %v, want [A A A]", seed, r)
		}
	}
}

// TestSMGEvents: with KV events the candidates are the replicas holding a run of the
// request's whole blocks from block 0, scored by its length (CA select_worker_event_driven,
// overlap_candidates); before any replica has reported a block the token tree routes.
func TestSMGEvents(t *testing.T) {
	tr := simtest.CharTrace(
		// r0 at 0: nothing reported yet: the token tree, empty: a draw, A, which caches
		// blocks "abcd" and "efgh" as it prefills.
		simtest.CharReq(0, 0, "abcdefgh"),
		// r1 at 1: A holds both of its whole blocks, B none: candidates {A: 2}: A.
		simtest.CharReq(1, 0, "abcdefghXY"),
		// r2 at 2: A holds "abcd": A.
		simtest.CharReq(2, 0, "abcdQQQQ"),
		// r3 at 3: nobody holds "zzzz": expected wait: A has 8 + 10 + 8 tokens since the
		// poll, B none: B.
		simtest.CharReq(3, 0, "zzzzzzzz"),
	)
	for seed := range uint64(6) {
		c := seeded(smgConfig(2, seed, func(s *Settings) {
			s.Connection, s.BlockSize = GRPCEvents, simtest.Block
		}), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a := r[0]; r[1] != a || r[2] != a || r[3] != 1-a {
			t.Fatalf("seed %d: routes %v, want [A A A B]", seed, r)
		}
	}
}

// TestSMGNamespaces: a request's cache partition (cache_salt here) heads its key, so requests
// of different partitions never match each other, and the marker (18 characters) counts in
// neither the match nor the text (cache_namespace.rs; CA select_worker_with_text). HTTP,
// threshold 0.5.
func TestSMGNamespaces(t *testing.T) {
	salted := func(at float64, text, salt string) sim.Request {
		r := simtest.CharReq(at, 0, text)
		r.View.Partition = salt
		return r
	}
	tr := simtest.CharTrace(
		// r0, partition t1: a draw, A.
		salted(0, "abcdefgh", "2:t1--"),
		// r1, partition t2: its marker shares at most its opening "\x01" and a few hex
		// digits with t1's, fewer than its 18 characters: 0 of the text matched: expected
		// wait: A credited 1,024, B none: B.
		salted(1, "abcdefgh", "2:t2--"),
		// r2, partition t1 again: marker and text match: 8/8: A.
		salted(2, "abcdefgh", "2:t1--"),
		// r3, no partition: nothing starts with "a" at the root: expected wait: A 2,048, B
		// 1,024: B.
		simtest.CharReq(3, 0, "abcdefgh"),
	)
	for seed := range uint64(6) {
		c := seeded(smgConfig(2, seed, func(s *Settings) { s.CacheThreshold = 0.5 }), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a := r[0]; r[1] != 1-a || r[2] != a || r[3] != 1-a {
			t.Fatalf("seed %d: routes %v, want [A B A B]", seed, r)
		}
	}
}

// TestSMGTreeWideEviction: smg bounds the whole tree, across replicas (kv_index string_tree.rs
// evict_tenant_by_size: "the budget is shared across all tenants"); the fork bounds each
// replica's part. Two replicas, HTTP, threshold 0.5, a tree of 10 characters, eviction every
// 5 s. Epochs: two workers registered took 0 and 1; each request's match and insert one each.
func TestSMGTreeWideEviction(t *testing.T) {
	tr := simtest.CharTrace(
		// r0 at 0 (match 2, insert 3): a draw, A; leaf aaaaaaaa {A@3}.
		simtest.CharReq(0, 0, "aaaaaaaa"),
		// r0b at 0.5 (4, 5): 8/9 on A's node: A; leaf Q {A@5} below it.
		simtest.CharReq(0.5, 0, "aaaaaaaaQ"),
		// r1 at 1 (6, 7): no match: A credited 2,048, B none: B; leaf bbbbbbbb {B@7}.
		simtest.CharReq(1, 0, "bbbbbbbb"),
		// At 6 the eviction due at 5 runs first: 8 + 1 + 8 = 17 characters > 10. Leaves by
		// epoch: Q (A@5) goes (16), aaaaaaaa becomes A's leaf at 3 and goes (8 <= 10). r2:
		// no match: A 2,048, B 1,024: B.
		simtest.CharReq(6, 0, "aaaaaaaa"),
	)
	for seed := range uint64(6) {
		c := seeded(smgConfig(2, seed, func(s *Settings) {
			s.CacheThreshold, s.MaxTreeSize, s.EvictionIntervalSecs = 0.5, 10, 5
		}), seed)
		r := runTiny(t, tr, c, "sglang-cache-aware").Routes
		if a := r[0]; r[1] != a || r[2] != 1-a || r[3] != 1-a {
			t.Fatalf("seed %d: smg routes %v, want [A A B B]", seed, r)
		}
	}
	// The fork: r0 to the first of the idle replicas, 0; r0b 8/9 on its node: 0; r1 no match,
	// loads 0 and 0 (it counts requests in flight, not tokens sent): 0, which then holds 17
	// characters > 10 on its own: at 6 Q (epoch 5) goes, then aaaaaaaa (3), a leaf once Q
	// is gone, leaving bbbbbbbb's 8. r2: no match, the first of the idle replicas: 0. All on
	// one replica, where smg spread them.
	c := smgConfig(2, 1, func(s *Settings) {
		s.Gateway, s.CacheThreshold, s.MaxTreeSize, s.EvictionIntervalSecs = Fork, 0.5, 10, 5
	})
	if got := runTiny(t, tr, c, "sglang-cache-aware").Routes; !slices.Equal(got, []int{0, 0, 0, 0}) {
		t.Errorf("fork: routes %v, want [0 0 0 0]", got)
	}
}

// bruteSMG is a second model of smg's cache_aware, written from cache_aware.rs, least_load.rs
// and cache_namespace.rs over the brute-force tree (paths, no nodes), not from sglang_smg.go.
// Token pages are written one character each (a rune interned per page key), and the tree's
// salts and tie order read the page keys' bytes, as the emulation's tree holds them. Loads are
// read from the fleet as kvcheck stands in for the workers' reports: at the first request at or
// after each multiple of the poll interval, every replica's waiting requests, their tokens not
// in its cache now, its blocks in flight over its capacity, and its decoding requests per
// second of decode time.
type bruteSMG struct {
	s       Settings
	seed    uint64
	traceBS int
	rng     *rand.Rand
	tree    *treetest.Brute
	creator map[string]int
	epoch   float64
	workers int
	evicted float64 // multiples of the eviction interval run
	polls   float64 // multiples of the poll interval read
	polled  bool
	report  []bruteReport
	sent    map[int]int64
	pages   map[uint64]rune
	keys    map[rune]uint64
	place   map[[2]uint64][]smgHolder
	cached  bool
}

type bruteReport struct {
	waiting    int
	uncached   int64
	usage      float64
	throughput float64
}

func newBruteSMG(s Settings, seed uint64, traceBS int) *bruteSMG {
	m := &bruteSMG{s: s, seed: seed, traceBS: traceBS, rng: rand.New(rand.NewPCG(seed, 0x736d67)),
		creator: map[string]int{}, sent: map[int]int64{}, pages: map[uint64]rune{}, keys: map[rune]uint64{},
		place: map[[2]uint64][]smgHolder{}}
	m.tree = &treetest.Brute{Nodes: map[string]*treetest.BruteNode{}, StampEnd: true}
	if m.grpc() {
		m.tree.BytesOf = func(path string) string {
			var b []byte
			for _, r := range path {
				b = binary.LittleEndian.AppendUint64(b, m.keys[r])
			}
			return string(b)
		}
	}
	return m
}

func (m *bruteSMG) grpc() bool {
	return m.s.Connection == GRPC || m.s.Connection == GRPCEvents
}

// Route implements sim.Policy, with no reason.
func (m *bruteSMG) Route(f *sim.Pool, j *sim.Job) (int, string) { return m.route(f, j), "" }

func (m *bruteSMG) route(f *sim.Pool, j *sim.Job) int {
	now := j.Arrival()
	for m.workers < f.Size() {
		m.workers++
		if m.s.CacheIndex != "hash" {
			m.epoch++
		}
	}
	if k := math.Floor(now / m.s.EvictionIntervalSecs); k > m.evicted {
		m.evicted = k
		if m.s.CacheIndex != "hash" {
			m.tree.EvictTotal(m.s.MaxTreeSize)
		}
	}
	if k := math.Floor(now / m.s.LoadIntervalSecs); !m.polled || k > m.polls {
		m.polled, m.polls = true, k
		m.read(f)
	}
	loads := make([]int, f.Size())
	sum := 0
	for i := range loads {
		loads[i] = f.InFlight(i)
		sum += loads[i]
	}
	avg := float64(sum) / float64(len(loads))
	all := make([]int, f.Size())
	for i := range all {
		all[i] = i
	}
	if m.s.CacheIndex == "hash" {
		return m.hash(f, j, avg, loads, all)
	}
	if m.kvPressure(f.Size()) {
		rep := m.wait(f, j, all)
		key, _ := m.key(j)
		m.insert(key, rep)
		return rep
	}
	if m.s.Connection == GRPCEvents {
		for i := range f.Size() {
			m.cached = m.cached || f.Cached(i) > 0
		}
	}
	if m.s.Connection == GRPCEvents && m.cached {
		blocks := min(j.Request().InputTokens/f.BlockSize(), len(j.IDs()))
		var reps []int
		var scores []float64
		for i := range f.Size() {
			if run := f.CachedRun(i, j.IDs()[:blocks]); run > 0 {
				reps, scores = append(reps, i), append(scores, float64(run))
			}
		}
		if len(reps) == 0 {
			return m.wait(f, j, all)
		}
		m.decay(reps, scores, f.BlockSize(), max(blocks, 1))
		return m.gate(f, j, avg, loads, all, m.group(reps, scores))
	}
	key, marker := m.key(j)
	node, mb := m.tree.Match(key)
	e := m.epoch
	m.epoch++
	matched := utf8.RuneCountInString(key[:mb])
	var holders []int
	if node != "" {
		holders = m.tree.Holders(node)
		// The match names a tenant (the node's creator while it holds the node, else its
		// first holder, which becomes its creator) and stamps it one match in 8.
		tenant, ok := m.creator[node]
		if !ok || !slices.Contains(holders, tenant) {
			tenant = m.ordered(node, holders)[0]
			m.creator[node] = tenant
		}
		if int64(e)%8 == 0 {
			m.tree.Nodes[node].Holders[tenant] = e
		}
	}
	input := utf8.RuneCountInString(key)
	if m.grpc() {
		matched, input, marker = matched*m.s.BlockSize, j.Request().InputTokens+marker*m.s.BlockSize, marker*m.s.BlockSize
	}
	matched, input = max(matched-marker, 0), max(input-marker, 0)
	rate := float32(0)
	if input > 0 {
		rate = float32(matched) / float32(input)
	}
	var rep int
	if rate > float32(m.s.CacheThreshold) {
		tenants := m.ordered(node, holders)
		if len(tenants) > 8 {
			tenants = tenants[:8]
		}
		scores := make([]float64, len(tenants))
		for k := range scores {
			scores[k] = 1
		}
		m.decay(tenants, scores, m.s.BlockSize, max(input/m.s.BlockSize, 1))
		rep = m.gate(f, j, avg, loads, all, m.group(tenants, scores))
	} else {
		rep = m.gate(f, j, avg, loads, all, nil)
	}
	m.insert(key, rep)
	return rep
}

// ordered lists a node's holders in its map's order (kvcheck's stand-in: sglangFirst).
func (m *bruteSMG) ordered(node string, holders []int) []int {
	out := slices.Clone(holders)
	salt := m.tree.Nodes[node].Salt
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Compare(sglangFirst(salt, m.seed, a), sglangFirst(salt, m.seed, b))
	})
	return out
}

// insert adds key for rep: a split's upper part keeps the creator, a new leaf is rep's.
func (m *bruteSMG) insert(key string, rep int) {
	leaf := key != ""
	for path := range m.tree.Nodes {
		if l := treetest.RunePrefix(key, path); len(m.tree.Parent(path)) < l && l < len(path) {
			m.creator[path[:l]] = m.creator[path]
			leaf = leaf && path[:l] != key
		}
	}
	if _, ok := m.tree.Nodes[key]; !ok && leaf {
		m.creator[key] = rep
	}
	m.tree.Insert(key, rep, m.epoch)
	m.epoch++
}

// key is the request's routing key, a character per token page over gRPC, with its
// partition's marker first, and the marker's length in characters (or pages).
func (m *bruteSMG) key(j *sim.Job) (string, int) {
	ns := j.Request().View.Partition
	if !m.grpc() {
		text := strings.TrimLeft(sglangText(j.Request().View), "\x01")
		if ns == "" {
			return text, 0
		}
		return "\x01" + fmt.Sprintf("%016x", partitionHash(ns)) + "\x01" + text, 18
	}
	var keys []uint64
	if ns != "" {
		keys = append(keys, partitionHash(ns)|1<<63)
	}
	tokens := min(j.Request().InputTokens, len(j.IDs())*m.traceBS)
	for end := m.s.BlockSize; end <= tokens; end += m.s.BlockSize {
		keys = append(keys, (uint64(uint32(j.IDs()[(end-1)/m.traceBS]))<<32|uint64(end))&^(1<<63))
	}
	var sb strings.Builder
	for _, k := range keys {
		r, ok := m.pages[k]
		if !ok {
			r = rune(0x4e00 + len(m.pages))
			m.pages[k], m.keys[r] = r, k
		}
		sb.WriteRune(r)
	}
	marker := 0
	if ns != "" {
		marker = 1
	}
	return sb.String(), marker
}

// read takes every replica's report, as the fleet reports itself.
func (m *bruteSMG) read(f *sim.Pool) {
	m.report = m.report[:0]
	clear(m.sent)
	for i := range f.Size() {
		rep := bruteReport{waiting: f.Queued(i), uncached: f.QueuedUncached(i), usage: f.Usage(i)}
		if decoding := f.Decoding(i); decoding > 0 {
			rep.throughput = float64(decoding) / f.Model().DecodePerToken
		}
		m.report = append(m.report, rep)
	}
}

func (m *bruteSMG) kvPressure(n int) bool {
	if m.s.BalanceTokenUsage >= 1 && m.s.OverloadTokenUsage >= 1 {
		return false
	}
	lo, hi := 2.0, -1.0
	for i := range min(n, len(m.report)) {
		lo, hi = min(lo, m.report[i].usage), max(hi, m.report[i].usage)
	}
	return hi > float64(float32(m.s.OverloadTokenUsage)) || hi-lo > float64(float32(m.s.BalanceTokenUsage))
}

// decay divides each reporting candidate's score by 1 + decay x backlog blocks above the least
// reporting candidate's, per request block.
func (m *bruteSMG) decay(reps []int, scores []float64, bs, requestBlocks int) {
	if m.s.OverlapDecay <= 0 {
		return
	}
	least, seen := int64(0), false
	for _, r := range reps {
		if r < len(m.report) {
			if b := max(m.report[r].uncached, 0); !seen || b < least {
				least, seen = b, true
			}
		}
	}
	for k, r := range reps {
		if r < len(m.report) {
			x := float64(max(m.report[r].uncached, 0)-least) / float64(bs) / float64(requestBlocks)
			scores[k] /= 1 + m.s.OverlapDecay*x
		}
	}
}

// group is the candidates scoring the maximum, or the score a softmax draw picks.
func (m *bruteSMG) group(reps []int, scores []float64) []int {
	pick := slices.Max(scores)
	if t := m.s.SelectionTemperature; t > 0 {
		lo := slices.Min(scores)
		if pick == lo {
			pick = scores[m.rng.IntN(len(scores))]
		} else {
			w := make([]float64, len(scores))
			total := 0.0
			for k, s := range scores {
				w[k] = math.Exp(((s-lo)/(pick-lo) - 1) / t)
				total += w[k]
			}
			draw, cum, chosen := m.rng.Float64()*total, 0.0, len(scores)-1
			for k := range w {
				cum += w[k]
				if cum >= draw {
					chosen = k
					break
				}
			}
			pick = scores[chosen]
		}
	}
	var out []int
	for k, s := range scores {
		if s == pick {
			out = append(out, reps[k])
		}
	}
	return out
}

// gate passes over candidates loaded above the mean by both thresholds.
func (m *bruteSMG) gate(f *sim.Pool, j *sim.Job, avg float64, loads, all, cands []int) int {
	over := func(r int) bool {
		l := float64(loads[r])
		return l > avg*float64(float32(m.s.BalanceRelThreshold)) && l > avg+m.s.BalanceAbsThreshold
	}
	var safe []int
	for _, r := range cands {
		if !over(r) {
			safe = append(safe, r)
		}
	}
	switch {
	case len(safe) > 0:
		return m.wait(f, j, safe)
	case len(cands) == 0:
		return m.wait(f, j, all)
	}
	for _, r := range all {
		if !over(r) {
			safe = append(safe, r)
		}
	}
	if len(safe) == 0 {
		safe = all
	}
	return m.wait(f, j, safe)
}

// wait is the least expected wait among cands, ties drawn by reservoir sampling, crediting
// the winner.
func (m *bruteSMG) wait(f *sim.Pool, j *sim.Job, cands []int) int {
	known := func(r int) bool { return r < len(m.report) }
	own := func(r int) float64 {
		rep := m.report[r]
		q := float64(rep.uncached)
		if rep.uncached <= 0 {
			q = float64(rep.waiting) * 1024
		}
		thr := rep.throughput
		if thr <= 0 {
			thr = 2000
		}
		k := math.Min(math.Max(rep.usage, 0), 0.999)
		return (q+float64(m.sent[r]))/thr + 0.15*k/(1-k)
	}
	thrSum, thrN, base, some := 0.0, 0, math.Inf(1), false
	for _, r := range cands {
		if known(r) {
			some = true
			base = math.Min(base, own(r))
			if m.report[r].throughput > 0 {
				thrSum, thrN = thrSum+m.report[r].throughput, thrN+1
			}
		}
	}
	nominal := 2000.0
	if thrN > 0 {
		nominal = thrSum / float64(thrN)
	}
	score := func(r int) float64 {
		switch {
		case known(r):
			return own(r)
		case some:
			return base + float64(f.InFlight(r))*1024/nominal
		}
		return float64(f.InFlight(r))
	}
	best, bs, n := cands[0], score(cands[0]), 1
	for _, r := range cands[1:] {
		if s := score(r); s < bs {
			best, bs, n = r, s, 1
		} else if s == bs {
			n++
			if m.rng.IntN(n) == 0 {
				best = r
			}
		}
	}
	if m.grpc() {
		m.sent[best] += int64(j.Request().InputTokens)
	} else {
		m.sent[best] += 1024
	}
	return best
}

// hash is the placement index: heads at the boundaries, deepest live holder first.
func (m *bruteSMG) hash(f *sim.Pool, j *sim.Job, avg float64, loads, all []int) int {
	now := j.Arrival()
	tokens := min(j.Request().InputTokens, len(j.IDs())*m.traceBS)
	var bounds []int
	for _, b := range m.s.CacheBoundaries {
		if b <= tokens {
			bounds = append(bounds, b)
		}
	}
	if !m.grpc() || tokens == 0 || len(bounds) == 0 {
		return m.wait(f, j, all)
	}
	ns := uint64(0)
	if j.Request().View.Partition != "" {
		ns = partitionHash(j.Request().View.Partition)
	}
	head := func(b int) [2]uint64 {
		return [2]uint64{uint64(b), sim.Mix64(uint64(uint32(j.IDs()[(b-1)/m.traceBS]))<<32 | uint64(b) ^ ns)}
	}
	live := func(k [2]uint64) []smgHolder {
		var out []smgHolder
		for _, h := range m.place[k] {
			if now-h.at <= m.s.CacheTTLSecs {
				out = append(out, h)
			}
		}
		m.place[k] = out
		return out
	}
	record := func(rep int) {
		for _, b := range bounds {
			k := head(b)
			hs := live(k)
			if i := slices.IndexFunc(hs, func(h smgHolder) bool { return h.rep == rep }); i >= 0 {
				hs[i].at = now
				continue
			}
			if len(hs) >= 3 {
				old := 0
				for i := range hs {
					if hs[i].at < hs[old].at {
						old = i
					}
				}
				hs[old] = hs[len(hs)-1]
				hs = hs[:len(hs)-1]
			}
			m.place[k] = append(hs, smgHolder{rep: rep, at: now})
		}
	}
	if !m.kvPressure(f.Size()) {
		for k := len(bounds) - 1; k >= 0; k-- {
			var reps []int
			for _, h := range live(head(bounds[k])) {
				if h.rep < f.Size() {
					reps = append(reps, h.rep)
				}
			}
			if len(reps) > 0 {
				rep := m.gate(f, j, avg, loads, all, reps)
				record(rep)
				return rep
			}
		}
	}
	rep := m.wait(f, j, all)
	record(rep)
	return rep
}

// TestSMGAgreesWithSecondModel compares smg's emulation with bruteSMG route by route, hit by
// hit, on random traffic under random settings: each connection mode and index, spill gates
// that fire, small trees that are evicted, KV triggers, decay, temperature, short hash TTLs,
// partitions, queues, an added replica at times.
func TestSMGAgreesWithSecondModel(t *testing.T) {
	modes := []struct{ conn, index string }{
		{HTTP, "tree"}, {GRPC, "tree"}, {GRPCEvents, "tree"}, {GRPC, "hash"}, {HTTP, "hash"},
	}
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 2096))
		tr := simtest.RandomCharTrace(rng, 150, treetest.RandomText)
		for i := range tr.Requests {
			if rng.IntN(4) == 0 {
				tr.Requests[i].View.Partition = []string{"2:t1--", "2:t2--", "-1:k-"}[rng.IntN(3)]
			}
		}
		mode := modes[seed%uint64(len(modes))]
		s := CLIDefaults()
		s.Connection, s.CacheIndex = mode.conn, mode.index
		s.BlockSize = []int{simtest.Block, 2, 8}[rng.IntN(3)]
		s.CacheThreshold = []float64{0, 0.3, 0.5, 0.8}[rng.IntN(4)]
		s.BalanceAbsThreshold = float64([]int{0, 1, 2, 64}[rng.IntN(4)])
		s.BalanceRelThreshold = []float64{1, 1.1, 1.5}[rng.IntN(3)]
		s.EvictionIntervalSecs = float64(1 + rng.IntN(4))
		s.MaxTreeSize = []int{1, 8, 30, 1 << 26}[rng.IntN(4)]
		s.LoadIntervalSecs = []float64{1, 2, 10}[rng.IntN(3)]
		s.OverlapDecay = []float64{0, 0.5, 2}[rng.IntN(3)]
		s.SelectionTemperature = []float64{0, 0, 0.3}[rng.IntN(3)]
		s.BalanceTokenUsage = []float64{1, 0.05, 0.5}[rng.IntN(3)]
		s.OverloadTokenUsage = []float64{1, 1, 0.1}[rng.IntN(3)]
		s.CacheBoundaries = [][]int{{4}, {4, 8, 12}, {3, 10}}[rng.IntN(3)]
		s.CacheTTLSecs = float64([]int{3, 20, 180}[rng.IntN(3)])
		c := simtest.Config(2 + rng.IntN(6))
		c.KVBlocks = 6 + rng.IntN(20)
		c.Model.MaxRunning = 1 + rng.IntN(3)
		c.Seed = seed
		if rng.IntN(2) == 0 {
			c.AddReplicaAt = tr.Requests[len(tr.Requests)/2].Arrival
		}
		simtest.Compare(t, tr, c, cacheAware(s), newBruteSMG(s, seed, simtest.Block),
			fmt.Sprintf("seed %d, %d replicas, settings %+v", seed, c.Replicas, s))
	}
}
