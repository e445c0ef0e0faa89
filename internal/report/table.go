package report

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Column describes one column of a table for people at a terminal. Piped output ignores all
// but the name: it is tab-separated and complete, for scripts.
type Column struct {
	Name string
	// Short is a shorter header used when the table must narrow ("" keeps Name).
	Short string
	// Number right-aligns the column; text is left-aligned.
	Number bool
	// Drop is 0 for a column always shown; otherwise the column may be left out to fit the
	// terminal, the highest Drop first (a column with nothing but "-" goes before the rest).
	Drop int
	// Wrap lets the column's text wrap onto more lines to fit.
	Wrap bool
}

// Columns infers column specs from a header and rows: a column whose cells are all numbers
// (percentages, durations, rates; "-" for unknown) is right-aligned, any other wraps. Nothing
// is dropped; callers that know which columns matter least use Grid with their own specs.
func Columns(header []string, rows [][]string) []Column {
	cols := make([]Column, len(header))
	for i, h := range header {
		numeric, seen := true, false
		for _, r := range rows {
			if i >= len(r) || r[i] == "-" || r[i] == "" {
				continue
			}
			seen = true
			if !reNumberCell.MatchString(r[i]) {
				numeric = false
				break
			}
		}
		cols[i] = Column{Name: h, Number: numeric && seen, Wrap: !numeric || !seen}
	}
	return cols
}

// dropping returns cols with the named columns droppable: drops maps a header to its Drop.
func dropping(cols []Column, drops map[string]int) []Column {
	for i := range cols {
		if d, ok := drops[cols[i].Name]; ok {
			cols[i].Drop = d
		}
	}
	return cols
}

// reNumberCell matches a cell that shows one quantity: 12, 0.875, 76.1%, +44.4%, 0.29s,
// 31.8 KB/s, 1.33, 20.0/min, ~12.
var reNumberCell = regexp.MustCompile(`^[-+~]?\d[\d.,]*\s?(%|[µm]?s|min|h|x|[KMG]?B(/s)?|tok/s|/s|/min)?$`)

// minWrap is the narrowest a wrapping column becomes: narrower text is no longer readable;
// maxUnbroken is the longest word (an address, a path) kept whole rather than broken.
// hardFloor is the narrowest any wrapping column becomes when a table cannot fit otherwise.
const (
	minWrap     = 10
	maxUnbroken = 16
	hardFloor   = 6
)

// wrapFloor is the narrowest column j may wrap to: its header's longest word, its cells'
// longest word up to maxUnbroken, and at least minWrap.
func wrapFloor(header string, cells [][]string, j int) int {
	w := 0
	for _, r := range cells {
		w = max(w, longestWord(r[j]))
	}
	return max(minWrap, longestWord(header), min(w, maxUnbroken))
}

// Grid writes a table: tab-separated and complete when piped; at a terminal, fitted to its
// width (shorter headers, then the columns with the highest Drop left out and a note saying
// which, then wrapping text columns) unless the writer is wide, boxed when colour is on and
// plain, aligned columns when it is off. A row's cells stay aligned whatever wraps.
func (t *Text) Grid(cols []Column, rows [][]string) error {
	if !t.terminal {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		fmt.Fprintln(t.w, strings.Join(names, "\t"))
		for _, r := range rows {
			fmt.Fprintln(t.w, strings.Join(cleanCells(r), "\t"))
		}
		return nil
	}
	lay := layout(cols, rows, t.width, t.wide, t.boxed())
	t.draw(lay)
	if len(lay.dropped) > 0 {
		note := fmt.Sprintf("(%s left out to fit %d columns; --wide shows them)", strings.Join(lay.dropped, ", "), t.width)
		for _, l := range wrap(note, t.width) {
			t.Muted("%s", l)
		}
	}
	return nil
}

// boxed reports whether tables are drawn with box lines: at a terminal with colour on.
func (t *Text) boxed() bool { return t.color }

// tableLayout is a table fitted to a width: the columns kept, their headers and widths.
type tableLayout struct {
	cols    []Column
	headers []string
	widths  []int
	rows    [][]string
	dropped []string
	boxed   bool
}

