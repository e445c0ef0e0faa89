package prodstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// Second models of prodstack-prefixaware and the LMCache routers, written from the
// routers' descriptions (ROUTERS.md §1 and §3, routing_logic.py, hashtrie.py,
// deployment_affinity_check.py), not from the emulations' code: plain maps and strings, no trie,
// no bit sets. They route over simtest.RefFleet, whose caches never fill.

// blockText is the text of one block: 40 characters, some of them two-byte, so that 128-character
// chunks and blocks do not line up and characters are not bytes. Different blocks have different
// texts, so two prompts share a text prefix exactly when they share blocks.
func blockText(b uint64) string {
	s := fmt.Sprintf("%038d", b)
	if b%3 == 0 {
		s = strings.ReplaceAll(s, "0", "é")
	}
	return s + "|\n"[b%2:b%2+1] + "."
}

// withBodies gives every request of tr a body and the view the request reader makes of it, and
// returns the bodies by view. Every third request is a completion of its blocks' text; the
// others are chats whose messages take the blocks in groups (a group ends after a block whose
// number is a multiple of 3), each group's content a string or, for a group whose first block
// is odd, a list of one "text" part per block, an empty "text" part before every block that is
// a multiple of 5 and an image before every block that is a multiple of 4. Around them, drawn
// per request: images of the request's own, input_text parts, assistant messages with a null
// content and tool calls, reasoning_content, a message without content (after a group whose
// last block is a multiple of 7, so that it is part of the shared text). What a router reads
// of two requests sharing blocks is then shared as far as its source reads it, while what the
// engine sees (placeholders, tool calls) is not.
func withBodies(t *testing.T, tr *sim.Trace, seed uint64) (*sim.Trace, map[*sim.View]string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xb0d1e5))
	bodies := map[*sim.View]string{}
	for i := range tr.Requests {
		r := &tr.Requests[i]
		var body any
		if i%3 == 0 {
			var sb strings.Builder
			for _, b := range r.Blocks {
				sb.WriteString(blockText(b))
			}
			body = map[string]any{"prompt": sb.String()}
		} else {
			var msgs []any
			var group []uint64
			flush := func() {
				if rng.IntN(3) == 0 {
					msgs = append(msgs, map[string]any{"role": "assistant", "content": nil,
						"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call-%d", rng.Int())}}, "reasoning_content": fmt.Sprint("thought ", rng.Int())})
				}
				if group[0]%2 == 0 {
					var sb strings.Builder
					for _, b := range group {
						sb.WriteString(blockText(b))
					}
					msgs = append(msgs, map[string]any{"role": "user", "content": sb.String()})
				} else {
					var parts []any
					for _, b := range group {
						if b%5 == 0 {
							parts = append(parts, map[string]any{"type": "text", "text": ""})
						}
						if b%4 == 0 {
							parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": fmt.Sprint("data:image/png;base64,", rng.Int())}})
						}
						if rng.IntN(4) == 0 {
							parts = append(parts, map[string]any{"type": "input_text", "text": fmt.Sprint("noise ", rng.Int())})
						}
						parts = append(parts, map[string]any{"type": "text", "text": blockText(b)})
					}
					msgs = append(msgs, map[string]any{"role": "user", "content": parts})
				}
				if group[len(group)-1]%7 == 0 {
					msgs = append(msgs, map[string]any{"role": "assistant", "reasoning_content": "hm"})
				}
				group = group[:0]
			}
			for k, b := range r.Blocks {
				group = append(group, b)
				if b%3 == 0 || k == len(r.Blocks)-1 {
					flush()
				}
			}
			body = map[string]any{"messages": msgs}
		}
		line, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		read, err := sim.ReadRequests(context.Background(), bytes.NewReader(line), "body.jsonl", sim.RequestLogOptions{})
		if err != nil || len(read.Requests) != 1 {
			t.Fatalf("request %d: %v", i, err)
		}
		r.View = read.Requests[0].View
		bodies[r.View] = string(line)
	}
	tr.Format = "requests"
	return tr, bodies
}

// refProdStackPrompt is the prompt PrefixAwareRouter.route_request builds from a body decoded
// as Python's json does (production-stack@a6c01db routing_logic.py:476-500): for messages, each
// message's content (message.get("content", ""): "" when missing); a list gives the "text"
// members ("" when missing) of its parts whose type is "text", joined with " "; None is skipped;
// a string is taken; the results joined with "\n". Otherwise the prompt.
func refProdStackPrompt(t *testing.T, body string) string {
	var b map[string]any
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	msgs, ok := b["messages"]
	if !ok {
		return b["prompt"].(string)
	}
	var out []string
	for _, m := range msgs.([]any) {
		content, has := m.(map[string]any)["content"]
		if !has {
			content = ""
		}
		switch c := content.(type) {
		case []any:
			var texts []string
			for _, p := range c {
				if part := p.(map[string]any); part["type"] == "text" {
					text, _ := part["text"].(string)
					texts = append(texts, text)
				}
			}
			out = append(out, strings.Join(texts, " "))
		case string:
			out = append(out, c)
		}
	}
	return strings.Join(out, "\n")
}

