package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

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
	title := fmt.Sprintf("kvcheck assess: routers on %d %s x %d blocks of %d tokens", rk.Replicas, plural(rk.Replicas, "replica"), rk.KVBlocks, rk.BlockSize)
	titleLines := wrapText(title, plotTitleSz, inner, true)

	// Each row's key is the label beside its point and the start of its legend entry: its rank,
	// or a letter for a row not ranked, so points of one product and variant (one colour, one
	// marker) are told apart.
	keys := rowKeys(rk.Rows)
	var entries []legendEntry
	for i, r := range rk.Rows {
		tail := ""
		if r.Rank == 0 {
			tail = ", not ranked"
		}
		entries = append(entries, legendEntry{Label: fmt.Sprintf("%s. %s: %s, %.2f%s", keys[i], names[i], signedPct(r.PrefillSaved), r.LoadMaxOverMean, tail),
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
	// The hot-spot area's name, centred in it half way up, where points are fewest (only rows
	// not ranked fall in it, most of them at the top, saving as much as the best).
	hotLabel := fmt.Sprintf("hot spot from %.1f: never ranked", sim.HotSpotRatio)
	hotW := textWidth(hotLabel, 10, false)
	hotX := min((hot+left+rankPlotW)/2, left+rankPlotW-4-hotW/2)
	hotY := top + rankPlotH/2
	sw.text(hotX, hotY, 10, "middle", false, hotLabel, "", "#B00020")
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
	xs := make([]float64, len(pts))
	ys := make([]float64, len(pts))
	for i, p := range pts {
		xs[i], ys[i] = p.x, p.y
	}
	xs = spreadRows(xs, ys, left+5, left+rankPlotW-5)
	for i := range pts {
		pts[i].x = xs[i]
	}
	// The points in reading order, by height then across, for the labels.
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := pts[order[a]], pts[order[b]]
		if math.Abs(pa.y-pb.y) >= rankRowGap {
			return pa.y < pb.y
		}
		return pa.x < pb.x
	})
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
	// What a label may not cover: the points, today's line at 0, the labels written so far.
	var taken []box
	for _, p := range pts {
		taken = append(taken, box{p.x - 5, p.y - 5, p.x + 5, p.y + 5})
	}
	taken = append(taken, box{left, y0 - 2, left + rankPlotW, y0 + 2},
		box{hotX - hotW/2, hotY - 10, hotX + hotW/2, hotY + 3})
	if len(rk.Rows) > 0 && rk.Rows[0].Rank == 1 && rk.NoWinner == "" {
		p := pts[0]
		sw.p(`<circle cx="%.1f" cy="%.1f" r="10" fill="none" stroke="%s" stroke-width="2"/>`+"\n", p.x, p.y, plotToday)
		label := "first: " + names[0]
		tw := textWidth(label, 12, true)
		anchor, lx, bx := "start", p.x+14, p.x+14
		if lx+tw > width-4 {
			anchor, lx, bx = "end", p.x-14, p.x-14-tw
		}
		ly := max(p.y-12, top+14)
		sw.text(lx, ly, 12, anchor, true, label, "", "")
		taken = append(taken, box{bx, ly - 12, bx + tw, ly + 3}, box{p.x - 11, p.y - 11, p.x + 11, p.y + 11})
	}
	// One label per group of points that touch: their keys left to right, beside the group
	// where there is room (right, left, above, below, then the same farther out), so every
	// point can be found in the legend.
	for _, g := range pointGroups(order, func(i int) (float64, float64) { return pts[i].x, pts[i].y }) {
		var ks []string
		x0, x1, y := math.Inf(1), math.Inf(-1), pts[g[0]].y
		for _, i := range g {
			ks = append(ks, keys[i])
			x0, x1 = min(x0, pts[i].x), max(x1, pts[i].x)
		}
		label := strings.Join(ks, ",")
		tw := textWidth(label, rankKeySz, false)
		// Above and below: centred on the group, moved in from the plot's sides.
		mid := min(max((x0+x1)/2-tw/2, left+2), left+rankPlotW-2-tw)
		candidates := []box{
			{x1 + 7, y - 6, x1 + 7 + tw, y + 6},
			{x0 - 7 - tw, y - 6, x0 - 7, y + 6},
			{mid, y - 20, mid + tw, y - 8},
			{mid, y + 8, mid + tw, y + 20},
			// Farther out, clear of the first's ring.
			{x1 + 14, y - 6, x1 + 14 + tw, y + 6},
			{x0 - 14 - tw, y - 6, x0 - 14, y + 6},
			{mid, y - 26, mid + tw, y - 14},
			{mid, y + 14, mid + tw, y + 26},
		}
		pick := candidates[0]
		if pick.x1 > left+rankPlotW {
			pick = candidates[1]
		}
		for _, c := range candidates {
			if c.x0 >= left && c.x1 <= left+rankPlotW && c.y0 >= top && c.y1 <= top+rankPlotH && !slices.ContainsFunc(taken, c.overlaps) {
				pick = c
				break
			}
		}
		taken = append(taken, pick)
		sw.text(pick.x0, pick.y1-2, rankKeySz, "start", false, label, "", "#333")
	}
	sw.legend(20, legendY, inner, entries)
	sw.p("</svg>\n")
	_, err := w.Write(sw.b.Bytes())
	return err
}

