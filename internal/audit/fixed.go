package audit

import (
	"fmt"
	"regexp"
	"strings"
)

// Fixer rewrites requests as they would be once the prompt builder is fixed: the values where
// the audit saw requests leave the shared prefix early (a date, an id, a number, a per-user line
// in the system prompt) are replaced by a constant. Assess replays the rewritten traffic to say
// what routing pays once the fix is made, and how much the breaker costs.
//
// Each site is a message (by index; the completion prompt is message 0) and the kind of value
// found there. A date, a uuid, an id or a number is replaced wherever the pattern matches in
// that message; plain text (a name) is replaced from the divergence's offset to the end of its
// line, since where a free-text value ends cannot be told from one example.
type Fixer struct {
	sites []Site
}

// MinFixShare is the share of requests (of at least one block) a divergence site must account
// for to be treated as the prompt builder's doing rather than a few odd requests.
const MinFixShare = 0.10

// MaxFixBlock is the deepest block a divergence may start in to count as breaking the shared
// prefix early: past it, most of the prefix is shared already.
const MaxFixBlock = 3

// NewFixer returns the fixer for the summary's divergence sites that break sharing early and
// are not in the user's own message (a number or a question the user typed: nothing to move
// there); nil when there are none.
func NewFixer(s Summary) *Fixer {
	withBlock := s.Requests - s.Short
	if withBlock <= 0 {
		return nil
	}
	var sites []Site
	for _, st := range s.Sites {
		if st.Message < 0 || st.Block > MaxFixBlock || st.Role == "user" || userText(st) || st.Cause == "token ids" ||
			float64(st.Count) < MinFixShare*float64(withBlock) {
			continue
		}
		sites = append(sites, st)
	}
	if len(sites) == 0 {
		return nil
	}
	return &Fixer{sites: sites}
}

// Describe says what the fixer replaces by a constant, for the report.
func (f *Fixer) Describe() string {
	var parts []string
	for _, st := range f.sites {
		what := st.Cause
		if st.Cause == "text" {
			what = "the text from offset " + fmt.Sprint(st.Offset) + " to the end of its line"
		}
		parts = append(parts, fmt.Sprintf("%s in %s", what, st.Where()))
	}
	return strings.Join(parts, "; ")
}

var (
	reDigits = regexp.MustCompile(`\d+`)
	// reFixDate matches a whole date or time as generated values print them: ISO 8601 with
	// fractional seconds and zone, a clock time, a day and month name; what is left of
	// classify's date pattern (a word such as "today") is constant already.
	reFixDate = regexp.MustCompile(`(?i)\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?|\b\d{1,2}[ /.-]?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?[ /.-]?\d{2,4}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b1[5-9]\d{8}(?:\d{3})?\b`)
)

// Apply rewrites req in place and reports whether anything changed. The raw messages an exact
// tokenizer would send are dropped, so that it renders the rewritten text.
func (f *Fixer) Apply(req *Request) bool {
	changed := false
	for _, st := range f.sites {
		var text *string
		switch {
		case req.Chat && st.Message < len(req.Messages) && req.Messages[st.Message].Role == st.Role:
			text = &req.Messages[st.Message].Content
		case !req.Chat && st.Message == 0 && req.PromptIDs == nil:
			text = &req.Prompt
		default:
			continue
		}
		if s := fixText(*text, st); s != *text {
			*text, changed = s, true
			if req.Chat && st.Message < len(req.Texts) {
				fixParts(&req.Texts[st.Message], st)
			}
		}
	}
	if changed {
		req.RawMessages, req.RawKwargs = nil, nil
	}
	return changed
}

// fixParts rewrites a message's texts as the routers read them (MessageText) the way its
// Content was rewritten: each part at its place in Content, with the site's offset made
// relative to the part (a value is fixed in the part the divergence falls in, or within
// fixWindow after it); a part Content does not hold has its values replaced throughout, and is
// left as is for a free-text site, whose offset it does not contain.
func fixParts(t *MessageText, st Site) {
	for i, p := range t.Parts {
		sub := st
		switch {
		case p.At < 0 && st.Cause == "text":
			continue
		case p.At < 0:
			sub.Offset = 0
		default:
			sub.Offset -= p.At
			if st.Cause == "text" && (sub.Offset < 0 || sub.Offset >= len(p.Text)) {
				continue
			}
			if sub.Offset+fixWindow <= 0 {
				continue
			}
		}
		t.Parts[i].Text = fixText(p.Text, sub)
	}
}

// fixWindow is how far past the divergence's offset a value is looked for: the value sits at
// the divergence (a little later in requests whose earlier text is longer), not in the shared
// text after it, which the patterns need not scan.
const fixWindow = 512

func fixText(s string, st Site) string {
	if st.Cause != "text" && len(s) > st.Offset+fixWindow {
		return fixText(s[:st.Offset+fixWindow], st) + s[st.Offset+fixWindow:]
	}
	switch st.Cause {
	case "date/time":
		return reFixDate.ReplaceAllString(s, "DATE")
	case "uuid":
		return reUUID.ReplaceAllString(s, "ID")
	case "id":
		return reHexID.ReplaceAllString(reUUID.ReplaceAllString(s, "ID"), "ID")
	case "number":
		return reDigits.ReplaceAllString(s, "0")
	case "text":
		if st.Offset >= len(s) {
			return s
		}
		// Back to the start of the word the difference falls in, on to the end of the line.
		from := st.Offset
		for from > 0 && isWordByte(s[from-1]) {
			from--
		}
		end := strings.IndexByte(s[from:], '\n')
		if end < 0 {
			end = len(s) - from
		}
		return s[:from] + "VALUE" + s[from+end:]
	}
	return s
}
