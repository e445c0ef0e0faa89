package lint

import (
	"regexp"
	"sort"
	"strings"
)

// A substitution replaced a Grafana variable in a query with a placeholder PromQL accepts.
// Offsets are in the original and in the substituted text.
type substitution struct {
	origStart, origEnd int
	newStart, newEnd   int
}

// substituted is a query with its Grafana variables replaced, and the way back to the
// original offsets.
type substituted struct {
	text string
	subs []substitution
}

// orig maps an offset in the substituted text to the original text. An offset inside a
// placeholder maps to the start of the variable it replaced.
func (s substituted) orig(pos int) int {
	shift := 0
	for _, sb := range s.subs {
		if pos < sb.newStart {
			break
		}
		if pos < sb.newEnd {
			return sb.origStart
		}
		shift = sb.origEnd - sb.newEnd
	}
	return pos + shift
}

// varRE matches the Grafana variable syntaxes: $name, ${name}, ${name:format}, [[name]],
// [[name:format]].
var varRE = regexp.MustCompile(`\$\{[^}\s]*\}|\[\[[A-Za-z0-9_.:]+\]\]|\$[A-Za-z_][A-Za-z0-9_]*`)

// Placeholders. Variables in a range or after offset become a duration; elsewhere an
// identifier (a metric or label name) or, on the second try, a number.
const (
	placeholderDuration = "5m"
	placeholderName     = "grafana_variable"
	placeholderNumber   = "1"
)

// substituteVariables replaces Grafana variables outside quoted strings; quoted label values
// such as model_name="$model_name" are left alone since PromQL accepts any text there.
// With numeric, variables outside ranges become numbers instead of identifiers (for
// topk($n, ...) and arithmetic with $__range_s).
func substituteVariables(q string, numeric bool) substituted {
	if !strings.ContainsAny(q, "$[") {
		return substituted{text: q}
	}
	var b strings.Builder
	var subs []substitution
	quote := byte(0)
	depth := 0 // inside [...] of a range or subquery
	last := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		if quote != 0 {
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
			continue
		case ']':
			if depth > 0 {
				depth--
			}
			continue
		case '$':
		case '[':
			if !strings.HasPrefix(q[i:], "[[") {
				depth++
				continue
			}
		default:
			continue
		}
		loc := varRE.FindStringIndex(q[i:])
		if loc == nil || loc[0] != 0 {
			if c == '[' {
				depth++
			}
			continue
		}
		name := strings.Trim(q[i:i+loc[1]], "${}[]")
		name, _, _ = strings.Cut(name, ":")
		ph := placeholderName
		switch {
		case depth > 0 || precededBy(q[:i], "offset"):
			ph = placeholderDuration
		case numeric || strings.HasSuffix(name, "_ms") || strings.HasSuffix(name, "_s"):
			ph = placeholderNumber
		}
		b.WriteString(q[last:i])
		start := b.Len()
		b.WriteString(ph)
		subs = append(subs, substitution{origStart: i, origEnd: i + loc[1], newStart: start, newEnd: b.Len()})
		i += loc[1] - 1
		last = i + 1
	}
	if subs == nil {
		return substituted{text: q}
	}
	b.WriteString(q[last:])
	return substituted{text: b.String(), subs: subs}
}

// precededBy reports whether the last word before the end of s is w.
func precededBy(s, w string) bool {
	s = strings.TrimRight(s, " \t\r\n")
	return strings.HasSuffix(strings.ToLower(s), w)
}

// templateQuery unwraps a Grafana variable query: label_values(expr, label) and
// query_result(expr) yield expr, metrics(regex) yields a __name__ regex, and
// label_values(label) or label_names() yield nothing. It returns the PromQL part and its
// offset in q, or a regex; ok is false when there is nothing to check.
// labelValuesLabel returns the label argument of label_values(expr, label) and its offset
// in q; ok is false for any other query.
func labelValuesLabel(q string) (label string, off int, ok bool) {
	t := strings.TrimSpace(q)
	lead := strings.Index(q, t)
	fn, rest, found := strings.Cut(t, "(")
	if !found || strings.TrimSpace(fn) != "label_values" || !strings.HasSuffix(rest, ")") {
		return "", 0, false
	}
	inner := rest[:len(rest)-1]
	args := splitTopLevel(inner)
	if len(args) < 2 {
		return "", 0, false
	}
	a := args[len(args)-1]
	raw := inner[a[0]:a[1]]
	label = strings.TrimSpace(raw)
	return label, lead + len(t) - len(rest) + a[0] + strings.Index(raw, label), label != ""
}

func templateQuery(q string) (expr string, off int, regex string, ok bool) {
	t := strings.TrimSpace(q)
	lead := strings.Index(q, t)
	fn, rest, found := strings.Cut(t, "(")
	fn = strings.TrimSpace(fn)
	if !found || !strings.HasSuffix(rest, ")") || strings.ContainsAny(fn, " {}[]") {
		return q, 0, "", t != ""
	}
	inner := rest[:len(rest)-1]
	innerOff := lead + len(t) - len(rest)
	switch fn {
	case "label_values":
		args := splitTopLevel(inner)
		if len(args) < 2 {
			return "", 0, "", false
		}
		a := args[0]
		return inner[a[0]:a[1]], innerOff + a[0], "", strings.TrimSpace(inner[a[0]:a[1]]) != ""
	case "query_result":
		return inner, innerOff, "", strings.TrimSpace(inner) != ""
	case "metrics":
		r := strings.Trim(strings.TrimSpace(inner), `"'`)
		return "", 0, r, r != ""
	case "label_names":
		return "", 0, "", false
	}
	return q, 0, "", true
}

// splitTopLevel splits s at commas outside parentheses, braces, brackets and quotes and
// returns the [start, end) of each part.
func splitTopLevel(s string) [][2]int {
	var parts [][2]int
	depth, start := 0, 0
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, [2]int{start, i})
				start = i + 1
			}
		}
	}
	return append(parts, [2]int{start, len(s)})
}

// adapterTemplateRE matches prometheus-adapter's Go template fields in metricsQuery.
var adapterTemplateRE = regexp.MustCompile(`<<\s*\.(\w+)\s*>>`)

// substituteAdapter replaces <<.Series>>, <<.LabelMatchers>> and <<.GroupBy>> with
// placeholders so the query parses; the series itself is checked through seriesQuery.
func substituteAdapter(q string) substituted {
	locs := adapterTemplateRE.FindAllStringSubmatchIndex(q, -1)
	if locs == nil {
		return substituted{text: q}
	}
	var b strings.Builder
	var subs []substitution
	last := 0
	for _, l := range locs {
		ph := "adapter_series"
		switch q[l[2]:l[3]] {
		case "LabelMatchers":
			ph = `adapter_label=""`
		case "GroupBy":
			ph = "adapter_group"
		}
		b.WriteString(q[last:l[0]])
		start := b.Len()
		b.WriteString(ph)
		subs = append(subs, substitution{origStart: l[0], origEnd: l[1], newStart: start, newEnd: b.Len()})
		last = l[1]
	}
	b.WriteString(q[last:])
	sort.Slice(subs, func(i, j int) bool { return subs[i].newStart < subs[j].newStart })
	return substituted{text: b.String(), subs: subs}
}
