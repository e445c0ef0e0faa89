package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// want is the expected verdict of one file and, when it is not clean, its worst finding.
type want struct {
	verdict   Verdict
	line      int
	kind      Kind
	freq      Frequency
	block     int // approximate: the estimate may be off by one block
	sev       finding.Severity
	condition string // substring; "" means unconditional
	origin    string // substring
}

type got struct {
	Verdict   Verdict
	Line      int
	Kind      Kind
	Freq      Frequency
	Sev       finding.Severity
	Condition string
}

func check(t *testing.T, rep TemplateReport, file string, w want) {
	t.Helper()
	var tpl *Template
	for i := range rep.Templates {
		if filepath.Base(rep.Templates[i].File) == file {
			tpl = &rep.Templates[i]
		}
	}
	if tpl == nil {
		t.Fatalf("no verdict for %s in %+v", file, rep.Templates)
	}
	var worst *Finding
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.File != tpl.File {
			continue
		}
		// Findings shown to change come first, then the worse position, then severity.
		if worst == nil || f.Evidence.known() && !worst.Evidence.known() ||
			f.Evidence.known() == worst.Evidence.known() && (f.Position.rank() > worst.Position.rank() || f.Position == worst.Position && f.Severity > worst.Severity) {
			worst = f
		}
	}
	if w.verdict == VerdictClean {
		if tpl.Verdict != VerdictClean || worst != nil {
			t.Errorf("%s: verdict %s with finding %+v, want clean", file, tpl.Verdict, worst)
		}
		return
	}
	if worst == nil {
		t.Fatalf("%s: verdict %s and no finding, want %s", file, tpl.Verdict, w.verdict)
	}
	g := got{Verdict: tpl.Verdict, Line: worst.Line, Kind: worst.Kind, Freq: worst.Frequency, Sev: worst.Severity}
	wantG := got{Verdict: w.verdict, Line: w.line, Kind: w.kind, Freq: w.freq, Sev: w.sev}
	if diff := cmp.Diff(wantG, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\nfinding: %s", file, diff, worst.Message)
	}
	if d := worst.Block - w.block; d < -1 || d > 1 {
		t.Errorf("%s: block %d (token %d), want about %d", file, worst.Block, worst.TokensBefore, w.block)
	}
	if w.condition == "" && worst.Condition != "" || !strings.Contains(worst.Condition, w.condition) {
		t.Errorf("%s: condition %q, want %q", file, worst.Condition, w.condition)
	}
	if !strings.Contains(worst.Origin, w.origin) {
		t.Errorf("%s: origin %q, want it to contain %q", file, worst.Origin, w.origin)
	}
	if worst.Fix == "" || !worst.Estimated {
		t.Errorf("%s: fix %q, estimated %v: want a fix and an estimated position", file, worst.Fix, worst.Estimated)
	}
}

