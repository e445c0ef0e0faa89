package rank

import (
	"context"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestNoWinnerOneRequest: one request (a shared block S, then one of its own) on 2 replicas.
// The warm-up is the requests before the middle one, none here, so the request counts. Worked by
// hand: no cache holds anything when it arrives, so every router (round-robin today,
// kv-longest, llm-d's approximate producer) computes both blocks: each saves 0 of today's 2
// blocks. Before, the rule still named a "First" at 0% and wrote llm-d's configuration for it;
// nothing on this traffic sets a router apart, so none is named and no configuration is given.
func TestNoWinnerOneRequest(t *testing.T) {
	tr := &sim.Trace{Name: "one", Format: "mooncake", BlockSize: 16, PrefixInfo: true,
		Requests: []sim.Request{{Arrival: 0, Blocks: blocks(1, 1, 0), InputTokens: 32, OutputTokens: 1}}}
	cands := []Candidate{
		{Policy: "llmd-approx", Product: LLMD, Variant: Shipped, Settings: llmd.Shipped()},
		{Policy: "kv-longest", Variant: Shipped}, {Policy: "round-robin", Variant: Shipped},
	}
	rk, err := Run(context.Background(), tr, setup(2, -1), cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rk.Rows {
		if r.Rank == 0 || r.PrefillSaved != 0 || r.HitRate != 0 {
			t.Errorf("%s: rank %d saved %v hit %v, want ranked at 0 and 0", r.Name(), r.Rank, r.PrefillSaved, r.HitRate)
		}
	}
	if !strings.Contains(rk.NoWinner, "no router saves a whole point of today's prefill (round-robin) after the warm-up") {
		t.Errorf("no winner: %q", rk.NoWinner)
	}
	if len(rk.Why) != 0 || rk.Snippet != nil {
		t.Errorf("why %q, snippet %+v: want neither without a first", rk.Why, rk.Snippet)
	}
}

// TestNoWinnerFigures applies the rule's "first" to figures chosen by hand.
func TestNoWinnerFigures(t *testing.T) {
	row := func(p string, saved, hit float64, q ...string) Row {
		return Row{Candidate: Candidate{Policy: p, Variant: Shipped, Requirements: reqs(q...)}, PrefillSaved: saved, HitRate: hit, LoadMaxOverMean: 1.1}
	}
	for _, tc := range []struct {
		name  string
		today float64
		rows  []Row
		want  string // "" when a first is named
	}{
		// Today's routing hits every prompt token after the warm-up: nothing left to save.
		{"today hits all", 1, []Row{row("a", 0, 1, Unknown), row("b", 0, 1)}, "serves every prompt token after the warm-up from cache"},
		// Under half a point (rounds to 0) and a loss: no router saves a whole point.
		{"under a point", 0.3, []Row{row("a", 0.004, 0.302), row("b", -0.05, 0.28)}, "the most is a (shipped) at +0.4%"},
		{"all lose", 0.3, []Row{row("a", -0.01, 0.29), row("b", -0.05, 0.28)}, "the most is a (shipped) at -1.0%"},
		// 25% each, to the token: only requirements would tell them apart.
		{"not separated", 0.3, []Row{row("a", 0.25, 0.5, Unknown, Unknown), row("b", 0.25, 0.5, Unknown)}, "the traffic does not separate the 2 ranked routers: each saves 25.0%"},
		// The same whole points but not the same figure: the rule's tie-break stands.
		{"tie on points only", 0.3, []Row{row("a", 0.252, 0.5, Unknown, Unknown), row("b", 0.248, 0.49, Unknown)}, ""},
		// The first two tie on every count the rule weighs (no requirement missing, 50 points,
		// none met, two not met, both shipped, the same TTFT p99 and load): only the name would
		// pick, so none is named; c, at 12 points, is not part of the tie.
		{"name tie", 0.3, []Row{row("b", 0.502, 0.6, Unknown, Unknown), row("c", 0.12, 0.35, Unknown), row("a", 0.498, 0.59, Unknown, Unknown)},
			"a (shipped), b (shipped) tie on everything the rule weighs (0 requirement(s) missing, 50 points of today's prefill saved, 0 met, 2 not met, all shipped, TTFT p99 0 ms, load max/mean 1.10)"},
		// The same tie, but both rows are one router under two shipped settings (the labels
		// differ, the policy does not): the router is named, and Why says either will do.
		{"one router tie", 0.3, []Row{labelled(row("s", 0.502, 0.6, Unknown, Unknown), "y"), row("c", 0.12, 0.35, Unknown), labelled(row("s", 0.498, 0.59, Unknown, Unknown), "x")}, ""},
		// One ranked row that saves: it is first.
		{"one saves", 0.3, []Row{row("a", 0.2, 0.45)}, ""},
	} {
		rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "round-robin", TodayHitRate: tc.today, Rows: tc.rows}
		rk.settle()
		switch {
		case tc.want == "" && (rk.NoWinner != "" || len(rk.Why) == 0):
			t.Errorf("%s: no winner %q, why %q; want a first", tc.name, rk.NoWinner, rk.Why)
		case tc.want != "" && (!strings.Contains(rk.NoWinner, tc.want) || len(rk.Why) != 0):
			t.Errorf("%s: no winner %q, why %q; want %q and no why", tc.name, rk.NoWinner, rk.Why, tc.want)
		}
		if tc.name == "one router tie" && (rk.Rows[0].Label != "x" || !strings.Contains(strings.Join(rk.Why, "\n"), "the same router as s (shipped, y) with other settings, and the same figures: either will do")) {
			t.Errorf("%s: first %s, why %q", tc.name, rk.Rows[0].Name(), rk.Why)
		}
	}
}

func labelled(r Row, label string) Row { r.Label = label; return r }

// TestRuleSaysNoWinner: the rule assess prints beside the ranking (text and JSON "rule") states
// the whole rule, the three cases in which no router is named first included, as README does;
// before, it ended at "name" and a reader saw "No router first" against a rule that always
// names one.
func TestRuleSaysNoWinner(t *testing.T) {
	tr := &sim.Trace{Name: "one", Format: "mooncake", BlockSize: 16, PrefixInfo: true,
		Requests: []sim.Request{{Arrival: 0, Blocks: blocks(1, 1, 0), InputTokens: 32, OutputTokens: 1}}}
	rk, err := Run(context.Background(), tr, setup(2, -1), []Candidate{{Policy: "round-robin", Variant: Shipped}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"none is first when", "no ranked row saves a whole point", "all save the same", "the first two tie but for the name"} {
		if !strings.Contains(rk.Rule, want) {
			t.Errorf("rule %q does not say %q", rk.Rule, want)
		}
	}
}
