package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/google/go-cmp/cmp"
	"github.com/muesli/termenv"
)

// terminalText is a text writer that believes it draws on a terminal of the given width.
func terminalText(b *bytes.Buffer, color bool, width int) *Text {
	t := &Text{w: b, terminal: true, color: color, width: width, r: lipgloss.NewRenderer(b)}
	t.r.SetColorProfile(termenv.Ascii)
	return t
}

var (
	hitrateCols = []Column{
		{Name: "REPLICA", Wrap: true}, {Name: "MODEL", Wrap: true, Drop: 4},
		{Name: "HIT RATE", Short: "HIT", Number: true}, {Name: "QUERIED TOK/S", Short: "TOK/S", Number: true},
		{Name: "EXT HIT", Number: true, Drop: 3}, {Name: "PREEMPT/S", Short: "PRE/S", Number: true},
		{Name: "PREEMPT/1K REQ", Short: "PRE/1K", Number: true, Drop: 3}, {Name: "KV USAGE", Short: "KV", Number: true},
		{Name: "RUNNING", Short: "RUN", Number: true}, {Name: "WAITING", Short: "WAIT", Number: true},
		{Name: "BLOCK", Number: true, Drop: 6}, {Name: "CACHING", Drop: 5}, {Name: "METRICS", Drop: 5},
	}
	hitrateRows = [][]string{
		{"replica-0", "meta-llama/Llama-3.1-8B-Instruct", "76.1%", "159618.5", "-", "0.000", "0.0", "18.7%", "9", "0", "16", "on", "current"},
		{"replica-3", "meta-llama/Llama-3.1-8B-Instruct", "9.7%", "61467.4", "-", "0.000", "0.0", "3.2%", "3", "0", "16", "on", "deprecated"},
	}
)

