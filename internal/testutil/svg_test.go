package testutil

import (
	"strings"
	"testing"
)

// TestCheckSVG: the check finds a text leaving the image (10 characters of 12 px end-anchored
// at x 50 start at 50 - 10 x 12 x 0.62 = -24.4), two series of one style, two legend entries
// running into each other, and passes a chart whose text fits (the same text at x 100: 25.6 to
// 100).
func TestCheckSVG(t *testing.T) {
	const head = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" font-size="12">`
	tests := []struct {
		name, body string
		want       []string // substrings of the errors, in order
	}{
		{"fits", `<text x="100" y="50" text-anchor="end">0123456789</text>`, nil},
		{"leaves on the left", `<text x="50" y="50" text-anchor="end">0123456789</text>`, []string{`text "0123456789" at x -24.4..50.0`}},
		{"inherits the size", `<g font-size="30"><text x="150" y="50">abc</text></g>`, []string{`text "abc" at x 150.0..205.8`}},
		{"above the top", `<text x="10" y="5">a</text>`, []string{"leaves the 200x100 image"}},
		{"series share a style", `<polyline class="series" stroke="#111" points="0,0"><title>a</title></polyline><polyline class="series" stroke="#111" points="0,0"><title>b</title></polyline>`,
			[]string{"share colour and dash"}},
		{"not XML", `<text x="1" y="50">a</txt>`, []string{"not well-formed XML"}},
		// Two legend entries of 12 px on one baseline: "round-robin" (11 characters, 81.8 wide)
		// from x 10 runs to 91.8, past the next entry's start at 80; at 100 it would not.
		{"legend entries overlap", `<g id="legend"><text x="10" y="50">round-robin</text><text x="80" y="50">session</text></g>`,
			[]string{`legend entries "round-robin" and "session" overlap`}},
		{"legend entries apart", `<g id="legend"><text x="10" y="50">round-robin</text><text x="100" y="50">session</text></g>`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := CheckSVG([]byte(head + tt.body + `</svg>`))
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", errs, len(tt.want))
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want it to say %q", e, tt.want[i])
				}
			}
		})
	}
}
