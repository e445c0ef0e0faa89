package report

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// plotSeries are the line colours of the SVG chart, one per policy in order (Tableau 10 and
// one more). They live here rather than in styles.go because they are SVG colours, not
// terminal styles.
var plotSeries = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#17becf",
}

// Chart geometry, in SVG user units.
const (
	plotW, plotH   = 420, 240
	plotLeft       = 60
	plotTop        = 50
	plotGap        = 80
	plotRowGap     = 90
	plotLegendW    = 170
	plotBottomSkip = 40
)

// SimulationSVG draws, for each KV size of the sweep, two panels across the replica counts: the
// token hit rate of every policy (with the trace's ceiling) and its load max/mean. The SVG is
// written by hand, with no dependency.
func SimulationSVG(w io.Writer, r sim.Report) error {
	var xs []int // replica counts, in sweep order
	var kvs []int
	for _, f := range r.Fleets {
		if !slices.Contains(xs, f.Replicas) {
			xs = append(xs, f.Replicas)
		}
		if !slices.Contains(kvs, f.KVBlocks) {
			kvs = append(kvs, f.KVBlocks)
		}
	}
	var policies []string
	for _, f := range r.Fleets {
		for _, x := range f.Results {
			if !slices.Contains(policies, x.Policy) {
				policies = append(policies, x.Policy)
			}
		}
	}
	width := plotLeft + 2*plotW + plotGap + plotLegendW
	height := plotTop + len(kvs)*(plotH+plotRowGap) + plotBottomSkip - plotRowGap + 40
	// The legend (a line per policy and the ceiling's) may run past the panels: with the router
	// emulations a sweep can show two dozen policies.
	height = max(height, plotTop+10+(len(policies)+1)*20+20)
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft, esc(fmt.Sprintf("kvcheck simulate: %s (%d requests, ceiling %.1f%%%s)", filepath.Base(r.Trace.Name), r.Stats.Requests, 100*r.Stats.Ceiling, labelSuffix(r.Trace))))

	// Hit rates rarely approach 100%: scale to the ceiling, the highest value, and some room.
	top := 100 * r.Stats.Ceiling
	for _, f := range r.Fleets {
		for _, x := range f.Results {
			top = max(top, 100*x.HitRate)
		}
	}
	hitMax := min(100, math.Ceil((top+5)/10)*10)

	// The load axis is shared by every row so rows compare at a glance.
	maxLoad := 1.0
	for _, f := range r.Fleets {
		for _, x := range f.Results {
			maxLoad = max(maxLoad, x.LoadMaxOverMean)
		}
	}
	maxLoad = math.Ceil(maxLoad)

	for row, kv := range kvs {
		top := plotTop + row*(plotH+plotRowGap)
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
		hit := series(func(x sim.Result) float64 { return 100 * x.HitRate })
		load := series(func(x sim.Result) float64 { return x.LoadMaxOverMean })
		ceiling := 100 * r.Stats.Ceiling
		panel(p, plotLeft, top, fmt.Sprintf("token hit rate %% (%d blocks per replica)", kv), xs, hitMax, policies, hit, &ceiling, 10)
		panel(p, plotLeft+plotW+plotGap, top, fmt.Sprintf("load max/mean (%d blocks per replica)", kv), xs, maxLoad, policies, load, nil, max(1, maxLoad/8))
	}

	lx := plotLeft + 2*plotW + plotGap + 20
	p(`<g id="legend">` + "\n")
	for i, name := range policies {
		y := plotTop + 10 + i*20
		c, dash := plotStyle(i)
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n", lx, y, lx+24, y, c, dash)
		p(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", lx+30, y, esc(name))
	}
	y := plotTop + 10 + len(policies)*20
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="4 3"/>`+"\n", lx, y, lx+24, y)
	p(`<text x="%d" y="%d" dominant-baseline="middle">trace ceiling</text>`+"\n", lx+30, y)
	p("</g>\n</svg>\n")
	return bw.Flush()
}

// plotStyle is the i-th policy's line: a colour of plotSeries, solid the first time round,
// dashed the second and dotted the third, so that up to three times as many policies as colours
// (the idealised policies and the router emulations together) stay apart.
func plotStyle(i int) (colour, dash string) {
	colour = plotSeries[i%len(plotSeries)]
	switch i / len(plotSeries) % 3 {
	case 1:
		dash = ` stroke-dasharray="6 3"`
	case 2:
		dash = ` stroke-dasharray="2 2"`
	}
	return colour, dash
}

type point struct {
	x int
	v float64
}

// panel draws one chart: axes, grid, x labels (replica counts), one polyline per policy.
func panel(p func(string, ...any), left, top int, title string, xs []int, ymax float64, policies []string, series map[string][]point, ref *float64, step float64) {
	p(`<g>` + "\n")
	p(`<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, top-10, esc(title))
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", left, top, plotW, plotH)
	yOf := func(v float64) float64 { return float64(top+plotH) - v/ymax*plotH }
	xOf := func(i int) float64 {
		if len(xs) == 1 {
			return float64(left) + plotW/2
		}
		return float64(left) + 20 + float64(i)*float64(plotW-40)/float64(len(xs)-1)
	}
	for v := 0.0; v <= ymax+1e-9; v += step {
		y := yOf(v)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left, y, left+plotW, y)
		p(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, trimFloat(v))
	}
	for i, x := range xs {
		p(`<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", xOf(i), top+plotH+16, x)
	}
	p(`<text x="%d" y="%d" text-anchor="middle">replicas</text>`+"\n", left+plotW/2, top+plotH+34)
	if ref != nil {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="4 3"/>`+"\n", left, yOf(*ref), left+plotW, yOf(*ref))
	}
	for i, name := range policies {
		pts := series[name]
		if len(pts) == 0 {
			continue
		}
		c, dash := plotStyle(i)
		var b bytes.Buffer
		for k, pt := range pts {
			if k > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", xOf(pt.x), yOf(pt.v))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`+"\n", c, dash, b.String(), esc(name))
		for _, pt := range pts {
			p(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s</title></circle>`+"\n", xOf(pt.x), yOf(pt.v), c, esc(fmt.Sprintf("%s: %s at %d replicas", name, trimFloat(pt.v), xs[pt.x])))
		}
	}
	p("</g>\n")
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
