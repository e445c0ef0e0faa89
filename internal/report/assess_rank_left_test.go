package report

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// TestAssessRankingNotSimulated: a router the --config files set up that runs nothing kvcheck
// emulates (an unknown production-stack routing logic) is shown with where and why, in the text
// and in the JSON, rather than left out without a word; the values of it kvcheck could not read
// stay on its line and in its JSON notes (before, they were dropped with the row).
func TestAssessRankingNotSimulated(t *testing.T) {
	rk := rankingFixture()
	why := `routingLogic "fancy" is not one production-stack's router knows (roundrobin, session)`
	note := `--kv-aware-threshold "lots" in values.yaml:31 is not a whole number: kvcheck could not read it; fix the value`
	rk.NotSimulated = []product.NotSimulated{{Product: prodstack.ID, Where: "values.yaml:31", Reason: why, Notes: []string{note}}}
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	if text := string(render(t, FormatText, res)); !strings.Contains(text, "  configured, not simulated:\n    production-stack (values.yaml:31): "+why+"\n      "+note+"\n") {
		t.Errorf("the text does not show the router left out with its unread value:\n%s", text)
	}
	type notSim struct {
		Product      string   `json:"product"`
		ConfiguredIn string   `json:"configured_in"`
		Reason       string   `json:"reason"`
		Notes        []string `json:"notes"`
	}
	var doc struct {
		Ranking struct {
			NotSimulated []notSim `json:"not_simulated"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	want := notSim{Product: prodstack.ID, ConfiguredIn: "values.yaml:31", Reason: why, Notes: []string{note}}
	if n := doc.Ranking.NotSimulated; len(n) != 1 || !reflect.DeepEqual(n[0], want) {
		t.Errorf("not_simulated %+v, want [%+v]", n, want)
	}
}

// TestAssessRankingNoWinner: a ranking whose rows nothing on the traffic sets apart names no
// first: the text says why in its place, with neither the first's requirements nor a
// configuration to apply, and the JSON carries the reason as no_winner.
func TestAssessRankingNoWinner(t *testing.T) {
	rk := rankingFixture()
	why := "no router saves a whole point of today's prefill (round-robin) after the warm-up (the most is llmd-precise (tuned) at +0.3%)"
	rk.NoWinner, rk.Why, rk.Snippet = why, nil, nil
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	text := string(render(t, FormatText, res))
	if !strings.Contains(text, "No router first\n  - "+why+"\n") || strings.Contains(text, "First:") || strings.Contains(text, "Configuration to apply") {
		t.Errorf("the text does not say why no router is first, or names one:\n%s", text)
	}
	var doc struct {
		Ranking struct {
			NoWinner string   `json:"no_winner"`
			Why      []string `json:"why"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Ranking.NoWinner != why || len(doc.Ranking.Why) != 0 {
		t.Errorf("no_winner %q, why %q", doc.Ranking.NoWinner, doc.Ranking.Why)
	}
}

// TestAssessRankingTodayNotes: today's routing replayed otherwise than its settings say (its
// engines publish no KV events) says so under the ranking's heading and in the JSON.
func TestAssessRankingTodayNotes(t *testing.T) {
	rk := rankingFixture()
	rk.Today = "dynamo-kv"
	note := "simulated without engine KV events: the files show an engine without KV events (dgd.yaml:15 VllmWorker)"
	rk.TodayNotes = []string{note}
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	if text := string(render(t, FormatText, res)); !strings.Contains(text, "\n  today's dynamo-kv: "+note+"\n") {
		t.Errorf("the text does not show today's note:\n%s", text)
	}
	var doc struct {
		Ranking struct {
			TodayNotes []string `json:"today_notes"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	if n := doc.Ranking.TodayNotes; len(n) != 1 || n[0] != note {
		t.Errorf("today_notes %q", n)
	}
}

// TestAssessRankingBriefPassesOverSameRouter: the brief view's three rows pass over a row that
// is a shown router under other settings with every figure alike (SGLang's CLI and policy-hint
// defaults on a trace both route alike), showing the next router instead; --evidence all shows
// it. The fixture's ranked rows are llmd-precise, dynamo-kv, llmd-approx, dynamo-round-robin;
// a second llmd-precise row ("other" settings, the same figures) put second leaves
// llmd-precise, dynamo-kv, llmd-approx on the screen, and 2 more ranked (5 ranked, 3 shown).
func TestAssessRankingBriefPassesOverSameRouter(t *testing.T) {
	rk := rankingFixture()
	twin := rk.Rows[0]
	twin.Label, twin.Rank = "other", 2
	rk.Rows = append([]rank.Row{rk.Rows[0], twin}, rk.Rows[1:]...)
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	text := string(render(t, FormatText, res))
	if strings.Contains(text, "(other)") || !strings.Contains(text, "llmd-approx") || strings.Contains(text, "dynamo-round-robin") || !strings.Contains(text, "2 more ranked") {
		t.Errorf("the brief view shows the twin row, or not the next router:\n%s", text)
	}
}
