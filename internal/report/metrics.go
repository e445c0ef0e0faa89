package report

import (
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// Metrics is the result of kvcheck metrics: the catalog, each metric with its status at its
// family's target. It has no findings.
func Metrics(cat *catalog.Catalog, view MetricsView) Result {
	return Result{Document: metricsDocument(cat, view), Text: func(t *Text) error { return t.metrics(cat, view) }}
}

// MetricsView says which part of the catalog to show and at which releases.
type MetricsView struct {
	// Targets are the release each family's status column is computed at; a family not in
	// it is shown at its newest known release.
	Targets catalog.Targets
	// Families keeps only these families (vllm, llm-d, gaie); empty keeps all.
	Families []string
	// Status keeps only metrics in this status at the target (current, deprecated, hidden,
	// removed, not-yet); empty keeps all.
	Status string
	// Name keeps only metrics whose name, or one of whose exposed series, contains it; empty
	// keeps all.
	Name string
}

// keep reports whether a metric passes the view's filters, and its status.
func (v MetricsView) keep(cat *catalog.Catalog, m *catalog.Metric) (catalog.Status, bool) {
	st, _ := m.StatusAt(cat.TargetOf(v.Targets, m.Family))
	if len(v.Families) > 0 && !contains(v.Families, m.Family) {
		return st, false
	}
	if v.Status != "" && string(st) != v.Status {
		return st, false
	}
	if v.Name != "" && !strings.Contains(m.Name, v.Name) && !slices.ContainsFunc(m.Series(), func(s string) bool { return strings.Contains(s, v.Name) }) {
		return st, false
	}
	return st, true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// metrics writes the catalog as one table per family, each metric with its status at
// that family's target release.
func (t *Text) metrics(cat *catalog.Catalog, view MetricsView) error {
	shown := 0
	for _, f := range cat.Families {
		if len(view.Families) > 0 && !contains(view.Families, f.Name) {
			continue
		}
		target := cat.TargetOf(view.Targets, f.Name)
		var rows [][]string
		for _, m := range cat.Metrics {
			if m.Family != f.Name {
				continue
			}
			st, ok := view.keep(cat, m)
			if !ok {
				continue
			}
			rows = append(rows, []string{m.Name, string(m.Type), string(m.Source), string(st),
				m.Added.String(), m.Deprecated.String(), m.Hidden.String(), m.Removed.String(), m.Replacement})
		}
		if len(rows) == 0 {
			continue
		}
		if shown > 0 {
			t.Line("")
		}
		shown++
		t.Heading(f.Display + " metrics, status at " + f.Display + " " + target.String() + " (" + f.Name + ": " + f.Versions + ")")
		if err := t.Table([]string{"NAME", "TYPE", "SOURCE", "STATUS", "ADDED", "DEPRECATED", "HIDDEN", "REMOVED", "REPLACEMENT"}, rows); err != nil {
			return err
		}
	}
	if shown == 0 {
		t.Muted("No metric matches.")
		return nil
	}
	t.Muted("Counters are exposed with _total (and _created), histograms with _bucket, _sum and _count. -o json adds each entry's sources.")
	return nil
}

// metricsDoc is the JSON document of kvcheck metrics. It and the types below are report's
// own: catalog's Family, Metric and UnitChange carry no JSON names, and
// TestDocumentsCoverDomainFields fails when one of their fields has no place here.
type metricsDoc struct {
	SchemaVersion int             `json:"schema_version"`
	Newest        string          `json:"newest_version"`
	Target        string          `json:"target_version"`
	Families      []metricsFamily `json:"families"`
	Metrics       []metricDocItem `json:"metrics"`
}

// metricsFamily is one family of the catalog with the release its statuses are computed at.
type metricsFamily struct {
	Name     string   `json:"name"`
	Display  string   `json:"display"`
	Newest   string   `json:"newest"`
	Versions string   `json:"versions"`
	Prefixes []string `json:"prefixes,omitempty"`
	Ref      string   `json:"ref"`
	Target   string   `json:"target_version"`
}

// metricDocItem is one catalog entry with its status at its family's target and the series
// it is exposed as. A release the entry does not have (never deprecated, say) is left out.
type metricDocItem struct {
	Name        string          `json:"name"`
	Family      string          `json:"family"`
	Type        string          `json:"type"`
	Source      string          `json:"source"`
	Engines     []string        `json:"engines"`
	Added       string          `json:"added,omitempty"`
	Deprecated  string          `json:"deprecated,omitempty"`
	Hidden      string          `json:"hidden,omitempty"`
	Removed     string          `json:"removed,omitempty"`
	Replacement string          `json:"replacement,omitempty"`
	Rewrite     string          `json:"rewrite,omitempty"`
	Expr        string          `json:"expr,omitempty"`
	Labels      []string        `json:"labels"`
	Units       []unitChangeDoc `json:"units,omitempty"`
	Help        string          `json:"help"`
	Note        string          `json:"note,omitempty"`
	Refs        []string        `json:"refs"`
	Unreleased  bool            `json:"unreleased,omitempty"`
	Status      string          `json:"status"`
	Series      []string        `json:"series"`
}

// unitChangeDoc says what a metric counted before a release.
type unitChangeDoc struct {
	Until string `json:"until"`
	Unit  string `json:"unit"`
	Note  string `json:"note"`
}

// metricsDocument is the catalog as JSON: the families with their targets, and each kept
// metric with its status at its family's target. newest_version and target_version are
// vLLM's, as before families existed.
func metricsDocument(cat *catalog.Catalog, view MetricsView) metricsDoc {
	doc := metricsDoc{SchemaVersion: SchemaVersion, Newest: cat.Newest.String(),
		Target:   cat.TargetOf(view.Targets, catalog.VLLM).String(),
		Families: []metricsFamily{}, Metrics: []metricDocItem{}}
	for _, f := range cat.Families {
		if len(view.Families) > 0 && !contains(view.Families, f.Name) {
			continue
		}
		doc.Families = append(doc.Families, metricsFamily{Name: f.Name, Display: f.Display, Newest: f.Newest.String(),
			Versions: f.Versions, Prefixes: f.Prefixes, Ref: f.Ref, Target: cat.TargetOf(view.Targets, f.Name).String()})
	}
	for _, m := range cat.Metrics {
		st, ok := view.keep(cat, m)
		if !ok {
			continue
		}
		doc.Metrics = append(doc.Metrics, newMetricDocItem(m, st))
	}
	return doc
}

func newMetricDocItem(m *catalog.Metric, st catalog.Status) metricDocItem {
	d := metricDocItem{Name: m.Name, Family: m.Family, Type: string(m.Type), Source: string(m.Source),
		Engines: m.Engines, Added: m.Added.String(), Deprecated: m.Deprecated.String(), Hidden: m.Hidden.String(),
		Removed: m.Removed.String(), Replacement: m.Replacement, Rewrite: string(m.Rewrite), Expr: m.Expr,
		Labels: m.Labels, Help: m.Help, Note: m.Note, Refs: m.Refs, Unreleased: m.Unreleased,
		Status: string(st), Series: m.Series()}
	for _, u := range m.Units {
		d.Units = append(d.Units, unitChangeDoc{Until: u.Until.String(), Unit: u.Unit, Note: u.Note})
	}
	return d
}
