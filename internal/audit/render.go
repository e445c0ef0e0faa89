package audit

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/kvcheck/kvcheck/internal/vllm"
)

// Offline rendering: a chat template is rendered by kvcheck's Jinja engine under pairs of
// inputs that differ in one thing (the clock, a template variable, the order of the tools,
// the conversation), and the first character where the two texts differ is where that thing
// lands. Each pair is rendered for four conversations (with and without a system message,
// with and without tools), since templates branch on both; an element that shows up in only
// some of them says so.

// renderClock is the clock of the base render: a Friday morning, so that each step of
// clockSteps changes exactly one more field (fraction, second, minute, hour, day, month,
// year) than the step before.
var renderClock = time.Date(2024, 7, 26, 10, 0, 0, 250000000, time.UTC)

// clockSteps are the clock pairs: the base clock against the base plus each step. The first
// step whose render differs names how often the text changes.
var clockSteps = []struct {
	d    time.Duration
	freq Frequency
	say  string
}{
	{time.Millisecond, PerCall, "1 ms apart"},
	{7 * time.Second, PerSecond, "7 s apart"},
	{7 * time.Minute, PerMinute, "7 minutes apart"},
	{3 * time.Hour, Hourly, "3 hours apart"},
	{3 * 24 * time.Hour, Daily, "3 days apart"},
	{40 * 24 * time.Hour, Monthly, "40 days apart"},
	{400 * 24 * time.Hour, Yearly, "400 days apart"},
}

// renderVariant is one conversation the pairs are rendered for.
type renderVariant struct {
	name   string // as a condition: "with a system message and tools"
	system bool
	tools  bool
}

var renderVariants = []renderVariant{
	{"without a system message", false, false},
	{"with a system message", true, false},
	{"without a system message, with tools", false, true},
	{"with a system message and tools", true, true},
}

const (
	renderSystem = "You are the support assistant of the ACME help desk. Answer briefly."
	renderUser   = "What are your opening hours?"
)

var renderTools = []string{
	`{"type": "function", "function": {"name": "get_hours", "description": "Opening hours of a branch", "parameters": {"type": "object", "properties": {"branch": {"type": "string"}}, "required": ["branch"]}}}`,
	`{"type": "function", "function": {"name": "open_ticket", "description": "Open a support ticket", "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}}}`,
}

// Divergence is where two renders of a template that differ in one input first differ.
type Divergence struct {
	// Pair names what differed: "clock", "variable NAME", "tool order", "conversation".
	Pair string
	// Variant is the conversation it was rendered for.
	Variant string
	// Offset is the byte offset of the first difference in the render; TokensBefore the
	// tokens before it; Block the block it falls in.
	Offset, TokensBefore, Block int
	// SharedEnd is where the first message's text ends in the render: a divergence at or
	// after it follows the shared text.
	SharedEnd int
	// Frequency is how often the text changes there (clock pairs only).
	Frequency Frequency
	// Detail says which clock pair and format decided, and what the two texts hold there;
	// Why is its short form for a finding's message.
	Detail, Why string
	// Lead is the rendered text just before the difference.
	Lead string
	// Formats are the strftime formats whose text changed (clock pairs only).
	Formats []string
}

// RenderResult is what rendering one chat template found.
type RenderResult struct {
	// Err is set when the engine could not compile or render the template in any
	// conversation; the static scanner's estimate stands then.
	Err error
	// Divergences holds, per input, the earliest place each differing pair reaches.
	Divergences []Divergence
	// Variants are the conversations the template rendered for (a template may refuse some:
	// "System role not supported").
	Variants []string
}

// PrefixCounter counts the tokens of a rendered prefix: the estimate, or a vLLM server.
type PrefixCounter interface {
	CountPrefix(ctx context.Context, text string) (int, error)
	// Exact reports whether the counts are a tokenizer's, not the estimate.
	Exact() bool
}

// estimateCounter counts by the estimate that the static scanner uses.
type estimateCounter struct{}

func (estimateCounter) CountPrefix(_ context.Context, text string) (int, error) {
	return estimateStatic(text), nil
}

func (estimateCounter) Exact() bool { return false }

