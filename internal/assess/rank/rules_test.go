package rank

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// idle is a row's load as a replay with the traffic's own arrival times measures it: the
// evenest spread 1.00 and no request waiting on the busiest replica, so no load is a hot spot
// and only Rules.Concentration can hold a concentrating row back.
func idle(r Row) Row {
	r.load = sim.Load{Even: 1, ArrivalsKnown: true}
	return r
}

func names(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name())
	}
	return out
}

// TestConcentrationNeverFirst: issue 22, failure 2 (LiteLLM chat, the top three rows at load
// max/mean 4.00, every request on one of four replicas, ranked first because nothing waits at
// this load). Figures by hand, every row one unknown requirement, nothing waiting anywhere:
//   - a 50.2% and b 50.0% at 4.00 concentrate (>= 2.0); c 49.3% at 1.34 is balanced and within
//     one whole point (49 against 50): c is first, a and b follow in rule 2's order;
//   - e 47.0% at 2.40 concentrates; f 46.2% at 1.10 is within a point of it (46 against 47):
//     f comes before e; g 40.0% at 1.00 is six points below e and stays after it.
//
// Before, the order was a, b, c, e, f, g: a pile-up first, whether or not requests wait.
func TestConcentrationNeverFirst(t *testing.T) {
	row := func(p string, saved, load float64) Row {
		return idle(Row{Candidate: Candidate{Policy: p, Variant: Shipped, Requirements: reqs(Unknown), Family: FamilyKV}, PrefillSaved: saved, HitRate: 0.3 + saved/2, LoadMaxOverMean: load, TTFTP99: 0.1})
	}
	rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "round-robin", TodayHitRate: 0.3}
	rk.Rows = []Row{row("a", 0.502, 4), row("b", 0.500, 4), row("c", 0.493, 1.34), row("e", 0.470, 2.4), row("f", 0.462, 1.1), row("g", 0.40, 1)}
	rk.settle()
	want := []string{"c (shipped)", "a (shipped)", "b (shipped)", "f (shipped)", "e (shipped)", "g (shipped)"}
	if d := cmp.Diff(want, names(rk.Rows)); d != "" {
		t.Fatalf("order (-want +got):\n%s", d)
	}
	for _, r := range rk.Rows {
		if r.Rank == 0 {
			t.Errorf("%s not ranked (%s): an idle concentration is no hot spot", r.Name(), r.Excluded)
		}
		if conc := r.Policy == "a" || r.Policy == "b" || r.Policy == "e"; r.Concentrates != conc {
			t.Errorf("%s concentrates %v, want %v", r.Name(), r.Concentrates, conc)
		}
	}
	if rk.FirstBy != "balanced" || rk.Displaced != "a (shipped)" {
		t.Errorf("first by %q displacing %q, want balanced, a (shipped)", rk.FirstBy, rk.Displaced)
	}
	if w := strings.Join(rk.Why, "\n"); !strings.Contains(w, "a (shipped) saves 50.2% but concentrates requests (load max/mean 4.00 >= 2.0") {
		t.Errorf("why:\n%s", w)
	}
	// With no balanced row within a point, the concentrating row is first and why says so.
	rk.Rows = []Row{row("a", 0.502, 4), row("g", 0.40, 1)}
	rk.settle()
	if rk.Rows[0].Policy != "a" || !strings.Contains(strings.Join(rk.Why, "\n"), "it concentrates requests itself (load max/mean 4.00)") {
		t.Errorf("first %s, why %q", rk.Rows[0].Name(), rk.Why)
	}
}

