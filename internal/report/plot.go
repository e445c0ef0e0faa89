package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// The SVG charts' parts, shared by simulate --plot and assess --plot: a colour-blind-safe
// palette, a style per series that no other series shares, text sized so that it stays inside
// the image, legends laid out in as many columns as fit, and axes (linear with outliers clipped
// and marked, or logarithmic). The SVG is written by hand, with no dependency, and is
// self-contained: no script, no external font or stylesheet; hover titles carry the figures.

// plotPalette is Okabe and Ito's colour-blind-safe set ("Color Universal Design", 2008) without
// its yellow, too light on white, and with a mid grey: seven colours no two of which are
// near-twins under the common colour-vision deficiencies. Black is kept for today's routing.
// They live here rather than in styles.go because they are SVG colours, not terminal styles.
var plotPalette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#7F7F7F"}

// plotToday is today's routing's colour: black, drawn thicker than every other series.
const plotToday = "#000000"

// plotDashes are the dash patterns a family's series take in turn, each paired with a marker
// shape, so that series of one colour differ in both.
var plotDashes = []string{"", "7 3", "2 3", "9 3 2 3", "14 4", "5 2 1 2 1 2"}

var plotMarkers = []string{"circle", "square", "triangle", "diamond", "down", "cross"}

// seriesStyle is how one series is drawn.
type seriesStyle struct {
	Colour string
	Dash   string
	Marker string
	Width  float64
	Today  bool
}

// dashAttr is the stroke-dasharray attribute of a dash pattern ("" for a solid line).
func dashAttr(d string) string {
	if d == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, d)
}

// assignStyles gives each series a style of its own: today's routing black, solid and thick;
// the others by family (a router product, an idealised policy family), each family the next
// colour of the palette and each series of it the next dash pattern and marker free in that
// colour. A family with more series than patterns goes on in the next colour with one free,
// so no two series share colour and dash while there are at most len(plotPalette) x
// len(plotDashes) (42); past that, styles repeat in the same order.
func assignStyles(names []string, family func(string) string, today string) map[string]seriesStyle {
	out := map[string]seriesStyle{}
	used := map[[2]int]bool{}
	famColour := map[string]int{}
	next := 0
	for _, n := range names {
		if n == today {
			out[n] = seriesStyle{Colour: plotToday, Marker: "circle", Width: 3.5, Today: true}
			continue
		}
		f := family(n)
		c, ok := famColour[f]
		if !ok {
			c = next % len(plotPalette)
			famColour[f] = c
			next++
		}
		style := -1
		for k := 0; k < len(plotPalette) && style < 0; k++ {
			cc := (c + k) % len(plotPalette)
			for d := range plotDashes {
				if !used[[2]int{cc, d}] {
					c, style = cc, d
					break
				}
			}
		}
		if style < 0 {
			// Every pair taken: repeat, in order.
			style = len(out) % len(plotDashes)
			c = len(out) / len(plotDashes) % len(plotPalette)
		}
		used[[2]int{c, style}] = true
		out[n] = seriesStyle{Colour: plotPalette[c], Dash: plotDashes[style], Marker: plotMarkers[style], Width: 2}
	}
	return out
}

// Text metrics: the widest a character of sans-serif text is assumed to be, in ems. Common
// sans-serif faces average about 0.5 em for lower case and digits; 0.62 (0.68 bold) covers
// upper case and hyphens too, so text laid out with it stays inside the image in any of them.
const (
	emNormal = 0.62
	emBold   = 0.68
)

// textWidth is the width s takes at a font size, by the assumption above.
func textWidth(s string, size float64, bold bool) float64 {
	em := emNormal
	if bold {
		em = emBold
	}
	return float64(len([]rune(s))) * size * em
}