// CountPrefix tokenizes a rendered prefix as a prompt, without the special tokens the server
// would add (the render holds its own), and counts the ids.
func (s *Server) CountPrefix(ctx context.Context, text string) (int, error) {
	if text == "" {
		return 0, nil
	}
	no := false
	ids, _, err := s.vllm().Tokenize(ctx, vllm.TokenizeRequest{Model: s.Model, Prompt: &text, AddSpecialTokens: &no})
	if err != nil {
		return 0, fmt.Errorf("count the tokens of a rendered prefix: %w", err)
	}
	return len(ids), nil
}

type chatRun struct {
	ct      *chatTemplate
	bos     string
	eos     string
	extra   map[string]jinja.Value // variables of a pair
	counter PrefixCounter
}

func (r *chatRun) render(v renderVariant, now time.Time, system, user string, toolOrder []int) (string, []clockCall, error) {
	vars := map[string]jinja.Value{
		"bos_token":             jinja.NewString(r.bos),
		"eos_token":             jinja.NewString(r.eos),
		"add_generation_prompt": jinja.NewBool(true),
	}
	var msgs []jinja.Value
	msg := func(role, content string) jinja.Value {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(role))
		d.AsDict().Set("content", jinja.NewString(content))
		return d
	}
	if v.system {
		msgs = append(msgs, msg("system", system))
	}
	msgs = append(msgs, msg("user", user))
	vars["messages"] = jinja.NewList(msgs)
	if v.tools {
		var tools []jinja.Value
		for _, i := range toolOrder {
			t, err := jsonValue([]byte(renderTools[i]))
			if err != nil {
				return "", nil, err
			}
			tools = append(tools, t)
		}
		vars["tools"] = jinja.NewList(tools)
	}
	for k, x := range r.extra {
		vars[k] = x
	}
	return r.ct.render(renderInput{vars: vars, now: now})
}

// renderChatTemplate renders a chat template under every pair and returns the divergences.
// vars are the template's free variables to vary (names the caller may pass in
// chat_template_kwargs).
func renderChatTemplate(ctx context.Context, src string, vars []string, bs int, counter PrefixCounter) RenderResult {
	ct, err := compileChat(src)
	if err != nil {
		return RenderResult{Err: err}
	}
	if counter == nil {
		counter = estimateCounter{}
	}
	// A function the template calls and nothing defines (uuid4() from a caller's globals)
	// returns its own name in the base renders, and two values in its own pair.
	calls := freeCalls(src)
	stubs := map[string]jinja.Value{}
	for _, c := range calls {
		stubs[c] = stub(c)
	}
	r := &chatRun{ct: ct, bos: "<s>", eos: "</s>", counter: counter, extra: stubs}
	var res RenderResult
	var firstErr error
	order := []int{0, 1}
	for _, v := range renderVariants {
		base, _, err := r.render(v, renderClock, renderSystem, renderUser, order)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", v.name, err)
			}
			continue
		}
		res.Variants = append(res.Variants, v.name)
		// Where the first message's text ends: change its last character.
		sys, usr := renderSystem, renderUser
		if v.system {
			sys = sys[:len(sys)-1] + "!"
		} else {
			usr = usr[:len(usr)-1] + "!"
		}
		shared := len(base)
		if other, _, err := r.render(v, renderClock, sys, usr, order); err == nil {
			if at := firstDiffString(base, other); at < len(base) || len(other) != len(base) {
				shared = at
			}
		}
		add := func(d Divergence, a, b string) error {
			d.Variant, d.SharedEnd = v.name, shared
			d.Lead = a[max(0, d.Offset-48):d.Offset]
			if d.Detail == "" {
				d.Detail = fmt.Sprintf("%q against %q", clip(a[d.Offset:], 24), clip(b[d.Offset:], 24))
			}
			n, err := counter.CountPrefix(ctx, a[:d.Offset])
			if err != nil {
				return err
			}
			d.TokensBefore, d.Block = n, n/bs
			res.Divergences = append(res.Divergences, d)
			return nil
		}
		// Clocks: the first step to reach each earlier place.
		reached := len(base) + 1
		for _, st := range clockSteps {
			later := renderClock.Add(st.d)
			other, calls, err := r.render(v, later, renderSystem, renderUser, order)
			if err != nil || other == base {
				continue
			}
			at := firstDiffString(base, other)
			if at >= reached {
				continue
			}
			reached = at
			var formats []string
			for _, c := range calls {
				if strftime(renderClock, c.format) != strftime(later, c.format) && !slices.Contains(formats, c.format) {
					formats = append(formats, c.format)
				}
			}
			why := fmt.Sprintf("the finest clock pair whose renders differ here is %s", st.say)
			if len(formats) > 0 {
				why += fmt.Sprintf(", through strftime_now(%q)", formats[0])
			}
			detail := fmt.Sprintf("%s (%q against %q)", why, clip(base[at:], 24), clip(other[at:], 24))
			if err := add(Divergence{Pair: "clock", Offset: at, Frequency: st.freq, Detail: detail, Why: why, Formats: formats}, base, other); err != nil {
				return RenderResult{Err: err}
			}
		}
		// Variables the caller may pass, and functions nothing defines: two values each.
		for _, name := range append(slices.Clone(vars), calls...) {
			a, b := pairValues(name)
			attrs := attributes(src, name)
			ra, _, errA := r.with(name, a, attrs).render(v, renderClock, renderSystem, renderUser, order)
			rb, _, errB := r.with(name, b, attrs).render(v, renderClock, renderSystem, renderUser, order)
			if errA != nil || errB != nil || ra == rb {
				continue
			}
			at := firstDiffString(ra, rb)
			pair := "variable " + name
			if slices.Contains(calls, name) {
				pair = "call " + name
			}
			if err := add(Divergence{Pair: pair, Offset: at}, ra, rb); err != nil {
				return RenderResult{Err: err}
			}
		}
		if v.tools {
			other, _, err := r.render(v, renderClock, renderSystem, renderUser, []int{1, 0})
			if err == nil && other != base {
				if err := add(Divergence{Pair: "tool order", Offset: firstDiffString(base, other)}, base, other); err != nil {
					return RenderResult{Err: err}
				}
			}
		}
	}
	if len(res.Variants) == 0 {
		return RenderResult{Err: firstErr}
	}
	return res
}