// TestStackFirst: the product the user runs wins ties and wins within the stack margin (5
// points of all prompt tokens by default) of the best. Rows by hand, one unknown requirement
// each, today's hit rate 30%:
//   - x (another product) serves 70% (saves 57.1% of today's 70% misses: (0.70-0.30)/0.70),
//     l (LiteLLM, the stack) 66% (51.4%): x is first in rule 2's order, but l is 4 points
//     behind, under 5: l first, displacing x;
//   - x at 72% (60.0%) is 6 points ahead, over 5: x stays first (a change of product must
//     bring the min gain);
//   - x and l both at 66% (51.4%): a tie on figures, the stack breaks it.
//
// Each under a KV-aware verdict, which names a router whatever the tie.
func TestStackFirst(t *testing.T) {
	row := func(p, product string, hit float64) Row {
		return idle(Row{Candidate: Candidate{Policy: p, Product: product, Variant: Shipped, Requirements: reqs(Unknown), Family: FamilyKV},
			HitRate: hit, PrefillSaved: (hit - 0.3) / 0.7, LoadMaxOverMean: 1.1, TTFTP99: 0.1})
	}
	for _, c := range []struct {
		xHit  float64
		first string
		by    string
	}{{0.70, "l", "stack"}, {0.72, "x", ""}, {0.66, "l", ""}} {
		rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "litellm-simple-shuffle", TodayHitRate: 0.3,
			Stack: Stack{Product: LiteLLM, From: "--today litellm-simple-shuffle"}}
		rk.Rows = []Row{row("x", SGLang, c.xHit), row("l", LiteLLM, 0.66)}
		rk.Agree(FamilyKV)
		if rk.Rows[0].Policy != c.first || rk.FirstBy != c.by {
			t.Errorf("x at %.2f: first %s by %q, want %s by %q (why %q)", c.xHit, rk.Rows[0].Name(), rk.FirstBy, c.first, c.by, rk.Why)
		}
		w := strings.Join(rk.Why, "\n")
		switch {
		case c.by == "stack" && !strings.Contains(w, "LiteLLM is the product you run (--today litellm-simple-shuffle): x (shipped) serves 4.0 points more of all prompt tokens, under the 5-point stack margin"):
			t.Errorf("x at %.2f: why %q", c.xHit, w)
		case c.xHit == 0.66 && !strings.Contains(w, "ties with x (shipped) at 51 points and is the product you run"):
			t.Errorf("tie: why %q", w)
		}
	}
}

// TestFirstAgreesWithVerdict: the first row is of the verdict's kind. Today 30%; rows by hand:
//   - session-affinity verdict: k (KV-aware) serves 80%, s (session router) 78%: k is first in
//     rule 2's order, but only 2 points ahead, under the 5-point session margin: s first;
//     k at 84% is 6 points ahead: k stays first;
//   - KV-aware verdict: s 80% before k 79% in rule 2's order: k first, whatever s saves;
//   - no router verdict (nothing): the order stands, and no configuration is given.
func TestFirstAgreesWithVerdict(t *testing.T) {
	row := func(p, product, family string, hit float64) Row {
		return idle(Row{Candidate: Candidate{Policy: p, Product: product, Variant: Shipped, Requirements: reqs(Unknown), Family: family},
			HitRate: hit, PrefillSaved: (hit - 0.3) / 0.7, LoadMaxOverMean: 1.1, TTFTP99: 0.1})
	}
	for _, c := range []struct {
		answer     string
		kHit, sHit float64
		first, by  string
	}{
		{FamilySession, 0.80, 0.78, "s", "answer"},
		{FamilySession, 0.84, 0.78, "k", ""},
		{FamilyKV, 0.79, 0.80, "k", "answer"},
		{AnswerNone, 0.80, 0.78, "k", ""},
	} {
		rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "round-robin", TodayHitRate: 0.3}
		rk.Rows = []Row{row("llmd-approx", LLMD, FamilyKV, c.kHit), row("litellm-session-affinity", LiteLLM, FamilySession, c.sHit)}
		rk.Agree(c.answer)
		first := map[string]string{"llmd-approx": "k", "litellm-session-affinity": "s"}[rk.Rows[0].Policy]
		if first != c.first || rk.FirstBy != c.by || rk.NoWinner != "" {
			t.Errorf("%s, k %.2f s %.2f: first %s by %q (no winner %q), want %s by %q", c.answer, c.kHit, c.sHit, first, rk.FirstBy, rk.NoWinner, c.first, c.by)
		}
		if (rk.Snippet == nil) != (c.answer == AnswerNone) {
			t.Errorf("%s: snippet %v", c.answer, rk.Snippet != nil)
		}
	}
}