// overhead is the width a table's lines add to its cells: "│ a │ b │" or "a  b".
func overhead(n int, boxed bool) int {
	if boxed {
		return 3*n + 1
	}
	return 2 * (n - 1)
}

func layout(cols []Column, rows [][]string, width int, wide, boxed bool) tableLayout {
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = make([]string, len(cols))
		for j := range cols {
			if j < len(r) {
				cells[i][j] = visible(strings.NewReplacer("\t", " ", "\n", " ").Replace(r[j]))
			}
		}
	}
	keep := make([]int, len(cols))
	for i := range keep {
		keep[i] = i
	}
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.Name
	}
	natural := func(j int) int {
		w := lipgloss.Width(headers[j])
		for _, r := range cells {
			w = max(w, lipgloss.Width(r[j]))
		}
		return w
	}
	total := func() int {
		n := overhead(len(keep), boxed)
		for _, j := range keep {
			n += natural(j)
		}
		return n
	}
	var dropped []string
	if !wide && width > 0 && total() > width {
		for j, c := range cols {
			if c.Short != "" {
				headers[j] = c.Short
			}
		}
		// Drop columns, the emptiest and least valuable first, until the rest fit once
		// wrapped as far as wrapping goes.
		order := slices.Clone(keep)
		slices.SortStableFunc(order, func(a, b int) int {
			ea, eb := emptyColumn(cells, a), emptyColumn(cells, b)
			switch {
			case cols[a].Drop == 0 || cols[b].Drop == 0:
				return cols[b].Drop - cols[a].Drop
			case ea != eb:
				if ea {
					return -1
				}
				return 1
			}
			return cols[b].Drop - cols[a].Drop
		})
		least := func() int {
			n := overhead(len(keep), boxed)
			for _, j := range keep {
				if cols[j].Wrap {
					n += min(natural(j), wrapFloor(headers[j], cells, j))
				} else {
					n += natural(j)
				}
			}
			return n
		}
		for _, j := range order {
			if cols[j].Drop == 0 || least() <= width {
				break
			}
			keep = slices.DeleteFunc(keep, func(k int) bool { return k == j })
			dropped = append(dropped, cols[j].Name)
		}
	}
	widths := make([]int, len(keep))
	for i, j := range keep {
		widths[i] = natural(j)
	}
	if !wide && width > 0 {
		// Narrow the widest wrapping column by one, again and again, until the table fits:
		// the wrapping columns end up as even as their contents allow.
		sum := overhead(len(keep), boxed)
		for _, w := range widths {
			sum += w
		}
		// First headers wider than their column's cells wrap (a two-line header costs
		// nothing in the rows), then text cells.
		cellFloor := func(j int) int {
			w := longestWord(headers[j])
			for _, r := range cells {
				w = max(w, lipgloss.Width(r[j]))
			}
			return w
		}
		for sum > width {
			best := -1
			for i, j := range keep {
				if widths[i] > cellFloor(j) && (best < 0 || widths[i] > widths[best]) {
					best = i
				}
			}
			if best < 0 {
				for i, j := range keep {
					if cols[j].Wrap && widths[i] > wrapFloor(headers[j], cells, j) && (best < 0 || widths[i] > widths[best]) {
						best = i
					}
				}
			}
			if best < 0 {
				// Past the floors: break long words, down to hardFloor cells a column.
				for i, j := range keep {
					if cols[j].Wrap && widths[i] > hardFloor && (best < 0 || widths[i] > widths[best]) {
						best = i
					}
				}
			}
			if best < 0 {
				// Nothing left to wrap: leave out the last column that may go (the highest
				// Drop, else the last but the first), and say so, rather than let the
				// terminal wrap the table's lines and break its box.
				cand := -1
				for i, j := range keep {
					if i > 0 && (cand < 0 || cols[j].Drop >= cols[keep[cand]].Drop) {
						cand = i
					}
				}
				if cand < 0 {
					break // one column, narrower than it can be: nothing more to do
				}
				sum -= widths[cand] + overhead(len(keep), boxed) - overhead(len(keep)-1, boxed)
				dropped = append(dropped, cols[keep[cand]].Name)
				keep = slices.Delete(keep, cand, cand+1)
				widths = slices.Delete(widths, cand, cand+1)
				continue
			}
			widths[best]--
			sum--
		}
	}
	lay := tableLayout{boxed: boxed, dropped: dropped, widths: widths}
	for _, j := range keep {
		lay.cols = append(lay.cols, cols[j])
		lay.headers = append(lay.headers, headers[j])
	}
	for _, r := range cells {
		row := make([]string, len(keep))
		for i, j := range keep {
			row[i] = r[j]
		}
		lay.rows = append(lay.rows, row)
	}
	return lay
}

