package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/secret"
)

func init() {
	register(writer{format: FormatText, order: 0, write: writeText})
}

// writeText writes the result for people: its own rendering, else its findings one a line.
func writeText(w io.Writer, r Result, o Options) error {
	t := NewText(w, o.Color)
	t.SetWide(o.Wide)
	t.SetAll(o.All)
	// The report is written whole, through a buffer: a write call a line cost a system call a
	// line (100,000 for lint's report on a tree of dashboards).
	b := bufio.NewWriterSize(w, 64<<10)
	t.writeTo(b)
	var err error
	if r.Text != nil {
		err = r.Text(t)
	} else {
		for _, f := range r.Findings {
			t.Finding(f)
		}
	}
	if ferr := b.Flush(); err == nil {
		err = ferr
	}
	return err
}

// Text writes human-readable output. On a terminal it draws boxed tables and colour; when piped
// it writes tab-separated tables and no escape codes, so the output greps and cuts cleanly.
type Text struct {
	w io.Writer
	// out is what w writes to, after the masking and the guard: where lines already
	// written through them by into's copies are copied.
	out      io.Writer
	terminal bool
	// color: colour and boxed tables (a terminal, and neither --no-color nor NO_COLOR).
	color bool
	// width is the terminal's width in columns that tables fit (0: no limit); wide turns
	// the fitting off (--wide).
	width int
	wide  bool
	// all: every figure and every row in full (assess --evidence all), not the brief view.
	all bool
	r   *lipgloss.Renderer
	// line is the buffer lintLine writes a line in, kept for the next.
	line []byte
}

// NewText returns a text writer for w. Colour and boxed tables are used only when w is a
// terminal and color is true (the caller folds in --no-color and NO_COLOR); at a terminal
// without colour, tables are plain aligned columns. Tables fit the terminal's width.
func NewText(w io.Writer, color bool) *Text {
	// Every line is masked (secret.Mask) on its way out: a URL's password or token, a
	// credential key's value, wherever the text came from; and no line is left to read as a
	// GitHub Actions workflow command (commandGuard).
	t := &Text{terminal: IsTerminal(w)}
	t.writeTo(w)
	t.color = t.terminal && color
	if t.terminal {
		t.width = terminalWidth(w)
	}
	t.r = lipgloss.NewRenderer(w)
	if !t.color {
		t.r.SetColorProfile(termenv.Ascii)
	}
	return t
}

// writeTo makes t write its lines to w: every line masked (secret.Mask) and guarded
// (commandGuard).
func (t *Text) writeTo(w io.Writer) { t.w, t.out = &commandGuard{w: secret.Writer{W: w}}, w }

// into is a copy of t writing to w, through its own masking and guard: a goroutine's part of
// a report, copied to t.out when done (lintFiles).
func (t *Text) into(w io.Writer) *Text {
	c := *t
	c.writeTo(w)
	c.line = nil
	return &c
}

// SetWide turns off fitting tables to the terminal's width: every column, unwrapped.
func (t *Text) SetWide(wide bool) { t.wide = wide }

// SetAll shows every figure and row in full instead of the brief view (assess --evidence all).
func (t *Text) SetAll(all bool) { t.all = all }

// terminalWidth is the width of the terminal w writes to: its size, else $COLUMNS, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 80
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Terminal reports whether the writer draws for a person at a terminal.
func (t *Text) Terminal() bool { return t.terminal }

// Heading writes a section heading, escaped (visible).
func (t *Text) Heading(s string) { t.para(styleHeading, visible(s)) }

// Line writes one line of plain text, wrapped to the terminal's width; the arguments are
// escaped (sprintf), the format is kvcheck's own.
func (t *Text) Line(format string, args ...any) {
	t.para(lipgloss.Style{}, sprintf(format, args...))
}

// Pre writes one line as it is, never wrapped: a line of a configuration file to copy. Its
// arguments are escaped like Line's.
func (t *Text) Pre(format string, args ...any) { fmt.Fprintln(t.w, sprintf(format, args...)) }

// Muted writes one line of secondary text (hints, provenance), wrapped, arguments escaped.
func (t *Text) Muted(format string, args ...any) { t.para(styleMuted, sprintf(format, args...)) }

// Verdict writes a highlighted conclusion line, wrapped and escaped.
func (t *Text) Verdict(s string) { t.para(styleVerdict, visible(s)) }

// para writes s in the style, wrapped to the terminal's width (prose); when piped it is one
// line, so grep sees it whole.
func (t *Text) para(st lipgloss.Style, s string) {
	for _, l := range wrapProse(s, t.width) {
		if l != "" {
			l = t.render(st, l)
		}
		fmt.Fprintln(t.w, l)
	}
}

// plain reports whether t writes a line of text as it is: no width to wrap to and no colour, so
// that render changes only a line with a tab, a CR or a line break (lintLine).
func (t *Text) plain() bool { return t.width == 0 && t.r.ColorProfile() == termenv.Ascii }

// render is st.Render(l) by t's renderer, for the styles of styles.go. Those set colours,
// bold, faint and underline, never a width, padding, margin, border or transform: without
// colour (the Ascii profile) the renderer writes no escape code for them, and changes a line
// only where it has a tab (made four spaces), a CRLF or a line break (lines padded to one
// width). A line with none is returned as it is, without the renderer's work, which was a
// tenth of kvcheck lint's CPU on a tree of dashboards (34,000 findings, each line styled).
func (t *Text) render(st lipgloss.Style, l string) string {
	if !strings.ContainsAny(l, "\t\r\n") && t.r.ColorProfile() == termenv.Ascii {
		return l
	}
	return t.r.NewStyle().Inherit(st).Render(l)
}