// TestAnswerNeedsRequirements: a row of the verdict's kind with a requirement missing stands
// for no verdict. Under session affinity, k (KV-aware, 0.80 hit, one requirement unknown) and
// s (session, 0.80, one missing: vLLM Router's consistent_hash on chats that name no session,
// every one hashed to one worker) serve the same; rule 2 puts k first (fewer missing), and s
// may not displace it by the verdict's kind: k stays first, chosen by the order alone. Before,
// s was first "by answer".
func TestAnswerNeedsRequirements(t *testing.T) {
	k := idle(Row{Candidate: Candidate{Policy: "llmd-approx", Product: LLMD, Variant: Shipped, Requirements: reqs(Unknown), Family: FamilyKV},
		HitRate: 0.8, PrefillSaved: 0.5 / 0.7, LoadMaxOverMean: 1.1, TTFTP99: 0.1})
	s := idle(Row{Candidate: Candidate{Policy: "vllm-router-consistent-hash", Product: "vllm-router", Variant: Shipped, Requirements: reqs(Missing), Family: FamilySession},
		HitRate: 0.8, PrefillSaved: 0.5 / 0.7, LoadMaxOverMean: 1.1, TTFTP99: 0.1})
	rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "round-robin", TodayHitRate: 0.3}
	rk.Rows = []Row{s, k}
	rk.Agree(FamilySession)
	if got := names(rk.Rows); rk.Rows[0].Policy != "llmd-approx" || rk.FirstBy != "" {
		t.Errorf("order %v, first by %q; want llmd-approx first by the order alone", got, rk.FirstBy)
	}
}

// TestRouterVerdictNamesOne: issue 22, failure 3 (a KV-aware verdict whose ranking named no
// router: the rows tied). Three KV rows that the traffic does not separate (the same prefill
// saved and hit rate), with nothing else to tell them apart but the name: without a verdict
// none is first; under a KV-aware verdict one is named, and why says the tie.
func TestRouterVerdictNamesOne(t *testing.T) {
	row := func(p, label string) Row {
		return idle(Row{Candidate: Candidate{Policy: p, Label: label, Variant: Shipped, Requirements: reqs(Unknown), Family: FamilyKV}, HitRate: 0.6, PrefillSaved: 0.4, LoadMaxOverMean: 1, TTFTP99: 0.1})
	}
	rk := &Ranking{HotSpot: 2, AddReplicaAt: -1, Today: "round-robin", TodayHitRate: 0.333}
	rk.Rows = []Row{row("sglang-cache-aware", "policy-hint defaults"), row("ray-prefix-affinity", ""), row("sglang-cache-aware", "CLI defaults")}
	rk.settle()
	if !strings.Contains(rk.NoWinner, "the traffic does not separate the 3 ranked routers") {
		t.Errorf("without a verdict: no winner %q", rk.NoWinner)
	}
	rk.Agree(FamilyKV)
	if rk.NoWinner != "" || rk.Rows[0].Rank != 1 || rk.Rows[0].Name() != "ray-prefix-affinity (shipped)" {
		t.Fatalf("KV verdict: first %s, no winner %q", rk.Rows[0].Name(), rk.NoWinner)
	}
	if w := strings.Join(rk.Why, "\n"); !strings.Contains(w, "ties with sglang-cache-aware (shipped, CLI defaults) on every count the rule weighs; the recommendation needs one router") {
		t.Errorf("why %q", w)
	}
	// The same router under two shipped defaults: either will do.
	rk.Rows = []Row{row("sglang-cache-aware", "policy-hint defaults"), row("sglang-cache-aware", "CLI defaults")}
	rk.Agree(FamilyKV)
	if w := strings.Join(rk.Why, "\n"); rk.Rows[0].Label != "CLI defaults" || !strings.Contains(w, "the same router as sglang-cache-aware (shipped, policy-hint defaults) with other settings, and the same figures: either will do") {
		t.Errorf("first %s, why %q", rk.Rows[0].Name(), w)
	}
}
