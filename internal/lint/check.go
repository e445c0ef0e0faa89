package lint

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// span replaces value[start:end] of a query string with text.
type span struct {
	start, end int
	text       string
}

// edit is the exact rewrite of one finding: spans in the value of one site.
type edit struct {
	site  *site
	spans []span
}

// queryKind says how a site's value is read.
type queryKind int

const (
	kindPromQL   queryKind = iota // a PromQL expression
	kindTemplate                  // a Grafana variable query: label_values(...), query_result(...)
	kindAdapter                   // a prometheus-adapter metricsQuery with <<.Series>> fields
	kindName                      // a bare metric name (HPA, AIBrix targetMetric)
)

// verdict is what the catalog says about one written name at the target version.
type verdict struct {
	status, code string
	sev          finding.Severity
	since        string
	replacement  string
	message      string
	rename       string // exact replacement series name, when the rewrite is a rename
	expr         string // exact replacement expression template, when the rewrite is expr
}

var promParser = parser.NewParser(parser.Options{EnableExperimentalFunctions: true})

// maxQueryOps bounds the operators and parentheses of one query that lint parses. The PromQL
// parser's type check asks every node for its type (prometheus/prometheus@v0.316.0
// promql/parser/parse.go:749, checkAST), and an operator, a parenthesis or a unary minus finds
// its type by asking its operand again (ast.go:263-273), so a chain of n operators costs about
// n²/2 calls: 10,000 selectors summed took 0.46 s, 80,000 took 26 s. Up to 1,000 a query parses
// in time linear in its length (about 300 ns a byte at 250 and at 1,000 selectors, 840 ns at
// 4,000); past it the query is reported as not checked, so a file's lint time stays linear in
// its size.
const maxQueryOps = 1000

// queryOps counts the operators (outside label matchers) and opening parentheses of a query
// with the PromQL lexer, in one pass: the depth of the chains the parser's type check walks is
// at most their number. It stops at the first token the lexer refuses, where the parser stops
// too.
func queryOps(q string) int {
	l := parser.Lex(q)
	var it parser.Item
	n, braces := 0, 0
	for {
		l.NextItem(&it)
		switch {
		case it.Typ == parser.EOF || it.Typ == parser.ERROR:
			return n
		case it.Typ == parser.LEFT_BRACE:
			braces++
		case it.Typ == parser.RIGHT_BRACE:
			braces = max(braces-1, 0)
		case it.Typ == parser.LEFT_PAREN || braces == 0 && it.Typ.IsOperator():
			n++
		}
	}
}