// TestTemplateFixtures covers every construct and classification with fixtures written for it.
func TestTemplateFixtures(t *testing.T) {
	const dir = "../../testdata/audit/templates"
	tests := []struct {
		path string // file or directory given to the audit
		file string // the file whose verdict is checked
		want want
	}{
		{"jinja/header_date.jinja", "header_date.jinja", want{VerdictBreaker, 6, KindClock, Daily, 0, finding.Warning, "", "line 3"}},
		{"jinja/per_second.jinja", "per_second.jinja", want{VerdictBreaker, 1, KindClock, PerSecond, 0, finding.Error, "", ""}},
		{"jinja/early_date.jinja", "early_date.jinja", want{VerdictEarly, 3, KindClock, Daily, 1, finding.Warning, "", "line 1"}},
		{"jinja/late_date.jinja", "late_date.jinja", want{VerdictLate, 4, KindClock, Daily, 4, finding.Info, "add_generation_prompt", ""}},
		{"jinja/conditional_tools.jinja", "conditional_tools.jinja", want{VerdictBreaker, 2, KindClock, PerMinute, 0, finding.Error, "tools", ""}},
		// Variables the caller passes, settled by the words before them: "Current date:" is
		// today's date (daily), "You are talking to" the user (per user). Both in block 0.
		{"jinja/kwarg_date.jinja", "kwarg_date.jinja", want{VerdictBreaker, 1, KindDate, Daily, 0, finding.Warning, "", "caller"}},
		{"jinja/user_name.jinja", "user_name.jinja", want{VerdictBreaker, 1, KindUser, PerUser, 0, finding.Error, "", "talking to"}},
		// session_id and user.name are questions; uuid4() is a generator call in block 0.
		{"jinja/ids.jinja", "ids.jinja", want{VerdictBreaker, 1, KindID, PerCall, 0, finding.Error, "", ""}},
		{"jinja/clean.jinja", "clean.jinja", want{verdict: VerdictClean}},
		{"tokenizer_config.json", "tokenizer_config.json", want{verdict: VerdictClean}},
		{"named_tokenizer_config.json", "named_tokenizer_config.json", want{VerdictBreaker, 1, KindClock, PerSecond, 0, finding.Error, "", ""}},
		{"py/fstring_prompt.py", "fstring_prompt.py", want{VerdictBreaker, 7, KindClock, PerCall, 0, finding.Error, "", ""}},
		// % {"user_name": user.name}: filled from the user object, so per user.
		{"py/percent_user.py", "percent_user.py", want{VerdictBreaker, 1, KindUser, PerUser, 0, finding.Error, "", "user.name"}},
		{"py/uuid_id.py", "uuid_id.py", want{VerdictBreaker, 3, KindID, PerCall, 0, finding.Error, "", "uuid.uuid4().hex"}},
		{"py/random_nonce.py", "random_nonce.py", want{VerdictBreaker, 4, KindRandom, PerCall, 0, finding.Error, "", "random.randint"}},
		// "..." + time.strftime("%H:%M") + "...": the concatenation is one prompt, the call in
		// it a per-minute clock ~9 tokens in.
		{"py/concat_clock.py", "concat_clock.py", want{VerdictBreaker, 5, KindClock, PerMinute, 0, finding.Error, "", ""}},
		// "Request {rid}...".format(rid=uuid.uuid4()): the literal the call fills is the prompt.
		{"py/literal_format.py", "literal_format.py", want{VerdictBreaker, 3, KindID, PerCall, 0, finding.Error, "", "uuid.uuid4()"}},
		{"unit", "prompts.py", want{VerdictBreaker, 3, KindClock, Daily, 0, finding.Warning, "", "agent.py:7"}},
		{"unit", "agent.py", want{VerdictBreaker, 7, KindClock, Daily, 0, finding.Warning, "", "fills {current_date} at prompts.py:3"}},
		{"lone", "agent.py", want{VerdictUnknown, 5, KindClock, PerCall, -1, finding.Warning, "", "system_time"}},
		// Text prompts name their variables and nothing fills them: each is a question whose
		// verdict is the worst case (a session id in block 0 that changes per session is a
		// breaker, an error), clean at best.
		{"text/session.txt", "session.txt", want{VerdictBreaker, 1, KindID, PerSession, 0, finding.Error, "", ""}},
		{"text/system.md", "system.md", want{VerdictLate, 8, KindUser, PerUser, 5, finding.Info, "", "customer:"}},
		// A variable nothing says changes (a topic, a feature flag): worst case it changes per
		// request, and in block 0 that is a breaker.
		{"text/topic.txt", "topic.txt", want{VerdictBreaker, 1, KindVariable, Unknown, 0, finding.Error, "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.path+"/"+tt.file, func(t *testing.T) {
			rep, err := AuditTemplates([]string{filepath.Join(dir, tt.path)}, 16)
			if err != nil {
				t.Fatalf("AuditTemplates: %v", err)
			}
			check(t, rep, tt.file, tt.want)
		})
	}
}

