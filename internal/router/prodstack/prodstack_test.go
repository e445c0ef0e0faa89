package prodstack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// Text traces: each request carries a View (what a router reading the body sees) beside the
// block keys the replicas' caches work on. The two are set by hand to agree: requests whose text
// shares a prefix share the blocks of that prefix.

// setup is a fleet and the production-stack settings its emulation runs with.
type setup struct {
	c sim.Config
	s Settings
}

// withProdStack returns c with production-stack settings changed by fn.
func withProdStack(c sim.Config, fn func(*Settings)) setup {
	s := Shipped()
	fn(&s)
	return setup{c, s}
}

// emulation is the emulation named, with settings s.
func emulation(name string, s Settings) sim.PolicyInfo {
	for _, e := range (Router{}).Emulations(s) {
		if e.Name == name {
			return e
		}
	}
	panic("no emulation " + name)
}

// runTiny replays tr under the emulation named on cfg: a sim.Config (as shipped) or a setup.
func runTiny(t *testing.T, tr *sim.Trace, cfg any, name string) simtest.Outcome {
	t.Helper()
	st, ok := cfg.(setup)
	if !ok {
		st = setup{cfg.(sim.Config), Shipped()}
	}
	return simtest.Routes(t, tr, st.c, emulation(name, st.s))
}

func TestProdStackRoundRobin(t *testing.T) {
	// The counter of the two engines' set goes 0, 1, 2, 3: replicas 0, 1, 0, 1; a third joins
	// at 3.5 s and the three's set has a counter of its own from 0 (routing_logic.py@a6c01db
	// :187-195, _next_index keyed by the sorted URLs): r4 to 0, r5 to 1 (a counter that went
	// on would give 4 mod 3 = 1 and 5 mod 3 = 2). r2 hits block 1 on replica 0 (after r0's
	// 0.12 s prefill; hit limit (12-1)/4 = 2 blocks, [1] shared); r3 hits it on replica 1
	// (r1's); r4 on 0 and r5 on 1 too.
	tr := simtest.Trace(simtest.Req(0, "", 0, 1, 2, 3), simtest.Req(1, "", 0, 1, 4, 5), simtest.Req(2, "", 0, 1, 6, 7), simtest.Req(3, "", 0, 1, 8, 9),
		simtest.Req(4, "", 0, 1, 8, 9), simtest.Req(5, "", 0, 1, 10, 11))
	for i := range tr.Requests {
		tr.Requests[i].View = &sim.View{}
	}
	c := simtest.Config(2)
	c.AddReplicaAt = 3.5
	got := runTiny(t, tr, c, "prodstack-roundrobin")
	want := simtest.Outcome{Routes: []int{0, 1, 0, 1, 0, 1}, Hits: []int{0, 0, 1, 1, 1, 1}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("routes/hits (-want +got):\n%s", d)
	}
}

