package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// TestRankingSVG: the ranking chart holds one point per row, its first ringed and named, the
// hot-spot area shaded, every row in the legend whole with its rank (- when not ranked), a row
// past the load axis marked at its edge, and no text outside the image; it matches its golden.
func TestRankingSVG(t *testing.T) {
	rk := rankingFixture()
	// A hot spot at load max/mean 6.0: past the 3.0 axis.
	rk.Rows = append(rk.Rows, rank.Row{Candidate: rank.Candidate{Policy: "ray-prefix-affinity", Product: rank.Ray, Variant: rank.Shipped},
		Excluded: "hot spot: load max/mean 6.00 >= 2.0", PrefillSaved: 0.3, LoadMaxOverMean: 6, HitRate: 0.3, TTFTP99: 400})
	var b bytes.Buffer
	if err := RankingSVG(&b, rk); err != nil {
		t.Fatal(err)
	}
	svg, errs := testutil.CheckSVG(b.Bytes())
	for _, err := range errs {
		t.Error(err)
	}
	want := []string{"1. llmd-precise (tuned): +21.2%, 1.04", "4. dynamo-round-robin (shipped): +0.0%, 1.00",
		"- dynamo-kv (shipped): +20.0%, 1.12, not ranked", "- ray-prefix-affinity (shipped): +30.0%, 6.00, not ranked", "today's round-robin (0 saved)"}
	for _, w := range want {
		found := false
		for _, l := range svg.Legend {
			found = found || l == w
		}
		if !found {
			t.Errorf("legend lacks %q: %q", w, svg.Legend)
		}
	}
	for _, w := range []string{">first: llmd-precise (tuned)<", "hot spot from 2.0", "(past the axis)", `fill-opacity="0.07"`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("chart lacks %q", w)
		}
	}
	golden(t, "assess/ranking.svg.golden", b.Bytes())

	// No first: nothing is ringed.
	rk.NoWinner = "the first two tie"
	b.Reset()
	if err := RankingSVG(&b, rk); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "first:") {
		t.Errorf("a ranking without a first names one")
	}
}