// TestConfigTemplates: YAML and JSON configurations that carry a chat template inline are
// audited like a template file, each finding on the file's own line; in a directory, one that
// carries none is passed over and one that is no YAML (a Helm chart's Go templates) is named
// as skipped, where either named on the command line is an error.
func TestConfigTemplates(t *testing.T) {
	const dir = "../../testdata/audit/templates/config"
	rep, err := AuditTemplates([]string{dir}, 16)
	if err != nil {
		t.Fatal(err)
	}
	// production-stack values: the template is the literal block under
	// chatTemplateConfigMap (line 9), its text from line 10, the date on its line 4, so the
	// file's line 13. Before the date, rendered without a system message: <s>,
	// <|start_header_id|>, "system" (6 bytes, 2 tokens), <|end_header_id|> and 52 bytes
	// ("\n\nCutting Knowledge Date: December 2023\nToday Date: ", 13 tokens): 18 tokens,
	// block 1, within the estimate's margin of block 0 (18 x 3/4 = 13 < 16): a breaker that
	// changes daily, a warning.
	check(t, rep, "prodstack_values.yaml", want{VerdictBreaker, 13, KindClock, Daily, 1, finding.Warning, "", ""})
	// The Deployment's inline --chat-template (a quoted string on line 25) opens with
	// <|im_start|> and "system\nSession " (15 bytes, 4 tokens): session_id at token 5, block
	// 0; nothing settles it, and as a session id its worst case is per session: a breaker,
	// an error, clean at best.
	check(t, rep, "configmap.yaml", want{VerdictBreaker, 25, KindID, PerSession, 0, finding.Error, "", ""})
	check(t, rep, "chat_template.json", want{verdict: VerdictClean})
	byName := map[string]Template{}
	for _, tp := range rep.Templates {
		byName[filepath.Base(tp.File)] = tp
	}
	if _, ok := byName["no_template.yaml"]; ok {
		t.Errorf("a configuration without a chat template got a verdict")
	}
	if got := byName["configmap.yaml"].Embedded; !slices.Equal(got, []string{"document 1 data.chat_template.jinja (line 7)", "document 2 spec.template.spec.containers[0].args[2] (line 25)"}) {
		t.Errorf("configmap.yaml embedded = %q", got)
	}
	for _, f := range rep.Findings {
		if filepath.Base(f.File) == "configmap.yaml" && !strings.HasPrefix(f.Expression, "document 2 spec.template.spec.containers[0].args[2]: ") {
			t.Errorf("finding %q does not name the template it is in", f.Expression)
		}
		if filepath.Base(f.File) == "prodstack_values.yaml" && strings.Contains(f.Expression, "modelSpec") {
			t.Errorf("the file's only template is named in its finding: %q", f.Expression)
		}
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], filepath.Join("chart", "templates", "configmap.yaml")+": not readable as YAML or JSON") {
		t.Errorf("skipped = %q, want the chart's Go template", rep.Skipped)
	}
	for _, tt := range []struct{ path, wantErr string }{
		{"no_template.yaml", "no chat template in it"},
		{"chart/templates/configmap.yaml", "not readable as YAML or JSON"},
	} {
		if _, err := AuditTemplates([]string{filepath.Join(dir, tt.path)}, 16); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.path, err, tt.wantErr)
		}
	}
}