// fitText cuts s to at most width, with an ellipsis, by the same assumption.
func fitText(s string, size, width float64, bold bool) string {
	if textWidth(s, size, bold) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && textWidth(string(r)+"…", size, bold) > width {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ") + "…"
}

// wrapText breaks s into lines no wider than width at a font size.
func wrapText(s string, size, width float64, bold bool) []string {
	per := int(width / (size * emNormal))
	if bold {
		per = int(width / (size * emBold))
	}
	return wrapProse(s, max(per, 8))
}

// svgWriter accumulates an SVG document.
type svgWriter struct {
	b bytes.Buffer
}

func (w *svgWriter) p(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

// text writes one line of text at (x, y): anchor is start, middle or end; the title, when set,
// is its hover text.
func (w *svgWriter) text(x, y, size float64, anchor string, bold bool, s, title, fill string) {
	weight := ""
	if bold {
		weight = ` font-weight="bold"`
	}
	if fill != "" {
		fill = fmt.Sprintf(` fill="%s"`, fill)
	}
	if title != "" {
		title = "<title>" + esc(title) + "</title>"
	}
	w.p(`<text x="%.1f" y="%.1f" font-size="%g" text-anchor="%s"%s%s>%s%s</text>`+"\n", x, y, size, anchor, weight, fill, title, esc(s))
}

// marker draws a marker shape of radius r at (x, y), filled unless hollow.
func (w *svgWriter) marker(kind string, x, y, r float64, colour string, hollow bool, title string) {
	if kind == "none" {
		return
	}
	fill := colour
	if hollow {
		fill = "white"
	}
	t := ""
	if title != "" {
		t = "<title>" + esc(title) + "</title>"
	}
	attrs := fmt.Sprintf(`fill="%s" stroke="%s" stroke-width="1.5"`, fill, colour)
	switch kind {
	case "square":
		w.p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s>%s</rect>`+"\n", x-r, y-r, 2*r, 2*r, attrs, t)
	case "triangle":
		w.p(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" %s>%s</polygon>`+"\n", x, y-r*1.2, x+r*1.1, y+r*0.8, x-r*1.1, y+r*0.8, attrs, t)
	case "down":
		w.p(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" %s>%s</polygon>`+"\n", x, y+r*1.2, x+r*1.1, y-r*0.8, x-r*1.1, y-r*0.8, attrs, t)
	case "diamond":
		w.p(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" %s>%s</polygon>`+"\n", x, y-r*1.3, x+r*1.3, y, x, y+r*1.3, x-r*1.3, y, attrs, t)
	case "cross":
		w.p(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" fill="none" stroke="%s" stroke-width="2.5">%s</path>`+"\n", x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r, colour, t)
	default:
		w.p(`<circle cx="%.1f" cy="%.1f" r="%.1f" %s>%s</circle>`+"\n", x, y, r, attrs, t)
	}
}

// legendEntry is one line of a legend: its style and label, and hover text.
type legendEntry struct {
	Label, Title string
	Style        seriesStyle
	Hollow       bool
	NoLine       bool // a marker only (a point, not a series)
}

// legendSwatch is the width of a legend entry's line sample and the gap after it.
const (
	legendSwatch = 34.0
	legendGap    = 18.0
	legendRow    = 18.0
	legendSize   = 12.0
)

// legendHeight is the height the legend of entries takes at a width.
func legendHeight(entries []legendEntry, width float64) float64 {
	_, rows, _ := legendGrid(entries, width)
	return float64(rows) * legendRow
}

// legendGrid lays entries out in columns of one width, as many as the width holds: every label
// whole when the widest fits a column, else cut with an ellipsis (its title keeps it whole).
func legendGrid(entries []legendEntry, width float64) (cols, rows int, colW float64) {
	for _, e := range entries {
		colW = max(colW, legendSwatch+textWidth(e.Label, legendSize, false)+legendGap)
	}
	colW = min(colW, width)
	cols = max(1, int(width/max(colW, 1)))
	rows = (len(entries) + cols - 1) / cols
	return cols, rows, colW
}

// legend draws the entries from (x, y), column by column down, in a width.
func (w *svgWriter) legend(x, y, width float64, entries []legendEntry) {
	_, rows, colW := legendGrid(entries, width)
	w.p(`<g id="legend">` + "\n")
	for i, e := range entries {
		col, row := i/rows, i%rows
		ex, ey := x+float64(col)*colW, y+float64(row)*legendRow+legendRow/2
		st := e.Style
		if !e.NoLine {
			w.p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n", ex, ey, ex+26, ey, st.Colour, st.Width, dashAttr(st.Dash))
		}
		w.marker(st.Marker, ex+13, ey, 3.5, st.Colour, e.Hollow, "")
		label := fitText(e.Label, legendSize, colW-legendSwatch-legendGap/2, false)
		title := e.Title
		if title == "" && label != e.Label {
			title = e.Label
		}
		w.text(ex+legendSwatch, ey+4, legendSize, "start", false, label, title, "")
	}
	w.p("</g>\n")
}

// axis maps values to a panel's height: linear from lo to hi (values above hi clipped to the
// top edge and marked as outliers when clip is set), or logarithmic.
type axis struct {
	lo, hi float64
	log    bool
	clip   bool
	ticks  []float64
	label  func(float64) string
}

// pos is the y of v in a panel from top of height h, and whether v was clipped.
func (a axis) pos(v, top, h float64) (float64, bool) {
	clipped := false
	if a.clip && v > a.hi {
		v, clipped = a.hi, true
	}
	var f float64
	if a.log {
		v = max(v, a.lo)
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	f = min(max(f, 0), 1)
	return top + h - f*h, clipped
}

// linearTicks are ticks from lo to hi every step.
func linearTicks(lo, hi, step float64) []float64 {
	var out []float64
	for v := lo; v <= hi+step/1e6; v += step {
		out = append(out, math.Round(v*1e6)/1e6)
	}
	return out
}

// logAxis spans the decades holding every positive value (a value of 0 sits at the bottom).
func logAxis(values []float64, label func(float64) string) axis {
	lo, hi := math.Inf(1), 0.0
	for _, v := range values {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if hi == 0 {
		lo, hi = 0.001, 1
	}
	a := axis{lo: math.Pow(10, math.Floor(math.Log10(lo))), hi: math.Pow(10, math.Ceil(math.Log10(hi))), log: true, label: label}
	if a.hi <= a.lo {
		a.hi = a.lo * 10
	}
	for v := a.lo; v <= a.hi*1.0001; v *= 10 {
		a.ticks = append(a.ticks, v)
	}
	return a
}

// loadAxis is the load max/mean axis: from 1.0 (an even spread) to 2.5, or to 3.0 when any
// value passes 2.5, so that the range from 1.0 to 2.0, where the answers are, keeps its room;
// values above are outliers, drawn at the top edge and marked with their value.
func loadAxis(values []float64) axis {
	hi := 2.5
	if slices.ContainsFunc(values, func(v float64) bool { return v > 2.5 }) {
		hi = 3
	}
	return axis{lo: 1, hi: hi, clip: true, ticks: linearTicks(1, hi, 0.25), label: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
}

// dodge spreads points of one x whose marks would cover each other (within 4 px of y) side by
// side, 6 px apart: equal values stay visible as a row of distinct markers. ys are the points'
// y positions; it returns each one's x offset.
func dodge(ys []float64) []float64 {
	idx := make([]int, len(ys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ys[idx[a]] < ys[idx[b]] })
	off := make([]float64, len(ys))
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && ys[idx[end]]-ys[idx[end-1]] < 4 {
			end++
		}
		n := end - start
		step := min(6.0, 60.0/float64(max(n-1, 1)))
		for k := start; k < end; k++ {
			off[idx[k]] = (float64(k-start) - float64(n-1)/2) * step
		}
		start = end
	}
	return off
}
