package report

import "strings"

// gist is a sentence of kvcheck's prose in brief: its first clause, up to the first "; "
// outside parentheses and quotes, with its asides (a parenthesis after a space) left out.
// Reasons, findings and notes are written claim first, detail after a semicolon or in
// parentheses (advise.Reason.Text), so the gist keeps the claim and its figures: "a costs +2.7
// points (x against y), under 5: worth fixing; z" is "a costs +2.7 points, under 5: worth
// fixing". A parenthesis right after a word (ValueError("...")) is not an aside and stays. Text
// whose parentheses or quotes do not balance is cut at its first clause only.
func gist(s string) string {
	var b strings.Builder
	var stack []bool // open parentheses, true for an aside
	asides := 0      // asides on the stack: while any is open, nothing is written
	quoted := false
scan:
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' && asides == 0:
			quoted = !quoted
		case quoted:
		case c == '(':
			aside := i == 0 || s[i-1] == ' '
			stack = append(stack, aside)
			if aside {
				asides++
				continue
			}
		case c == ')' && len(stack) > 0:
			aside := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if aside {
				asides--
				continue
			}
		case c == ';' && len(stack) == 0 && i+1 < len(s) && s[i+1] == ' ':
			break scan
		}
		if asides == 0 {
			b.WriteByte(c)
		}
	}
	if len(stack) > 0 || quoted {
		// Something never closes: keep the text as written, cut at its first "; ".
		if i := strings.Index(s, "; "); i >= 0 {
			return strings.TrimSpace(s[:i])
		}
		return strings.TrimSpace(s)
	}
	out := b.String()
	// An aside leaves the space before it: "costs 3 points , under" reads "costs 3 points, under".
	for _, p := range []string{"  ", " ,", " :", " ."} {
		for strings.Contains(out, p) {
			out = strings.ReplaceAll(out, p, p[1:])
		}
	}
	return strings.TrimSpace(out)
}
