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

// TestSimulationSVG checks that the chart is well-formed XML with an svg root, one polyline per
// policy and KV size and panel, and matches its golden file.
func TestSimulationSVG(t *testing.T) {
	var b bytes.Buffer
	if err := SimulationSVG(&b, tinyReport(t, -1)); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	d.Strict = true
	var root string
	var width, height float64
	lines := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if se.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace = %q, want the SVG namespace", se.Name.Space)
				}
			}
			if se.Name.Local == "polyline" {
				lines++
			}
			for _, a := range se.Attr {
				v, err := strconv.ParseFloat(a.Value, 64)
				switch {
				case se.Name.Local == "svg" && a.Name.Local == "width":
					width = v
				case se.Name.Local == "svg" && a.Name.Local == "height":
					height = v
				case err != nil:
				case strings.HasPrefix(a.Name.Local, "x") || a.Name.Local == "cx":
					if v < 0 || v > width {
						t.Errorf("<%s %s=%v> outside the %v-wide canvas", se.Name.Local, a.Name.Local, v, width)
					}
				case strings.HasPrefix(a.Name.Local, "y") || a.Name.Local == "cy":
					if v < 0 || v > height {
						t.Errorf("<%s %s=%v> outside the %v-high canvas", se.Name.Local, a.Name.Local, v, height)
					}
				}
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element = %q, want svg", root)
	}
	if want := 3 * 2; lines != want { // 3 policies x 2 panels x 1 KV size
		t.Errorf("%d polylines, want %d", lines, want)
	}
	if !strings.Contains(b.String(), "tiny.jsonl") {
		t.Errorf("chart title does not name the trace")
	}
	golden(t, "simulate.svg.golden", b.Bytes())
}

// TestSimulationSVGManyPolicies: with more policies than colours (the idealised ones and the
// router emulations together: 24) every legend line differs in colour or dash, and the legend
// fits the canvas.
func TestSimulationSVGManyPolicies(t *testing.T) {
	r := tinyReport(t, -1)
	for fi := range r.Fleets {
		f := &r.Fleets[fi]
		base := f.Results[0]
		f.Results = f.Results[:0]
		for i := range 24 {
			x := base
			x.Policy = "policy-" + strconv.Itoa(i)
			f.Results = append(f.Results, x)
		}
	}
	var b bytes.Buffer
	if err := SimulationSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	var height float64
	styles := map[string]bool{}
	inLegend := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch {
		case se.Name.Local == "svg":
			height, _ = strconv.ParseFloat(attr["height"], 64)
		case se.Name.Local == "g" && attr["id"] == "legend":
			inLegend = true
		case inLegend && se.Name.Local == "line" && attr["stroke"] != "black":
			styles[attr["stroke"]+" "+attr["stroke-dasharray"]] = true
		case inLegend && se.Name.Local == "text":
			if y, _ := strconv.ParseFloat(attr["y"], 64); y > height {
				t.Errorf("legend text at y=%v, below the %v-high canvas", y, height)
			}
		}
	}
	if len(styles) != 24 {
		t.Errorf("%d distinct legend styles for 24 policies", len(styles))
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