// rankKeySz is the font size of the keys beside the ranking's points.
const rankKeySz = 10.0

// box is a rectangle a label takes on the chart.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) overlaps(o box) bool { return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 }

// rankDot is how far apart the centres of two of the ranking's points must be not to cover
// each other (markers of radius 4.5, and a little air); rankRowGap is the height difference
// under which two points count as one row.
const (
	rankDot    = 9.0
	rankRowGap = 6.0
)

// spreadRows moves points that would cover each other apart across, keeping their heights:
// points whose heights differ by less than rankRowGap form a row, and in a row each run of
// points closer than rankDot is set rankDot apart, centred on where its points belong (the
// mean of their x), inside [lo, hi]. Runs that then touch are merged and centred again, so
// every point stays as near its value as the others allow. It returns the new x of each point.
func spreadRows(xs, ys []float64, lo, hi float64) []float64 {
	out := slices.Clone(xs)
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ys[idx[a]] < ys[idx[b]] })
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && ys[idx[end]]-ys[idx[end-1]] < rankRowGap {
			end++
		}
		row := slices.Clone(idx[start:end])
		sort.SliceStable(row, func(a, b int) bool { return xs[row[a]] < xs[row[b]] })
		type run struct {
			members []int
			first   float64 // the x of its first point
		}
		place := func(m []int) float64 {
			mean := 0.0
			for _, i := range m {
				mean += xs[i]
			}
			mean /= float64(len(m))
			width := float64(len(m)-1) * rankDot
			return min(max(mean-width/2, lo), hi-width)
		}
		var runs []run
		for _, i := range row {
			runs = append(runs, run{[]int{i}, place([]int{i})})
			// Merge back while the newest run touches the one before it.
			for n := len(runs); n > 1; n = len(runs) {
				a, b := runs[n-2], runs[n-1]
				if a.first+float64(len(a.members)-1)*rankDot+rankDot <= b.first {
					break
				}
				m := append(slices.Clone(a.members), b.members...)
				runs = append(runs[:n-2], run{m, place(m)})
			}
		}
		for _, r := range runs {
			for k, i := range r.members {
				out[i] = r.first + float64(k)*rankDot
			}
		}
		start = end
	}
	return out
}

// rowKeys names each ranking row on the chart: its rank, or for a row not ranked a letter in
// the rows' order (a, b, ...; past z, z1, z2, ...).
func rowKeys(rows []rank.Row) []string {
	keys := make([]string, len(rows))
	n := 0
	for i, r := range rows {
		if r.Rank > 0 {
			keys[i] = strconv.Itoa(r.Rank)
			continue
		}
		keys[i] = string(rune('a' + min(n, 25)))
		if n >= 25 {
			keys[i] += strconv.Itoa(n - 24)
		}
		n++
	}
	return keys
}

// pointGroups groups points that touch, in the order given (by height, then across, as the
// points were spread): neighbours in one row no more than a point and a gap apart share a
// group, so its label does not land on a neighbour.
func pointGroups(order []int, at func(int) (x, y float64)) [][]int {
	var groups [][]int
	for _, i := range order {
		x, y := at(i)
		if n := len(groups); n > 0 {
			last := groups[n-1][len(groups[n-1])-1]
			lx, ly := at(last)
			if math.Abs(y-ly) < rankRowGap && x-lx <= rankDot+3 {
				groups[n-1] = append(groups[n-1], i)
				continue
			}
		}
		groups = append(groups, []int{i})
	}
	return groups
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