// with returns the run with one variable (or function, when the template calls it) set to a
// value; a variable the template reads attributes of (user.name, user['id']) is an object
// whose every such attribute is the value.
func (r *chatRun) with(name, value string, attrs []string) *chatRun {
	c := *r
	c.extra = maps.Clone(r.extra)
	switch _, isCall := r.extra[name]; {
	case isCall:
		c.extra[name] = stub(value)
	case len(attrs) > 0:
		d := jinja.NewDict()
		for _, a := range attrs {
			d.AsDict().Set(a, jinja.NewString(value))
		}
		c.extra[name] = d
	default:
		c.extra[name] = jinja.NewString(value)
	}
	return &c
}

// attributes lists the attributes and string keys a template reads of a variable: name.attr
// and name['key'].
func attributes(src, name string) []string {
	re, err := regexp.Compile(`\b` + regexp.QuoteMeta(name) + `\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])`)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		a := m[1] + m[2]
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// stub is a function that returns s whatever it is given.
func stub(s string) jinja.Value {
	return jinja.NewCallable(s, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) { return jinja.NewString(s), nil })
}

// pairValues are two values for a variable that differ from their first character, so that
// the first difference is where the value starts: two dates for a date-like name, else two
// words of the same length.
func pairValues(name string) (string, string) {
	if reDateName.MatchString(name) {
		return "2024-07-26", "1999-12-31"
	}
	return "alpha", "omega"
}

