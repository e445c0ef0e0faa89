package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// The query checks: how a query uses a metric, whatever its name's status.
const (
	StatusQuery = "query"

	// CodeCounterRaw: a counter's series used as it is, where its rate is meant.
	CodeCounterRaw = "counter-without-rate"
	// CodeRatioMismatch: a ratio of rates over different windows or different series.
	CodeRatioMismatch = "ratio-mismatch"
	// CodeQuantile: histogram_quantile over a series that is not _bucket, or aggregated
	// without le.
	CodeQuantile = "histogram-quantile"
)

// rawCounterOK are the functions and aggregations for which a counter's instant value is
// what is meant: whether it exists, how many series, when it was written.
var rawCounterOK = map[string]bool{
	"absent": true, "count": true, "group": true, "timestamp": true, "count_values": true,
	"present_over_time": true, "absent_over_time": true, "changes": true, "resets": true,
}

// checkQuery runs the query checks over a parsed expression.
func (qc *queryCheck) checkQuery(expr parser.Expr, sub substituted) {
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			qc.checkRawCounter(n, path, sub, seen)
		case *parser.Call:
			if n.Func != nil && n.Func.Name == "histogram_quantile" && len(n.Args) == 2 {
				qc.checkQuantile(n, sub)
			}
		case *parser.BinaryExpr:
			if n.Op == parser.DIV {
				qc.checkRatio(n, sub)
			}
		}
		return nil
	})
}

// selectorName returns the metric name a selector selects by equality, or "".
func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// counterSeries reports whether a name is the exposed series of a known counter: name_total
// of a counter family, or _bucket/_sum/_count of a histogram (those are counters too).
func (l *Linter) counterSeries(name string, server bool) (catalog.Match, bool) {
	m, ok := l.cat.Lookup(name)
	if !ok || !m.Exposed {
		return m, false
	}
	f := m.Engine
	if f == nil || (m.Router != nil && server) {
		return m, false // the production-stack router's gauges named like counters
	}
	switch f.Type {
	case catalog.Counter:
		return m, m.Suffix == "_total"
	case catalog.Histogram:
		return m, m.Suffix == "_bucket" || m.Suffix == "_sum" || m.Suffix == "_count"
	}
	return m, false
}

// checkRawCounter reports a counter's series selected as an instant vector and not taken
// through rate(), increase() or irate() (nor counted, nor tested for absence): a panel or an
// alert on a lifetime total since the server last started, which a restart resets.
func (qc *queryCheck) checkRawCounter(vs *parser.VectorSelector, path []parser.Node, sub substituted, seen map[string]bool) {
	name := selectorName(vs)
	if name == "" || qc.l.placeholder(name) {
		return
	}
	server := false
	for _, m := range vs.LabelMatchers {
		server = server || m.Name == "server"
	}
	if m, ok := qc.l.counterSeries(name, server); !ok || m.Suffix == "_bucket" {
		// Buckets summed by le draw the distribution since start, a deliberate (if blunt)
		// panel; histogram_quantile's misuse of them is checked on its own.
		return
	}
	if qc.record && !slices.ContainsFunc(path, func(n parser.Node) bool { _, paren := n.(*parser.ParenExpr); return !paren }) {
		// A recording rule that copies a counter as it is records a counter: rate() reads
		// the recorded series as it would the original (a compatibility rule for an old name).
		return
	}
	inRatio := false
	for i := len(path) - 1; i >= 0; i-- {
		switch p := path[i].(type) {
		case *parser.MatrixSelector, *parser.SubqueryExpr:
			return // a range: some *_over_time or rate function takes it
		case *parser.Call:
			if p.Func != nil && rawCounterOK[p.Func.Name] {
				return
			}
		case *parser.AggregateExpr:
			if rawCounterOK[p.Op.String()] {
				return
			}
		case *parser.BinaryExpr:
			if p.Op == parser.DIV {
				inRatio = true
			}
		}
	}
	if seen[name] {
		return
	}
	seen[name] = true
	msg := fmt.Sprintf("%s is a counter used without rate(), increase() or irate(): its value is the total since the server last started, which grows forever and drops to zero on a restart", name)
	if inRatio {
		msg = fmt.Sprintf("%s is a counter divided as it is: the ratio of lifetime totals since each server started, not of the last window (and a restart of one replica skews it)", name)
	}
	off := sub.orig(int(vs.PosRange.Start))
	qc.add(off, name, Finding{
		Finding: finding.Finding{Severity: finding.Warning, Code: CodeCounterRaw, Message: msg,
			Fix: fmt.Sprintf("take rate(%s[$__rate_interval]) (or [5m] outside Grafana), or increase() for a count per window", name)},
		Metric: name, Status: StatusQuery,
	})
}

