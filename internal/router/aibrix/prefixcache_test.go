package aibrix

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

func emulation(s Settings) sim.PolicyInfo { return (Router{}).Emulations(s)[0] }

// text is a completion whose prompt is p, in flight for out seconds under simtest.Config.
func text(at float64, out int, p string) sim.Request {
	return simtest.TextReq(at, out, p, simtest.Block, 1)
}

// same says, for each route, whether it is the first route's replica ("first") or not
// ("other"): the first request of each case goes to a replica drawn at random among idle ones,
// and the rest follow from it.
func same(routes []int) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = "other"
		if r == routes[0] {
			out[i] = "first"
		}
	}
	return out
}

// TestPrefixCacheRoutes: routes worked out from prefix_cache.go with the binary's defaults
// (4-byte blocks, imbalance 8, 1 standard deviation), requests in flight 100 s so that each
// counts as running until the case ends.
func TestPrefixCacheRoutes(t *testing.T) {
	bin := Binary()
	tests := []struct {
		name      string
		settings  Settings
		replicas  int
		reqs      []sim.Request
		where     []string
		reasons   []string
		secondMid bool // routes[1] and routes[2] go to one replica
	}{
		{
			// r0: nothing in the table, three idle pods: one drawn (X). r1 matches X on 2 of
			// 3 blocks (66%), but X runs 1 of [1 0 0]: mean 1/3, sample deviation
			// sqrt((4/9+1/9+1/9)/2) = 0.577, bound 0.91 < 1, so the match is skipped and an idle
			// pod is drawn (Y). r2 repeats r1: blocks 1-2 held by X and Y, block 3 by Y alone:
			// Y 100%, X 66%; counts [1 1 0], bound 2/3 + 0.577 = 1.24 >= 1: Y.
			name: "load bound skips a lone busy pod", settings: bin, replicas: 3,
			reqs:      []sim.Request{text(0, 100, "aaaabbbb"), text(1, 100, "aaaabbbbcccc"), text(2, 100, "aaaabbbbcccc")},
			where:     []string{"first", "other", "other"},
			reasons:   []string{"no-match-least-request", "prefix-match-skipped", "prefix-match"},
			secondMid: true,
		},
		{
			// Two pods: counts [c 0] give mean c/2 and deviation c/sqrt(2), a bound of 1.21c,
			// so the busy pod always passes: r1-r8 follow r0 to X (8 running). r9 finds 9
			// running on X and 0 on the other: 9 - 0 > 8, imbalanced, only the idle pod may
			// match, and it holds nothing: it takes r9 by least requests. r10: [9 1], 8 > 8
			// is false; both pods hold both blocks (100%), the one with fewer requests first,
			// within the bound (5 + 5.66): the other pod again.
			name: "imbalance gate", settings: bin, replicas: 2,
			reqs: []sim.Request{text(0, 100, "aaaabbbb"), text(1, 100, "aaaabbbb"), text(2, 100, "aaaabbbb"),
				text(3, 100, "aaaabbbb"), text(4, 100, "aaaabbbb"), text(5, 100, "aaaabbbb"), text(6, 100, "aaaabbbb"),
				text(7, 100, "aaaabbbb"), text(8, 100, "aaaabbbb"), text(9, 100, "aaaabbbb"), text(10, 100, "aaaabbbb")},
			where: []string{"first", "first", "first", "first", "first", "first", "first", "first", "first", "other", "other"},
			reasons: []string{"no-match-least-request", "prefix-match", "prefix-match", "prefix-match", "prefix-match", "prefix-match",
				"prefix-match", "prefix-match", "prefix-match", "imbalanced", "prefix-match"},
		},
		{
			// A prompt shorter than a block has no block: nothing matches, and the idle pod
			// takes it although the busy one was sent the same text.
			name: "short prompt", settings: bin, replicas: 2,
			reqs:    []sim.Request{text(0, 100, "abc"), text(1, 100, "abc")},
			where:   []string{"first", "other"},
			reasons: []string{"no-match-least-request", "no-match-least-request"},
		},
		{
			// A table of 2 blocks: r0 writes 3 and the first, least recently written, goes;
			// r1 misses block 1 and matches nothing: the idle pod.
			name: "table capacity", settings: func() Settings { s := bin; s.BlockNumber = 2; return s }(), replicas: 2,
			reqs:    []sim.Request{text(0, 100, "aaaabbbbcccc"), text(1, 100, "aaaabbbb")},
			where:   []string{"first", "other"},
			reasons: []string{"no-match-least-request", "no-match-least-request"},
		},
		{
			// Blocks unwritten for more than 1 s go at the 1 s sweeps: at t = 1.5 the last
			// sweep (t = 1) found r0's blocks 1 s old, not more: r1 matches and follows r0.
			name: "kept until the sweep", settings: func() Settings { s := bin; s.EvictionMins = 1.0 / 60; return s }(), replicas: 2,
			reqs:    []sim.Request{text(0, 100, "aaaabbbb"), text(1.5, 100, "aaaabbbb")},
			where:   []string{"first", "first"},
			reasons: []string{"no-match-least-request", "prefix-match"},
		},
		{
			// At t = 2.5 the sweep at t = 2 found them 2 s old: gone; r1 goes to the idle pod.
			name: "dropped at the sweep", settings: func() Settings { s := bin; s.EvictionMins = 1.0 / 60; return s }(), replicas: 2,
			reqs:    []sim.Request{text(0, 100, "aaaabbbb"), text(2.5, 100, "aaaabbbb")},
			where:   []string{"first", "other"},
			reasons: []string{"no-match-least-request", "no-match-least-request"},
		},
		{
			// The manifests' 128-byte blocks: a 100-byte prompt has none, so a repeat of it
			// is routed by load alone.
			name: "manifest blocks", settings: Manifests(), replicas: 2,
			reqs:    []sim.Request{text(0, 100, strings.Repeat("x", 100)), text(1, 100, strings.Repeat("x", 100))},
			where:   []string{"first", "other"},
			reasons: []string{"no-match-least-request", "no-match-least-request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := simtest.Run(t, simtest.TextTrace(simtest.Block, tt.reqs...), simtest.Config(tt.replicas), emulation(tt.settings))
			if d := cmp.Diff(tt.where, same(got.Routes)); d != "" {
				t.Errorf("routes %v (-want +got):\n%s", got.Routes, d)
			}
			if d := cmp.Diff(tt.reasons, why); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
			if tt.secondMid && got.Routes[1] != got.Routes[2] {
				t.Errorf("routes %v: want r1 and r2 on one replica", got.Routes)
			}
		})
	}
}