// promQL parses a query and checks every metric name in it, recording what it finds with
// offsets in q.
func (qc *queryCheck) promQL(q string, kind queryKind) {
	qc.res.queries++
	var sub substituted
	if kind == kindAdapter {
		sub = substituteAdapter(q)
		// Grafana syntax does not appear in adapter configs; only the template fields.
	} else {
		sub = substituteVariables(q, false)
	}
	if n := queryOps(sub.text); n > maxQueryOps {
		qc.add(0, "", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeUnparsed,
				Message: fmt.Sprintf("query has %d operators and parentheses, more than the %d kvcheck parses (the PromQL parser's type check takes time growing with the square of a chain's length); it was not checked", n, maxQueryOps),
				Fix:     "split the query (a recording rule per part), or check it by hand"},
			Metric: truncate(strings.TrimSpace(q), 80), Status: StatusUnparsed,
		})
		return
	}
	expr, err := promParser.ParseExpr(sub.text)
	if err == nil && kind == kindTemplate {
		if name, ok := qc.engineOnly(expr); ok {
			qc.res.engineOnly = name
		}
	}
	if err != nil && kind != kindAdapter {
		sub2 := substituteVariables(q, true)
		if e2, err2 := promParser.ParseExpr(sub2.text); err2 == nil {
			expr, err, sub = e2, nil, sub2
		}
	}
	if err != nil && logQL(q) {
		return // a Loki query (Loki rules share the rule-file format): not ours to check
	}
	if err != nil {
		pos := 0
		var pe parser.ParseErrors
		if errors.As(err, &pe) && len(pe) > 0 {
			pos = sub.orig(int(pe[0].PositionRange.Start))
			err = pe[0].Err
		}
		// A site in a Helm template says it otherwise when a masked action is in the query
		// (fileLint.apply).
		qc.res.unparsed = len(qc.res.findings) + 1
		qc.res.parseErr = err.Error()
		qc.add(pos, "", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeUnparsed,
				Message: fmt.Sprintf("query does not parse as PromQL (%v); it was not checked", err)},
			Metric: truncate(strings.TrimSpace(q), 80), Status: StatusUnparsed,
		})
		return
	}
	seen := map[string]*Finding{}
	var drift bool
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		start := int(vs.PosRange.Start)
		selText := sub.text[start:min(int(vs.PosRange.End), len(sub.text))]
		instant := vs.OriginalOffset == 0 && vs.OriginalOffsetExpr == nil && vs.Timestamp == nil && vs.StartOrEnd == 0
		if len(path) > 0 {
			switch path[len(path)-1].(type) {
			case *parser.MatrixSelector, *parser.SubqueryExpr:
				instant = false
			}
		}
		server := false
		for _, m := range vs.LabelMatchers {
			if m.Name == "server" {
				server = true
			}
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				continue
			}
			switch m.Type {
			case labels.MatchEqual:
				off := start
				if vs.Name == "" {
					off = start + max(strings.Index(selText, m.Value), 0)
				}
				if qc.l.placeholder(m.Value) {
					continue
				}
				qc.checkName(m.Value, sub.orig(off), server, instant, selectorSpan(sub, vs), seen, true)
			case labels.MatchRegexp:
				qc.checkRegex(m, sub.orig(start), seen)
			}
		}
		if !drift {
			drift = qc.checkDrift(vs, sub, server)
		}
		return nil
	})
	if kind == kindPromQL {
		qc.checkQuery(expr, sub)
	}
	// A matcher on model is the more direct mistake; the grouping is only reported when the
	// query has none, so one query gives one label-drift finding.
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if !drift {
			drift = qc.checkGroupingDrift(node, sub)
		}
		return nil
	})
}

// logQLRE matches LogQL's line filters and parsers, which PromQL does not have.
var logQLRE = regexp.MustCompile(`\}\s*(\|=|\|~|!=|!~|\|\s*(json|logfmt|pattern|regexp|unpack|line_format|label_format|drop|keep|decolorize)\b)`)

// logQL reports whether a query that failed to parse as PromQL is LogQL.
func logQL(q string) bool { return logQLRE.MatchString(q) }

// selectorSpan returns the selector's start and end in the query as written and 1, or zeros
// when a Grafana variable sits inside it (a rewrite would then have to guess).
func selectorSpan(sub substituted, vs *parser.VectorSelector) [3]int {
	s, e := int(vs.PosRange.Start), int(vs.PosRange.End)
	for _, sb := range sub.subs {
		if sb.newStart < e && sb.newEnd > s {
			return [3]int{0, 0, 0}
		}
	}
	return [3]int{sub.orig(s), sub.orig(e), 1}
}

// checkName checks one written name found at offset off of the text checked.
func (qc *queryCheck) checkName(name string, off int, server, instant bool, sel [3]int, seen map[string]*Finding, promql bool) {
	if promql {
		qc.ref(name, off)
	}
	v, m, ok := qc.l.judge(name, server, promql)
	qc.touch(m, server)
	if !ok {
		return
	}
	if prev := seen[name]; prev != nil {
		// The same name again in this query: one finding, but every occurrence is rewritten.
		if prev.fix != nil {
			if sp, ok := qc.spanFor(v, name, off, instant, sel); ok {
				prev.fix.spans = append(prev.fix.spans, sp)
			} else {
				prev.fix = nil
			}
		}
		return
	}
	f := Finding{
		Finding: finding.Finding{Severity: v.sev, Code: v.code, Message: v.message},
		Metric:  name, Status: v.status, Since: v.since, Replacement: v.replacement,
	}
	if sp, ok := qc.spanFor(v, name, off, instant, sel); ok {
		f.fix = &edit{spans: []span{sp}}
	}
	seen[name] = qc.add(off, name, f)
}