// outerAggs returns the outermost aggregations an expression applies, looking through
// parentheses and functions such as rate or clamp_min.
func outerAggs(e parser.Expr) []*parser.AggregateExpr {
	switch n := e.(type) {
	case *parser.ParenExpr:
		return outerAggs(n.Expr)
	case *parser.AggregateExpr:
		return []*parser.AggregateExpr{n}
	case *parser.Call:
		var out []*parser.AggregateExpr
		for _, a := range n.Args {
			out = append(out, outerAggs(a)...)
		}
		return out
	case *parser.BinaryExpr:
		return append(outerAggs(n.LHS), outerAggs(n.RHS)...)
	}
	return nil
}

// checkQuantile reports histogram_quantile over a known histogram's series other than
// _bucket, and an aggregation that drops le before it.
func (qc *queryCheck) checkQuantile(call *parser.Call, sub substituted) {
	arg := call.Args[1]
	histogram := false
	var wrong *parser.VectorSelector
	parser.Inspect(arg, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := selectorName(vs)
		if strings.HasSuffix(name, "_bucket") {
			histogram = true
		}
		if m, ok := qc.l.cat.Lookup(name); ok && m.Engine != nil && m.Engine.Type == catalog.Histogram {
			histogram = true
			if m.Suffix != "_bucket" && wrong == nil {
				wrong = vs
			}
		}
		return nil
	})
	off := sub.orig(int(call.PosRange.Start))
	if wrong != nil {
		name := selectorName(wrong)
		qc.add(sub.orig(int(wrong.PosRange.Start)), name, Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeQuantile,
				Message: fmt.Sprintf("histogram_quantile over %s, which has no le buckets: the quantile is computed from the _bucket series", name),
				Fix:     "use the _bucket series: histogram_quantile(0.9, sum by (le) (rate(NAME_bucket[5m])))"},
			Metric: name, Status: StatusQuery,
		})
		return
	}
	if !histogram {
		return
	}
	for _, a := range outerAggs(arg) {
		keepsLe := slices.Contains(a.Grouping, "le")
		if a.Without {
			keepsLe = !keepsLe
		}
		if keepsLe {
			continue
		}
		clause := "by (" + strings.Join(a.Grouping, ", ") + ")"
		if a.Without {
			clause = "without (" + strings.Join(a.Grouping, ", ") + ")"
		} else if len(a.Grouping) == 0 {
			clause = "with no by clause"
		}
		qc.add(off, "", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeQuantile,
				Message: fmt.Sprintf("histogram_quantile over %s %s drops the le label: the buckets are summed into one series and the quantile is NaN or meaningless", a.Op, clause),
				Fix:     "keep le in the aggregation: sum by (le, ...) (rate(NAME_bucket[5m]))"},
			Status: StatusQuery,
		})
		return
	}
}

// rangesOf lists the range windows an expression uses, as written (after Grafana variables
// were replaced), and the non-name matchers of its selectors.
func rangesOf(e parser.Expr, sub substituted) (windows []string, matchers []string) {
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.MatrixSelector:
			end := int(n.EndPos)
			text := sub.text[:min(end, len(sub.text))]
			if i := strings.LastIndexByte(text, '['); i >= 0 {
				windows = append(windows, strings.TrimSpace(text[i+1:len(text)-1]))
			}
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel {
					matchers = append(matchers, m.String())
				}
			}
		}
		return nil
	})
	slices.Sort(matchers)
	return windows, slices.Compact(matchers)
}

