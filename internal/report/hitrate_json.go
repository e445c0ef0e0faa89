package report

import (
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
)

// hitrateDoc is the JSON document of kvcheck hitrate. It and the types below are report's
// own: promql's Report, Replica, Fleet, Down, QueryStat and Change carry no JSON names, and
// TestDocumentsCoverDomainFields fails when one of their fields has no place here.
type hitrateDoc struct {
	SchemaVersion int                 `json:"schema_version"`
	Source        string              `json:"source"`
	Inputs        []string            `json:"inputs"`
	Mode          string              `json:"mode"`
	WindowSeconds *float64            `json:"window_seconds"`
	Replicas      []hitrateReplicaDoc `json:"replicas"`
	Fleet         hitrateFleetDoc     `json:"fleet"`
	Down          []hitrateDownDoc    `json:"down"`
	RouterSeries  []string            `json:"router_series"`
	// Stacks are the router products the metrics show by their own families.
	Stacks   []hitrateStackDoc     `json:"router_stacks"`
	Findings []hitrateFinding      `json:"findings"`
	Queries  []hitrateQueryStatDoc `json:"promql_queries,omitempty"`
}

// hitrateStackDoc is a router product the metrics show, and the family that showed it.
type hitrateStackDoc struct {
	Product string `json:"product"`
	Family  string `json:"family"`
}

// hitrateFinding is a finding in hitrate's JSON: its subject is always a replica.
type hitrateFinding struct {
	Severity finding.Severity `json:"severity"`
	Code     string           `json:"code"`
	Message  string           `json:"message"`
	Replica  string           `json:"replica,omitempty"`
}

// hitrateReplicaDoc is one replica's row.
type hitrateReplicaDoc struct {
	Replica            string   `json:"replica"`
	Model              string   `json:"model"`
	Version            string   `json:"version,omitempty"`
	VersionFrom        string   `json:"version_from,omitempty"`
	VersionRange       string   `json:"version_range,omitempty"`
	HitRate            *float64 `json:"hit_rate"`
	HitRateFrom        string   `json:"hit_rate_from"`
	Queries            *float64 `json:"queries"`
	QueriesPerSec      *float64 `json:"queries_per_sec"`
	ExternalHitRate    *float64 `json:"external_hit_rate"`
	CPUHitRate         *float64 `json:"cpu_hit_rate,omitempty"`
	Preemptions        *float64 `json:"preemptions"`
	PreemptionsPerSec  *float64 `json:"preemptions_per_sec"`
	PreemptionsPer1k   *float64 `json:"preemptions_per_1k_requests"`
	PromptTokensPerSec *float64 `json:"prompt_tokens_per_sec,omitempty"`
	KVUsage            *float64 `json:"kv_usage"`
	Running            *float64 `json:"running"`
	Waiting            *float64 `json:"waiting"`
	BlockSize          *int     `json:"block_size"`
	PrefixCaching      *bool    `json:"prefix_caching"`
	// Generation is null when no prefix-cache metric was found.
	Generation *string `json:"metric_generation"`
}

// hitrateFleetDoc is the fleet row.
type hitrateFleetDoc struct {
	Replicas          int      `json:"replicas"`
	HitRate           *float64 `json:"hit_rate"`
	HitRateWeighting  string   `json:"hit_rate_weighting"`
	MinHitRate        *float64 `json:"hit_rate_min"`
	MaxHitRate        *float64 `json:"hit_rate_max"`
	HitRateCV         *float64 `json:"hit_rate_cv"`
	Queries           *float64 `json:"queries"`
	QueriesPerSec     *float64 `json:"queries_per_sec"`
	PreemptionsPerSec *float64 `json:"preemptions_per_sec"`
	Running           *float64 `json:"running"`
	Waiting           *float64 `json:"waiting"`
}

// hitrateDownDoc is an input that could not be read.
type hitrateDownDoc struct {
	Target string `json:"target"`
	Error  string `json:"error"`
}

// hitrateQueryStatDoc is one PromQL query's time and series count.
type hitrateQueryStatDoc struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Series  int     `json:"series"`
}

