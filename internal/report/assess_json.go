package report

import (
	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// The JSON document of kvcheck assess's recommendation: the report's own types, so that
// advise's structs carry no output tags. Field names and order are the document's
// (schema_version 1); the doc types of plain records convert from advise's types directly.

type assessRecommendationDoc struct {
	Verdict    advise.Verdict      `json:"verdict"`
	Confidence advise.Level        `json:"confidence"`
	Then       advise.Verdict      `json:"then,omitempty"`
	Router     string              `json:"router,omitempty"`
	Reasons    []assessReasonDoc   `json:"reasons"`
	Evidence   []assessEvidenceDoc `json:"evidence"`
	Fixes      []finding.Finding   `json:"fixes"`
	NextSteps  []assessNextStepDoc `json:"next_steps"`
	Advice     []string            `json:"advice"`
	Thresholds assessThresholdsDoc `json:"thresholds"`
}

type assessReasonDoc struct {
	Rule     string         `json:"rule"`
	Verdict  advise.Verdict `json:"verdict"`
	Strength advise.Level   `json:"strength"`
	Text     string         `json:"text"`
	Evidence []string       `json:"evidence"`
	Against  bool           `json:"against,omitempty"`
}

type assessEvidenceDoc struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	Input  string `json:"input"`
	What   string `json:"what"`
	Figure string `json:"figure"`
}

type assessNextStepDoc struct {
	Measure string `json:"measure"`
	Settles string `json:"settles"`
}

type assessThresholdsDoc struct {
	MinGain                float64 `json:"min_gain"`
	HotSpot                float64 `json:"hot_spot_load_max_over_mean"`
	MinRequests            int     `json:"min_requests"`
	ThrashPreemptionsPer1k float64 `json:"thrash_preemptions_per_1k"`
	ThrashKVUsage          float64 `json:"thrash_kv_usage"`
	WarnPreemptionsPer1k   float64 `json:"warn_preemptions_per_1k"`
	WarnKVUsage            float64 `json:"warn_kv_usage"`
	DuplicatePrefill       float64 `json:"duplicate_prefill"`
}

// newAssessRecommendationDoc is r's document. Nil lists stay nil: nonNilRecommendation has
// already made the document's lists empty.
func newAssessRecommendationDoc(r advise.Recommendation) assessRecommendationDoc {
	d := assessRecommendationDoc{
		Verdict: r.Verdict, Confidence: r.Confidence, Then: r.Then, Router: r.Router, Fixes: r.Fixes, Advice: r.Advice,
		Thresholds: assessThresholdsDoc(r.Thresholds),
	}
	if r.Reasons != nil {
		d.Reasons = make([]assessReasonDoc, len(r.Reasons))
		for i, v := range r.Reasons {
			d.Reasons[i] = assessReasonDoc(v)
		}
	}
	if r.Evidence != nil {
		d.Evidence = make([]assessEvidenceDoc, len(r.Evidence))
		for i, v := range r.Evidence {
			d.Evidence[i] = assessEvidenceDoc(v)
		}
	}
	if r.NextSteps != nil {
		d.NextSteps = make([]assessNextStepDoc, len(r.NextSteps))
		for i, v := range r.NextSteps {
			d.NextSteps[i] = assessNextStepDoc(v)
		}
	}
	return d
}
