package lint

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestLongQuery: a query longer than maxQueryOps operators and parentheses is one not-checked
// finding instead of a parse whose time grows with the square of its length; at the bound it
// is parsed and its names are checked as usual.
func TestLongQuery(t *testing.T) {
	l := newLinter(t, "")
	// sum(n) selectors: n-1 plus signs and the one parenthesis of sum( make n operators and
	// parentheses. The last selector is a removed name, so a checked query says so.
	query := func(n int) string {
		var b strings.Builder
		b.WriteString("sum(")
		for i := range n - 1 {
			fmt.Fprintf(&b, `vllm:num_requests_running{pod="p%d"} + `, i)
		}
		b.WriteString("vllm:gpu_cache_usage_perc)")
		return b.String()
	}
	tests := []struct {
		selectors int
		status    string
	}{
		{maxQueryOps, rm},
		{maxQueryOps + 1, StatusUnparsed},
		{50_000, StatusUnparsed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.selectors), func(t *testing.T) {
			q := query(tt.selectors)
			if got := queryOps(q); got != tt.selectors {
				t.Fatalf("queryOps = %d, want %d (%d-1 plus signs and sum's parenthesis)", got, tt.selectors, tt.selectors)
			}
			src, _ := json.Marshal(map[string]any{"panels": []any{map[string]any{"title": "big", "targets": []any{map[string]any{"refId": "A", "expr": q}}}}})
			r := l.File("big.json", src)
			statuses := map[string]bool{}
			for _, f := range r.Findings {
				statuses[f.Status] = true
			}
			if !statuses[tt.status] || len(statuses) != 1 {
				t.Errorf("%d selectors: findings %+v, want status %s only", tt.selectors, summarize(r.Findings), tt.status)
			}
		})
	}
}

func TestQueryOps(t *testing.T) {
	tests := []struct {
		q    string
		want int
	}{
		{`up`, 0},
		{`a{x="1",y!~"2"} / b`, 1},   // matchers are not operators
		{`-(-a)`, 3},                 // two unary minus and a parenthesis
		{`a and b or c unless d`, 3}, // set operators are
		{`rate(a[5m]) > bool 0`, 2},  // a call's parenthesis and the comparison
		{`sum by (x) (a)`, 2},        // the grouping's parenthesis counts too: an upper bound
		{`a + "unterminated`, 1},     // the count stops where the lexer does
		{`((((a))))`, 4},
	}
	for _, tt := range tests {
		if got := queryOps(tt.q); got != tt.want {
			t.Errorf("queryOps(%q) = %d, want %d", tt.q, got, tt.want)
		}
	}
}
