package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Geometry of the ranking chart, in SVG user units.
const (
	rankPlotW = 560.0
	rankPlotH = 320.0
)

// RankingSVG draws assess's router ranking as a chart: each router row a point at its load
// max/mean (across) and the prefill it saves against today's routing (up), coloured by product
// with a marker by variant (shipped, configured, tuned), hollow when not ranked; the first
// ringed and named; today's routing the black line at 0 saved; the hot-spot area from load
// max/mean 2.0 shaded, and loads past the axis drawn at its edge and marked. Points that would
// cover each other are set side by side. The legend lists every row with its rank and figures.
func RankingSVG(w io.Writer, rk *rank.Ranking) error {
	var loads, saved []float64
	var names []string
	for _, r := range rk.Rows {
		loads = append(loads, r.LoadMaxOverMean)
		saved = append(saved, 100*r.PrefillSaved)
		names = append(names, r.Name())
	}
	product := map[string]string{}
	for _, r := range rk.Rows {
		product[r.Name()] = r.Product
	}
	styles := assignStyles(names, func(n string) string { return product[n] }, "")
	for i, r := range rk.Rows {
		// The variant is the marker: shipped a circle, configured a square, tuned a triangle.
		st := styles[names[i]]
		st.Marker = map[string]string{rank.Shipped: "circle", rank.Configured: "square", rank.Tuned: "triangle"}[r.Variant]
		if st.Marker == "" {
			st.Marker = "diamond"
		}
		styles[names[i]] = st
	}

	xAx := loadAxis(loads)
	lo, hi := 0.0, 10.0
	for _, v := range saved {
		lo, hi = min(lo, math.Floor(v/10)*10), max(hi, math.Ceil(v/10)*10)
	}
	step := 10.0
	if hi-lo > 60 {
		step = 20
	}
	yAx := axis{lo: lo, hi: hi, ticks: linearTicks(lo, hi, step), label: func(v float64) string { return trimFloat(v) + "%" }}

	width := plotLeft + rankPlotW + plotRight
	inner := width - 40
	today := rk.Today
	title := fmt.Sprintf("kvcheck assess: routers on %d %s x %d blocks of %d tokens, prefill saved against today's %s", rk.Replicas, plural(rk.Replicas, "replica"), rk.KVBlocks, rk.BlockSize, today)
	titleLines := wrapText(title, plotTitleSz, inner, true)

	var entries []legendEntry
	for i, r := range rk.Rows {
		place := strconv.Itoa(r.Rank) + "."
		tail := ""
		if r.Rank == 0 {
			place, tail = "-", ", not ranked"
		}
		entries = append(entries, legendEntry{Label: fmt.Sprintf("%s %s: %s, %.2f%s", place, names[i], signedPct(r.PrefillSaved), r.LoadMaxOverMean, tail),
			Title: rowTitle(r), Style: styles[names[i]], Hollow: r.Rank == 0, NoLine: true})
	}
	entries = append(entries,
		legendEntry{Label: "today's " + today + " (0 saved)", Style: seriesStyle{Colour: plotToday, Width: 3, Marker: "none"}},
		legendEntry{Label: "load above the axis", Title: "a load max/mean past the axis: drawn at its edge", Style: seriesStyle{Colour: "#B00020", Marker: "triangle"}, NoLine: true})

	top := 20 + float64(len(titleLines))*22 + 24
	legendY := top + rankPlotH + 50
	height := legendY + legendHeight(entries, inner) + 16
	var sw svgWriter
	sw.p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	sw.p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	sw.p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	for i, l := range titleLines {
		sw.text(20, 20+float64(i+1)*20, plotTitleSz, "start", true, l, "", "")
	}
	left := plotLeft
	xOf := func(v float64) (float64, bool) {
		y, clipped := xAx.pos(v, 0, rankPlotW)
		return left + rankPlotW - y, clipped
	}
	yOf := func(v float64) float64 { y, _ := yAx.pos(v, top, rankPlotH); return y }

	hot, _ := xOf(sim.HotSpotRatio)
	sw.p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#B00020" fill-opacity="0.07"/>`+"\n", hot, top, left+rankPlotW-hot, rankPlotH)
	sw.text(left+rankPlotW-4, top+14, 10, "end", false, fmt.Sprintf("hot spot from %.1f: never ranked", sim.HotSpotRatio), "", "#B00020")
	sw.p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", left, top, rankPlotW, rankPlotH)
	for _, v := range yAx.ticks {
		y := yOf(v)
		sw.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left, y, left+rankPlotW, y)
		sw.text(left-6, y+4, plotTickSz, "end", false, yAx.label(v), "", "")
	}
	for _, v := range xAx.ticks {
		x, _ := xOf(v)
		sw.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, top, x, top+rankPlotH)
		sw.text(x, top+rankPlotH+16, plotTickSz, "middle", false, xAx.label(v), "", "")
	}
	sw.text(left+rankPlotW/2, top+rankPlotH+34, plotTickSz, "middle", false, "load max/mean (1.00: an even spread)", "", "")
	sw.text(20, top-10, plotTickSz, "start", false, "prefill saved against today's "+today+", after the warm-up", "", "")
	y0 := yOf(0)
	sw.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"><title>%s</title></line>`+"\n", left, y0, left+rankPlotW, y0, plotToday,
		esc(fmt.Sprintf("today's %s: 0 saved by definition (hit %s after the warm-up)", today, pct(rk.TodayHitRate))))

	// Place the points, then spread those that would cover each other.
	type placed struct{ x, y float64 }
	pts := make([]placed, len(rk.Rows))
	clipped := make([]bool, len(rk.Rows))
	for i, r := range rk.Rows {
		x, c := xOf(r.LoadMaxOverMean)
		pts[i], clipped[i] = placed{x, yOf(100 * r.PrefillSaved)}, c
	}
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := pts[order[a]], pts[order[b]]
		if math.Abs(pa.y-pb.y) >= 4 {
			return pa.y < pb.y
		}
		return pa.x < pb.x
	})
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && math.Abs(pts[order[end]].y-pts[order[start]].y) < 4 && math.Abs(pts[order[end]].x-pts[order[start]].x) < 4 {
			end++
		}
		for k := start; k < end; k++ {
			pts[order[k]].x += (float64(k-start) - float64(end-start-1)/2) * 8
		}
		start = end
	}
	// Ranked points over the rest, the first last of all.
	draw := make([]int, len(rk.Rows))
	for i := range draw {
		draw[i] = i
	}
	slices.SortStableFunc(draw, func(a, b int) int {
		ra, rb := rk.Rows[a].Rank, rk.Rows[b].Rank
		key := func(r int) int {
			if r == 0 {
				return math.MaxInt
			}
			return r
		}
		return key(rb) - key(ra)
	})
	for _, i := range draw {
		r := rk.Rows[i]
		st := styles[names[i]]
		p := pts[i]
		if clipped[i] {
			sw.marker("triangle", p.x, p.y, 5, "#B00020", false, rowTitle(r)+" (past the axis)")
			continue
		}
		sw.marker(st.Marker, p.x, p.y, 4.5, st.Colour, r.Rank == 0, rowTitle(r))
	}
	if len(rk.Rows) > 0 && rk.Rows[0].Rank == 1 && rk.NoWinner == "" {
		p := pts[0]
		sw.p(`<circle cx="%.1f" cy="%.1f" r="10" fill="none" stroke="%s" stroke-width="2"/>`+"\n", p.x, p.y, plotToday)
		label := "first: " + names[0]
		anchor, lx := "start", p.x+14
		if lx+textWidth(label, 12, true) > width-4 {
			anchor, lx = "end", p.x-14
		}
		ly := max(p.y-12, top+14)
		sw.text(lx, ly, 12, anchor, true, label, "", "")
	}
	sw.legend(20, legendY, inner, entries)
	sw.p("</svg>\n")
	_, err := w.Write(sw.b.Bytes())
	return err
}

// rowTitle is a ranking row's hover text: its place and every figure the rule reads.
func rowTitle(r rank.Row) string {
	place := fmt.Sprintf("rank %d", r.Rank)
	if r.Rank == 0 {
		place = "not ranked: " + r.Excluded
	}
	return fmt.Sprintf("%s, %s: prefill saved %s, load max/mean %.2f, hit %s, TTFT p99 %s, requirements %s",
		r.Name(), place, signedPct(r.PrefillSaved), r.LoadMaxOverMean, pct(r.HitRate), seconds(r.TTFTP99), requirementCounts(r.Requirements))
}

// RankingSVGFile writes RankingSVG's chart to the file at path (assess --plot).
func RankingSVGFile(path string, rk *rank.Ranking) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := RankingSVG(f, rk); err != nil {
		_ = f.Close() // the write already failed; that error is the one to report
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