// TestGridFits: at 80 and 120 columns no line is wider than the terminal, box lines all have
// one width (a wrapped cell never shifts a row), the columns left out are named, and at 200
// columns or with --wide everything is shown.
func TestGridFits(t *testing.T) {
	tests := []struct {
		width   int
		color   bool
		wide    bool
		dropped string // "" when nothing is left out
	}{
		// 80 columns: the table's 13 columns need 177; the empty EXT HIT goes first, then
		// the configuration (BLOCK, CACHING, METRICS), then MODEL, even wrapped.
		{80, true, false, "EXT HIT, BLOCK, CACHING, METRICS, MODEL"},
		// Plain columns cost 2 a gap instead of 3: MODEL stays, wrapped.
		{80, false, false, "EXT HIT, BLOCK, CACHING, METRICS"},
		{120, true, false, "EXT HIT"},
		{120, false, false, ""},
		{200, true, false, ""},
		{80, true, true, ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		tx := terminalText(&b, tt.color, tt.width)
		tx.SetWide(tt.wide)
		if err := tx.Grid(hitrateCols, hitrateRows); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		note := ""
		for i, l := range lines {
			if strings.HasPrefix(l, "(") {
				note, lines = strings.Join(lines[i:], " "), lines[:i]
				break
			}
		}
		boxW := -1
		for _, l := range lines {
			w := lipgloss.Width(l)
			if !tt.wide && w > tt.width {
				t.Errorf("width %d color %v: line of %d columns: %q", tt.width, tt.color, w, l)
			}
			if tt.color {
				if boxW >= 0 && w != boxW {
					t.Errorf("width %d: box lines of %d and %d columns: alignment broken at %q", tt.width, boxW, w, l)
				}
				boxW = w
			}
		}
		switch {
		case tt.dropped == "" && note != "":
			t.Errorf("width %d color %v wide %v: note %q, want every column", tt.width, tt.color, tt.wide, note)
		case tt.dropped != "" && !strings.HasPrefix(note, "("+tt.dropped+" left out to fit"):
			t.Errorf("width %d color %v: note %q, want %q left out", tt.width, tt.color, note, tt.dropped)
		}
		if tt.wide && !strings.Contains(b.String(), "PREEMPT/1K REQ") {
			t.Errorf("--wide: full headers missing:\n%s", b.String())
		}
	}
}

// TestGridAlignment: text is left-aligned, numbers right-aligned, and a wrapped cell's
// continuation stays in its column.
func TestGridAlignment(t *testing.T) {
	var b bytes.Buffer
	tx := terminalText(&b, false, 60)
	cols := []Column{{Name: "NAME", Wrap: true}, {Name: "SHARE", Number: true}, {Name: "NOTE", Wrap: true}}
	rows := [][]string{
		{"a", "5.0%", "short"},
		{"longer-name", "100.0%", "a note that is far too long for the room this table has left"},
	}
	if err := tx.Grid(cols, rows); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NAME          SHARE  NOTE",
		"a              5.0%  short",
		// 60 - 11 - 6 - two gaps of 2 leaves 39 for NOTE.
		"longer-name  100.0%  a note that is far too long for the",
		"                     room this table has left",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestGridPiped: piped output stays tab-separated and complete whatever the width.
func TestGridPiped(t *testing.T) {
	var b bytes.Buffer
	tx := &Text{w: &b, width: 40, r: lipgloss.NewRenderer(&b)}
	if err := tx.Grid(hitrateCols, hitrateRows[:1]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || strings.Count(lines[0], "\t") != 12 || !strings.HasPrefix(lines[1], "replica-0\tmeta-llama/Llama-3.1-8B-Instruct\t76.1%") {
		t.Errorf("piped table:\n%s", b.String())
	}
}

// TestAssessEvidenceAt120: assess's evidence table (long text in WHAT) fits 120 columns with
// every column kept: the text wraps inside its column.
func TestAssessEvidenceAt120(t *testing.T) {
	header := []string{"SOURCE", "WHAT", "FIGURE", "INPUT", "ID"}
	rows := [][]string{
		{"hitrate", "token-weighted prefix-cache hit rate across the fleet, from the counters over the window", "68.3%", "http://127.0.0.1:39691/metrics", "hitrate.hit_rate"},
		{"requests", "prompt tokens an unbounded shared cache would serve, cross-session", "12.4%", "demo/requests.jsonl", "requests.cross_session"},
	}
	var b bytes.Buffer
	tx := terminalText(&b, true, 120)
	if err := tx.Table(header, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := lipgloss.Width(l); w != 120 && w > 120 {
			t.Errorf("line of %d columns: %q", w, l)
		}
	}
	if strings.Contains(out, "left out") || !strings.Contains(out, "hitrate.hit_rate") {
		t.Errorf("a column was dropped or cut:\n%s", out)
	}
}

func TestColumns(t *testing.T) {
	got := Columns([]string{"NAME", "HIT", "TIME", "RATE", "EMPTY", "MIXED"}, [][]string{
		{"a", "76.1%", "0.29s", "31.8 KB/s", "-", "3"},
		{"b c", "-", "1.5ms", "20.0/min", "-", "three"},
	})
	want := []Column{
		{Name: "NAME", Wrap: true}, {Name: "HIT", Number: true}, {Name: "TIME", Number: true},
		{Name: "RATE", Number: true}, {Name: "EMPTY", Wrap: true}, {Name: "MIXED", Wrap: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"two words here", 9, []string{"two words", "here"}},
		{"meta-llama/Llama-3.1-8B-Instruct", 16, []string{"meta-llama/", "Llama-3.1-8B-", "Instruct"}},
		{"abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
		{"", 5, []string{""}},
		// "over 119 s, 29371" at 10: "over" then "119 s," together (6), then "29371".
		{"over 119 s, 29371", 10, []string{"over", "119 s,", "29371"}},
		{"p99 41 ms", 6, []string{"p99", "41 ms"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, wrap(tt.s, tt.width)); diff != "" {
			t.Errorf("wrap(%q, %d) (-want +got):\n%s", tt.s, tt.width, diff)
		}
	}
}
