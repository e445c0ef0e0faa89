package audit

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Kind is what sort of dynamic element a finding is.
type Kind string

// The kinds of dynamic element.
const (
	KindClock    Kind = "clock"    // a clock or date call: strftime_now, datetime.now(), time.time()
	KindDate     Kind = "date"     // a date-like variable whose source is not in view
	KindID       Kind = "id"       // a request, session or random identifier
	KindUser     Kind = "user"     // a per-user value: name, memory, preferences
	KindRandom   Kind = "random"   // a random value
	KindVariable Kind = "variable" // any other variable
)

// Frequency is how often a dynamic element changes, when the code tells.
type Frequency string

// The change frequencies, from most to least often.
const (
	PerCall    Frequency = "per-call"
	PerSecond  Frequency = "per-second"
	PerMinute  Frequency = "per-minute"
	Hourly     Frequency = "hourly"
	Daily      Frequency = "daily"
	Monthly    Frequency = "monthly"
	Yearly     Frequency = "yearly"
	PerUser    Frequency = "per-user"
	PerSession Frequency = "per-session"
	// Fixed is a value set once per deployment: it never breaks sharing.
	Fixed   Frequency = "fixed"
	Unknown Frequency = "unknown"
)

// fast reports whether the value changes at least as often as per user or per hour: such a
// value in block zero leaves almost nothing to share.
func (f Frequency) fast() bool {
	switch f {
	case PerCall, PerSecond, PerMinute, Hourly, PerUser, PerSession:
		return true
	}
	return false
}

// Position is where a dynamic element lands relative to the shareable text.
type Position string

// The positions. A breaker lands in the first block, so no block of the prompt can be shared
// once it changes; early lands before most of the static text (or, in a chat template, before
// the conversation); late lands after it, so sharing holds up to there.
const (
	Breaker         Position = "breaker"
	Early           Position = "early"
	Late            Position = "late"
	PositionUnknown Position = "unknown"
)

// Verdict is a template's overall classification: its worst finding's position, or clean.
type Verdict string

// The verdicts.
const (
	VerdictBreaker Verdict = "breaker"
	VerdictEarly   Verdict = "early"
	VerdictLate    Verdict = "late"
	VerdictUnknown Verdict = "unknown"
	VerdictClean   Verdict = "clean"
)

// Evidence is what establishes that an element changes between requests. A name alone is no
// evidence: {agent_name} is fixed per deployment, {user_name} per user, and only the code or
// the traffic tells which.
type Evidence string

// The kinds of evidence.
const (
	// EvidenceCode: the value comes from a clock, id or random call in the code.
	EvidenceCode Evidence = "code"
	// EvidenceRequest: the code fills it from the request or the user (request.user.name,
	// config["configurable"]["user_id"]).
	EvidenceRequest Evidence = "request"
	// EvidenceRender: two renders of one conversation by the server differ there.
	EvidenceRender Evidence = "render"
	// EvidenceLog: requests of a log differ where it lands.
	EvidenceLog Evidence = "log"
	// EvidenceText: the template's own words say what the value is ("Your session started
	// on", "Today is", "User:").
	EvidenceText Evidence = "text"
	// EvidenceAssumed: --assume NAME=CLASS settled it.
	EvidenceAssumed Evidence = "assumed"
	// EvidenceName: only the variable's name suggests a kind; the finding is a question.
	EvidenceName Evidence = "name"
	// EvidenceNone: nothing suggests the variable changes; the finding is a question.
	EvidenceNone Evidence = "none"
)

// known reports whether the evidence shows the element changes.
func (e Evidence) known() bool {
	switch e {
	case EvidenceCode, EvidenceRequest, EvidenceRender, EvidenceLog, EvidenceText, EvidenceAssumed:
		return true
	}
	return false
}

func (p Position) rank() int {
	switch p {
	case Breaker:
		return 4
	case Early:
		return 3
	case PositionUnknown:
		return 2
	case Late:
		return 1
	}
	return 0
}

