package report

import (
	"io"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// MetricsText writes the catalog as a table, with each metric's status at the target.
func MetricsText(t *Text, cat *catalog.Catalog, target catalog.Version) error {
	t.Heading("vLLM metrics, status at vLLM " + target.String())
	rows := make([][]string, 0, len(cat.Metrics))
	for _, m := range cat.Metrics {
		st, _ := m.StatusAt(target)
		rows = append(rows, []string{m.Name, string(m.Type), string(m.Source), string(st),
			m.Added.String(), m.Deprecated.String(), m.Hidden.String(), m.Removed.String(), m.Replacement})
	}
	if err := t.Table([]string{"NAME", "TYPE", "SOURCE", "STATUS", "ADDED", "DEPRECATED", "HIDDEN", "REMOVED", "REPLACEMENT"}, rows); err != nil {
		return err
	}
	t.Muted("Counters are exposed with _total (and _created), histograms with _bucket, _sum and _count.")
	return nil
}

type metricsDoc struct {
	SchemaVersion int             `json:"schema_version"`
	Newest        string          `json:"newest_version"`
	Target        string          `json:"target_version"`
	Metrics       []metricDocItem `json:"metrics"`
}

type metricDocItem struct {
	*catalog.Metric
	Status string   `json:"status"`
	Series []string `json:"series"`
}

// MetricsJSON writes the catalog as JSON, with each metric's status at the target.
func MetricsJSON(w io.Writer, cat *catalog.Catalog, target catalog.Version) error {
	doc := metricsDoc{SchemaVersion: SchemaVersion, Newest: cat.Newest.String(), Target: target.String(),
		Metrics: make([]metricDocItem, 0, len(cat.Metrics))}
	for _, m := range cat.Metrics {
		st, _ := m.StatusAt(target)
		doc.Metrics = append(doc.Metrics, metricDocItem{Metric: m, Status: string(st), Series: m.Series()})
	}
	return JSON(w, doc)
}