// TestTemplateCorpus checks the real templates against the verdict reached by reading them.
// The directory is audited as one unit: the LangGraph prompt's {system_time} is filled in the
// graph module with datetime.now(tz=UTC).isoformat() on every model call.
func TestTemplateCorpus(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	rep, err := AuditTemplates([]string{filepath.Join(corpus, "templates")}, 16)
	if err != nil {
		t.Fatalf("AuditTemplates: %v", err)
	}
	tests := []struct {
		file string
		want want
	}{
		// "You are a helpful AI assistant.\n\nSystem time: {system_time}": ~12 tokens in, a
		// microsecond timestamp on every call.
		{"langgraph-react-agent_prompts.py", want{VerdictBreaker, 5, KindClock, PerCall, 0, finding.Error, "", "graph.py:41"}},
		{"langgraph-react-agent_graph.py", want{VerdictBreaker, 41, KindClock, PerCall, 0, finding.Error, "", "fills {system_time}"}},
		// Meta's generator: "Cutting Knowledge Date: December 2023\nToday Date: {{ today }}",
		// today = datetime.now().strftime("%d %B %Y"): ~13 tokens in, daily.
		{"meta-llama-models_llama3_system_prompts.py", want{VerdictBreaker, 26, KindClock, Daily, 0, finding.Warning, "", `strftime("%d %B %Y")`}},
		// "Today Date: " + date_string after the header and the knowledge date: ~token 18 in
		// the real Llama 3 tokenizer (block 1), before the system prompt and every message;
		// every request of a day shares only the fixed header.
		{"vllm-examples_tool_chat_template_llama3.1_json.jinja", want{VerdictBreaker, 42, KindClock, Daily, 1, finding.Warning, "", "line 11"}},
		// "The current date is " + today inside the default system prompt, ~50 tokens in and
		// before most of it; only when the request brings no system message.
		{"vllm-examples_tool_chat_template_mistral3.jinja", want{VerdictEarly, 28, KindClock, Daily, 3, finding.Warning, "messages[0]['role'] == 'system'", "line 1"}},
		{"vllm-examples_template_chatml.jinja", want{verdict: VerdictClean}},
		// Tools and messages are the request's own; the template adds nothing that changes.
		{"vllm-examples_tool_chat_template_hermes.jinja", want{verdict: VerdictClean}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) { check(t, rep, tt.file, tt.want) })
	}
	if len(rep.Templates) != len(tests) {
		t.Errorf("%d templates audited, want %d", len(rep.Templates), len(tests))
	}
}

// TestTemplateEvidence: a verdict follows what is shown to change, not what a name suggests.
// Each case is a reduction of a public prompt or the shape of a reported misjudgement.
func TestTemplateEvidence(t *testing.T) {
	const dir = "../../testdata/audit/templates/evidence"
	tests := []struct {
		name, path, file string
		verdict          Verdict
		// the finding on line
		line int
		code string
		kind Kind
		freq Frequency
		ev   Evidence
		sev  finding.Severity
		// message holds this
		message string
	}{
		// Reduced from the agent template of Iormungand21/sindri ("You are {agent_name}, a
		// specialized agent for Sindri."): nothing in view settles the agent's name at token
		// 2, so a question whose worst case (its name suggests per user) is a breaker, and
		// whose best (fixed per deployment) is clean.
		{"agent name", "agent_name.txt", "agent_name.txt", VerdictBreaker, 1, "audit/check", KindUser, PerUser, EvidenceName, finding.Error, "best case, fixed per deployment: clean"},
		// Config-like variables at the top, and the only value shown to change (a date from
		// datetime.now() in the module that formats the prompt) after the static bulk: late
		// at best, the variables on top making it a breaker at worst.
		{"late date under names", "late_unit", "prompts.py", VerdictBreaker, 11, "audit/late", KindClock, Daily, EvidenceCode, finding.Info, "agent.py:13"},
		{"late date, its filler", "late_unit", "agent.py", VerdictLate, 13, "audit/late", KindClock, Daily, EvidenceCode, finding.Info, "fills {today}"},
		// Reduced from xiahouzuoxin/chatgpt_cli prompts.py with the date hoisted into a
		// module constant: CURRENT_DATE = datetime.now().strftime('%Y-%m-%d') is daily from
		// its format, at the end of a short prompt.
		{"module constant date", "module_date.py", "module_date.py", VerdictLate, 8, "audit/late", KindClock, Daily, EvidenceCode, finding.Info, "module constant"},
		// A module constant with seconds, passed on by .format(started=STARTED_AT) into the
		// first block: per second, an error.
		{"module constant time", "module_time.py", "module_time.py", VerdictBreaker, 5, "audit/breaker", KindClock, PerSecond, EvidenceCode, finding.Error, "STARTED_AT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := AuditTemplates([]string{filepath.Join(dir, tt.path)}, 16)
			if err != nil {
				t.Fatal(err)
			}
			var verdict Verdict
			for _, tpl := range rep.Templates {
				if filepath.Base(tpl.File) == tt.file {
					verdict = tpl.Verdict
				}
			}
			if verdict != tt.verdict {
				t.Errorf("verdict %q, want %q", verdict, tt.verdict)
			}
			var f *Finding
			for i := range rep.Findings {
				if filepath.Base(rep.Findings[i].File) == tt.file && rep.Findings[i].Line == tt.line {
					f = &rep.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no finding at %s:%d in %+v", tt.file, tt.line, rep.Findings)
			}
			type got struct {
				Code string
				Kind Kind
				Freq Frequency
				Ev   Evidence
				Sev  finding.Severity
			}
			if diff := cmp.Diff(got{tt.code, tt.kind, tt.freq, tt.ev, tt.sev}, got{f.Code, f.Kind, f.Frequency, f.Evidence, f.Severity}); diff != "" {
				t.Errorf("(-want +got):\n%s\nmessage: %s", diff, f.Message)
			}
			if !strings.Contains(f.Message+" "+f.Origin, tt.message) {
				t.Errorf("message %q, want it to hold %q", f.Message, tt.message)
			}
		})
	}
}