// wrapProse breaks a line of prose into lines of at most width cells (0: no limit), at spaces
// where it can and inside a word (after a separator when there is one) where it must. The
// first line keeps its own spacing; the others hang under the value of a "label:   value"
// line, else two columns in from the first line's indent, so a wrapped item still reads as one.
func wrapProse(s string, width int) []string {
	if width <= 0 || lipgloss.Width(s) <= width {
		return []string{s}
	}
	indent := len(s) - len(strings.TrimLeft(s, " "))
	hang := indent + 2
	if i := strings.Index(s[indent:], "  "); i > 0 {
		// A label padded to align its value ("stored blocks:    12"): continue under the value.
		j := indent + i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if v := lipgloss.Width(s[:j]); v <= width/2 {
			hang = v
		}
	}
	hang = min(hang, width/2)
	pad := strings.Repeat(" ", hang)
	var lines []string
	line, lineW := s[:indent], indent // the line so far and its width in cells
	gap := ""                         // the spaces before the next word on this line
	fresh := true                     // nothing but the indent on the line yet
	flush := func() {
		lines = append(lines, strings.TrimRight(line, " "))
		line, lineW, gap, fresh = pad, hang, "", true
	}
	rest := s[indent:]
	for rest != "" {
		// The next word and the run of spaces after it; a number and its unit are one word.
		var word, spaces string
		word, spaces, rest = nextWord(rest)
		for spaces == " " && rest != "" {
			next, sp, after := nextWord(rest)
			if !unitAfter(word, next) {
				break
			}
			word, spaces, rest = word+" "+next, sp, after
		}
		ww := lipgloss.Width(word)
		if !fresh && lineW+len(gap)+ww > width {
			flush()
		}
		for lineW+ww > width {
			// A word longer than a whole line: break it, after a separator if there is one in
			// the second half of what fits.
			r := []rune(word)
			k := 0
			for k < len(r) && lineW+lipgloss.Width(string(r[:k+1])) <= width {
				k++
			}
			for b := k; b > k/2; b-- {
				if strings.ContainsRune("/-_.:,=", r[b-1]) {
					k = b
					break
				}
			}
			k = max(k, 1)
			line += string(r[:k])
			word = string(r[k:])
			ww = lipgloss.Width(word)
			flush()
		}
		if !fresh {
			line += gap
			lineW += len(gap)
		}
		line += word
		lineW += ww
		gap, fresh = spaces, false
	}
	if !fresh || len(lines) == 0 {
		lines = append(lines, strings.TrimRight(line, " "))
	}
	return lines
}

// nextWord splits s into its first word, the run of spaces after it, and the rest.
func nextWord(s string) (word, spaces, rest string) {
	end := strings.IndexByte(s, ' ')
	if end < 0 {
		end = len(s)
	}
	word, rest = s[:end], s[end:]
	sp := len(rest) - len(strings.TrimLeft(rest, " "))
	return word, rest[:sp], rest[sp:]
}

// unitWords are the words a figure's number is written before ("41 ms", "1.2 GB"); a line is
// never broken between the two.
var unitWords = map[string]bool{"µs": true, "ms": true, "s": true, "min": true, "h": true, "day": true, "days": true,
	"B": true, "KB": true, "MB": true, "GB": true, "TB": true}

// unitAfter reports whether next is a unit written after word, a number: "41" "ms",
// "(up to 60" "s)".
func unitAfter(word, next string) bool {
	if word == "" || word[len(word)-1] < '0' || word[len(word)-1] > '9' {
		return false
	}
	return unitWords[strings.TrimRight(next, ",;:.)]")]
}

// Good renders s, kvcheck's own words, in the style of a healthy value.
func (t *Text) Good(s string) Styled { return Styled(t.render(styleGood, s)) }

// Badge renders a severity as a short coloured label.
func (t *Text) Badge(s finding.Severity) Styled {
	var st lipgloss.Style
	switch s {
	case finding.Error:
		st = styleError
	case finding.Warning:
		st = styleWarning
	default:
		st = styleInfo
	}
	return Styled(t.render(st, strings.ToUpper(s.String())))
}

// Finding writes one finding as "SEVERITY code subject: message".
func (t *Text) Finding(f finding.Finding) {
	subject := ""
	if f.Subject != "" {
		subject = " " + visible(f.Subject)
	}
	badge := strings.ToUpper(f.Severity.String())
	lines := wrapProse(fmt.Sprintf("%s %s%s: %s", badge, f.Code, subject, visible(f.Message)), t.width)
	if rest, ok := strings.CutPrefix(lines[0], badge); ok {
		lines[0] = string(t.Badge(f.Severity)) + rest
	}
	for _, l := range lines {
		fmt.Fprintln(t.w, l)
	}
}

// Table writes rows under a header, with column specs inferred from the cells (Columns):
// numbers right-aligned, text left-aligned and wrapped to fit. Cells are written as given;
// callers format numbers.
func (t *Text) Table(header []string, rows [][]string) error {
	return t.Grid(Columns(header, rows), rows)
}

// cleanCells keeps tab-separated output parseable: a tab or newline inside a cell becomes a
// space; other control characters (an escape sequence in a label value) are written as
// escapes, so they reach no terminal.
func cleanCells(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = visible(strings.NewReplacer("\t", " ", "\n", " ").Replace(c))
	}
	return out
}

// Ratio formats a fraction 0..1 as a percentage with one decimal, or "-" when unknown.
func Ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}

// pct formats a known fraction 0..1 as a percentage with one decimal.
func pct(v float64) string { return fmt.Sprintf("%.1f%%", v*100) }
