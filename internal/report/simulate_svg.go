package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/units"
)

// Chart geometry, in SVG user units.
const (
	plotPanelW  = 300.0
	plotPanelH  = 200.0
	plotLeft    = 66.0 // room for a y axis's labels
	plotGapX    = 76.0
	plotRight   = 24.0
	plotTitleSz = 16.0
	plotHeadSz  = 13.0
	plotTickSz  = 11.0
)

// SimulationSVG draws, for each KV size of the sweep, three panels across the replica counts:
// the token hit rate of every policy (with the trace's ceiling), its load max/mean (1.0 to 2.5
// or 3.0, the hot-spot line at 2.0, outliers marked at the top with their value) and its TTFT
// p99 (logarithmic). Today's routing (the baseline, round-robin) is black and thick; every other
// series has a colour by family (router product, idealised family) and a dash and marker of
// its own; points of equal value at one replica count are set side by side. The legend below
// holds every series whole, in as many columns as fit.
func SimulationSVG(w io.Writer, r sim.Report) error {
	var xs, kvs []int // replica counts and KV sizes, in sweep order
	var policies []string
	for _, f := range r.Fleets {
		if !slices.Contains(xs, f.Replicas) {
			xs = append(xs, f.Replicas)
		}
		if !slices.Contains(kvs, f.KVBlocks) {
			kvs = append(kvs, f.KVBlocks)
		}
		for _, x := range f.Results {
			if !slices.Contains(policies, x.Policy) {
				policies = append(policies, x.Policy)
			}
		}
	}
	today := baselinePolicy()
	styles := assignStyles(policies, policyFamily, today)
	width := plotLeft + 3*plotPanelW + 2*plotGapX + plotRight
	inner := width - 2*20

	title := fmt.Sprintf("kvcheck simulate: %s (%d requests, ceiling %.1f%%%s)", filepath.Base(r.Trace.Name), r.Stats.Requests, 100*r.Stats.Ceiling, labelSuffix(r.Trace))
	titleLines := wrapText(title, plotTitleSz, inner, true)
	var entries []legendEntry
	for _, name := range policies {
		label := name
		if name == today {
			label += " (baseline)"
		}
		entries = append(entries, legendEntry{Label: label, Style: styles[name]})
	}
	entries = append(entries, legendEntry{Label: "trace ceiling", Style: seriesStyle{Colour: "#444444", Dash: "4 3", Width: 1, Marker: "none"}})
	entries = append(entries, legendEntry{Label: "above the axis", Title: "a load max/mean above the axis: drawn at its top, the largest written there", Style: seriesStyle{Colour: "#B00020", Marker: "triangle"}, NoLine: true})

	rowH := 26 + 18 + plotPanelH + 44.0
	top := 20 + float64(len(titleLines))*22 + 10
	legendY := top + float64(len(kvs))*rowH + 6
	height := legendY + legendHeight(entries, inner) + 16

	var sw svgWriter
	sw.p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	sw.p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	sw.p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	for i, l := range titleLines {
		sw.text(20, 20+float64(i+1)*20, plotTitleSz, "start", true, l, "", "")
	}

	// Hit rates rarely approach 100%: scale to the ceiling, the highest value, and some room.
	hitTop := 100 * r.Stats.Ceiling
	var loads, ttfts []float64
	for _, f := range r.Fleets {
		for _, x := range f.Results {
			hitTop = max(hitTop, 100*x.HitRate)
			loads = append(loads, x.LoadMaxOverMean)
			ttfts = append(ttfts, x.TTFTP99)
		}
	}
	hitMax := min(100, math.Ceil((hitTop+5)/10)*10)
	hitStep := 10.0
	if hitMax > 50 {
		hitStep = 20
	}
	hitAxis := axis{lo: 0, hi: hitMax, ticks: linearTicks(0, hitMax, hitStep), label: trimFloat}
	lAxis := loadAxis(loads)
	tAxis := logAxis(ttfts, units.Duration)

	for row, kv := range kvs {
		y0 := top + float64(row)*rowH
		sw.text(20, y0+16, plotHeadSz, "start", true, fmt.Sprintf("KV cache of %d blocks per replica", kv), "", "")
		series := func(value func(sim.Result) float64) map[string][]point {
			out := map[string][]point{}
			for xi, reps := range xs {
				for _, f := range r.Fleets {
					if f.Replicas != reps || f.KVBlocks != kv {
						continue
					}
					for _, x := range f.Results {
						out[x.Policy] = append(out[x.Policy], point{xi, value(x)})
					}
				}
			}
			return out
		}
		ceiling := 100 * r.Stats.Ceiling
		pt := y0 + 26 + 18
		panels := []struct {
			title string
			ax    axis
			value func(sim.Result) float64
			refs  []refLine
			unit  string
		}{
			{"token hit rate, %", hitAxis, func(x sim.Result) float64 { return 100 * x.HitRate }, []refLine{{ceiling, "#444444", "ceiling", false}}, "%"},
			{"load max/mean", lAxis, func(x sim.Result) float64 { return x.LoadMaxOverMean }, []refLine{{sim.HotSpotRatio, "#B00020", "hot spot from 2.0", true}}, ""},
			{"TTFT p99 (log scale)", tAxis, func(x sim.Result) float64 { return x.TTFTP99 }, nil, "s"},
		}
		for i, pn := range panels {
			left := plotLeft + float64(i)*(plotPanelW+plotGapX)
			sw.panel(left, pt, pn.title, xs, pn.ax, policies, styles, series(pn.value), pn.refs, pn.unit)
		}
	}
	sw.legend(20, legendY, inner, entries)
	sw.p("</svg>\n")
	_, err := w.Write(sw.b.Bytes())
	return err
}

