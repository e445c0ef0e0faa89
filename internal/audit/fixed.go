package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
// there); nil when there are none. Reorderings (the same tools or JSON in another order) are
// taken together per message and cause, wherever in it the order first differed: their fix is
// one deterministic serialisation of the whole list or object, so each request's offset does
// not matter, and a tool list shuffled per request scatters its divergences over many offsets
// that each fall under MinFixShare. They are fixed at any depth (MaxFixBlock is for values):
// the audit reports them wherever they fall (audit/unstable-order), and the replay once fixed
// measures what they cost.
func NewFixer(s Summary) *Fixer {
	withBlock := s.Requests - s.Short
	if withBlock <= 0 {
		return nil
	}
	var sites []Site
	type orderKey struct {
		message int
		cause   string
	}
	var orderKeys []orderKey
	reordered := map[orderKey]Site{}
	for _, st := range s.Sites {
		if orderCause(st.Cause) {
			k := orderKey{st.Message, st.Cause}
			o, seen := reordered[k]
			if !seen {
				orderKeys = append(orderKeys, k)
				o = st
				o.Count = 0
			}
			o.Count += st.Count
			reordered[k] = o
			continue
		}
		if st.Message < 0 || st.Block > MaxFixBlock || st.Role == "user" || userText(st) || st.Cause == "token ids" ||
			float64(st.Count) < MinFixShare*float64(withBlock) {
			continue
		}
		sites = append(sites, st)
	}
	for _, k := range orderKeys {
		if o := reordered[k]; float64(o.Count) >= MinFixShare*float64(withBlock) {
			sites = append(sites, o)
		}
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
		switch {
		case st.Cause == "text":
			what = "the text from offset " + fmt.Sprint(st.Offset) + " to the end of its line"
		case orderCause(st.Cause):
			what = "one fixed order (" + st.Cause + ": keys sorted"
			if st.Cause != CauseKeyOrder {
				what += ", lists sorted"
			}
			what += ")"
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
		case st.Message < 0:
			if orderCause(st.Cause) && req.Tools != "" {
				text = &req.Tools
			}
		case req.Chat && st.Message < len(req.Messages) && req.Messages[st.Message].Role == st.Role:
			text = &req.Messages[st.Message].Content
		case !req.Chat && st.Message == 0 && req.PromptIDs == nil:
			text = &req.Prompt
		default:
			continue
		}
		if text == nil {
			continue
		}
		if s := fixText(*text, st); s != *text {
			*text, changed = s, true
			if req.Chat && st.Message >= 0 && st.Message < len(req.Texts) {
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
// Content was rewritten: a list's JSON throughout for a value's site; each part at its place in Content, with the site's offset made
// relative to the part (a value is fixed in the part the divergence falls in, or within
// fixWindow after it); a part Content does not hold has its values replaced throughout, and is
// left as is for a free-text site, whose offset it does not contain.
func fixParts(t *MessageText, st Site) {
	if t.Raw != "" && st.Cause != "text" {
		// The list's JSON holds the parts' values (escaped as JSON may escape them).
		whole := st
		whole.Offset = len(t.Raw) // no window: the whole list
		t.Raw = fixText(t.Raw, whole)
	}
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
	if orderCause(st.Cause) {
		// The whole list or object: a reordering can start anywhere in it.
		if c, err := canonicalJSON(s, st.Cause != CauseKeyOrder); err == nil {
			return c
		}
		return s
	}
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

// canonicalJSON writes a JSON text in one order whatever order it came in: every object's keys
// sorted, and with sortLists every list's elements sorted by their own canonical text too (a
// tool list in any order becomes the same list). It walks the text's tokens and holds each open
// object's or list's members as text, a few times the input's size, never a decoded value (a
// tool list of 400,000 tools decoded into maps took 700 MB); an error for a text that is not
// JSON, which is then left as it is.
func canonicalJSON(s string, sortLists bool) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var b strings.Builder
	if err := canonicalValue(dec, &b, sortLists); err != nil {
		return "", err
	}
	if dec.More() {
		return "", fmt.Errorf("text after the JSON value")
	}
	return b.String(), nil
}

func canonicalValue(dec *json.Decoder, b *strings.Builder, sortLists bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		object := t == '{'
		type member struct{ key, value string }
		var ms []member
		for dec.More() {
			var m member
			if object {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				kb, _ := json.Marshal(key)
				m.key = string(kb)
			}
			var vb strings.Builder
			if err := canonicalValue(dec, &vb, sortLists); err != nil {
				return err
			}
			m.value = vb.String()
			ms = append(ms, m)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		if object {
			slices.SortStableFunc(ms, func(x, y member) int { return strings.Compare(x.key, y.key) })
		} else if sortLists {
			slices.SortStableFunc(ms, func(x, y member) int { return strings.Compare(x.value, y.value) })
		}
		open, end := byte('['), byte(']')
		if object {
			open, end = '{', '}'
		}
		b.WriteByte(open)
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			if object {
				b.WriteString(m.key)
				b.WriteByte(':')
			}
			b.WriteString(m.value)
		}
		b.WriteByte(end)
	case string:
		sb, _ := json.Marshal(t)
		b.Write(sb)
	case json.Number:
		b.WriteString(string(t))
	case bool:
		b.WriteString(strconv.FormatBool(t))
	default:
		b.WriteString("null")
	}
	return nil
}