func TestProdStackSession(t *testing.T) {
	h := func(id string) map[string]string { return map[string]string{"x-session-id": id} }
	t.Run("no session key: the router refuses to start", func(t *testing.T) {
		tr := simtest.TextTrace(simtest.Block, simtest.ChatReq(0, 0, h("a"), simtest.Block, 1))
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), session(Shipped()))
		var cr *sim.CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), "--session-key") || !strings.Contains(err.Error(), "ValueError") {
			t.Fatalf("Simulate = %v; want a CannotRunError naming --session-key and the ValueError", err)
		}
	})
	c := withProdStack(simtest.Config(3), func(s *Settings) { s.SessionKey = "X-Session-Id" })
	t.Run("without the header: QPS over 60 s", func(t *testing.T) {
		// r0, r1, r2 go to the engines that have had no request yet, in order: 0, 1, 2. r3 (3 s):
		// one request each in the window, the first: 0. r4 at 70 s: the window [10, 70] is
		// empty everywhere: 0. r5 at 71 s: replica 0 has r4, the others none: 1. r6 at 72 s:
		// (1, 1, 0): 2. A header under another name is no session.
		tr := simtest.TextTrace(simtest.Block,
			simtest.ChatReq(0, 0, nil, simtest.Block, 1), simtest.ChatReq(1, 0, nil, simtest.Block, 2), simtest.ChatReq(2, 0, nil, simtest.Block, 3),
			simtest.ChatReq(3, 0, nil, simtest.Block, 4), simtest.ChatReq(70, 0, nil, simtest.Block, 5), simtest.ChatReq(71, 0, nil, simtest.Block, 6),
			simtest.ChatReq(72, 0, map[string]string{"x-user": "u"}, simtest.Block, 7))
		got := runTiny(t, tr, c, "prodstack-session")
		if d := cmp.Diff([]int{0, 1, 2, 0, 0, 1, 2}, got.Routes); d != "" {
			t.Errorf("routes (-want +got):\n%s", d)
		}
	})
	t.Run("with the header: one engine per session, whatever its load", func(t *testing.T) {
		// Ten requests of session "a", each in flight for 100 s: a load-aware router would
		// spread them; the ring keeps them on one engine, and they hit the shared block 1.
		var rs []sim.Request
		for i := range 10 {
			rs = append(rs, simtest.ChatReq(float64(i), 100, h("a"), simtest.Block, 1, uint64(10+i), uint64(20+i)))
		}
		got := runTiny(t, simtest.TextTrace(simtest.Block, rs...), c, "prodstack-session")
		for i, r := range got.Routes {
			if r != got.Routes[0] {
				t.Fatalf("request %d of session a went to %d, the first to %d", i, r, got.Routes[0])
			}
			if i > 0 && got.Hits[i] != 1 {
				t.Errorf("request %d hit %d blocks, want the shared block 1", i, got.Hits[i])
			}
		}
		// Twenty sessions spread over the three engines.
		rs = rs[:0]
		for i := range 20 {
			rs = append(rs, simtest.ChatReq(float64(i), 0, h(string(rune('a'+i))+"-session"), simtest.Block, uint64(i+1)))
		}
		got = runTiny(t, simtest.TextTrace(simtest.Block, rs...), c, "prodstack-session")
		used := map[int]bool{}
		for _, r := range got.Routes {
			used[r] = true
		}
		if len(used) < 2 {
			t.Errorf("twenty sessions all on engine(s) %v", used)
		}
	})
}

func TestProdStackPrefixAware(t *testing.T) {
	p256 := strings.Repeat("You are a helpful assistant. ", 9)[:256]
	differ := func(s string, at int) string { return s[:at] + "#" + s[at+1:] }
	t.Run("one differing character in the first 128 breaks the match", func(t *testing.T) {
		// --prefix-min-match-length 128, so a request matching nothing goes by QPS and the
		// routes are decided. r0: no match -> QPS: engine 0. r1, the same text: matches its
		// chunks on engine 0 -> 0, hits [1 2] (limit (12-1)/4 = 2). r2: character 5 differs, so
		// chunk 0 differs: match 0 < 128 -> QPS: engine 1 (no request yet), no hit. r3:
		// character 200 differs: chunk 0 (128 characters) matches on engine 0 -> 0; it shares
		// block 1 only (its text diverges inside the prefix of that block's successor).
		tr := simtest.TextTrace(simtest.Block,
			simtest.TextReq(0, 0, p256+"a", simtest.Block, 1, 2, 3),
			simtest.TextReq(10, 0, p256+"a", simtest.Block, 1, 2, 3),
			simtest.TextReq(20, 0, differ(p256, 5)+"a", simtest.Block, 9, 10, 11),
			simtest.TextReq(30, 0, differ(p256, 200)+"a", simtest.Block, 1, 12, 13),
		)
		c := withProdStack(simtest.Config(4), func(s *Settings) { s.PrefixMinMatch = 128 })
		got := runTiny(t, tr, c, "prodstack-prefixaware")
		want := simtest.Outcome{Routes: []int{0, 0, 1, 0}, Hits: []int{0, 2, 0, 1}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("routes/hits (-want +got):\n%s", d)
		}
	})
	t.Run("no load term, no eviction: a shared prefix is a hot spot", func(t *testing.T) {
		// Six requests share their first 256 characters, each in flight for 100 s, on 3
		// engines with caches of 2 blocks (every request evicts the one before): the first
		// goes to a random engine, and the trie sends all the others to it.
		var rs []sim.Request
		for i := range 6 {
			rs = append(rs, simtest.TextReq(float64(i), 100, p256+strings.Repeat(string(rune('a'+i)), 10), simtest.Block, uint64(100+i)))
		}
		c := simtest.Config(3)
		c.KVBlocks = 2
		got := runTiny(t, simtest.TextTrace(simtest.Block, rs...), c, "prodstack-prefixaware")
		for i, r := range got.Routes {
			if r != got.Routes[0] {
				t.Fatalf("routes %v: request %d left the engine holding the prefix", got.Routes, i)
			}
		}
	})
	t.Run("no match: uniform among the engines", func(t *testing.T) {
		var rs []sim.Request
		for i := range 400 {
			rs = append(rs, simtest.TextReq(float64(i), 0, strings.Repeat(string(rune('A'+i%50)), 3)+string(rune(1000+i)), simtest.Block, uint64(i+1)))
		}
		got := runTiny(t, simtest.TextTrace(simtest.Block, rs...), simtest.Config(4), "prodstack-prefixaware")
		n := make([]int, 4)
		for _, r := range got.Routes {
			n[r]++
		}
		for i, k := range n {
			// 100 expected each; 60 is more than 4 standard deviations (8.7) below.
			if k < 60 {
				t.Errorf("engine %d got %d of 400 unmatched requests: %v", i, k, n)
			}
		}
	})
}