// baselinePolicy is the policy simulate measures prefill saved against (round-robin): today's
// routing as far as simulate knows.
func baselinePolicy() string {
	for _, p := range sim.Policies() {
		if p.Baseline {
			return p.Name
		}
	}
	return "round-robin"
}

// policyFamily groups policies for their colours: a router emulation by its product, an
// idealised policy by what it optimises (balance, session, KV).
func policyFamily(name string) string {
	if p, ok := router.Of(name); ok {
		return p.Name().Display
	}
	return "idealised " + string(sim.FamilyOf(name, nil))
}

type point struct {
	x int
	v float64
}

// refLine is a horizontal line across a panel at a value, labelled; shade fills above it.
type refLine struct {
	v      float64
	colour string
	label  string
	shade  bool
}

// panel draws one chart: frame, grid and y labels, x labels (replica counts), reference lines,
// then one polyline per series with its markers, points of equal value side by side, values
// above a clipping axis marked at the top edge with their value.
func (w *svgWriter) panel(left, top float64, title string, xs []int, ax axis, names []string, styles map[string]seriesStyle, series map[string][]point, refs []refLine, unit string) {
	w.p("<g>\n")
	w.text(left, top-8, plotHeadSz, "start", false, fitText(title, plotHeadSz, plotPanelW, false), "", "")
	xOf := func(i int) float64 {
		if len(xs) == 1 {
			return left + plotPanelW/2
		}
		return left + 24 + float64(i)*(plotPanelW-48)/float64(len(xs)-1)
	}
	for _, rf := range refs {
		if rf.shade {
			y, _ := ax.pos(rf.v, top, plotPanelH)
			w.p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.07"/>`+"\n", left, top, plotPanelW, y-top, rf.colour)
		}
	}
	w.p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", left, top, plotPanelW, plotPanelH)
	for _, v := range ax.ticks {
		y, _ := ax.pos(v, top, plotPanelH)
		w.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left, y, left+plotPanelW, y)
		w.text(left-6, y+4, plotTickSz, "end", false, fitText(ax.label(v), plotTickSz, plotLeft-10, false), "", "")
	}
	for i, x := range xs {
		w.text(xOf(i), top+plotPanelH+16, plotTickSz, "middle", false, fmt.Sprint(x), "", "")
	}
	w.text(left+plotPanelW/2, top+plotPanelH+34, plotTickSz, "middle", false, "replicas", "", "")
	for _, rf := range refs {
		y, _ := ax.pos(rf.v, top, plotPanelH)
		w.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>`+"\n", left, y, left+plotPanelW, y, rf.colour)
		w.text(left+plotPanelW-4, y-4, 10, "end", false, rf.label, "", rf.colour)
	}
	// Where each series' points go, dodged per replica count.
	type placed struct {
		x, y    float64
		v       float64
		clipped bool
		xi      int
	}
	pos := map[string][]placed{}
	for xi := range xs {
		var who []string
		var ys []float64
		for _, name := range names {
			for _, pt := range series[name] {
				if pt.x == xi {
					y, _ := ax.pos(pt.v, top, plotPanelH)
					who, ys = append(who, name), append(ys, y)
				}
			}
		}
		off := dodge(ys)
		for k, name := range who {
			for _, pt := range series[name] {
				if pt.x == xi {
					y, clipped := ax.pos(pt.v, top, plotPanelH)
					pos[name] = append(pos[name], placed{xOf(xi) + off[k], y, pt.v, clipped, xi})
				}
			}
		}
	}
	// Today's routing last, on top of the rest.
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int {
		ta, tb := styles[a].Today, styles[b].Today
		switch {
		case ta == tb:
			return 0
		case ta:
			return 1
		}
		return -1
	})
	outliers := map[int]float64{} // the largest clipped value per replica count
	for _, name := range order {
		pts := pos[name]
		if len(pts) == 0 {
			continue
		}
		st := styles[name]
		var b strings.Builder
		for k, pt := range pts {
			if k > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", pt.x, pt.y)
		}
		w.p(`<polyline class="series" fill="none" stroke="%s" stroke-width="%g"%s points="%s"><title>%s</title></polyline>`+"\n", st.Colour, st.Width, dashAttr(st.Dash), b.String(), esc(name))
		for _, pt := range pts {
			hover := fmt.Sprintf("%s: %s at %d replicas", name, valueLabel(pt.v, unit), xs[pt.xi])
			if pt.clipped {
				outliers[pt.xi] = max(outliers[pt.xi], pt.v)
				w.marker("triangle", pt.x, pt.y, 4, "#B00020", false, hover+" (above the axis)")
				continue
			}
			w.marker(st.Marker, pt.x, pt.y, 3, st.Colour, false, hover)
		}
	}
	for xi, v := range outliers {
		w.text(xOf(xi), top+12, 10, "middle", true, fmt.Sprintf("max %.1f", v), fmt.Sprintf("values above the axis reach %.2f", v), "#B00020")
	}
	w.p("</g>\n")
}

// valueLabel writes a point's value for its hover title.
func valueLabel(v float64, unit string) string {
	switch unit {
	case "s":
		return units.Duration(v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// esc escapes text for SVG (XML) character data and attribute values.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // a bytes.Buffer does not fail
	return b.String()
}

// labelSuffix is the trace's caveats as a suffix for a title ("" when it has none).
func labelSuffix(tr *sim.Trace) string {
	if l := traceLabels(tr); len(l) > 0 {
		return "; " + strings.Join(l, "; ")
	}
	return ""
}

// SimulationSVGFile writes SimulationSVG's chart to the file at path (simulate --plot).
func SimulationSVGFile(path string, r sim.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := SimulationSVG(f, r); err != nil {
		_ = f.Close() // the write already failed; that error is the one to report
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