// spanFor builds the exact rewrite of one occurrence, when the verdict has one.
func (qc *queryCheck) spanFor(v verdict, name string, off int, instant bool, sel [3]int) (span, bool) {
	switch {
	case v.rename != "":
		return span{start: off, end: off + len(name), text: v.rename}, true
	case v.expr != "" && instant && sel[2] == 1 && qc.text[sel[0]:min(sel[1], len(qc.text))] != "":
		selText := qc.text[sel[0]:sel[1]]
		matchers := ""
		if i := strings.IndexByte(selText, '{'); i >= 0 && strings.HasPrefix(selText, name) {
			matchers = selText[i:]
		} else if i < 0 && selText != name {
			return span{}, false
		} else if i >= 0 {
			return span{}, false // {__name__="..."} form: leave it to a person
		}
		window := "5m"
		if qc.grafana {
			window = "$__rate_interval"
		}
		text := v.expr
		for {
			i := strings.Index(text, "{sel:")
			if i < 0 {
				break
			}
			j := strings.IndexByte(text[i:], '}')
			if j < 0 {
				return span{}, false
			}
			text = text[:i] + text[i+5:i+j] + matchers + text[i+j+1:]
		}
		text = strings.ReplaceAll(text, "{window}", window)
		return span{start: sel[0], end: sel[1], text: text}, true
	}
	return span{}, false
}

// checkRegex reports a __name__ regex that can only match names gone at the target version.
func (qc *queryCheck) checkRegex(m *labels.Matcher, off int, seen map[string]*Finding) {
	var matched []string
	for _, n := range qc.l.names {
		if m.Matches(n) {
			matched = append(matched, n)
		}
	}
	if len(matched) == 0 {
		return
	}
	var worst *verdict
	var repl, each []string
	var last catalog.Version // the regex matched something until the last of its names went
	for _, n := range matched {
		v, _, ok := qc.l.judge(n, false, false)
		if !ok || (v.status != StatusRemoved && v.status != StatusHidden) {
			return // the regex still matches something that exists
		}
		if worst == nil || v.sev > worst.sev {
			worst = &v
		}
		if sv, err := catalog.ParseVersion(v.since); err == nil && last.Less(sv) {
			last = sv
		}
		each = append(each, fmt.Sprintf("%s (%s %s)", n, v.status, v.since))
		if v.replacement != "" && !contains(repl, v.replacement) {
			repl = append(repl, v.replacement)
		}
	}
	key := "regex:" + m.Value
	if seen[key] != nil {
		return
	}
	f := Finding{
		Finding: finding.Finding{Severity: worst.sev, Code: worst.code,
			Message: fmt.Sprintf("__name__=~%q only matches names gone at %s: %s", m.Value, qc.l.targetText(), strings.Join(each, ", "))},
		Metric: m.Value, Status: worst.status, Since: last.String(), Replacement: strings.Join(repl, "; "),
	}
	seen[key] = qc.add(off, "", f)
}

// checkDrift reports label matchers that use production-stack's "model" on engine metrics,
// which vLLM labels "model_name".
func (qc *queryCheck) checkDrift(vs *parser.VectorSelector, sub substituted, server bool) bool {
	name := vs.Name
	if name == "" {
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
	}
	mt, ok := qc.l.cat.Lookup(name)
	if !ok || mt.Engine == nil || mt.Engine.Family != catalog.VLLM || (mt.Router != nil && (server || hasLabel(mt.Router, "model"))) {
		return false // other families label by model themselves (Dynamo) or are not vLLM's
	}
	for _, m := range vs.LabelMatchers {
		if m.Name != "model" {
			continue
		}
		start := int(vs.PosRange.Start)
		selText := sub.text[start:min(int(vs.PosRange.End), len(sub.text))]
		off := start + max(strings.Index(selText, "model"), 0)
		if i := strings.IndexByte(selText, '{'); i >= 0 {
			if j := strings.Index(selText[i:], "model"); j >= 0 {
				off = start + i + j
			}
		}
		qc.add(sub.orig(off), "model", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeLabelDrift,
				Message: fmt.Sprintf("%s is labelled model_name by vLLM, not model: this matcher selects nothing on engine series", name)},
			Metric: name, Status: StatusLabelDrift, Replacement: "model_name",
		})
		return true
	}
	return false
}