// checkRatio reports a division of two rates (a hit rate, an error ratio) whose sides use
// different windows, or aggregate different series: numerator and denominator then describe
// different things, or match no series at all.
func (qc *queryCheck) checkRatio(b *parser.BinaryExpr, sub substituted) {
	lw, lm := rangesOf(b.LHS, sub)
	rw, rm := rangesOf(b.RHS, sub)
	if len(lw) == 0 || len(rw) == 0 || !qc.countersOnBothSides(b) {
		return
	}
	off := sub.orig(int(b.PositionRange().Start))
	lws, rws := slices.Compact(slices.Sorted(slices.Values(lw))), slices.Compact(slices.Sorted(slices.Values(rw)))
	if !slices.Equal(lws, rws) {
		qc.add(off, "", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeRatioMismatch,
				Message: fmt.Sprintf("a ratio of rates over different windows ([%s] over [%s]): numerator and denominator average different spans, so the ratio can exceed 1 or swing with traffic", strings.Join(lws, ", "), strings.Join(rws, ", ")),
				Fix:     "use the same window on both sides"},
			Status: StatusQuery,
		})
		return
	}
	if b.VectorMatching != nil && (b.VectorMatching.On || len(b.VectorMatching.MatchingLabels) > 0) {
		return // the author chose how the sides match
	}
	la, ra := outerAggs(b.LHS), outerAggs(b.RHS)
	if len(la) == 1 && len(ra) == 1 {
		lg, rg := groupingKey(la[0]), groupingKey(ra[0])
		if lg != rg {
			qc.add(off, "", Finding{
				Finding: finding.Finding{Severity: finding.Warning, Code: CodeRatioMismatch,
					Message: fmt.Sprintf("a ratio whose sides are aggregated differently (%s over %s): the division matches series by their labels, so it returns nothing or only some of them", lg, rg),
					Fix:     "aggregate both sides by the same labels"},
				Status: StatusQuery,
			})
			return
		}
		if !slices.Equal(lm, rm) && !shareOf(b.LHS, b.RHS, lm, rm) {
			qc.add(off, "", Finding{
				Finding: finding.Finding{Severity: finding.Warning, Code: CodeRatioMismatch,
					Message: fmt.Sprintf("a ratio of aggregates over different series ({%s} over {%s}): the numerator counts other series than the denominator", strings.Join(lm, ", "), strings.Join(rm, ", ")),
					Fix:     "give both sides the same label matchers"},
				Status: StatusQuery,
			})
		}
	}
}

// shareOf reports a ratio that is a share of a whole: both sides select the same series
// names and the numerator only adds matchers to the denominator's, as a success rate
// sum(rate(x{status="success"}[5m])) / sum(rate(x[5m])) does. Its numerator counts a subset
// of the denominator's series on purpose.
func shareOf(num, den parser.Expr, nm, dm []string) bool {
	names := func(e parser.Expr) []string {
		var out []string
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				out = append(out, vs.Name)
			}
			return nil
		})
		slices.Sort(out)
		return slices.Compact(out)
	}
	nn, dn := names(num), names(den)
	if len(nn) == 0 || !slices.Equal(nn, dn) {
		return false
	}
	for _, m := range dm {
		if !slices.Contains(nm, m) {
			return false
		}
	}
	return true
}

func groupingKey(a *parser.AggregateExpr) string {
	g := slices.Sorted(slices.Values(a.Grouping))
	if a.Without {
		return a.Op.String() + " without (" + strings.Join(g, ", ") + ")"
	}
	if len(g) == 0 {
		return a.Op.String() + " (no by)"
	}
	return a.Op.String() + " by (" + strings.Join(g, ", ") + ")"
}

// countersOnBothSides reports whether each side of a division reads a known counter series.
func (qc *queryCheck) countersOnBothSides(b *parser.BinaryExpr) bool {
	has := func(e parser.Expr) bool {
		found := false
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				if _, ok := qc.l.counterSeries(selectorName(vs), false); ok {
					found = true
				}
			}
			return nil
		})
		return found
	}
	return has(b.LHS) && has(b.RHS)
}