// Finding is one dynamic element found in a template or prompt module, or one finding of the
// request audit. The embedded finding carries severity, code, message, subject, the file and
// line it is at, and the fix.
type Finding struct {
	finding.Finding
	Expression string
	Kind       Kind
	Position   Position
	// Block is the first block the element lands in (-1 when unknown); TokensBefore the
	// static tokens before it.
	Block        int
	TokensBefore int
	Frequency    Frequency
	Estimated    bool
	// Condition is set when the element only appears under a condition.
	Condition string
	// Origin says where the value comes from when that is elsewhere (another line or file).
	Origin string
	// Evidence says what shows the element changes; without it (name, none) the finding is
	// the question to answer (code audit/check): its Position and Severity are then the
	// worst case, the class named in Assumption, and BestPosition the best (clean: fixed per
	// deployment).
	Evidence Evidence
	// Variable is the name a caller fills (what --assume names), "" for a clock call.
	Variable string
	// Assumption says, for an unsettled finding, the verdicts under the worst and the best
	// class it could have ("early if current_date changes per session; clean if it is fixed
	// per deployment").
	Assumption string
	// BestPosition is the position under the best class: Position when the evidence settles
	// it, "" (nothing lost) for an unsettled one.
	BestPosition Position
	// Render says what offline rendering showed there, when the template was rendered.
	Render string
	// lead is the static text before a placeholder, to find it in a request log.
	lead string
}

var (
	reDateName = regexp.MustCompile(`(?i)date|today|time|now|clock|day|year|month|timestamp|\bts\b`)
	reIDName   = regexp.MustCompile(`(?i)uuid|guid|(^|_)id$|_id\b|request_?id|session|trace|nonce|conversation_?id|thread_?id|run_?id`)
	reUserName = regexp.MustCompile(`(?i)user|name|email|memor|preference|profile|location|locale|timezone|tz$|customer|account|persona`)
	reRandName = regexp.MustCompile(`(?i)random|rand|seed|shuffle|salt`)
	// tool and conversation inputs: the same for every request of an application, or the
	// conversation itself, so not breakers.
	reInputName = regexp.MustCompile(`(?i)^(tools?|custom_tools|builtin_tools|functions?|tool_?\w*|messages?|loop_messages|add_generation_prompt|bos_token|eos_token|content|documents?|raise_exception|loop|range|namespace|true|false|none|True|False|None)$`)
)

// classifyName guesses a variable's kind and frequency from its name alone.
func classifyName(name string) (Kind, Frequency) {
	base := name
	if i := strings.LastIndexAny(base, ".]"); i >= 0 && i+1 < len(base) {
		base = base[i+1:]
	}
	switch {
	case reIDName.MatchString(base):
		if strings.Contains(strings.ToLower(base), "user") {
			return KindUser, PerUser
		}
		if strings.Contains(strings.ToLower(base), "session") || strings.Contains(strings.ToLower(base), "conversation") || strings.Contains(strings.ToLower(base), "thread") {
			return KindID, PerSession
		}
		return KindID, PerCall
	case reDateName.MatchString(base):
		return KindDate, Unknown
	case reRandName.MatchString(base):
		return KindRandom, PerCall
	case reUserName.MatchString(base):
		return KindUser, PerUser
	}
	return KindVariable, Unknown
}

// nameEvidence is the evidence a name alone gives: it suggests a kind, or nothing.
func nameEvidence(k Kind) Evidence {
	if k == KindVariable {
		return EvidenceNone
	}
	return EvidenceName
}

var (
	reStrftime  = regexp.MustCompile(`strftime(?:_now)?\s*\(\s*(?:[^,()]*,\s*)?["']([^"']*)["']`)
	reClockCall = regexp.MustCompile(`\b(?:datetime\s*\.\s*(?:now|utcnow|today)|date\s*\.\s*today|time\s*\.\s*(?:time|time_ns|monotonic|localtime|gmtime|ctime)|(?:^|[^.\w])now|strftime_now|strftime|isoformat|utcnow|timestamp)\s*\(`)
	reDayCall   = regexp.MustCompile(`\b(?:date\s*\.\s*today|datetime\s*\.\s*today)\s*\(\s*\)\s*$`)
	reUUIDCall  = regexp.MustCompile(`\b(?:uuid\d?|uuid\.\w+|token_hex|token_urlsafe|getrandbits|ulid\w*|nanoid)\s*\(`)
	reRandCall  = regexp.MustCompile(`\brandom\s*\.\s*\w+\s*\(|\brandint\s*\(|\bsecrets\s*\.\s*\w+\s*\(|\bnp\.random`)
)