// TestMessage: the text the gateway routes a chat by: contents joined with one space, a list
// as its JSON as sent, null as "null", a missing content as nothing, reasoning not read.
func TestMessage(t *testing.T) {
	v := &sim.View{Chat: true, Text: "Shi" + "think",
		Pieces: []sim.Piece{{End: 1, Kind: sim.PieceString}, {End: 1, Kind: sim.PieceList}, {End: 3, Kind: sim.PiecePartText},
			{End: 3, Kind: sim.PieceNull}, {End: 8, Kind: sim.PieceReasoning}, {End: 8, Kind: sim.PieceAbsent}},
		Lists: []string{`[ {"type": "text", "text": "hi"} ]`}}
	if got, want := message(v), `S [ {"type": "text", "text": "hi"} ] null `; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := message(&sim.View{Text: "plain"}); got != "plain" {
		t.Errorf("a completion's message = %q, want its prompt", got)
	}
}

// TestRefusesListPrompts: a completion of token ids is answered 400 by the gateway (it reads
// prompt as a string), so the emulation refuses the log rather than route it.
func TestRefusesListPrompts(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block, text(0, 1, "a"), sim.Request{Arrival: 1, Blocks: []uint64{1}, InputTokens: 4, N: 1, View: &sim.View{PromptIDs: 4}})
	err := emulation(Manifests()).Check(simtest.Config(2), tr)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 requests") {
		t.Errorf("Check = %v, want it to refuse 1 of 2 requests", err)
	}
}
