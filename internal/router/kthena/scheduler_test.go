package kthena

import (
	"context"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

func emulation(s Settings) sim.PolicyInfo { return (Router{}).Emulations(s)[0] }

// text is a completion whose prompt is p, of one 4-token block (a prefill of 40 ms under
// simtest.Config), in flight for out seconds after it.
func text(at float64, out int, p string) sim.Request {
	return simtest.TextReq(at, out, p, simtest.Block, 1)
}

// with are the shipped settings with score plugins sc, no filter and 4-byte blocks.
func with(sc ...Plugin) Settings {
	s := Shipped()
	s.Score, s.Filter, s.BlockSize = sc, nil, 4
	return s
}

// same says, for each route, which earlier route's replica it shares ("r0", "r1", ...), or
// "new": a request scored equal on several pods goes to one drawn at random, and the rest
// follow from it.
func same(routes []int) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = "new"
		for k := range i {
			if routes[k] == r {
				out[i] = "r" + string(rune('0'+k))
				break
			}
		}
	}
	return out
}

// TestPrompt: the string prefix-cache hashes (GetPromptString, utils.go:183-195), read from
// request bodies: a chat's messages in ChatML, a list's text parts joined with newlines (the
// image skipped), a null content left out; a completion's prompt as it is.
func TestPrompt(t *testing.T) {
	lines := []string{
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"input_text","text":"b"}]},{"role":"assistant","content":null},{"role":"user","content":"q"}]}`,
		`{"prompt":"hello"}`,
	}
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "p.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n<|im_start|>user\nq<|im_end|>\n", "hello"}
	for i, w := range want {
		if got := prompt(tr.Requests[i].View); got != w {
			t.Errorf("request %d: prompt %q, want %q", i, got, w)
		}
	}
	// Blocks of 4 bytes, the last partial, at most 3: "hello" is "hell", "hello"; a key
	// stands for the text up to its block's end, whatever the blocks before it.
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	key := func(s string) blockKey {
		return blockKey{maphash.String(seeds[0], s), maphash.String(seeds[1], s)}
	}
	if d := cmp.Diff([]blockKey{key("hell"), key("hello")}, blockKeys("hello", 4, 3, &seeds)); d != "" {
		t.Errorf("blocks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]blockKey{key("aaaa"), key("aaaabbbb")}, blockKeys("aaaabbbbcccc", 4, 2, &seeds)); d != "" {
		t.Errorf("blocks past maxBlocksToMatch (-want +got):\n%s", d)
	}
	if got := blockKeys("", 4, 2, &seeds); got != nil {
		t.Errorf("an empty prompt has blocks %v", got)
	}
}

// TestSchedulerRoutes: routes worked out from the plugins' source on three pods, 4-byte blocks,
// simtest.Config (a request's prefill 40 ms; out seconds of decode after it).
func TestSchedulerRoutes(t *testing.T) {
	tests := []struct {
		name     string
		settings Settings
		reqs     []sim.Request
		where    []string
		reasons  []string
	}{
		{
			// prefix-cache alone. r0: nothing stored, every pod 0: drawn (X); done at 0.04,
			// its blocks "aaaa", "aaaabbbb" stored for X. r1 "aaaabbbbcccc" (3 blocks): from
			// the last back, X holds block 2 of 3: trunc(2/3 x 100) = 66, the others 0: X.
			// r2 "aaaaz" (2 blocks): X holds block 1 of 2: 50: X. r3 "zzzz": no pod holds it,
			// all 0: drawn.
			name: "prefix alone", settings: with(Plugin{"prefix-cache", 1}),
			reqs:    []sim.Request{text(0, 0, "aaaabbbb"), text(1, 0, "aaaabbbbcccc"), text(2, 0, "aaaaz"), text(3, 0, "zzzz")},
			where:   []string{"new", "r0", "r0", "any"},
			reasons: []string{"no-match", "prefix-match", "prefix-match", "no-match"},
		},
		{
			// Blocks are stored when the response ends (PostSchedule after the proxy returns):
			// r0 (in flight 100 s) is drawn (X) and nothing is stored yet. r1 at 1 s repeats
			// it: no pod holds a block; least-request (scrape at tick 1: X runs 1) scores X's
			// base 1 + 100 x max(1 - 1, 0) = 1 against the top 1: 0, the others 100: drawn
			// between them (Y). r2 at 2 s (scrape at tick 2: X and Y run 1): X and Y 0, Z 100: Z.
			name: "stored at the end", settings: with(Plugin{"least-request", 1}, Plugin{"prefix-cache", 1}),
			reqs:    []sim.Request{text(0, 100, "aaaabbbb"), text(1, 100, "aaaabbbb"), text(2, 100, "aaaabbbb")},
			where:   []string{"new", "new", "new"},
			reasons: []string{"no-match", "no-match", "no-match"},
		},
		{
			// least-request x2 against prefix-cache x1. r0 (done at 0.04) is drawn (X) and
			// stored. r1 at 1 s, "aaaabbbbcccc", out 100: every pod idle (least-request 100 x 2),
			// X's prefix 66: X 266, the others 200: X. r2 at 2 s repeats r0: X's prefix 100, but
			// X runs r1 (scraped at tick 2): base 1, least-request 0; the others 200 against
			// X's 100: drawn between them, and X matched more (load-over-prefix).
			name: "load over prefix", settings: with(Plugin{"least-request", 2}, Plugin{"prefix-cache", 1}),
			reqs:    []sim.Request{text(0, 0, "aaaabbbb"), text(1, 100, "aaaabbbbcccc"), text(2, 0, "aaaabbbb")},
			where:   []string{"new", "r0", "new"},
			reasons: []string{"no-match", "prefix-match", "load-over-prefix"},
		},
		{
			// The router counts its own requests live, the engines' running only at each
			// scrape: r0 at 1.0 s (tick 1 scraped first, nothing running) is drawn (X). r1 at
			// 1.5 s, no new tick: X has 1 in flight and 0 running as scraped, so its base is
			// 1 + 100 x 1 = 101, score 0; Y and Z 100: drawn between them (Y). r2 at 1.6 s:
			// X and Y 101, Z 100 x (101 - 0)/101 = 100: Z.
			name: "stale scrape", settings: with(Plugin{"least-request", 1}),
			reqs:    []sim.Request{text(1, 100, "a"), text(1.5, 100, "b"), text(1.6, 100, "c")},
			where:   []string{"new", "new", "new"},
			reasons: []string{"no-match", "no-match", "no-match"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := simtest.TextTrace(simtest.Block, tt.reqs...)
			got, why := simtest.Run(t, tr, simtest.Config(3), emulation(tt.settings))
			where := same(got.Routes)
			for i, w := range tt.where {
				if w == "any" {
					where[i] = "any"
				}
			}
			if d := cmp.Diff(tt.where, where); d != "" {
				t.Errorf("routes %v (-want +got):\n%s", got.Routes, d)
			}
			if d := cmp.Diff(tt.reasons, why); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
		})
	}
}

// TestFilter: least-request's filter keeps the pods with fewer than maxWaitingRequests waiting
// (least_request.go:66-70), as last scraped. One pod with one running slot, maxWaitingRequests
// 1: r0 at 0 s runs; r1 at 0.5 s waits behind it, but the scrape of tick 0 (at r0) saw nothing
// waiting, so the pod passes; r2 at 1.5 s: tick 1's scrape sees r1 waiting, 1 is not fewer than
// 1, no pod passes and the router answers 400; kvcheck sends it to the pod with the fewest
// waiting and says all-filtered.
func TestFilter(t *testing.T) {
	s := with(Plugin{"prefix-cache", 1})
	s.Filter, s.MaxWaiting = []string{"least-request"}, 1
	c := simtest.Config(1)
	c.Model.MaxRunning = 1
	tr := simtest.TextTrace(simtest.Block, text(0, 100, "a"), text(0.5, 100, "b"), text(1.5, 100, "c"))
	_, why := simtest.Run(t, tr, c, emulation(s))
	if d := cmp.Diff([]string{"no-match", "no-match", "all-filtered"}, why); d != "" {
		t.Errorf("reasons (-want +got):\n%s", d)
	}
}
