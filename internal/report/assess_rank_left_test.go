package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
)

// TestAssessRankingNotSimulated: a router the --config files set up that runs nothing kvcheck
// emulates (an unknown production-stack routing logic) is shown with where and why, in the text
// and in the JSON, rather than left out without a word.
func TestAssessRankingNotSimulated(t *testing.T) {
	rk := rankingFixture()
	why := `routingLogic "fancy" is not one production-stack's router knows (roundrobin, session)`
	rk.NotSimulated = []rank.NotSimulated{{Product: rank.ProdStack, Where: "values.yaml:31", Reason: why}}
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	if text := string(render(t, FormatText, res)); !strings.Contains(text, "  configured, not simulated:\n    production-stack (values.yaml:31): "+why+"\n") {
		t.Errorf("the text does not show the router left out:\n%s", text)
	}
	var doc struct {
		Ranking struct {
			NotSimulated []map[string]string `json:"not_simulated"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"product": rank.ProdStack, "configured_in": "values.yaml:31", "reason": why}
	if n := doc.Ranking.NotSimulated; len(n) != 1 || n[0]["product"] != want["product"] || n[0]["configured_in"] != want["configured_in"] || n[0]["reason"] != want["reason"] {
		t.Errorf("not_simulated %v, want [%v]", n, want)
	}
}