// checkGroupingDrift reports an aggregation (by, without) or a vector match (on) over the
// label "model" when every series it works on is a vLLM engine metric, labelled model_name:
// "sum by (model)" then adds every model into one series and "on (model)" matches on an
// empty label, both without an error.
func (qc *queryCheck) checkGroupingDrift(node parser.Node, sub substituted) bool {
	var (
		clause   string
		operands []parser.Expr
		from, to int // where the clause is written, in sub.text
	)
	switch n := node.(type) {
	case *parser.AggregateExpr:
		if !contains(n.Grouping, "model") || contains(n.Grouping, "model_name") {
			return false
		}
		clause = "by"
		if n.Without {
			clause = "without"
		}
		operands = []parser.Expr{n.Expr}
		from, to = int(n.PosRange.Start), int(n.PosRange.End)
	case *parser.BinaryExpr:
		vm := n.VectorMatching
		if vm == nil || !vm.On || !contains(vm.MatchingLabels, "model") || contains(vm.MatchingLabels, "model_name") {
			return false
		}
		clause = "on"
		operands = []parser.Expr{n.LHS, n.RHS}
		from, to = int(n.LHS.PositionRange().End), int(n.RHS.PositionRange().Start)
	default:
		return false
	}
	name := ""
	for _, e := range operands {
		nm, ok := qc.engineOnly(e)
		if !ok {
			return false
		}
		if name == "" {
			name = nm
		}
	}
	to = min(to, len(sub.text))
	off := -1
	for i := from; i < to; {
		j := strings.Index(sub.text[i:to], "model")
		if j < 0 {
			break
		}
		at := i + j
		i = at + len("model")
		if inside(operands, at) || (at > 0 && isNameByte(sub.text[at-1])) || (i < len(sub.text) && isNameByte(sub.text[i])) {
			continue
		}
		off = at
		break
	}
	if off < 0 {
		return false
	}
	var what string
	switch n := node.(type) {
	case *parser.AggregateExpr:
		if clause == "by" {
			what = n.Op.String() + " by (model) adds every model into one series"
		} else {
			what = n.Op.String() + " without (model) keeps model_name and aggregates nothing away"
		}
	default:
		what = "on (model) matches on a label neither side has"
	}
	qc.add(sub.orig(off), "model", Finding{
		Finding: finding.Finding{Severity: finding.Warning, Code: CodeLabelDrift,
			Message: fmt.Sprintf("%s is labelled model_name by vLLM, not model: %s", name, what)},
		Metric: name, Status: StatusLabelDrift, Replacement: "model_name",
	})
	return true
}

// inside reports whether a position lies within one of the expressions.
func inside(es []parser.Expr, pos int) bool {
	for _, e := range es {
		r := e.PositionRange()
		if pos >= int(r.Start) && pos < int(r.End) {
			return true
		}
	}
	return false
}

// engineOnly returns the first metric an expression selects when every metric it selects is a
// known vLLM engine metric (so labelled model_name, not model); false when it selects none, or
// any other series: a router metric labelled model or selected by server, a recording rule,
// something that is not vLLM's.
func (qc *queryCheck) engineOnly(e parser.Expr) (string, bool) {
	first, ok := "", true
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		vs, isSel := node.(*parser.VectorSelector)
		if !isSel || !ok {
			return nil
		}
		name, server := vs.Name, false
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual:
				name = m.Value
			case m.Name == "server":
				server = true
			}
		}
		mt, found := qc.l.cat.Lookup(name)
		if !found || mt.Engine == nil || mt.Engine.Family != catalog.VLLM || (mt.Router != nil && (server || hasLabel(mt.Router, "model"))) {
			ok = false
			return nil
		}
		if first == "" {
			first = name
		}
		return nil
	})
	return first, ok && first != ""
}