func TestTimeFrequency(t *testing.T) {
	tests := map[string]Frequency{
		"time: 2026-11-30T10:00:16.414002+00:00": PerCall,
		"at 10:00:16 today":                      PerSecond,
		"2026-11-30 10:00":                       PerMinute,
		"Today Date: 30 Nov 2026":                Daily,
	}
	for ex, want := range tests {
		if got := timeFrequency(ex); got != want {
			t.Errorf("timeFrequency(%q) = %s, want %s", ex, got, want)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"missing", filepath.Join(dir, "nope.jinja"), "no such file"},
		{"unknown type", write("x.toml", "a = 1"), "unknown type"},
		{"configuration without a template", write("x.yaml", "a: b"), "no chat template in it"},
		{"bad json", write("bad_tokenizer_config.json", "{"), "invalid JSON"},
		{"no template", write("none_tokenizer_config.json", `{"bos_token":"<s>"}`), "no chat_template"},
		{"wrong shape", write("num_tokenizer_config.json", `{"chat_template": 5}`), "neither a string nor a list"},
		{"empty dir", empty, "holds no template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AuditTemplates([]string{tt.path}, 16)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestStrftimeFrequency(t *testing.T) {
	tests := map[string]Frequency{
		"%d %b %Y":         Daily,
		"%Y-%m-%d":         Daily,
		"%H:%M:%S":         PerSecond,
		"%Y-%m-%dT%H:%M":   PerMinute,
		"%Y-%m-%d %H:00":   Hourly,
		"%B %Y":            Monthly,
		"%Y":               Yearly,
		"%H:%M:%S.%f":      PerCall,
		"no fields at all": Unknown,
		"%-d %B":           Daily,
	}
	for format, want := range tests {
		t.Run(format, func(t *testing.T) {
			if got := strftimeFrequency(format); got != want {
				t.Errorf("strftimeFrequency(%q) = %s, want %s", format, got, want)
			}
		})
	}
}

// TestClockFrequency: a Python clock's frequency is that of the text it prints, rendered under
// the clock pairs (base 2024-07-26 10:00:00.250 UTC); the message names the pair and the
// format that decided. A date printed by isoformat() is a day (2024-07-26, the same 3 hours
// later, 2024-07-29 three days later): daily, where a datetime's isoformat() prints
// microseconds and differs 1 ms later.
func TestClockFrequency(t *testing.T) {
	tests := []struct {
		expr  string
		want  Frequency
		shown string // "" when the expression shows no printed form
	}{
		{`datetime.date.today().strftime("%B %d, %Y")`, Daily, `strftime("%B %d, %Y")`},
		{`datetime.now(tz=UTC).isoformat()`, PerCall, `isoformat()`},
		{`date.today().isoformat()`, Daily, `date isoformat()`},
		{`datetime.now().date().isoformat()`, Daily, `date isoformat()`},
		{`datetime.now().isoformat(timespec="seconds")`, PerSecond, `isoformat(timespec="seconds")`},
		{`datetime.now().isoformat(timespec='minutes')`, PerMinute, `isoformat(timespec="minutes")`},
		{`time.ctime()`, PerSecond, `ctime()`},
		{`date.today()`, Daily, `str(date.today())`},
		{`time.time()`, PerCall, ``},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			k, f, ok := classifyExpr(tt.expr)
			if !ok || k != KindClock || f != tt.want {
				t.Errorf("classifyExpr = %s, %s, %v; want clock, %s", k, f, ok, tt.want)
			}
			why := clockWhy(tt.expr)
			if tt.shown == "" {
				if why != "" {
					t.Errorf("clockWhy = %q, want none", why)
				}
				return
			}
			if !strings.Contains(why, "through "+tt.shown) {
				t.Errorf("clockWhy = %q, want it to name %s", why, tt.shown)
			}
		})
	}
	// The aware time prints its offset, as Python does.
	if why := clockWhy(`datetime.now(tz=UTC).isoformat()`); !strings.Contains(why, `"2024-07-26T10:00:00.250000+00:00" against "2024-07-26T10:00:00.251000+00:00"`) {
		t.Errorf("clockWhy = %q", why)
	}
}