// classifyExpr classifies an expression that produces a value: a call to a clock, a random or
// id generator, or else a variable judged by its name. ok is false when the expression is
// plainly not dynamic (a literal).
func classifyExpr(expr string) (Kind, Frequency, bool) {
	e := strings.TrimSpace(expr)
	switch {
	case reUUIDCall.MatchString(e):
		return KindID, PerCall, true
	case reRandCall.MatchString(e):
		return KindRandom, PerCall, true
	}
	if format, _, ok := clockFormat(e); ok {
		return KindClock, strftimeFrequency(format), true
	}
	if reClockCall.MatchString(e) {
		return KindClock, PerCall, true
	}
	if e == "" || strings.HasPrefix(e, `"`) || strings.HasPrefix(e, `'`) || (e[0] >= '0' && e[0] <= '9') {
		return "", "", false
	}
	name := e
	if i := strings.IndexAny(name, "(|[ "); i > 0 {
		name = name[:i]
	}
	k, f := classifyName(name)
	return k, f, true
}

// clockFormat is the strftime format a clock expression prints its value in, when the
// expression says: strftime's own, isoformat()'s (its timespec, or the date alone for a
// date), str() of a date, ctime(). shown is the call to name in a message. ok is false for a
// clock whose printed form the expression does not show (time.time(), datetime.now() passed
// on as an object).
func clockFormat(expr string) (format, shown string, ok bool) {
	if m := reStrftime.FindStringSubmatch(expr); m != nil {
		call := "strftime"
		if strings.Contains(expr, "strftime_now") {
			call = "strftime_now"
		}
		return m[1], fmt.Sprintf("%s(%q)", call, m[1]), true
	}
	dateOnly := reDateObject.MatchString(expr)
	if m := reIsoformat.FindStringSubmatch(expr); m != nil {
		if dateOnly {
			return "%Y-%m-%d", "date isoformat()", true
		}
		// An aware time (datetime.now(tz=UTC), timezone.utc) prints its offset; kvcheck's
		// clock is UTC.
		zone := ""
		if reAware.MatchString(expr) {
			zone = "+00:00"
		}
		spec := ""
		if t := reTimespec.FindStringSubmatch(m[1]); t != nil {
			spec = t[1]
		}
		switch spec {
		case "hours":
			return "%Y-%m-%dT%H" + zone, "isoformat(timespec=\"hours\")", true
		case "minutes":
			return "%Y-%m-%dT%H:%M" + zone, "isoformat(timespec=\"minutes\")", true
		case "seconds":
			return "%Y-%m-%dT%H:%M:%S" + zone, "isoformat(timespec=\"seconds\")", true
		}
		return "%Y-%m-%dT%H:%M:%S.%f" + zone, "isoformat()", true
	}
	switch {
	case reCtime.MatchString(expr):
		return "%a %b %d %H:%M:%S %Y", "ctime()", true
	case reDayCall.MatchString(expr):
		return "%Y-%m-%d", "str(date.today())", true
	}
	return "", "", false
}

var (
	reIsoformat  = regexp.MustCompile(`\bisoformat\s*\(([^()]*)\)`)
	reTimespec   = regexp.MustCompile(`timespec\s*=\s*["'](\w+)["']`)
	reDateObject = regexp.MustCompile(`\b(?:date\s*\.\s*today|datetime\s*\.\s*today|date\s*\.\s*fromtimestamp)\s*\([^()]*\)|\.date\s*\(\s*\)`)
	reCtime      = regexp.MustCompile(`\b(?:ctime|asctime)\s*\(`)
	reAware      = regexp.MustCompile(`\btz\s*=|\btzinfo\s*=|timezone\.utc|\bUTC\b|ZoneInfo\s*\(|\.astimezone\s*\(`)
)

// clockWhy renders a clock expression's printed form under the clock pairs of the offline
// render and says which pair and which format decided how often it changes, for a finding's
// message ("" when the expression shows no format).
func clockWhy(expr string) string {
	format, shown, ok := clockFormat(expr)
	if !ok {
		return ""
	}
	base := strftime(renderClock, format)
	for _, st := range clockSteps {
		if other := strftime(renderClock.Add(st.d), format); other != base {
			return fmt.Sprintf("rendered offline: the finest clock pair whose renders differ is %s, through %s (%q against %q)", st.say, shown, base, other)
		}
	}
	return ""
}