func hasLabel(m *catalog.Metric, l string) bool { return contains(m.Labels, l) }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// touch remembers the families a looked-up name belongs to (the one it was found in, the
// others that publish it, production-stack's router for its vllm:-named series when the
// selector is the router's (server) or only the router publishes the name), so the run can
// say which families' targets it was judged against.
func (qc *queryCheck) touch(m catalog.Match, server bool) {
	if m.Family == "" {
		return
	}
	if m.Router != nil && (server || m.Engine == nil) {
		qc.family(m.Router.Family)
	} else {
		qc.family(m.Family)
	}
	for _, o := range m.Also {
		qc.family(o.Family)
	}
}

// judge looks a written name up and decides what to report. ok is false when there is
// nothing to say (not a known family's name, or a current one). promql says the name was
// found in a PromQL selector, where a counter without _total matches nothing.
//
// A rename is followed to the name that exists at the targets, across families: GAIE's
// inference_model_request_total became inference_objective_request_total, which llm-d-router
// publishes deprecated in favour of llm_d_epp_request_total, so one --fix writes the last and a
// second finds nothing to rewrite.
func (l *Linter) judge(name string, server, promql bool) (verdict, catalog.Match, bool) {
	v, m, ok := l.judgeOne(name, server, promql)
	if !ok || v.rename == "" {
		return v, m, ok
	}
	seen := map[string]bool{name: true}
	for range maxRenameChain {
		if seen[v.rename] {
			break // a cycle in the catalog: stop at the name before it
		}
		seen[v.rename] = true
		next, _, ok := l.judgeOne(v.rename, server, promql)
		if !ok || next.rename == "" || (next.status != StatusRemoved && next.status != StatusHidden && next.status != StatusDeprecated) {
			break
		}
		said, _, _ := strings.Cut(next.message, ";")
		v.message += fmt.Sprintf(", which in turn %s: so use %s", strings.TrimPrefix(said, v.rename+" "), next.rename)
		v.rename, v.replacement = next.rename, next.rename
	}
	return v, m, ok
}

// maxRenameChain bounds how many renames one rewrite follows (the catalog's longest is two).
const maxRenameChain = 8