// firstDiffString returns the first byte offset where a and b differ (the shorter length
// when one is a prefix of the other).
func firstDiffString(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// reFree finds names in tag bodies; freeVariables filters them.
var reFree = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// jinjaWords are names a tag body uses that are not variables the caller passes.
var jinjaWords = map[string]bool{
	"if": true, "elif": true, "else": true, "endif": true, "for": true, "endfor": true, "in": true, "not": true,
	"and": true, "or": true, "is": true, "set": true, "endset": true, "macro": true, "endmacro": true, "call": true,
	"endcall": true, "filter": true, "endfilter": true, "raw": true, "endraw": true, "with": true, "endwith": true,
	"block": true, "endblock": true, "generation": true, "endgeneration": true, "break": true, "continue": true,
	"true": true, "false": true, "none": true, "True": true, "False": true, "None": true, "loop": true,
	"namespace": true, "range": true, "dict": true, "joiner": true, "cycler": true, "raise_exception": true,
	"strftime_now": true, "defined": true, "undefined": true, "recursive": true, "import": true, "include": true,
	"from": true, "as": true, "do": true, "caller": true, "varargs": true, "kwargs": true, "self": true,
	"messages": true, "add_generation_prompt": true, "bos_token": true, "eos_token": true, "pad_token": true,
	"unk_token": true, tojsonFilter: true,
}

// freeVariables lists the names a chat template reads and never sets: what the caller may
// pass in chat_template_kwargs. Names after "|" (filters), "is" (tests) or "." (attributes),
// loop and set targets, macro parameters and request inputs (tools, documents) are left out.
func freeVariables(src string) []string {
	segs, err := hfLex(strings.ReplaceAll(src, "\r\n", "\n"))
	if err != nil {
		return nil
	}
	bound := map[string]bool{}
	var used []string
	for _, s := range segs {
		if s.kind != hfExpr && s.kind != hfStmt {
			continue
		}
		body := stripStrings(s.text)
		w := stmtWord(strings.TrimSpace(body))
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body), w))
		switch w {
		case "set":
			target, _, _ := strings.Cut(rest, "=")
			for _, n := range strings.Split(target, ",") {
				bound[strings.TrimSpace(strings.Split(n, ".")[0])] = true
			}
		case "for":
			target, _, _ := strings.Cut(rest, " in ")
			for _, n := range strings.Split(strings.Trim(target, "() "), ",") {
				bound[strings.TrimSpace(n)] = true
			}
		case "macro":
			if i := strings.IndexByte(rest, '('); i > 0 {
				bound[strings.TrimSpace(rest[:i])] = true
				for _, p := range strings.Split(strings.Trim(rest[i:], "()"), ",") {
					n, _, _ := strings.Cut(p, "=")
					bound[strings.TrimSpace(n)] = true
				}
			}
		}
		for _, loc := range reFree.FindAllStringIndex(body, -1) {
			name := body[loc[0]:loc[1]]
			before := strings.TrimRight(body[:loc[0]], " \t\n")
			after := strings.TrimLeft(body[loc[1]:], " \t\n")
			switch {
			case strings.HasSuffix(before, "."), strings.HasSuffix(before, "|"), strings.HasSuffix(before, " is"),
				strings.HasSuffix(before, " is not"), strings.HasPrefix(after, "("), strings.HasPrefix(after, "="):
				continue
			case name[0] >= '0' && name[0] <= '9', jinjaWords[name], reInputName.MatchString(name):
				continue
			}
			if !slices.Contains(used, name) {
				used = append(used, name)
			}
		}
	}
	// A name the template sets only when the caller has not ({% if x is not defined %}{% set
	// x = ... %}, x | default(...)) is still the caller's to pass.
	optional := map[string]bool{}
	for _, s := range segs {
		if s.kind == hfExpr || s.kind == hfStmt {
			for _, m := range reOptional.FindAllStringSubmatch(stripStrings(s.text), -1) {
				optional[m[1]] = true
			}
		}
	}
	var out []string
	for _, n := range used {
		if !bound[n] || optional[n] {
			out = append(out, n)
		}
	}
	return out
}