// refPrefixAware is production-stack's PrefixAwareRouter as its source reads: the prompt
// (refProdStackPrompt) cut into 128-character pieces; a table from each prefix of whole pieces
// (as a string) to the engines that prefix was sent to; the longest run of prefixes whose
// engines still meet the engines selected so far; below --prefix-min-match-length the engine
// with no request yet, else the fewest sent in the last 60 s; otherwise a uniform choice among
// the selected engines taken in ascending order with one draw from the seeded PCG; then every
// prefix of the prompt records the engine.
type refPrefixAware struct {
	t        *testing.T
	bodies   map[*sim.View]string
	minMatch int
	rng      *rand.Rand
	holders  map[string]map[int]bool
	sent     map[int][]float64
}

func (m *refPrefixAware) route(r *sim.Request, n int) int {
	prompt := refProdStackPrompt(m.t, m.bodies[r.View])
	chars := []rune(prompt)
	var prefixes []string
	for end := 128; ; end += 128 {
		prefixes = append(prefixes, string(chars[:min(end, len(chars))]))
		if end >= len(chars) {
			break
		}
	}
	if len(chars) == 0 {
		prefixes = nil
	}
	selected := map[int]bool{}
	for i := range n {
		selected[i] = true
	}
	matched := 0
	for _, p := range prefixes {
		both := map[int]bool{}
		for e := range m.holders[p] {
			if selected[e] {
				both[e] = true
			}
		}
		if len(both) == 0 {
			break
		}
		selected, matched = both, matched+128
	}
	var pick int
	if matched < m.minMatch {
		pick = -1
		fewest := 0
		for e := range n {
			if len(m.sent[e]) == 0 {
				pick = e
				break
			}
			k := 0
			for _, t := range m.sent[e] {
				if t >= r.Arrival-60 {
					k++
				}
			}
			if pick < 0 || k < fewest {
				pick, fewest = e, k
			}
		}
	} else {
		var cand []int
		for e := range selected {
			cand = append(cand, e)
		}
		sort.Ints(cand)
		pick = cand[m.rng.IntN(len(cand))]
	}
	m.sent[pick] = append(m.sent[pick], r.Arrival)
	for _, p := range prefixes {
		if m.holders[p] == nil {
			m.holders[p] = map[int]bool{}
		}
		m.holders[p][pick] = true
	}
	return pick
}

// TestProdStackPrefixAwareModel: prodstack-prefixaware agrees with refPrefixAware on routes and
// hits over random traffic with text, with and without --prefix-min-match-length, with an added
// replica.
func TestProdStackPrefixAwareModel(t *testing.T) {
	for _, minMatch := range []int{0, 256} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("min%d/seed%d", minMatch, seed), func(t *testing.T) {
				tr, bodies := withBodies(t, simtest.RandomTraffic(seed, 300, simtest.Block), seed)
				// Arrivals stretched so that the 60 s QPS window both fills and empties.
				for i := range tr.Requests {
					tr.Requests[i].Arrival *= 10
				}
				c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
				s := Shipped()
				s.PrefixMinMatch = minMatch
				e := simtest.NewRefFleet(simtest.Block, c.Model)
				m := &refPrefixAware{t: t, bodies: bodies, minMatch: minMatch, rng: rand.New(rand.NewPCG(seed, 0x707265666978)), holders: map[string]map[int]bool{}, sent: map[int][]float64{}}
				want := simtest.Replay(tr, c, m.route, e)
				got := simtest.Routes(t, tr, c, prefixAware(s))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("prodstack-prefixaware against the second model (-model +emulation):\n%s", d)
				}
				if slices.Max(want.Hits) == 0 || slices.Max(want.Routes) < 3 {
					t.Errorf("the traffic should hit and reach the added replica: hits max %d, routes max %d", slices.Max(want.Hits), slices.Max(want.Routes))
				}
			})
		}
	}
}

// refLMCache is production-stack's kvaware and loadaware routers over LMCache, as
// routing_logic.py and KVController.lookup read (ROUTERS.md §3), written apart from
// prodstack_kvaware.go and prodstack_loadaware.go: with one block per 256-token chunk, a chunk
// is the prompt's blocks up to it; the controller lists, per chunk, the engines in the order the
// router sent it to them, and credits each chunk to the first of them whose engine holds it now
// (refFleet.cachedRun, at most the hit limit), walking chunks until one is held nowhere. A chat
// request asks for the empty prompt. kvaware: no credit, or the first credited engine's tokens
// under max(tokens - threshold, 0): the engine with no request yet, else the fewest sent in 60 s;
// otherwise the first credited engine. loadaware: no credit: the same fallback; otherwise every
// engine scored min(credited, tokens)/tokens - beta (in flight - mean)/max(1, mean), the first
// best.
type refLMCache struct {
	load      bool
	threshold int
	beta      float64
	e         *simtest.RefFleet
	order     map[string][]int
	sent      map[int][]float64
}

