package report

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// assessDocument is the JSON document of kvcheck assess.
type assessDocument struct {
	SchemaVersion int `json:"schema_version"`
	assessRecommendationDoc
	// Ranking is the router ranking, absent without traffic to replay.
	Ranking *rankingDocument `json:"ranking,omitempty"`
}

// Assess is the result of kvcheck assess: its findings are the recommendation's fixes, each
// with the analysis it came from. They count for --fail-on only when the verdict is fix-first:
// otherwise nothing in them blocks the recommendation.
func Assess(r advise.Recommendation) Result { return AssessRanked(r, nil) }

// AssessRanked is Assess with the router ranking (nil: none), which the text shows after the
// evidence and the JSON under "ranking".
func AssessRanked(r advise.Recommendation, rk *rank.Ranking) Result {
	r = nonNilRecommendation(r)
	fs := make([]finding.Finding, len(r.Fixes))
	for i, f := range r.Fixes {
		f.Exempt = r.Verdict != advise.FixFirst
		fs[i] = f
	}
	return Result{Findings: fs, Document: assessDocument{SchemaVersion: SchemaVersion, assessRecommendationDoc: newAssessRecommendationDoc(r), Ranking: rankingDoc(rk)},
		Text: func(t *Text) error { return t.assess(r, rk) }}
}

// nonNilRecommendation makes empty lists render as [] whatever the caller built.
func nonNilRecommendation(r advise.Recommendation) advise.Recommendation {
	if r.Reasons == nil {
		r.Reasons = []advise.Reason{}
	}
	for i := range r.Reasons {
		if r.Reasons[i].Evidence == nil {
			r.Reasons[i].Evidence = []string{}
		}
	}
	if r.Evidence == nil {
		r.Evidence = []advise.Evidence{}
	}
	if r.Fixes == nil {
		r.Fixes = []finding.Finding{}
	}
	if r.NextSteps == nil {
		r.NextSteps = []advise.NextStep{}
	}
	if r.Advice == nil {
		r.Advice = []string{}
	}
	return r
}

// Assess writes a recommendation for people: the verdict first, why, what to fix, the evidence
// table (source and figure per line), router advice, then what to measure next.
func (t *Text) assess(r advise.Recommendation, rk *rank.Ranking) error {
	verdict := "Recommendation: " + r.Verdict.Describe()
	if r.Verdict == advise.FixFirst && r.Then != "" {
		verdict += ", then " + r.Then.Describe()
	}
	t.Verdict(verdict)
	t.Line("confidence: %s", r.Confidence)
	t.Line("")
	reasons := func(v advise.Verdict) {
		for _, x := range r.Reasons {
			if x.Against || x.Verdict != v {
				continue
			}
			t.Line("  [%s] %s", x.Strength, x.Text)
			if len(x.Evidence) > 0 {
				t.Muted("      evidence: %s", strings.Join(x.Evidence, ", "))
			}
		}
	}
	t.Heading("Why")
	reasons(r.Verdict)
	if r.Verdict == advise.FixFirst && r.Then != "" {
		t.Heading("Then, once fixed: " + r.Then.Describe())
		reasons(r.Then)
	}
	var against []advise.Reason
	for _, x := range r.Reasons {
		if x.Against {
			against = append(against, x)
		}
	}
	if len(against) > 0 {
		t.Heading("Against")
		for _, x := range against {
			t.Line("  [%s] %s (points to %s)", x.Strength, x.Text, x.Verdict.Describe())
		}
	}
	if len(r.Fixes) > 0 {
		if r.Verdict == advise.FixFirst {
			t.Heading("Fix first")
		} else {
			t.Heading("Worth fixing (nothing here blocks the recommendation)")
		}
		for _, f := range r.Fixes {
			t.Finding(f)
			if f.Fix != "" {
				t.Muted("  fix (%s): %s", f.Source, f.Fix)
			}
		}
	}
	t.Heading("Evidence")
	if len(r.Evidence) == 0 {
		t.Line("none")
	} else {
		rows := make([][]string, 0, len(r.Evidence))
		for _, e := range r.Evidence {
			rows = append(rows, []string{e.Source, e.What, e.Figure, e.Input, e.ID})
		}
		if err := t.Table([]string{"SOURCE", "WHAT", "FIGURE", "INPUT", "ID"}, rows); err != nil {
			return err
		}
	}
	if len(r.Advice) > 0 {
		route := r.Verdict
		if route == advise.FixFirst {
			route = r.Then
		}
		t.Heading(fmt.Sprintf("Advice for %s", route.Describe()))
		for _, a := range r.Advice {
			t.Line("  - %s", a)
		}
	}
	if rk != nil {
		route := r.Verdict
		if route == advise.FixFirst {
			route = r.Then
		}
		if err := t.ranking(rk, route); err != nil {
			return err
		}
	}
	t.Heading("Next steps")
	if len(r.NextSteps) == 0 {
		t.Line("  none: every measurement assess uses was given")
	}
	for _, n := range r.NextSteps {
		t.Line("  - %s: %s", n.Measure, n.Settles)
	}
	return nil
}
