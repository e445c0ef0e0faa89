package report

import (
	"fmt"
	"strconv"
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

// assess writes a recommendation for people in three parts, so that it reads on one screen:
// the answer and why (each reason's gist, what to fix), then the figures the reasons cite with
// the input each came from (inputs listed once, numbered), and with --evidence all every figure,
// each reason and finding in full and every router row. The router ranking and what to measure
// next follow; empty figures are left out rather than printed as zeros.
func (t *Text) assess(r advise.Recommendation, rk *rank.Ranking) error {
	brief := func(s string) string {
		if t.all {
			return s
		}
		return gist(s)
	}
	verdict := "Recommendation: " + r.Verdict.Describe()
	if r.Verdict == advise.FixFirst && r.Then != "" {
		verdict += ", then " + r.Then.Describe()
	}
	if r.Router != "" {
		verdict += ", starting from " + r.Router
	}
	t.Verdict(fmt.Sprintf("%s (confidence: %s)", verdict, r.Confidence))
	// The evidence IDs each reason cites, with --evidence all; the brief view lists the cited
	// figures themselves below.
	cite := func(ids []string) string {
		if len(ids) == 0 || !t.all {
			return ""
		}
		return " [" + strings.Join(ids, ", ") + "]"
	}
	reasons := func(v advise.Verdict) {
		for _, x := range r.Reasons {
			if x.Against || x.Verdict != v {
				continue
			}
			t.Line("  - %s%s (%s)", brief(x.Text), cite(x.Evidence), x.Strength)
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
			if t.all {
				t.Line("  - %s%s (%s; points to %s)", x.Text, cite(x.Evidence), x.Strength, x.Verdict.Describe())
			} else {
				t.Line("  - %s (%s)", gist(x.Text), x.Strength)
			}
		}
	}
	if len(r.Fixes) > 0 {
		if r.Verdict == advise.FixFirst {
			t.Heading("Fix first")
		} else {
			t.Heading("Worth fixing (not blocking)")
		}
		for _, f := range r.Fixes {
			f.Message = brief(f.Message)
			if rule := f.Properties["rule"]; rule != "" {
				// A configuration rule's table id, as kvcheck lint shows it.
				f.Code = rule + " " + f.Code
			}
			t.Finding(f)
			switch {
			case f.Fix == "":
			case t.all:
				t.Muted("  fix (%s): %s", f.Source, f.Fix)
			default:
				t.Muted("  fix: %s", gist(f.Fix))
			}
		}
	}
	inputs := evidenceInputs(r.Evidence)
	if err := t.assessFigures(r, inputs); err != nil {
		return err
	}
	if len(r.Advice) > 0 {
		route := r.Verdict
		if route == advise.FixFirst {
			route = r.Then
		}
		t.Heading(adviceHeading(route))
		for _, a := range r.Advice {
			t.Line("  - %s", brief(a))
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
		if t.all {
			t.Line("  - %s: %s", n.Measure, n.Settles)
		} else {
			t.Line("  - %s", gist(n.Measure))
		}
	}
	if !t.all {
		t.Muted("--evidence all: all %d figures, every reason in full, every router row", len(r.Evidence))
	}
	return nil
}

// adviceHeading names the advice for the routing answer.
func adviceHeading(route advise.Verdict) string {
	switch route {
	case advise.SessionAffinity, advise.KVAwareRouter:
		return "Deploying " + route.Describe()
	case advise.Nothing:
		return "Keeping today's routing"
	}
	return "Advice"
}

// evidenceInputs numbers the inputs the evidence came from, once each, in the order they
// first appear: the evidence rows cite the number.
func evidenceInputs(ev []advise.Evidence) []assessInput {
	var out []assessInput
	seen := map[string]bool{}
	for _, e := range ev {
		if e.Input == "" || seen[e.Input] {
			continue
		}
		seen[e.Input] = true
		out = append(out, assessInput{Source: e.Source, Input: e.Input})
	}
	return out
}

// assessInput is one input the evidence came from, and the analysis that read it first.
type assessInput struct{ Source, Input string }

// inputNumber is the number evidence from in cites ("" for none).
func inputNumber(inputs []assessInput, in string) string {
	for i, x := range inputs {
		if x.Input == in {
			return strconv.Itoa(i + 1)
		}
	}
	return ""
}

// assessFigures writes the figures the reasons cite, one a line with the input's number, then
// the numbered inputs; with --evidence all, the whole evidence table.
func (t *Text) assessFigures(r advise.Recommendation, inputs []assessInput) error {
	if len(r.Evidence) == 0 {
		return nil
	}
	cited := map[string]bool{}
	for _, x := range r.Reasons {
		for _, id := range x.Evidence {
			cited[id] = true
		}
	}
	var decisive []advise.Evidence
	for _, e := range r.Evidence {
		if cited[e.ID] {
			decisive = append(decisive, e)
		}
	}
	if len(decisive) > 0 {
		t.Heading("Figures the reasons cite ([n]: the input)")
		for _, e := range decisive {
			in := ""
			if n := inputNumber(inputs, e.Input); n != "" {
				in = " [" + n + "]"
			}
			id := ""
			if t.all {
				id = " " + e.ID
			}
			t.Line("  - %s: %s%s%s", e.What, e.Figure, in, id)
		}
	}
	if len(inputs) > 0 {
		if len(decisive) == 0 || t.all {
			t.Heading("Inputs")
		}
		for i, in := range inputs {
			t.Line("  [%d] %s: %s", i+1, in.Source, in.Input)
		}
	}
	if !t.all {
		return nil
	}
	t.Heading("Every figure")
	rows := make([][]string, 0, len(r.Evidence))
	if !t.Terminal() {
		// Piped, for grep and cut: every row whole, its input written out.
		for _, e := range r.Evidence {
			rows = append(rows, []string{e.Source, e.What, e.Figure, e.Input, e.ID})
		}
		return t.Table([]string{"SOURCE", "WHAT", "FIGURE", "INPUT", "ID"}, rows)
	}
	// At a terminal the input is its number above, and the ID says the source.
	for _, e := range r.Evidence {
		rows = append(rows, []string{e.What, e.Figure, inputNumber(inputs, e.Input), e.ID})
	}
	return t.Table([]string{"WHAT", "FIGURE", "IN", "ID"}, rows)
}
