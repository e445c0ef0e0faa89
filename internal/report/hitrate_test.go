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

// hitrateFullFixture sets every field of the hitrate document, so its golden file pins the
// JSON name of each (the dumps fixture leaves version, CPU tier, prompt throughput, down
// targets and the PromQL query statistics empty).
func hitrateFullFixture() promql.Report {
	f := func(v float64) *float64 { return &v }
	bs, on, blocks := 16, true, 4096
	return promql.Report{
		Source: promql.SourcePrometheus, Inputs: []string{"http://prometheus:9090"}, Mode: promql.ModeRate,
		WindowSeconds: f(300),
		Replicas: []promql.Replica{{
			Replica: "pod-a", Model: "org/model", Version: "0.10.1", VersionFrom: "label", VersionRange: ">=0.9.2 <0.11.0",
			HitRate: f(0.5), HitRateFrom: "counters", Queries: f(3000), QueriesPerSec: f(10), ExternalHitRate: f(0.25),
			CPUHitRate: f(0.1), Preemptions: f(3), PreemptionsPerSec: f(0.01), PreemptionsPer1k: f(12),
			PromptTokensPerSec: f(900), KVUsage: f(0.93), Running: f(4), Waiting: f(2), BlockSize: &bs,
			PrefixCaching: &on, Generation: promql.Deprecated, NumGPUBlocks: &blocks, // not shown
		}, {Replica: "pod-b", Model: "org/model"}},
		Fleet: promql.Fleet{Replicas: 2, HitRate: f(0.5), HitRateWeighting: "tokens", MinHitRate: f(0.5), MaxHitRate: f(0.5),
			HitRateCV: f(0), Queries: f(3000), QueriesPerSec: f(10), PreemptionsPerSec: f(0.01), Running: f(4), Waiting: f(2)},
		Down:         []promql.Down{{Target: "pod-c:8000", Error: "connection refused"}},
		RouterSeries: []string{"http://10.0.0.1:8000"},
		Queries:      []promql.QueryStat{{Name: "counters", Seconds: 0.25, Series: 7}},
	}
}

// TestHitrateJSONEveryField: the JSON name of every field of the document, a replica row,
// the fleet row, a down target and a query's statistics, as kvcheck has written them.
func TestHitrateJSONEveryField(t *testing.T) {
	golden(t, "hitrate/full.json", render(t, FormatJSON, Hitrate(hitrateFullFixture())))
}