func TestPlace(t *testing.T) {
	tests := []struct {
		before    int
		estimated bool
		late      bool
		want      Position
		block     int
	}{
		{0, true, false, Breaker, 0},
		{15, false, false, Breaker, 0},
		{16, false, false, Early, 1},
		{19, true, false, Breaker, 1}, // the estimate's margin reaches block 0
		{40, true, false, Early, 2},
		{40, true, true, Late, 2},
		{5, true, true, Breaker, 0}, // late but still in block 0
	}
	for _, tt := range tests {
		p, b := place(tt.before, 16, tt.estimated, tt.late)
		if p != tt.want || b != tt.block {
			t.Errorf("place(%d, est=%v, late=%v) = %s, %d; want %s, %d", tt.before, tt.estimated, tt.late, p, b, tt.want, tt.block)
		}
	}
}

// TestCorroborate: LangGraph's react-agent prompt ("System time: {system_time}") is settled by
// its own words: a system time changes per request, and at token ~12 that is a breaker. A
// prompt whose words say nothing ("Stamp {stamp}") stays a question until a request log
// shows requests differing on a timestamp right after "Stamp ": then it is a breaker, from
// the log, per call since the logged values carry microseconds.
func TestCorroborate(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	rep, err := AuditTemplates([]string{filepath.Join(corpus, "templates", "langgraph-react-agent_prompts.py")}, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Evidence != EvidenceText || rep.Findings[0].Frequency != PerCall || rep.Templates[0].Verdict != VerdictBreaker {
		t.Fatalf("langgraph prompt alone: %+v %+v, want one finding settled by its text, per call, verdict breaker", rep.Templates, rep.Findings)
	}
	stamp := filepath.Join(t.TempDir(), "stamp.txt")
	if err := os.WriteFile(stamp, []byte("You are a helpful AI assistant.\n\nStamp {stamp}\n\nUse the tools before you answer."), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err = AuditTemplates([]string{stamp}, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Code != "audit/check" {
		t.Fatalf("stamp alone: %+v, want one audit/check finding", rep.Findings)
	}
	// A log that differs only in plain text says nothing about the variable.
	text := Summary{Sites: []Site{{Message: 0, Role: "system", Cause: "text", Count: 35, Example: "Stamp later"}}}
	plain := TemplateReport{Templates: slices.Clone(rep.Templates), Findings: slices.Clone(rep.Findings)}
	Corroborate(&plain, text, "text.jsonl")
	if plain.Findings[0].Evidence.known() {
		t.Errorf("a text divergence settled it: %+v", plain.Findings[0])
	}
	sum := Summary{Sites: []Site{{Message: 0, Role: "system", Cause: "date/time", Count: 35, Example: "Stamp 2026-11-30T10:00:16.414002+00:00\n\nUse the "}}}
	Corroborate(&rep, sum, "agent_timestamp.jsonl")
	got := rep.Findings[0]
	if got.Evidence != EvidenceLog || got.Code != "audit/breaker" || got.Severity != finding.Error || got.Kind != KindDate || got.Frequency != PerCall || rep.Templates[0].Verdict != VerdictBreaker || rep.Templates[0].Best != VerdictBreaker {
		t.Errorf("with the log: evidence %s code %s severity %s kind %s frequency %s verdict %s/%s; want log, audit/breaker, error, date, per-call, breaker/breaker",
			got.Evidence, got.Code, got.Severity, got.Kind, got.Frequency, rep.Templates[0].Verdict, rep.Templates[0].Best)
	}
	if !strings.Contains(got.Origin, "35 requests differ there") {
		t.Errorf("origin %q, want the log's count", got.Origin)
	}
	if got.Fix != fixFor(KindDate, PerCall, Breaker) {
		t.Errorf("fix %q, want the remedy for a per-call time in block 0", got.Fix)
	}
}

// TestReadTemplateBounded: a template path that is a pipe (a process substitution) has no size
// to check beforehand; what is read is bounded, and more than the bound is an error naming it,
// not a read without end.
func TestReadTemplateBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "tpl.jinja")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer func() { _ = w.Close() }()
		chunk := bytes.Repeat([]byte("{{ x }}"), 1<<16)
		for n := 0; n <= maxTemplateBytes; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the reader stopped at the bound
			}
		}
	}()
	_, err := readTemplate(fifo)
	if err == nil || !strings.Contains(err.Error(), "too large for a template") {
		t.Fatalf("read %d+ bytes from a pipe: error %v, want one naming the limit", maxTemplateBytes, err)
	}
}