// judgeOne is judge without following renames.
func (l *Linter) judgeOne(name string, server, promql bool) (verdict, catalog.Match, bool) {
	m, ok := l.cat.Lookup(name)
	if !ok {
		return verdict{}, m, false
	}
	if m.Engine == nil && m.Router == nil {
		if strings.Count(name, ":") > 1 {
			// level:metric:operations is the naming convention of recording rules, which
			// are the user's own series, not vLLM's.
			return verdict{}, m, false
		}
		if f := l.cat.Family(m.Family); f != nil && f.Name != catalog.VLLM {
			return verdict{status: StatusUnknown, code: CodeUnknown, sev: finding.Warning,
				message: fmt.Sprintf("%s is not a metric %s publishes: a typo, or newer than this catalog (%s %s)", name, f.Display, f.Display, f.Newest)}, m, true
		}
		return verdict{status: StatusUnknown, code: CodeUnknown, sev: finding.Warning,
			message: fmt.Sprintf("%s is not a metric vLLM or production-stack's router publishes: a typo, a recording rule not linted in this run, or newer than this catalog (vLLM %s)", name, l.cat.Newest)}, m, true
	}
	e := m.Engine
	if e == nil || (m.Router != nil && server) {
		return l.exposure(m, promql)
	}
	e = l.pick(m)
	fam := l.cat.FamilyOf(e)
	target := l.targets[e.Family]
	st, since := e.StatusAt(target)
	v := verdict{since: since.String()}
	switch st {
	case catalog.Current:
		return l.exposure(m, promql)
	case catalog.NotYet:
		v.status, v.code, v.sev = StatusUnknown, CodeUnknown, finding.Warning
		v.message = fmt.Sprintf("%s was added in %s %s, after the target version %s", name, fam.Display, since, target)
		return v, m, true
	case catalog.Removed:
		v.status, v.code, v.sev = StatusRemoved, CodeRemoved, finding.Error
		if e.Unreleased {
			v.message = fmt.Sprintf("%s was never in a %s release (a development-branch name, renamed before %s)", name, fam.Display, since)
		} else {
			v.message = fmt.Sprintf("%s was removed in %s %s%s", name, fam.Display, since, history(e, st))
		}
	case catalog.Hidden:
		v.status, v.code, v.sev = StatusHidden, CodeHidden, finding.Error
		// vLLM shows hidden metrics when the flag names the minor release before the
		// running one, so the value depends on the target, not on when the metric was hidden.
		v.message = fmt.Sprintf("%s is hidden since vLLM %s (shown only with --show-hidden-metrics-for-version=%d.%d)%s",
			name, since, target.Major, max(target.Minor-1, 0), history(e, st))
	case catalog.Deprecated:
		v.status, v.code, v.sev = StatusDeprecated, CodeDeprecated, finding.Warning
		v.message = fmt.Sprintf("%s is deprecated since %s %s%s", name, fam.Display, since, history(e, st))
	}
	if e != m.Engine {
		m.Engine = e // the family judged is the one the rewrite follows
	}
	var notYet string // a replacement the target does not publish yet
	switch e.Rewrite {
	case catalog.RewriteRename:
		if r, ok := m.ReplacementSeries(); ok {
			if at, ok := l.seriesAt(m, r, target); ok {
				v.rename, v.replacement = at, at
			} else {
				v.replacement, notYet = r, r
			}
		} else {
			v.replacement = m.Respell(e.Replacement)
		}
	case catalog.RewriteExpr:
		v.replacement = e.Replacement
		if m.Form == catalog.Plain {
			if x, ok := l.exprAt(e.Expr, target); ok {
				v.expr = x
				if x != e.Expr {
					v.replacement = strings.NewReplacer("{window}", "5m").Replace(stripSel(x))
				}
			} else {
				notYet = e.Replacement
			}
		}
	default:
		v.replacement = e.Replacement
	}
	if v.replacement != "" {
		v.message += "; use " + v.replacement
		if notYet != "" {
			v.message += fmt.Sprintf(" once you run a release that has it (not %s %s: no rewrite is offered for it)", fam.Display, target)
		}
	} else {
		v.message += "; it has no replacement"
		if e.Help != "" {
			v.message += " (" + e.Help + ")"
		}
	}
	if m.Router != nil {
		v.message += fmt.Sprintf("; production-stack's router still publishes a %s of this name with a server label, which is not the engine's series", m.Router.Type)
	}
	for _, o := range m.Also {
		if o == e {
			continue
		}
		ost, osince := o.StatusAt(l.targets[o.Family])
		of := l.cat.FamilyOf(o)
		switch ost {
		case catalog.Removed:
			v.message += fmt.Sprintf("; %s published this name too, until %s", of.Display, osince)
		case catalog.NotYet:
			v.message += fmt.Sprintf("; %s publishes this name from %s (not at %s)", of.Display, osince, l.targets[o.Family])
		case catalog.Current:
			v.message += fmt.Sprintf("; %s %s also publishes this name", of.Display, l.targets[o.Family])
		default:
			v.message += fmt.Sprintf("; %s %s also publishes this name, %s since %s", of.Display, l.targets[o.Family], ost, osince)
		}
	}
	return v, m, true
}

// pick chooses which family judges a name several families publish: the one whose target
// the caller named, else the first in the catalog's order.
func (l *Linter) pick(m catalog.Match) *catalog.Metric {
	all := append([]*catalog.Metric{m.Engine}, m.Also...)
	for _, c := range all {
		if l.chosen[c.Family] {
			return c
		}
	}
	return m.Engine
}

