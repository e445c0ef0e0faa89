package report

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

func TestMDEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"vllm:gpu_cache_usage_perc", `vllm:gpu\_cache\_usage\_perc`},
		{"a | b", `a \| b`},
		{"<script>&", "&lt;script&gt;&amp;"},
		{"line\nnext\r", "line<br>next"},
		{"`code` *x* [l](u)", "\\`code\\` \\*x\\* \\[l\\](u)"},
		{"bell\x07", "bell&#7;"},
	}
	for _, tt := range tests {
		if got := mdEscape(tt.in); got != tt.want {
			t.Errorf("mdEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The table stops short of the limit and says how many rows it left out: 100 findings of
// about 150 bytes a row do not fit in 2,000 bytes.
func TestStepSummaryLimit(t *testing.T) {
	var fs []finding.Finding
	for range 100 {
		fs = append(fs, finding.Finding{Severity: finding.Error, Code: "metric-removed", File: "d.json", Line: 1, Column: 1,
			Message: strings.Repeat("m", 100)})
	}
	var b strings.Builder
	if err := stepSummary(&b, "kvcheck lint", fs, 2000); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2000 {
		t.Errorf("summary is %d bytes, over the 2000 given", b.Len())
	}
	rows := strings.Count(b.String(), "| error |")
	if !strings.Contains(b.String(), quantity(100-rows, "more finding")+" not shown") || rows == 0 || rows == 100 {
		t.Errorf("%d rows; want some, and a line naming the %d left out:\n%s", rows, 100-rows, b.String())
	}
}