// hitrateChangeDoc is how one replica moved since the refresh before (hitrate --watch).
type hitrateChangeDoc struct {
	Replica                string   `json:"replica"`
	State                  string   `json:"state,omitempty"`
	HitRateDelta           *float64 `json:"hit_rate_delta"`
	QueriesPerSecDelta     *float64 `json:"queries_per_sec_delta"`
	PreemptionsPerSecDelta *float64 `json:"preemptions_per_sec_delta"`
	KVUsageDelta           *float64 `json:"kv_usage_delta"`
	WaitingDelta           *float64 `json:"waiting_delta"`
}

// newHitrateDoc is hitrate's JSON document; its findings name their replica under "replica".
func newHitrateDoc(r promql.Report) hitrateDoc {
	f := r.Fleet
	doc := hitrateDoc{SchemaVersion: SchemaVersion, Source: string(r.Source), Inputs: r.Inputs, Mode: string(r.Mode),
		WindowSeconds: r.WindowSeconds, RouterSeries: r.RouterSeries, Stacks: []hitrateStackDoc{}, Findings: []hitrateFinding{},
		Fleet: hitrateFleetDoc{Replicas: f.Replicas, HitRate: f.HitRate, HitRateWeighting: f.HitRateWeighting,
			MinHitRate: f.MinHitRate, MaxHitRate: f.MaxHitRate, HitRateCV: f.HitRateCV, Queries: f.Queries,
			QueriesPerSec: f.QueriesPerSec, PreemptionsPerSec: f.PreemptionsPerSec, Running: f.Running, Waiting: f.Waiting}}
	for _, st := range r.Stacks {
		doc.Stacks = append(doc.Stacks, hitrateStackDoc{st.Product, st.Family})
	}
	if r.Replicas != nil {
		doc.Replicas = make([]hitrateReplicaDoc, 0, len(r.Replicas))
	}
	for _, x := range r.Replicas {
		doc.Replicas = append(doc.Replicas, newHitrateReplicaDoc(x))
	}
	if r.Down != nil {
		doc.Down = make([]hitrateDownDoc, 0, len(r.Down))
	}
	for _, d := range r.Down {
		doc.Down = append(doc.Down, hitrateDownDoc{Target: d.Target, Error: d.Error})
	}
	for _, q := range r.Queries {
		doc.Queries = append(doc.Queries, hitrateQueryStatDoc{Name: q.Name, Seconds: q.Seconds, Series: q.Series})
	}
	if r.Findings == nil {
		doc.Findings = nil
	}
	for _, f := range r.Findings {
		doc.Findings = append(doc.Findings, hitrateFinding{Severity: f.Severity, Code: f.Code, Message: f.Message, Replica: f.Subject})
	}
	return doc
}

func newHitrateReplicaDoc(x promql.Replica) hitrateReplicaDoc {
	d := hitrateReplicaDoc{Replica: x.Replica, Model: x.Model, Version: x.Version, VersionFrom: x.VersionFrom,
		VersionRange: x.VersionRange, HitRate: x.HitRate, HitRateFrom: x.HitRateFrom, Queries: x.Queries,
		QueriesPerSec: x.QueriesPerSec, ExternalHitRate: x.ExternalHitRate, CPUHitRate: x.CPUHitRate,
		Preemptions: x.Preemptions, PreemptionsPerSec: x.PreemptionsPerSec, PreemptionsPer1k: x.PreemptionsPer1k,
		PromptTokensPerSec: x.PromptTokensPerSec, KVUsage: x.KVUsage, Running: x.Running, Waiting: x.Waiting,
		BlockSize: x.BlockSize, PrefixCaching: x.PrefixCaching}
	if x.Generation != "" {
		g := string(x.Generation)
		d.Generation = &g
	}
	return d
}

// newHitrateChangeDocs is the changes of a watch refresh, an empty list rather than null.
func newHitrateChangeDocs(cs []promql.Change) []hitrateChangeDoc {
	out := make([]hitrateChangeDoc, 0, len(cs))
	for _, c := range cs {
		out = append(out, hitrateChangeDoc{Replica: c.Replica, State: c.State, HitRateDelta: c.HitRateDelta,
			QueriesPerSecDelta: c.QueriesPerSecDelta, PreemptionsPerSecDelta: c.PreemptionsPerSecDelta,
			KVUsageDelta: c.KVUsageDelta, WaitingDelta: c.WaitingDelta})
	}
	return out
}