// seriesAt returns the series, in the file's spelling, that stands for the matched name's
// rename at the target: the replacement itself, or the predecessor it replaced when the
// target predates the replacement; false when the target publishes neither.
func (l *Linter) seriesAt(m catalog.Match, r string, target catalog.Version) (string, bool) {
	e := m.Engine
	own := e.Replacement // the catalog's own spelling, suffix as written
	switch e.Type {
	case catalog.Counter:
		own = strings.TrimSuffix(own, "_total") + m.Suffix
	case catalog.Histogram:
		own += m.Suffix
	}
	at, ok := l.cat.SeriesAt(own, target)
	if !ok {
		return "", false
	}
	if at == own {
		return r, true
	}
	return m.Respell(at), true
}

// exprAt rewrites each {sel:NAME} of an expression template to the name the target
// publishes; false when the target has none of a name's generations.
func (l *Linter) exprAt(expr string, target catalog.Version) (string, bool) {
	out := expr
	for i := 0; ; {
		j := strings.Index(out[i:], "{sel:")
		if j < 0 {
			return out, true
		}
		j += i
		k := strings.IndexByte(out[j:], '}')
		if k < 0 {
			return "", false
		}
		name := out[j+5 : j+k]
		at, ok := l.cat.SeriesAt(name, target)
		if !ok {
			return "", false
		}
		out = out[:j+5] + at + out[j+k:]
		i = j + 5 + len(at) + 1
	}
}

// stripSel turns an expression template into PromQL for a message: {sel:NAME} becomes NAME.
func stripSel(x string) string {
	for {
		i := strings.Index(x, "{sel:")
		if i < 0 {
			return x
		}
		j := strings.IndexByte(x[i:], '}')
		if j < 0 {
			return x
		}
		x = x[:i] + x[i+5:i+j] + x[i+j+1:]
	}
}

// exposure reports a family queried under a name no server exposes: a counter without
// _total, a histogram without _bucket, _sum or _count.
func (l *Linter) exposure(m catalog.Match, promql bool) (verdict, catalog.Match, bool) {
	if m.Exposed || !promql || (m.Form != catalog.Plain && m.Form != catalog.Ray) {
		return verdict{}, m, false
	}
	f := m.Metric()
	v := verdict{status: StatusUnknown, code: CodeUnknown, sev: finding.Warning}
	switch f.Type {
	case catalog.Counter:
		v.rename = m.Written + "_total"
		v.replacement = v.rename
		v.message = fmt.Sprintf("%s is a counter: the server exposes %s, so this name matches nothing", m.Written, v.rename)
	case catalog.Histogram:
		v.replacement = m.Written + "_bucket, " + m.Written + "_sum or " + m.Written + "_count"
		v.message = fmt.Sprintf("%s is a histogram: query %s, so this name matches nothing", m.Written, v.replacement)
	default:
		return verdict{}, m, false
	}
	return v, m, true
}

// history completes a message with the other milestones of a metric's retirement.
func history(m *catalog.Metric, st catalog.Status) string {
	var parts []string
	if st != catalog.Deprecated && !m.Deprecated.IsZero() {
		parts = append(parts, "deprecated "+m.Deprecated.String())
	}
	if st != catalog.Hidden && !m.Hidden.IsZero() {
		parts = append(parts, "hidden "+m.Hidden.String())
	}
	if st != catalog.Removed && !m.Removed.IsZero() {
		parts = append(parts, "removed "+m.Removed.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// placeholder reports names that stand for a template field rather than a metric.
func (l *Linter) placeholder(name string) bool {
	return name == placeholderName || name == "adapter_series"
}

// targetText names the targets for a message: "vLLM 0.26.0", with other families' targets
// when the caller named them.
func (l *Linter) targetText() string {
	parts := []string{"vLLM " + l.target.String()}
	for _, f := range l.cat.Families {
		if f.Name != catalog.VLLM && l.chosen[f.Name] {
			parts = append(parts, f.Display+" "+l.targets[f.Name].String())
		}
	}
	return strings.Join(parts, ", ")
}