// strftimeFrequency renders a strftime format under the clock pairs of the offline render:
// the first step whose two texts differ is how often the text changes (a format without a
// time of day changes daily, one with seconds every second).
func strftimeFrequency(format string) Frequency {
	base := strftime(renderClock, format)
	for _, st := range clockSteps {
		if strftime(renderClock.Add(st.d), format) != base {
			return st.freq
		}
	}
	return Unknown
}

// severity ranks a finding by the class it changes with: a block-zero breaker that changes
// per call or per user is an error, anything daily or of unknown frequency that early is a
// warning, late is information.
func severity(p Position, f Frequency) finding.Severity {
	switch p {
	case Breaker:
		if f.fast() {
			return finding.Error
		}
		return finding.Warning
	case Early:
		return finding.Warning
	case PositionUnknown:
		if f.fast() {
			return finding.Warning
		}
	}
	return finding.Info
}

// worstClass is the most often a value nothing settles could plausibly change: what its
// name suggests (a user's name per user, a session id per session, a date daily, a time per
// request), and per request for a name that suggests nothing.
func worstClass(f *Finding) Frequency {
	switch {
	case f.Frequency != Unknown && f.Frequency != "" && f.Frequency != Fixed:
		return f.Frequency
	case f.Kind == KindDate && reTimeName.MatchString(f.Expression):
		return PerCall
	case f.Kind == KindDate:
		return Daily
	case f.Kind == KindUser:
		return PerUser
	}
	return PerCall
}

var reTimeName = regexp.MustCompile(`(?i)time|timestamp|now|clock|\bts\b`)

// classWord says a change class in prose: "per request", "daily".
func classWord(f Frequency) string {
	switch f {
	case PerCall:
		return "per request"
	case PerSecond:
		return "every second"
	case PerMinute:
		return "every minute"
	case PerUser:
		return "per user"
	case PerSession:
		return "per session"
	case Fixed:
		return "never (fixed per deployment)"
	}
	return string(f)
}

// AssumeClasses are the classes --assume takes, and the frequency each stands for.
var AssumeClasses = map[string]Frequency{
	"fixed": Fixed, "daily": Daily, "per-request": PerCall, "per-user": PerUser, "per-session": PerSession,
	"hourly": Hourly, "per-minute": PerMinute, "per-second": PerSecond, "monthly": Monthly,
}

// textEvidence reads what the template's own words just before a value say it is: the
// start of a session, today's date, the current time, the user. ok is false when they say
// nothing.
func textEvidence(lead string) (k Kind, f Frequency, phrase string, ok bool) {
	tail := strings.ToLower(lead)
	if len(tail) > 80 {
		tail = tail[len(tail)-80:]
	}
	for _, r := range textRules {
		if m := r.re.FindString(tail); m != "" {
			return r.kind, r.freq, strings.TrimSpace(m), true
		}
	}
	return "", "", "", false
}

// textRules: each matches the end of the text before a value (markup such as ** or quotes
// allowed between), most specific first.
var textRules = []struct {
	re   *regexp.Regexp
	kind Kind
	freq Frequency
}{
	{regexp.MustCompile(`session (?:started|began|opened|start(?:ed)?|start time|start date)[^a-z0-9]*(?:on|at)?[\s*_"'(\[]*$`), KindDate, PerSession},
	{regexp.MustCompile(`(?:session id|conversation id|thread id|session\s*[:=])[\s:=*_"'(\[]*$`), KindID, PerSession},
	{regexp.MustCompile(`(?:request id|trace id|run id|call id|nonce)[\s:=*_"'(\[]*$`), KindID, PerCall},
	{regexp.MustCompile(`(?:current time|time now|local time|system time|timestamp|time\s*(?:is|:|=))[\s:=*_"'(\[]*$`), KindDate, PerCall},
	{regexp.MustCompile(`(?:today is|today's date|today date|current date|date today|date\s*(?:is|:|=))[\s:=*_"'(\[]*$`), KindDate, Daily},
	{regexp.MustCompile(`(?:(?:user name|username|user's name|name of the user|user|customer)\s*(?:is|:|=)|you are (?:talking|speaking) (?:to|with)|hello,?|dear)[\s*_"'(\[]*$`), KindUser, PerUser},
}

