package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// tinyReport simulates a small hand-made trace: two conversations that share block 1, on 1 and
// 2 replicas, under three policies.
func tinyReport(t *testing.T, addAt float64) sim.Report {
	t.Helper()
	return tinyReportOf(t, addAt, nil)
}

// tinyReportOf is tinyReport with the trace adjusted by label before the run (nil: as is).
func tinyReportOf(t *testing.T, addAt float64, label func(*sim.Trace)) sim.Report {
	t.Helper()
	var rs []sim.Request
	for i := range 12 {
		conv := uint64(i%2 + 10)
		blocks := []uint64{1, conv}
		for k := range i / 2 {
			blocks = append(blocks, conv*100+uint64(k))
		}
		rs = append(rs, sim.Request{Arrival: float64(i), Blocks: blocks, InputTokens: len(blocks)*16 + 3, OutputTokens: 20, N: 1})
	}
	tr := &sim.Trace{Name: "tiny.jsonl", Format: "mooncake", BlockSize: 16, PrefixInfo: true, Requests: rs}
	if label != nil {
		label(tr)
	}
	sw := sim.Sweep{
		Replicas: []int{1, 2},
		KVBlocks: []int{8},
		Policies: []string{"round-robin", "kv-longest", "kv-llmd"},
		Base:     sim.Config{Model: sim.DefaultModel(), Params: sim.DefaultParams(), Seed: 1, AddReplicaAt: addAt},
	}
	res, err := sim.Run(t.Context(), tr, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sim.NewReport(tr, sim.Stats(tr), sw, res)
}

// estimated labels the tiny trace as a request log tokenized by the estimate.
func estimated(tr *sim.Trace) {
	tr.Name, tr.Format, tr.Tokens = "requests.jsonl", "requests", "estimated"
	tr.Notes = []string{"tokens: estimated, 4 bytes a token (audit's estimate); give --tokenize URL of a vLLM server for exact tokens"}
}

// recorded labels the tiny trace as a tap recording: hit rates are lower bounds.
func recorded(tr *sim.Trace) {
	tr.Name, tr.Format, tr.LowerBound = "tap.kvtap", "recording", true
}

func TestSimulationText(t *testing.T) {
	cases := []struct {
		name  string
		addAt float64
		label func(*sim.Trace)
	}{
		{"simulate.txt", -1, nil},
		{"simulate_add_replica.txt", 6, nil},
		{"simulate_estimated.txt", -1, estimated},
		{"simulate_recording.txt", -1, recorded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name+".golden", render(t, FormatText, Simulation(tinyReportOf(t, tc.addAt, tc.label))))
		})
	}
}

// TestSimulationJSONLabels checks that every result carries the trace's labels, so that a
// result quoted alone keeps them, and that unlabelled traces carry none.
func TestSimulationJSONLabels(t *testing.T) {
	cases := []struct {
		name                  string
		label                 func(*sim.Trace)
		tokens                string
		estimated, lowerBound bool
	}{
		{"mooncake", nil, "", false, false},
		{"estimated request log", estimated, "estimated", true, false},
		{"exact request log", func(tr *sim.Trace) { tr.Format, tr.Tokens = "requests", "exact" }, "exact", false, false},
		{"recording", recorded, "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.NewBuffer(render(t, FormatJSON, Simulation(tinyReportOf(t, -1, tc.label))))
			var doc struct {
				Trace struct {
					Tokens     string `json:"tokens"`
					Estimated  bool   `json:"estimated"`
					LowerBound bool   `json:"lower_bound"`
				} `json:"trace"`
				Results []struct {
					Estimated  bool `json:"estimated"`
					LowerBound bool `json:"lower_bound"`
				} `json:"results"`
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Trace.Tokens != tc.tokens || doc.Trace.Estimated != tc.estimated || doc.Trace.LowerBound != tc.lowerBound {
				t.Errorf("trace labels = %+v, want tokens %q, estimated %v, lower bound %v", doc.Trace, tc.tokens, tc.estimated, tc.lowerBound)
			}
			if len(doc.Results) == 0 {
				t.Fatal("no results")
			}
			for i, r := range doc.Results {
				if r.Estimated != tc.estimated || r.LowerBound != tc.lowerBound {
					t.Errorf("result %d: estimated %v, lower bound %v; want %v, %v", i, r.Estimated, r.LowerBound, tc.estimated, tc.lowerBound)
				}
			}
		})
	}
}