func (m *refLMCache) route(r *sim.Request, n int) int {
	type credit struct{ rep, end int }
	var layout []credit
	chunks := 0
	if !r.View.Chat {
		chunks = min(r.InputTokens/256, len(r.Blocks))
	}
	limit := (r.InputTokens - 1) / 256
	key := func(c int) string { return fmt.Sprint(r.Blocks[:c+1]) }
	for c := range chunks {
		first := -1
		for _, e := range m.order[key(c)] {
			if e < n && m.e.CachedRun(e, r.Blocks, min(limit, len(r.Blocks)), r.Arrival) > c {
				first = e
				break
			}
		}
		if first < 0 {
			break
		}
		found := false
		for k := range layout {
			if layout[k].rep == first {
				layout[k].end, found = (c+1)*256, true
			}
		}
		if !found {
			layout = append(layout, credit{first, (c + 1) * 256})
		}
	}
	tokens := 0
	if !r.View.Chat {
		tokens = r.InputTokens
	}
	pick := -1
	switch {
	case len(layout) == 0 || (!m.load && layout[0].end < max(tokens-m.threshold, 0)):
		fewest := 0
		for e := range n {
			if len(m.sent[e]) == 0 {
				pick = e
				break
			}
			k := 0
			for _, t := range m.sent[e] {
				if t >= r.Arrival-60 {
					k++
				}
			}
			if pick < 0 || k < fewest {
				pick, fewest = e, k
			}
		}
	case !m.load:
		pick = layout[0].rep
	default:
		inflight := make([]float64, n)
		mean := 0.0
		for _, j := range m.e.Jobs {
			if j.Rep < n && j.Finish > r.Arrival {
				inflight[j.Rep]++
			}
		}
		for _, x := range inflight {
			mean += x / float64(n)
		}
		best := 0.0
		for e := range n {
			got := 0
			for _, c := range layout {
				if c.rep == e {
					got = c.end
				}
			}
			score := float64(min(got, tokens))/float64(max(tokens, 1)) - m.beta*(inflight[e]-mean)/max(1, mean)
			if pick < 0 || score > best {
				pick, best = e, score
			}
		}
	}
	m.sent[pick] = append(m.sent[pick], r.Arrival)
	for c := range chunks {
		if !slices.Contains(m.order[key(c)], pick) {
			m.order[key(c)] = append(m.order[key(c)], pick)
		}
	}
	return pick
}

// TestProdStackLMCacheModel: prodstack-kvaware and prodstack-loadaware agree with refLMCache on
// routes and hits over random traffic of 256-token blocks, one request in three a chat.
func TestProdStackLMCacheModel(t *testing.T) {
	variants := []struct {
		policy    string
		load      bool
		threshold int
		beta      float64
	}{
		{"prodstack-kvaware", false, 2000, 1},
		{"prodstack-kvaware", false, 300, 1},
		{"prodstack-loadaware", true, 2000, 1},
		{"prodstack-loadaware", true, 2000, 0.2},
	}
	for _, v := range variants {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/t%d/b%g/seed%d", v.policy, v.threshold, v.beta, seed), func(t *testing.T) {
				tr := simtest.RandomTraffic(seed, 300, 256)
				for i := range tr.Requests {
					tr.Requests[i].View = &sim.View{Chat: i%3 == 2, Text: "p"}
					tr.Requests[i].Arrival *= 40
				}
				tr.Format = "requests"
				c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
				c.Model.PrefillPerToken = 0.0001
				s := Shipped()
				s.KVAwareThreshold, s.LoadBeta = v.threshold, v.beta
				e := simtest.NewRefFleet(256, c.Model)
				m := &refLMCache{load: v.load, threshold: v.threshold, beta: v.beta, e: e, order: map[string][]int{}, sent: map[int][]float64{}}
				want := simtest.Replay(tr, c, m.route, e)
				info := kvAware(s)
				if v.load {
					info = loadAware(s)
				}
				got := simtest.Routes(t, tr, c, info)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s against the second model (-model +emulation):\n%s", v.policy, d)
				}
				if slices.Max(want.Hits) == 0 || slices.Max(want.Routes) < 3 {
					t.Errorf("the traffic should hit and reach the added replica: hits max %d, routes max %d", slices.Max(want.Hits), slices.Max(want.Routes))
				}
			})
		}
	}
}