// fixFor suggests the remedy for a finding.
func fixFor(k Kind, f Frequency, p Position) string {
	if p == Late {
		return "none needed for sharing: it follows the shared text; keep new dynamic values after it"
	}
	switch k {
	case KindClock, KindDate:
		if f == PerCall || f == PerSecond || f == PerMinute || f == Hourly {
			return "move the time out of the shared prefix (to the last user message or a tool the model can call), or at least lower it to the day"
		}
		return "move the date after the shared text (the last user message or a tool call), or pin it per deployment (e.g. chat_template_kwargs date_string)"
	case KindID:
		return "keep the id out of the prompt (request metadata or headers); if the model needs it, put it in the last message"
	case KindUser:
		return "put per-user values in a later message, after the shared system prompt and tools"
	case KindRandom:
		return "remove the random value or move it to the end of the prompt"
	}
	return "if this value changes between requests, move it after the shared text"
}

// place classifies a token position: in block zero (allowing for the estimate's error) is a
// breaker; otherwise early unless the caller judged it late.
func place(tokensBefore, blockSize int, estimated, late bool) (Position, int) {
	block := tokensBefore / blockSize
	lo := tokensBefore
	if estimated {
		// The byte estimate is good to about a quarter either way; a value the estimate puts
		// just past block zero may well be in it.
		lo = tokensBefore * 3 / 4
	}
	switch {
	case lo < blockSize:
		return Breaker, block
	case late:
		return Late, block
	}
	return Early, block
}

// finish fills a finding's severity, code, message and fix from what it records. A finding
// whose change nothing shows becomes a question (audit/check), whatever its name suggests:
// its severity is that of the worst class it could plausibly have, so that a gate fails on
// it until the evidence or --assume settles it, and its message gives the verdict under the
// worst and the best class. One after the shared text is no question: late at worst, clean
// at best (audit/late, information).
func (f *Finding) finish(subject string) {
	f.Subject = subject
	if !f.Evidence.known() {
		worst := worstClass(f)
		f.Severity = severity(f.Position, worst)
		f.BestPosition = ""
		f.Code = "audit/check"
		name := f.Variable
		if name == "" {
			name = f.Expression
		}
		f.Assumption = fmt.Sprintf("%s if %s changes %s; clean if it is fixed per deployment", positionWord(f.Position), name, classWord(worst))
		f.Message = question(f, worst)
		f.Fix = fmt.Sprintf("settle it: audit the code that fills it with the template (their directory, or --code DIR), a request log (--requests), or --assume %s=fixed|daily|per-request|per-user; if it changes between requests, move it after the shared text", assumeName(f))
		if f.Position == Late {
			// After the shared text the answer changes nothing a gate or a person acts on:
			// late at worst, clean at best, no question to settle.
			f.Code = "audit/late"
			f.Fix = fixFor(f.Kind, worst, Late)
		}
		return
	}
	f.Severity = severity(f.Position, f.Frequency)
	f.BestPosition = f.Position
	f.Assumption = ""
	f.Code = "audit/" + string(f.Position)
	f.Message = describe(f.Expression, f.Kind, f.Frequency, f.Position, f.Block, f.TokensBefore, f.Estimated, f.Condition, f.Origin)
	if f.Render != "" {
		f.Message += "; " + f.Render
	}
	if f.Fix == "" {
		f.Fix = fixFor(f.Kind, f.Frequency, f.Position)
	}
}

// suggests says what a variable's name suggests, for the question of an audit/check finding.
func suggests(k Kind, name string) string {
	if k == KindUser && reDeploymentName.MatchString(name) {
		return "its name is a deployment's (an agent's, assistant's or product's), usually fixed per deployment, but its value is not in view, and a service that lets each user or tenant name their own sets it per user"
	}
	switch k {
	case KindDate, KindClock:
		return "its name suggests a date or time, but nothing in view fills it from a clock"
	case KindID:
		return "its name suggests an id, but nothing in view fills it from a request or a generator"
	case KindUser:
		return "its name suggests a per-user value, but nothing in view fills it from the request or the user"
	case KindRandom:
		return "its name suggests a random value, but nothing in view generates it"
	}
	return "nothing in view says whether it changes"
}

// reDeploymentName matches the names of what a deployment names once: its agent, assistant,
// bot, product or company.
var reDeploymentName = regexp.MustCompile(`(?i)(?:agent|assistant|bot|product|company|brand|app|service|persona)_?name|(?:^|[^a-z])(?:agent|assistant|bot)(?:[^a-z]|$)`)

