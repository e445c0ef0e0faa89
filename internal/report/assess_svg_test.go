package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// TestRankingSVG: the ranking chart holds one point per row, its first ringed and named, the
// hot-spot area shaded, every row in the legend whole with its key (its rank, a letter when not
// ranked) and that key beside its point, a row past the load axis marked at its edge, and no
// text outside the image; it matches its golden.
func TestRankingSVG(t *testing.T) {
	rk := rankingFixture()
	// A hot spot at load max/mean 6.0: past the 3.0 axis.
	rk.Rows = append(rk.Rows, rank.Row{Candidate: rank.Candidate{Policy: "ray-prefix-affinity", Product: ray.ID, Variant: rank.Shipped},
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
		"a. dynamo-kv (shipped): +20.0%, 1.12, not ranked", "b. ray-prefix-affinity (shipped): +30.0%, 6.00, not ranked", "today's round-robin (0 saved)"}
	for _, w := range want {
		found := false
		for _, l := range svg.Legend {
			found = found || l == w
		}
		if !found {
			t.Errorf("legend lacks %q: %q", w, svg.Legend)
		}
	}
	// The fixture's savings are 0 to 30%, 320 units tall: 10.7 a point, so 21.2, 20.0, 19.3
	// and 18.2% are 7.5 or more apart, each its own row, and each point has its own key.
	for _, key := range []string{"1", "2", "3", "4", "a", "b"} {
		if !slices.ContainsFunc(svg.Texts, func(x testutil.SVGText) bool { return x.Text == key }) {
			t.Errorf("no key %q beside a point", key)
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

// TestSpreadRows: points that would cover each other are set rankDot (9) apart across, centred
// on their mean, inside the plot; points apart, or in other rows, stay where they are.
func TestSpreadRows(t *testing.T) {
	tests := []struct {
		name   string
		xs, ys []float64
		want   []float64
	}{
		// Three at 100: 18 wide, centred on 100.
		{"three equal", []float64{100, 100, 100}, []float64{50, 50, 50}, []float64{91, 100, 109}},
		{"apart", []float64{100, 120}, []float64{50, 50}, []float64{100, 120}},
		// Heights 10 apart are two rows (under 6 is one row).
		{"two rows", []float64{100, 100}, []float64{50, 60}, []float64{100, 100}},
		{"one row, 5 apart", []float64{100, 100}, []float64{50, 55}, []float64{95.5, 104.5}},
		// At the left edge (lo 5): the pair starts there instead of at 0.5.
		{"left edge", []float64{5, 5}, []float64{50, 50}, []float64{5, 14}},
		// At the right edge (hi 1000): the pair ends there.
		{"right edge", []float64{1000, 1000}, []float64{50, 50}, []float64{991, 1000}},
		// 100, 100 go to 95.5 and 104.5; 110 is then closer than 9 to 104.5, so the three are
		// one run about their mean 103.33: 94.33, 103.33, 112.33.
		{"merge", []float64{100, 110, 100}, []float64{50, 50, 50}, []float64{94.33, 112.33, 103.33}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spreadRows(tt.xs, tt.ys, 5, 1000)
			for i := range got {
				got[i] = math.Round(got[i]*100) / 100
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRowKeys: ranked rows are keyed by rank, the others by letters in order.
func TestRowKeys(t *testing.T) {
	rows := []rank.Row{{Rank: 1}, {Rank: 2}, {}, {Rank: 3}, {}}
	if got, want := rowKeys(rows), []string{"1", "2", "a", "3", "b"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
