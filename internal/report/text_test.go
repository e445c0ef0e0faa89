package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/google/go-cmp/cmp"
	"github.com/muesli/termenv"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestWrapProse: lines of prose wrap at spaces to the width, hang two columns in from their
// indent (or under a padded label's value), and break inside a word only when the word is
// longer than a line, after a separator where one falls in the second half.
func TestWrapProse(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		width int
		want  []string
	}{
		{"fits", "a short line", 20, []string{"a short line"}},
		{"no limit", strings.Repeat("word ", 40), 0, []string{strings.Repeat("word ", 40)}},
		// "one two three four" is 18 cells: at 10, "one two" (7) takes "three" no more (13).
		{"hangs two in", "one two three four", 10, []string{"one two", "  three", "  four"}},
		// An indent of 2 and a bullet: the continuation hangs at 4, under the bullet's text.
		{"bullet", "  - alpha beta gamma delta", 14, []string{"  - alpha beta", "    gamma", "    delta"}},
		// "stored blocks:" padded to column 17, within half of 36: continue under "12".
		{"label", "stored blocks:   12 of 40 stored again", 36, []string{"stored blocks:   12 of 40 stored", strings.Repeat(" ", 17) + "again"}},
		// A 13-cell path at 9 (7 after the hang): broken after the "/", the sixth of the 7 that fit.
		{"long word", "see abcde/fghijkl", 9, []string{"see", "  abcde/", "  fghijkl"}},
		// The spacing of what stays on a line is kept; a value column past half the width
		// (6 of 8) hangs at 2 instead.
		{"spacing kept", "a:    b c d e", 8, []string{"a:    b", "  c d e"}},
		// "TTFT p99 41 ms" is 14 cells: at 12 the break falls before "41", not before "ms";
		// "(up to 60 s)," keeps "60 s)," whole; a word that only looks like a number is
		// not held to the next ("p99 s").
		{"number and unit", "TTFT p99 41 ms", 12, []string{"TTFT p99", "  41 ms"}},
		{"unit with punctuation", "the first 60 (up to 60 s), then", 20, []string{"the first 60 (up to", "  60 s), then"}},
		{"not a unit", "hit 41 shares", 8, []string{"hit 41", "  shares"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrapProse(tt.in, tt.width)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wrapProse(%q, %d) (-want +got):\n%s", tt.in, tt.width, diff)
			}
			for _, l := range got {
				if tt.width > 0 && lipgloss.Width(l) > tt.width {
					t.Errorf("line %q is %d cells, wider than %d", l, lipgloss.Width(l), tt.width)
				}
			}
			if a, b := strings.Join(strings.Fields(strings.Join(got, " ")), ""), strings.Join(strings.Fields(tt.in), ""); a != b {
				t.Errorf("wrapping changed the text: %q, want %q", a, b)
			}
		})
	}
}

// TestFindingWraps: a finding at a terminal wraps under its badge, and its badge stays whole;
// piped, it is one line.
func TestFindingWraps(t *testing.T) {
	f := finding.Finding{Severity: finding.Warning, Code: "thrashing", Subject: "10.0.0.1:8000", Message: "20 preemptions per 1k requests: the hit rate may count re-prefill"}
	var b bytes.Buffer
	terminalText(&b, false, 40).Finding(f)
	want := "WARNING thrashing 10.0.0.1:8000: 20\n  preemptions per 1k requests: the hit\n  rate may count re-prefill\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("at 40 columns (-want +got):\n%s", diff)
	}
	b.Reset()
	NewText(&b, false).Finding(f)
	if got := strings.Count(b.String(), "\n"); got != 1 {
		t.Errorf("piped: %d lines, want 1:\n%s", got, b.String())
	}
}

// TestGist: the first clause, asides in parentheses left out, quotes kept whole.
func TestGist(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a costs +2.7 points (x against y), under 5: worth fixing, not blocking", "a costs +2.7 points, under 5: worth fixing, not blocking"},
		{"claim with a figure; the detail after", "claim with a figure"},
		// The semicolon inside the aside does not end the clause.
		{"20 preemptions: may count re-prefill (before 0.11; since, retries) and more; rest", "20 preemptions: may count re-prefill and more"},
		{"nested (a (b) c) done", "nested done"},
		// A quote's parentheses and semicolons are its own.
		{`raises ValueError("must (be); set") when unset; give it`, `raises ValueError("must (be); set") when unset`},
		// Unbalanced: cut at the clause only.
		{"open (never closed; rest", "open (never closed"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := gist(tt.in); got != tt.want {
			t.Errorf("gist(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRenderWithoutColor: without colour, render writes what lipgloss's Render writes for
// every style of styles.go, on lines with and without tabs, CRLFs and line breaks; with colour
// it is Render (escape codes).
func TestRenderWithoutColor(t *testing.T) {
	styles := []lipgloss.Style{{}, styleHeading, styleError, styleWarning, styleInfo, styleGood, styleMuted, styleVerdict}
	lines := []string{"plain", "  indented, trailing  ", "ERROR", "tab\there", "crlf\r\nend", "two\nlines", "a\rb", "ünïcode ✓ – µs", "\x1b[31mred"}
	plain := NewText(&bytes.Buffer{}, false)
	color := NewText(&bytes.Buffer{}, true)
	color.r.SetColorProfile(termenv.TrueColor)
	for i, st := range styles {
		for _, l := range lines {
			if got, want := plain.render(st, l), plain.r.NewStyle().Inherit(st).Render(l); got != want {
				t.Errorf("style %d, no colour: render(%q) = %q, want %q", i, l, got, want)
			}
			if got, want := color.render(st, l), color.r.NewStyle().Inherit(st).Render(l); got != want {
				t.Errorf("style %d, colour: render(%q) = %q, want %q", i, l, got, want)
			}
		}
	}
	if got := color.render(styleError, "ERROR"); got == "ERROR" {
		t.Errorf("with colour, render wrote no escape code: %q", got)
	}
}