// freeCalls lists the functions a chat template calls that neither Jinja, the engine nor
// the template defines (uuid4(), now()): the caller's globals.
func freeCalls(src string) []string {
	segs, err := hfLex(strings.ReplaceAll(src, "\r\n", "\n"))
	if err != nil {
		return nil
	}
	defined := map[string]bool{}
	var out []string
	for _, s := range segs {
		if s.kind != hfExpr && s.kind != hfStmt {
			continue
		}
		body := stripStrings(s.text)
		if w := stmtWord(strings.TrimSpace(body)); w == "macro" || w == "set" {
			rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body), w))
			defined[reIdent.FindString(rest)] = true
		}
		for _, m := range reCall.FindAllStringSubmatchIndex(body, -1) {
			name := body[m[2]:m[3]]
			before := strings.TrimRight(body[:m[2]], " \t\n")
			if strings.HasSuffix(before, ".") || strings.HasSuffix(before, "|") || strings.HasSuffix(before, " is") || jinjaWords[name] || knownCall[name] || slices.Contains(out, name) {
				continue
			}
			out = append(out, name)
		}
	}
	return slices.DeleteFunc(out, func(n string) bool { return defined[n] })
}

var reCall = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// knownCall are the functions Jinja and the engine define.
var knownCall = map[string]bool{"namespace": true, "range": true, "dict": true, "joiner": true, "cycler": true,
	"raise_exception": true, "strftime_now": true, "lipsum": true, "super": true, "caller": true}