// positionWord names a position as a verdict word.
func positionWord(p Position) string {
	if p == PositionUnknown {
		return "unknown (the prompt it fills is not among the inputs)"
	}
	return string(p)
}

// assumeName is the name --assume takes for a finding.
func assumeName(f *Finding) string {
	if f.Variable != "" {
		return f.Variable
	}
	if n := reDotted.FindString(f.Expression); n != "" {
		return n
	}
	return "NAME"
}

var reDotted = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`)

// question builds the message of a finding whose change is not shown: where it lands, what its
// name suggests, and the verdict under the worst and the best class.
func question(f *Finding, worst Frequency) string {
	approx := ""
	if f.Estimated {
		approx = "~"
	}
	var b strings.Builder
	b.WriteString(f.Expression)
	if f.Block >= 0 {
		fmt.Fprintf(&b, " lands at %stoken %d, block %d", approx, f.TokensBefore, f.Block)
	} else {
		b.WriteString(" lands where the prompt it fills is not among the inputs")
	}
	if f.Position == Late {
		fmt.Fprintf(&b, ": late whatever it is: it follows the shared text, so if it changes %s only what comes after it is lost, and fixed per deployment nothing is", classWord(worst))
		b.WriteString(questionTail(f))
		return b.String()
	}
	fmt.Fprintf(&b, ": nothing settles whether it changes between requests; %s. ", suggests(f.Kind, f.Expression))
	fmt.Fprintf(&b, "Worst case, if it changes %s: %s", classWord(worst), positionWord(f.Position))
	switch f.Position {
	case Breaker:
		b.WriteString(", no block is shared across the values")
	case Early:
		fmt.Fprintf(&b, ", only the %d blocks before it are shared across the values", f.Block)
	case Late:
		b.WriteString(", it follows the shared text, so little is lost")
	default:
		b.WriteString(", nothing after it is shared across the values")
	}
	b.WriteString("; best case, fixed per deployment: clean, nothing is lost")
	b.WriteString(questionTail(f))
	return b.String()
}

// questionTail is the end of an unsettled finding's message: where the value comes from, when it
// appears, what the render showed.
func questionTail(f *Finding) string {
	var b strings.Builder
	if f.Origin != "" {
		fmt.Fprintf(&b, "; value from %s", f.Origin)
	}
	if f.Condition != "" {
		fmt.Fprintf(&b, "; only when %s", f.Condition)
	}
	if f.Render != "" {
		fmt.Fprintf(&b, "; %s", f.Render)
	}
	return b.String()
}

// describe builds the message of a finding whose change is shown.
func describe(expr string, k Kind, f Frequency, p Position, block, before int, est bool, cond, origin string) string {
	approx := ""
	if est {
		approx = "~"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", expr, k)
	if f != Unknown {
		fmt.Fprintf(&b, ", changes %s", f)
	}
	b.WriteString(")")
	if block >= 0 {
		fmt.Fprintf(&b, " lands at %stoken %d, block %d: %s", approx, before, block, p)
		if p == Breaker && block > 0 {
			b.WriteString(" (block 0 is within the estimate's margin; either way nothing after the fixed header is shared)")
		}
	} else {
		b.WriteString(": position unknown, the prompt it fills is not among the inputs")
	}
	switch {
	case strings.HasPrefix(origin, "fills "):
		fmt.Fprintf(&b, "; %s", origin)
	case origin != "":
		fmt.Fprintf(&b, "; value from %s", origin)
	}
	if cond != "" {
		fmt.Fprintf(&b, "; only when %s", cond)
	}
	return b.String()
}

// estimateStatic estimates the tokens of static template text: special tokens (<|...|>, <s>,
// [INST]-style markers) count one each, other text one per BytesPerToken bytes.
func estimateStatic(s string) int {
	n := 0
	for len(s) > 0 {
		loc := reSpecial.FindStringIndex(s)
		if loc == nil {
			return n + EstimateTokens(len(s))
		}
		n += EstimateTokens(loc[0]) + 1
		s = s[loc[1]:]
	}
	return n
}

var reSpecial = regexp.MustCompile(`<\|[A-Za-z0-9_]+\|>|</?s>|\[/?[A-Z][A-Z_]+\]`)