// TestTemplateBOM: a tokenizer_config.json saved with a UTF-8 byte order mark is the same
// template, not "invalid JSON", and a Jinja file's findings land at the same lines.
func TestTemplateBOM(t *testing.T) {
	dir := t.TempDir()
	tpl := "{{ bos_token }}Today Date: {{ strftime_now('%d %b %Y') }}\n{% for m in messages %}{{ m['content'] }}{% endfor %}"
	cfg, err := json.Marshal(map[string]string{"chat_template": tpl})
	if err != nil {
		t.Fatal(err)
	}
	summary := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := AuditTemplates([]string{p}, 16)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out []string
		for _, f := range rep.Findings {
			out = append(out, fmt.Sprintf("%d %s %s", f.Line, f.Code, f.Position))
		}
		return strings.Join(out, "; ")
	}
	for _, tt := range []struct{ name, plain, bom string }{
		{"tokenizer_config.json", "a_tokenizer_config.json", "b_tokenizer_config.json"},
		{"template.jinja", "a.jinja", "b.jinja"},
	} {
		body := cfg
		if strings.HasSuffix(tt.name, ".jinja") {
			body = []byte(tpl)
		}
		want := summary(tt.plain, body)
		if want == "" {
			t.Fatalf("%s: no finding without a byte order mark", tt.name)
		}
		if got := summary(tt.bom, append([]byte("\ufeff"), body...)); got != want {
			t.Errorf("%s with a byte order mark: %q, want %q", tt.name, got, want)
		}
	}
}

// TestTemplateDirectoryLinks: a template directory named through a symbolic link, or holding
// one, is walked as every command walks (files.Walker): before, a directory named through a
// link was "no template" (filepath.WalkDir does not follow its root), and a link to a
// directory inside was passed over without a word. A loop is not followed and is said.
func TestTemplateDirectoryLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	tpl := "{% for m in messages %}{{ m.content }}{% endfor %}"
	if err := os.WriteFile(filepath.Join(real, "nested", "chat.jinja"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		filepath.Join(dir, "named"): real,  // the directory named is a link
		filepath.Join(other, "in"):  real,  // a link to a directory inside the one named
		filepath.Join(other, "up"):  other, // a loop
	} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, want string
		loop       bool
	}{
		{filepath.Join(dir, "named"), filepath.Join(dir, "named", "nested", "chat.jinja"), false},
		{other, filepath.Join(other, "in", "nested", "chat.jinja"), true},
	} {
		rep, err := AuditTemplatesWith(context.Background(), []string{tc.path}, TemplateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		var got []string
		for _, tm := range rep.Templates {
			got = append(got, tm.File)
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: templates %q, want %q", tc.path, got, tc.want)
		}
		if loop := strings.Contains(strings.Join(rep.Skipped, "\n"), "loop"); loop != tc.loop {
			t.Errorf("%s: skipped %q; want a loop said: %v", tc.path, rep.Skipped, tc.loop)
		}
	}
}