func TestProdStackPrompt(t *testing.T) {
	// The prompt a chat's messages give (routing_logic.py@a6c01db:476-500), each case worked
	// out from those lines.
	for _, tc := range []struct{ body, want string }{
		// Contents joined with "\n" (495), no template, no role.
		{`{"messages":[{"role":"system","content":"a"},{"role":"user","content":"bcd"}]}`, "a\nbcd"},
		// A list: its "text" parts joined with " " (487-491), the image and the input_text
		// skipped (490), an empty text part kept as "" (so two spaces), a text part without
		// text as "" (488: part.get("text", "")).
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"no"},{"type":"text","text":""},{"type":"text","text":"y"},{"type":"text"}]}]}`, "x  y "},
		// A null content adds no line (493); tool calls and reasoning are not read.
		{`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"r"},{"role":"user","content":"z"}]}`, "q\nz"},
		// A message without content is an empty line (484: message.get("content", "")); a
		// list with no text part too (492).
		{`{"messages":[{"role":"user","content":"q"},{"role":"assistant"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]},{"role":"user","content":"z"}]}`, "q\n\n\nz"},
		// A completion's prompt as it is (500).
		{`{"prompt":"p q"}`, "p q"},
	} {
		tr, err := sim.ReadRequests(context.Background(), strings.NewReader(tc.body), "t.jsonl", sim.RequestLogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(prodStackPrompt(tr.Requests[0].View, nil)); got != tc.want {
			t.Errorf("%s: prompt %q, want %q", tc.body, got, tc.want)
		}
	}
	// 128 characters are one chunk whatever their bytes: 128 two-byte "é" and 128 ASCII
	// letters each make one chunk, one more character a second one.
	for _, s := range []string{strings.Repeat("é", 128), strings.Repeat("a", 128)} {
		if n := len(chunkHashes(nil, []byte(s))); n != 1 {
			t.Errorf("%d bytes of 128 characters: %d chunks, want 1", len(s), n)
		}
		if n := len(chunkHashes(nil, []byte(s+"x"))); n != 2 {
			t.Errorf("129 characters: %d chunks, want 2", n)
		}
	}
	// A partial last chunk is a chunk of its own: "ab" and "abc" share no chunk.
	a, b := chunkHashes(nil, []byte("ab")), chunkHashes(nil, []byte("abc"))
	if a[0] == b[0] {
		t.Error("a partial chunk hashes like a longer one")
	}
}

// lmTrace: blocks of 256 tokens, one LMCache chunk each.
const lmBlock = 256

func TestProdStackKVAware(t *testing.T) {
	t.Run("chat traffic gets no match", func(t *testing.T) {
		// Three chat requests with the same three blocks, 10 s apart (done before the next):
		// each asks LMCache for the empty prompt, so each goes by QPS: engine 0, engine 1 (no
		// request yet), then (1, 1) in the window: engine 0. r1 misses on engine 1 although
		// engine 0 holds its whole prefix; r2 hits 2 blocks there (limit (768-1)/256 = 2).
		tr := simtest.TextTrace(lmBlock, simtest.ChatReq(0, 0, nil, lmBlock, 1, 2, 3), simtest.ChatReq(10, 0, nil, lmBlock, 1, 2, 3), simtest.ChatReq(20, 0, nil, lmBlock, 1, 2, 3))
		got := runTiny(t, tr, simtest.Config(2), "prodstack-kvaware")
		want := simtest.Outcome{Routes: []int{0, 1, 0}, Hits: []int{0, 0, 2}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("routes/hits (-want +got):\n%s", d)
		}
	})
	// Completions: r0 [1 2 3] has no match: QPS, engine 0. r1 [1 2 4] at 10 s: LMCache credits
	// engine 0 with chunks [1] and [1 2] (512 tokens; [1 2 4] is nowhere). r2, a chat request
	// with the same blocks as r1, asks for the empty prompt: QPS, engine 1 (no request yet).
	tr := simtest.TextTrace(lmBlock,
		simtest.TextReq(0, 0, "p", lmBlock, 1, 2, 3),
		simtest.TextReq(10, 0, "p", lmBlock, 1, 2, 4),
		simtest.ChatReq(20, 0, nil, lmBlock, 1, 2, 4),
	)
	cases := []struct {
		name      string
		threshold int
		want      simtest.Outcome
	}{
		// 512 >= max(768 - 2000, 0): engine 0, hitting 2 blocks.
		{"threshold 2000", 2000, simtest.Outcome{Routes: []int{0, 0, 1}, Hits: []int{0, 2, 0}}},
		// 512 >= 768 - 256 = 512: still engine 0.
		{"threshold 256", 256, simtest.Outcome{Routes: []int{0, 0, 1}, Hits: []int{0, 2, 0}}},
		// 512 < 768 - 0: the fallback, QPS: engine 1 (no request yet), a miss; r2 then goes to
		// the engine with the fewest requests in the window, (1, 1): engine 0, hitting 2.
		{"threshold 0", 0, simtest.Outcome{Routes: []int{0, 1, 0}, Hits: []int{0, 0, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := withProdStack(simtest.Config(2), func(s *Settings) { s.KVAwareThreshold = tc.threshold })
			got := runTiny(t, tr, c, "prodstack-kvaware")
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("routes/hits (-want +got):\n%s", d)
			}
		})
	}
	t.Run("chat with a session key: the ring", func(t *testing.T) {
		h := map[string]string{"x-session-id": "conv-1"}
		var rs []sim.Request
		for i := range 5 {
			rs = append(rs, simtest.ChatReq(float64(10*i), 0, h, lmBlock, 1, 2, uint64(10+i)))
		}
		c := withProdStack(simtest.Config(3), func(s *Settings) { s.SessionKey = "x-session-id" })
		got := runTiny(t, simtest.TextTrace(lmBlock, rs...), c, "prodstack-kvaware")
		for i, r := range got.Routes {
			if r != got.Routes[0] {
				t.Fatalf("routes %v: request %d left the session's engine", got.Routes, i)
			}
		}
	})
}

func TestProdStackLoadAware(t *testing.T) {
	// r0 [1 2 3] stays in flight 100 s on engine 0 (no match: QPS). r1 [1 2 4] at 10 s:
	// LMCache credits engine 0 with 512 of 768 tokens. Loads (1, 0), mean 0.5, clamped to 1:
	// relative (+0.5, -0.5).
	tr := simtest.TextTrace(lmBlock, simtest.TextReq(0, 100, "p", lmBlock, 1, 2, 3), simtest.TextReq(10, 100, "p", lmBlock, 1, 2, 4))
	cases := []struct {
		name string
		beta float64
		want simtest.Outcome
	}{
		// beta 1: engine 0 = 0.667 - 0.5 = 0.167, engine 1 = 0 + 0.5 = 0.5: engine 1, a miss.
		{"beta 1 leaves the busy engine", 1, simtest.Outcome{Routes: []int{0, 1}, Hits: []int{0, 0}}},
		// beta 0.1: engine 0 = 0.667 - 0.05 = 0.617, engine 1 = 0.05: engine 0, hitting 2.
		{"beta 0.1 follows the cache", 0.1, simtest.Outcome{Routes: []int{0, 0}, Hits: []int{0, 2}}},
		// beta 0.4: engine 0 = 0.667 - 0.2 = 0.467, engine 1 = 0.2: engine 0. (Without the
		// clamp of the mean to 1, relative loads would be +-1 and engine 1 would win, 0.4 >
		// 0.267.)
		{"beta 0.4: the mean is clamped to 1", 0.4, simtest.Outcome{Routes: []int{0, 0}, Hits: []int{0, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := withProdStack(simtest.Config(2), func(s *Settings) { s.LoadBeta = tc.beta })
			got := runTiny(t, tr, c, "prodstack-loadaware")
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("routes/hits (-want +got):\n%s", d)
			}
		})
	}
	t.Run("chat traffic gets no match", func(t *testing.T) {
		// As kvaware: every chat request goes by QPS (0, 1, 0 for three requests 10 s apart).
		tr := simtest.TextTrace(lmBlock, simtest.ChatReq(0, 0, nil, lmBlock, 1, 2, 3), simtest.ChatReq(10, 0, nil, lmBlock, 1, 2, 3), simtest.ChatReq(20, 0, nil, lmBlock, 1, 2, 3))
		got := runTiny(t, tr, simtest.Config(2), "prodstack-loadaware")
		want := simtest.Outcome{Routes: []int{0, 1, 0}, Hits: []int{0, 0, 2}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("routes/hits (-want +got):\n%s", d)
		}
	})
}

// TestProdStackPrefixAwareUpstreamJoin: issue 21's first Done-when for production-stack:
// requests whose first 128 characters are equal once their messages are joined as
// PrefixAwareRouter joins them (chat bodies with multi-part content, null contents and images)
// go to one engine, every time: every pair of the four below, in each of 48 trials (seeds). The
// router's prompt (routing_logic.py@a6c01db:476-500) joins a list's "text" parts with " "
// (487-492; the image and the input_text are skipped), skips a null content (493) and joins the
// messages with "\n" (495); HashTrie hashes chunks of 128 characters (hashtrie.py:37-57). X is
// 100 characters and Y 40, so each request's prompt starts with X + " " + Y: its first chunk
// is the same, whatever follows. The first request goes to an engine drawn at random (empty
// trie); the others match that chunk, held by that engine alone (hashtrie.py:90-102), and
// random.choice over one engine (routing_logic.py:518) is that engine. The engine's own text
// differs between them (images as placeholders, tool calls): a router reading that would
// find no common first chunk and draw again.
func TestProdStackPrefixAwareUpstreamJoin(t *testing.T) {
	x := strings.Repeat("You are a careful assistant. ", 4)[:100]
	y := strings.Repeat("Answer briefly. ", 3)[:40]
	img := func(u string) string { return `{"type":"image_url","image_url":{"url":"` + u + `"}}` }
	lines := []string{
		`{"messages":[{"role":"system","content":[{"type":"text","text":"` + x + `"},` + img("https://a/1.png") + `,{"type":"text","text":"` + y + `"}]},{"role":"user","content":"first question"}]}`,
		`{"messages":[{"role":"system","content":"` + x + ` ` + y + `"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":[{"type":"input_text","text":"ignored"},{"type":"text","text":"second question"}]}]}`,
		`{"messages":[{"role":"system","content":[` + img("https://b/2.png") + `,{"type":"text","text":"` + x + `"},{"type":"text","text":"` + y + `"}]},{"role":"user","content":null},{"role":"user","content":"third"}]}`,
		`{"messages":[{"role":"system","content":[{"type":"input_text","text":"preamble"},{"type":"text","text":"` + x + `"},` + img("https://c/3.png") + `,{"type":"text","text":"` + y + ` and more after the first chunk"}]}]}`,
	}
	tr, err := sim.ReadRequests(t.Context(), strings.NewReader(strings.Join(lines, "\n")), "join.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != len(lines) {
		t.Fatalf("read %d requests of %d", len(tr.Requests), len(lines))
	}
	first := map[int]bool{}
	for seed := range uint64(48) {
		c := simtest.Config(4)
		c.Seed = seed
		routes := runTiny(t, tr, c, "prodstack-prefixaware").Routes
		for k, r := range routes {
			if r != routes[0] {
				t.Fatalf("seed %d: request %d went to engine %d, request 0 to %d: routes %v", seed, k, r, routes[0], routes)
			}
		}
		first[routes[0]] = true
	}
	if len(first) < 2 {
		t.Errorf("the first request went to %v over 48 seeds: the draw on an empty trie should vary", first)
	}
}