// emptyColumn reports whether a column holds nothing but "-" or blanks.
func emptyColumn(cells [][]string, j int) bool {
	for _, r := range cells {
		if r[j] != "-" && strings.TrimSpace(r[j]) != "" {
			return false
		}
	}
	return true
}

// fields splits s at spaces into the words a cell wraps between: a number and its unit are
// one ("41 ms").
func fields(s string) []string {
	var words []string
	for _, w := range strings.Fields(s) {
		if n := len(words); n > 0 && unitAfter(words[n-1], w) {
			words[n-1] += " " + w
			continue
		}
		words = append(words, w)
	}
	return words
}

func longestWord(s string) int {
	n := 0
	for _, w := range fields(s) {
		n = max(n, lipgloss.Width(w))
	}
	return n
}

// wrap breaks s into lines of at most width cells, at spaces where it can and inside a word
// where it must.
func wrap(s string, width int) []string {
	if width <= 0 || lipgloss.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range fields(s) {
		for lipgloss.Width(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			r := []rune(word)
			k := 0
			for k < len(r) && lipgloss.Width(string(r[:k+1])) <= width {
				k++
			}
			// Prefer to break after a separator (meta-llama/ Llama-3.1-8B-) in the second
			// half of the line.
			for b := k; b > k/2; b-- {
				if strings.ContainsRune("/-_.:,=", r[b-1]) {
					k = b
					break
				}
			}
			k = max(k, 1)
			lines = append(lines, string(r[:k]))
			word = string(r[k:])
		}
		switch {
		case word == "":
		case line == "":
			line = word
		case lipgloss.Width(line)+1+lipgloss.Width(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// draw writes a fitted table.
func (t *Text) draw(l tableLayout) {
	pad := func(s string, w int, right bool) string {
		gap := strings.Repeat(" ", max(0, w-lipgloss.Width(s)))
		if right {
			return gap + s
		}
		return s + gap
	}
	rule := func(left, mid, right string) {
		if !l.boxed {
			return
		}
		parts := make([]string, len(l.widths))
		for i, w := range l.widths {
			parts[i] = strings.Repeat("─", w+2)
		}
		fmt.Fprintln(t.w, t.r.NewStyle().Inherit(styleTableRule).Render(left+strings.Join(parts, mid)+right))
	}
	line := func(cells []string, header bool) {
		wrapped := make([][]string, len(cells))
		height := 1
		for i, c := range cells {
			wrapped[i] = wrap(c, l.widths[i])
			height = max(height, len(wrapped[i]))
		}
		for k := range height {
			parts := make([]string, len(cells))
			for i := range cells {
				s := ""
				if k < len(wrapped[i]) {
					s = wrapped[i][k]
				}
				s = pad(s, l.widths[i], l.cols[i].Number)
				if header {
					s = t.r.NewStyle().Inherit(styleTableHeader).Render(s)
				}
				parts[i] = s
			}
			if l.boxed {
				bar := t.r.NewStyle().Inherit(styleTableRule).Render("│")
				fmt.Fprintln(t.w, bar+" "+strings.Join(parts, " "+bar+" ")+" "+bar)
			} else {
				fmt.Fprintln(t.w, strings.TrimRight(strings.Join(parts, "  "), " "))
			}
		}
	}
	rule("┌", "┬", "┐")
	line(l.headers, true)
	rule("├", "┼", "┤")
	for _, r := range l.rows {
		line(r, false)
	}
	rule("└", "┴", "┘")
}
