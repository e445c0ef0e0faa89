package report

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kvcheck/kvcheck/internal/promql"
)

func hitrateFixture(t *testing.T) promql.Report {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "hitrate")
	in, err := promql.FromDumps(context.Background(), []string{filepath.Join(dir, "before.prom"), filepath.Join(dir, "after.prom")}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Paths differ between machines only in their prefix; keep the golden files stable.
	in.Inputs = []string{"before.prom", "after.prom"}
	return promql.Analyze(in)
}

func TestHitrateText(t *testing.T) {
	res := Hitrate(hitrateFixture(t))
	golden(t, "hitrate/dumps.txt", render(t, FormatText, res))
	golden(t, "hitrate/dumps.sarif", render(t, FormatSARIF, res))
	golden(t, "hitrate/dumps.github", render(t, FormatGitHub, res))
}

func TestHitrateJSON(t *testing.T) {
	buf := bytes.NewBuffer(render(t, FormatJSON, Hitrate(hitrateFixture(t))))
	golden(t, "hitrate/dumps.json", buf.Bytes())
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema_version", "source", "window_seconds", "replicas", "fleet", "findings"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

func TestHitrateJSONEmptyLists(t *testing.T) {
	buf := bytes.NewBuffer(render(t, FormatJSON, Hitrate(promql.Analyze(promql.Input{}))))
	for _, k := range []string{`"replicas": []`, `"findings": []`, `"down": []`, `"router_series": []`} {
		if !bytes.Contains(buf.Bytes(), []byte(k)) {
			t.Errorf("JSON lacks %s:\n%s", k, buf.String())
		}
	}
}