var reOptional = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:is\s+(?:not\s+)?(?:defined|undefined)\b|\|\s*(?:default|d)\b)`)

// renderElement is one thing the renders found changing: a clock or a variable, placed at its
// earliest divergence over the conversations it appeared in.
type renderElement struct {
	pair     string
	worst    Divergence // the divergence with the worst position
	pos      Position
	variants []string
	freq     Frequency
	formats  []string
}

// elements groups a render's divergences by what differed: clock divergences within a few
// bytes of each other are one printed value (its day digit and its month digits), the finest
// clock step that reached it giving the frequency; each variable is one element.
func (rr RenderResult) elements(bs int, exact bool) []renderElement {
	var out []renderElement
	// A clock's divergences are one element when the same strftime formats changed (the
	// same printed value, wherever the conversation puts it).
	find := func(d Divergence) *renderElement {
		for i := range out {
			e := &out[i]
			switch {
			case e.pair != d.Pair:
			case d.Pair != "clock":
				return e
			case len(d.Formats) > 0 && len(e.formats) > 0 && containsAny(strings.Join(e.formats, "\x00"), d.Formats):
				return e
			case len(d.Formats) == 0 && d.Variant == e.worst.Variant && absInt(e.worst.Offset-d.Offset) <= 16:
				return e
			}
		}
		return nil
	}
	for _, d := range rr.Divergences {
		if d.Pair == "tool order" {
			continue
		}
		pos, _ := place(d.TokensBefore, bs, !exact, d.Offset >= d.SharedEnd)
		e := find(d)
		if e == nil {
			out = append(out, renderElement{pair: d.Pair, worst: d, pos: pos, freq: d.Frequency, formats: d.Formats})
			e = &out[len(out)-1]
		} else {
			if d.Frequency != "" && freqRank(d.Frequency) < freqRank(e.freq) {
				e.freq = d.Frequency
			}
			for _, f := range d.Formats {
				if !slices.Contains(e.formats, f) {
					e.formats = append(e.formats, f)
				}
			}
			if pos.rank() > e.pos.rank() || pos == e.pos && d.Offset < e.worst.Offset && d.Variant == e.worst.Variant {
				keep := e.worst
				e.worst, e.pos = d, pos
				if d.Pair == "clock" && freqRank(d.Frequency) > freqRank(e.freq) {
					// Where the value starts is the coarser step's; what decided how often
					// it changes is the finer one's.
					e.worst.Detail, e.worst.Why, e.worst.Frequency = keep.Detail, keep.Why, keep.Frequency
				}
			}
		}
		if !slices.Contains(e.variants, d.Variant) {
			e.variants = append(e.variants, d.Variant)
		}
	}
	return out
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// freqRank orders frequencies from the most often.
func freqRank(f Frequency) int {
	switch f {
	case PerCall:
		return 0
	case PerSecond:
		return 1
	case PerMinute:
		return 2
	case Hourly:
		return 3
	case Daily:
		return 4
	case Monthly:
		return 5
	case Yearly:
		return 6
	}
	return 9
}

// condition says in which conversations an element appeared, "" when in all that rendered.
func (e renderElement) condition(all []string) string {
	if len(e.variants) == len(all) {
		return ""
	}
	return "rendered " + strings.Join(e.variants, " or ")
}

// reconcile puts a template's renders into its static findings: a clock or variable the
// renders place takes the rendered position (the first differing character, counted as
// tokens by the estimate or the --tokenize server) and, for a clock, the frequency the clock
// pairs showed; one the static scanner missed becomes a finding of its own; one the renders
// never reached keeps the estimate and says so. src is the template, for the line of a new
// finding.
func reconcile(file, src, prefix string, fs []Finding, rr RenderResult, bs int, exact bool) []Finding {
	if rr.Err != nil {
		return fs
	}
	used := make([]bool, len(fs))
	var extra []Finding
	for _, e := range rr.elements(bs, exact) {
		d := e.worst
		var f *Finding
		name := strings.TrimPrefix(strings.TrimPrefix(e.pair, "variable "), "call ")
		for i := range fs {
			if used[i] {
				continue
			}
			x := &fs[i]
			expr := strings.TrimPrefix(x.Expression, prefix)
			switch {
			case e.pair == "clock" && x.Kind == KindClock && (len(e.formats) == 0 || containsAny(expr, e.formats)):
			case e.pair != "clock" && reIdent.FindString(expr) == name:
			default:
				continue
			}
			f, used[i] = x, true
			break
		}
		if f == nil && e.pair != "clock" {
			// A variable that lands where a clock does is the clock's override (date_string
			// in Llama 3.1's template): the clock's finding covers it.
			covered := false
			for _, o := range rr.elements(bs, exact) {
				if o.pair == "clock" && absInt(o.worst.Offset-d.Offset) <= 16 {
					covered = true
				}
			}
			if covered {
				continue
			}
		}
		if f == nil {
			nf := Finding{Expression: prefix + name, Estimated: !exact, Evidence: EvidenceNone}
			nf.File, nf.Line = file, lineOf(src, name)
			if e.pair == "clock" {
				nf.Expression, nf.Kind, nf.Evidence = prefix+"strftime_now", KindClock, EvidenceCode
				if len(e.formats) > 0 {
					nf.Expression = fmt.Sprintf("%sstrftime_now(%q)", prefix, e.formats[0])
					nf.Line = lineOf(src, e.formats[0])
				}
			} else if strings.HasPrefix(e.pair, "call ") {
				nf.Expression = prefix + name + "()"
				nf.Kind, nf.Frequency, _ = classifyExpr(name + "()")
				nf.Evidence = nameEvidence(nf.Kind)
				if dynamicCall(name + "()") {
					nf.Evidence = EvidenceCode
				}
				nf.Origin = "a function the caller defines"
			} else {
				nf.Kind, nf.Frequency = classifyName(name)
				nf.Evidence = nameEvidence(nf.Kind)
				nf.Origin = "a template variable the caller passes (chat_template_kwargs)"
			}
			extra = append(extra, nf)
			f = &extra[len(extra)-1]
		}
		f.TokensBefore, f.Block, f.Position, f.Estimated = d.TokensBefore, d.Block, e.pos, !exact
		f.lead = d.Lead
		if e.pair == "clock" && e.freq != "" {
			f.Frequency = e.freq
		}
		if strings.HasPrefix(e.pair, "variable ") {
			f.Variable = name
		}
		if c := e.condition(rr.Variants); c != "" && f.Condition == "" {
			f.Condition = c
		}
		if e.pair == "clock" {
			f.Render = fmt.Sprintf("rendered offline (%s): %s", d.Variant, d.Why)
		} else {
			f.Render = fmt.Sprintf("rendered offline (%s) with two values of %s: the texts differ from byte %d", d.Variant, name, d.Offset)
		}
	}
	for i := range fs {
		if !used[i] && fs[i].Position != PositionUnknown {
			fs[i].Render = "not reached by the offline renders (" + strings.Join(rr.Variants, "; ") + "): position estimated from the template's text"
		}
	}
	return append(fs, extra...)
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// lineOf is the first line of src holding s (1 when none does).
func lineOf(src, s string) int {
	if i := strings.Index(src, s); i >= 0 {
		return 1 + strings.Count(src[:i], "\n")
	}
	return 1
}