func TestSimulationJSON(t *testing.T) {
	res := Simulation(tinyReport(t, -1))
	b := bytes.NewBuffer(render(t, FormatJSON, res))
	golden(t, "simulate.json.golden", b.Bytes())
	golden(t, "simulate.sarif.golden", render(t, FormatSARIF, res))
	golden(t, "simulate.github.golden", render(t, FormatGitHub, res))

	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema_version"] != float64(SchemaVersion) {
		t.Errorf("schema_version = %v, want %d", doc["schema_version"], SchemaVersion)
	}
	for _, k := range []string{"results", "findings", "fleets"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("%s = %v, want a list (never null)", k, doc[k])
		}
	}
	trace := doc["trace"].(map[string]any)
	for _, k := range []string{"requests", "block_refs", "distinct_blocks", "ceiling"} {
		if _, ok := trace[k]; !ok {
			t.Errorf("trace.%s missing", k)
		}
	}
	r0 := doc["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"policy", "replicas", "kv_blocks", "hit_rate", "block_hit_rate", "load_max_over_mean", "ttft_p99"} {
		if _, ok := r0[k]; !ok {
			t.Errorf("results[0].%s missing", k)
		}
	}
}

// TestSimulationSVG: the chart is a well-formed SVG whose every text stays inside the image
// (testutil.CheckSVG), with one series per policy, KV size and panel (3 policies x 3 panels),
// each policy in one style of its own, and it matches its golden file.
func TestSimulationSVG(t *testing.T) {
	var b bytes.Buffer
	if err := SimulationSVG(&b, tinyReport(t, -1)); err != nil {
		t.Fatal(err)
	}
	svg, errs := testutil.CheckSVG(b.Bytes())
	for _, err := range errs {
		t.Error(err)
	}
	if got := strings.Count(b.String(), `class="series"`); got != 3*3 {
		t.Errorf("%d series polylines, want 9", got)
	}
	if len(svg.Series) != 3 || svg.Series["round-robin"] != plotToday+" " {
		t.Errorf("series styles %v: want 3, round-robin (the baseline) solid black", svg.Series)
	}
	if !strings.Contains(b.String(), "tiny.jsonl") {
		t.Errorf("chart title does not name the trace")
	}
	golden(t, "simulate.svg.golden", b.Bytes())
}

// TestSimulationSVGManyPolicies: with 30 policies, more than colours or dashes, every series
// has a colour and dash no other has, every text (the legend's included) stays inside the
// image, and every legend entry is whole.
func TestSimulationSVGManyPolicies(t *testing.T) {
	r := tinyReport(t, -1)
	for fi := range r.Fleets {
		f := &r.Fleets[fi]
		base := f.Results[0]
		f.Results = f.Results[:0]
		for i := range 30 {
			x := base
			x.Policy = "policy-with-a-long-name-" + strconv.Itoa(i)
			x.LoadMaxOverMean = 1 + float64(i)/2 // up to 15.5: outliers above the axis
			f.Results = append(f.Results, x)
		}
	}
	var b bytes.Buffer
	if err := SimulationSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	svg, errs := testutil.CheckSVG(b.Bytes())
	for _, err := range errs {
		t.Error(err)
	}
	if len(svg.Series) != 30 {
		t.Errorf("%d series styles, want 30", len(svg.Series))
	}
	for _, l := range svg.Legend {
		if strings.Contains(l, "…") {
			t.Errorf("legend entry cut: %q", l)
		}
	}
	if !strings.Contains(b.String(), ">max 15.5<") {
		t.Errorf("the load outlier 15.5 is not marked")
	}
}

// TestAssignStyles: today's routing is black; the first 42 others (7 colours x 6 dashes) each
// get a pair of their own, a family keeping its colour while it has a dash free.
func TestAssignStyles(t *testing.T) {
	var names []string
	for i := range 43 {
		names = append(names, "p"+strconv.Itoa(i))
	}
	names = append(names, "today")
	// Three families of 10, 10 and 23: the first takes colour 0's six dashes and four of colour
	// 1's, and so on.
	family := func(n string) string {
		i, _ := strconv.Atoi(strings.TrimPrefix(n, "p"))
		switch {
		case i < 10:
			return "a"
		case i < 20:
			return "b"
		}
		return "c"
	}
	st := assignStyles(names, family, "today")
	if s := st["today"]; s.Colour != plotToday || !s.Today || s.Dash != "" {
		t.Errorf("today %+v, want solid black", s)
	}
	seen := map[string]string{}
	for _, n := range names[:42] {
		k := st[n].Colour + " " + st[n].Dash
		if o, ok := seen[k]; ok {
			t.Errorf("%s and %s share %q", o, n, k)
		}
		seen[k] = n
	}
	if st["p0"].Colour != plotPalette[0] || st["p5"].Colour != plotPalette[0] || st["p6"].Colour == plotPalette[0] {
		t.Errorf("family a: p0 %s, p5 %s, p6 %s; want the first colour for six, then another", st["p0"].Colour, st["p5"].Colour, st["p6"].Colour)
	}
}

// TestSVGEscapes checks that names with XML metacharacters cannot break the document.
func TestSVGEscapes(t *testing.T) {
	r := tinyReport(t, -1)
	r.Trace.Name = `a<b>&"c".jsonl`
	var b bytes.Buffer
	if err := SimulationSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("SVG with an odd trace name is not well-formed: %v", err)
		}
	}
}
