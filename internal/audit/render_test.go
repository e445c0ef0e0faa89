package audit

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestIssueCases are the four templates that came back "check" where a careful reader gives
// a verdict (issue 25), rewritten for the test. Block size 16, 4 bytes a token.
func TestIssueCases(t *testing.T) {
	const dir = "../../testdata/audit/templates/cases"
	type result struct {
		Verdict, Best Verdict
		Code          string
		Block         int
		Freq          Frequency
		Ev            Evidence
		Sev           finding.Severity
	}
	tests := []struct {
		name, path, file string
		line             int
		assume           map[string]Frequency
		want             result
		say              []string // in the finding's message
	}{
		// "Your current session started on **{{ current_date }}**." after ~177 tokens of
		// fixed instructions (block 177/16 = 11), before the system message and the
		// conversation: the words say it is the session's start, so it changes per session
		// and only the 11 blocks before it are shared across sessions: early, a warning.
		{"session start", "session_start.jinja", "session_start.jinja", 2, nil,
			result{VerdictEarly, VerdictEarly, "audit/early", 11, PerSession, EvidenceText, finding.Warning},
			[]string{`the text before it says "session started on **"`}},
		// suggest_disable, the only unknown, is printed after the conversation (~406 tokens
		// in, block 25): whatever it is, every block before it is shared, so the worst case
		// is late (info, nothing for a gate), and fixed per deployment it is clean: no
		// question to settle (audit/late, not audit/check).
		{"late unknown", "late_flag.jinja", "late_flag.jinja", 7, nil,
			result{VerdictLate, VerdictClean, "audit/late", 25, Unknown, EvidenceNone, finding.Info},
			[]string{"late whatever it is"}},
		// "- Current date: {{date}}" at the end of a module's prompt (~290 tokens, block 18,
		// more static text before it than after), filled through a local variable by
		// date.today().strftime("%B %d, %Y"): no time of day in the format, so daily ("July
		// 26, 2024" the same 3 hours later, "July 29, 2024" 3 days later); after the shared
		// text, so late. The message names the clock pair and the format that decided.
		{"late daily date", "doc_assistant.py", "doc_assistant.py", 23, nil,
			result{VerdictLate, VerdictLate, "audit/late", 18, Daily, EvidenceCode, finding.Info},
			[]string{`3 days apart, through strftime("%B %d, %Y") ("July 26, 2024" against "July 29, 2024")`}},
		// LangGraph: {agent_name} at token 0 is filled from Configuration.agent_name, a
		// field whose default is the literal "Volt": fixed per deployment, nothing lost.
		// The system time (datetime.now().isoformat(), per call) lands at ~token 223, block
		// 13, with more instructions after it than before: early, a warning.
		{"langgraph", "langgraph", "prompts.py", 14, nil,
			result{VerdictEarly, VerdictEarly, "audit/early", 13, PerCall, EvidenceCode, finding.Warning},
			[]string{"1 ms apart, through isoformat()"}},
		// The same without the configuration module: nothing settles agent_name, whose name
		// suggests a per-user value. Worst case it changes per user, and at token 0 that is
		// a breaker (an error for a gate); best case it is fixed and the verdict is the
		// date's, early.
		// The message says where the value comes from, though not what it is.
		{"langgraph unsettled", "langgraph_noconfig", "prompts.py", 3, nil,
			result{VerdictBreaker, VerdictEarly, "audit/check", 0, PerUser, EvidenceName, finding.Error},
			[]string{"graph.py:12 configuration.agent_name, whose value is not among the inputs", "usually fixed per deployment"}},
		// --assume agent_name=fixed settles it: the date's early verdict is both.
		{"langgraph assumed", "langgraph_noconfig", "prompts.py", 14, map[string]Frequency{"agent_name": Fixed},
			result{VerdictEarly, VerdictEarly, "audit/early", 13, PerCall, EvidenceCode, finding.Warning}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := AuditTemplatesWith(t.Context(), []string{filepath.Join(dir, tt.path)}, TemplateOptions{BlockSize: 16, Assume: tt.assume})
			if err != nil {
				t.Fatal(err)
			}
			var tpl *Template
			for i := range rep.Templates {
				if filepath.Base(rep.Templates[i].File) == tt.file {
					tpl = &rep.Templates[i]
				}
			}
			var f *Finding
			for i := range rep.Findings {
				if filepath.Base(rep.Findings[i].File) == tt.file && rep.Findings[i].Line == tt.line {
					f = &rep.Findings[i]
				}
			}
			if tpl == nil || f == nil {
				t.Fatalf("no verdict or no finding at %s:%d: %+v %+v", tt.file, tt.line, rep.Templates, rep.Findings)
			}
			got := result{tpl.Verdict, tpl.Best, f.Code, f.Block, f.Frequency, f.Evidence, f.Severity}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nmessage: %s", diff, f.Message)
			}
			for _, w := range tt.say {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
			if tt.want.Verdict != tt.want.Best && len(tpl.Assumptions) == 0 {
				t.Errorf("verdicts %s and %s, but no assumption named", tpl.Verdict, tpl.Best)
			}
			// The template's assumption names its verdict under each case: the dated header
			// stays early when agent_name is fixed, so "early if it is fixed", not "clean".
			for _, a := range tpl.Assumptions {
				if want := fmt.Sprintf("%s if it is fixed per deployment", tt.want.Best); tt.want.Code == "audit/check" && !strings.HasSuffix(a, want) {
					t.Errorf("assumption %q does not end with the best case %q", a, want)
				}
			}
		})
	}
}

// agreeTemplates are the chat templates whose renders are compared with the static scanner:
// the corpus's (its template files and the templates its configurations carry) and kvcheck's
// fixtures, each as (name, source).
func agreeTemplates(t *testing.T, corpus string) [][2]string {
	var out [][2]string
	files := globAll(filepath.Join(corpus, "templates", "*.jinja"), "../../testdata/audit/templates/jinja/*.jinja",
		"../../testdata/audit/templates/cases/*.jinja", "../../testdata/audit/templates/public/*.jinja")
	for _, f := range files {
		src, err := readTemplate(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{f, src})
	}
	configs, _ := filepath.Glob("../../testdata/audit/templates/config/*.yaml")
	_ = filepath.WalkDir(filepath.Join(corpus, "configs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && formatOf(path) == "config" {
			configs = append(configs, path)
		}
		return nil
	})
	embedded := 0
	for _, f := range configs {
		src, err := readTemplate(f)
		if err != nil {
			t.Fatal(err)
		}
		named, err := configTemplates(f, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range named {
			out = append(out, [2]string{f + " " + n.name, n.src})
			if strings.HasPrefix(f, corpus) {
				embedded++
			}
		}
	}
	if embedded == 0 {
		t.Errorf("no chat template in the corpus's configurations (production-stack's chatTemplateConfigMap)")
	}
	return out
}

// TestRenderAgreesWithScanner: the offline render and the static scanner put each clock and
// each variable of a chat template at the same place: the same position class and the same
// block or the next (the scanner counts the shortest branch, the render a real
// conversation), on the corpus's chat templates (files and those its configurations carry)
// and kvcheck's fixtures. A variable the render finds where a clock is (Llama 3.1's
// date_string, which overrides strftime_now) is that clock's. Every corpus template gets a
// verdict.
func TestRenderAgreesWithScanner(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	clocks, vars := 0, 0
	for _, tpl := range agreeTemplates(t, corpus) {
		name, src := filepath.Base(tpl[0]), tpl[1]
		static := scanJinja(tpl[0], src, 16)
		rr := renderChatTemplate(t.Context(), src, freeVariables(src), 16, nil)
		if rr.Err != nil {
			t.Errorf("%s: not rendered: %v", name, rr.Err)
			continue
		}
		elements := rr.elements(16, false)
		placed := make([]bool, len(static))
		for _, e := range elements {
			var s *Finding
			v := strings.TrimPrefix(strings.TrimPrefix(e.pair, "variable "), "call ")
			for i := range static {
				switch {
				case e.pair == "clock" && static[i].Kind == KindClock && containsAny(static[i].Expression, e.formats):
				case e.pair != "clock" && reIdent.FindString(static[i].Expression) == v:
				default:
					continue
				}
				s, placed[i] = &static[i], true
			}
			if s == nil && e.pair != "clock" && slices.ContainsFunc(elements, func(o renderElement) bool {
				return o.pair == "clock" && absInt(o.worst.Offset-e.worst.Offset) <= 16
			}) {
				continue // the clock's override
			}
			if s == nil {
				// The scanner leaves a variable whose name says nothing to the render (a
				// feature flag after the conversation); a clock it must find.
				if e.pair == "clock" {
					t.Errorf("%s: the render finds a clock (%v at byte %d) the scanner does not", name, e.formats, e.worst.Offset)
				}
				continue
			}
			if e.pair == "clock" {
				clocks++
			} else {
				vars++
			}
			if s.Position != e.pos || absInt(s.Block-e.worst.Block) > 1 {
				t.Errorf("%s: %s: scanner %s at block %d (~token %d), render %s at block %d (~token %d, %s)", name, e.pair,
					s.Position, s.Block, s.TokensBefore, e.pos, e.worst.Block, e.worst.TokensBefore, e.worst.Variant)
			}
		}
		for i, f := range static {
			if !placed[i] && f.Position != PositionUnknown {
				t.Errorf("%s: the scanner's %s at block %d is not where any render differs", name, f.Expression, f.Block)
			}
		}
	}
	t.Logf("compared %d clocks and %d variables", clocks, vars)
	// Llama 3.1's and Mistral 3's clocks in the corpus, and the fixtures' clocks and variables.
	if clocks < 6 || vars < 4 {
		t.Errorf("compared %d clocks and %d variables, want the corpus's two clocks and the fixtures'", clocks, vars)
	}
	rep, err := AuditTemplates([]string{filepath.Join(corpus, "templates"), filepath.Join(corpus, "configs")}, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range rep.Templates {
		if tp.Verdict == "" || tp.Best == "" {
			t.Errorf("%s: no verdict", tp.File)
		}
	}
}

// TestPromptRenderAgreesWithScanner: each placeholder of a prompt string (Python modules and
// text prompts, the corpus's and kvcheck's fixtures) is where Python's own rendering of that
// prompt first differs between two values of it: str.format for {name}, jinja2 for {{ name }},
// % for %(name)s, string.Template for $name, the other placeholders empty. The scanner counts
// the static text between placeholders piece by piece, the render the whole prefix, so the
// two may differ by a token or two: the same position class and block, or the next block.
func TestPromptRenderAgreesWithScanner(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import jinja2").CombinedOutput(); err != nil {
		t.Fatalf("the reference needs Debian's python3-jinja2 (scripts/install-deps.sh installs it): %v: %s", err, out)
	}
	var prompts []pyPrompt
	files := globAll(filepath.Join(corpus, "templates", "*.py"), filepath.Join(corpus, "configs", "*", "*.py"),
		"../../testdata/audit/templates/*/*.py", "../../testdata/audit/templates/*/*/*.py", "../../testdata/audit/templates/text/*")
	for _, f := range files {
		src, err := readTemplate(f)
		if err != nil {
			t.Fatal(err)
		}
		if formatOf(f) == "text" {
			prompts = append(prompts, pyPrompt{file: f, line: 1, text: src, holds: placeholders(src, 1, false)})
			continue
		}
		p, _ := pyScan(f, src)
		prompts = append(prompts, p...)
	}
	type job struct {
		ID     string   `json:"id"`
		Text   string   `json:"text"`
		Style  string   `json:"style"`
		Target string   `json:"target"`
		Names  []string `json:"names"`
		File   string   `json:"file"`
	}
	var jobs []job
	holds := map[string]pyHold{}
	for i, p := range prompts {
		var names []string
		style := ""
		for _, h := range p.holds {
			if h.name == "" {
				style = "mixed" // an f-string expression: Python evaluates it, not a value passed
				break
			}
			st := placeholderStyle(h.expr)
			if style != "" && st != style {
				style = "mixed"
				break
			}
			style = st
			names = append(names, h.name)
		}
		if style == "mixed" || style == "" {
			continue
		}
		for k, h := range p.holds {
			if h.input {
				continue
			}
			id := fmt.Sprintf("%d/%d", i, k)
			holds[id] = h
			jobs = append(jobs, job{ID: id, Text: p.text, Style: style, Target: h.name, Names: names, File: p.file})
		}
	}
	b, _ := json.Marshal(jobs)
	in := filepath.Join(t.TempDir(), "prompts.json")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/render/prompt_render.py", in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("prompt_render.py: %v", err)
	}
	var ref map[string]struct {
		Prefix *string `json:"prefix"`
		Error  string  `json:"error"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	compared, corpusCompared := 0, 0
	for _, j := range jobs {
		r, h := ref[j.ID], holds[j.ID]
		if r.Prefix == nil {
			t.Logf("%s: %s: not rendered by Python (%s)", j.File, j.Target, r.Error)
			continue
		}
		compared++
		if strings.HasPrefix(j.File, corpus) {
			corpusCompared++
		}
		rendered := estimateStatic(*r.Prefix)
		sp, sb := place(h.before, 16, true, false)
		rp, rb := place(rendered, 16, true, false)
		if sp != rp || absInt(sb-rb) > 1 {
			t.Errorf("%s line %d: scanner %s at block %d (~token %d), Python's render %s at block %d (~token %d: %q)",
				j.Target, h.line, sp, sb, h.before, rp, rb, rendered, clip(*r.Prefix, 60))
		}
	}
	t.Logf("compared %d placeholders, %d of them the corpus's", compared, corpusCompared)
	// The corpus's LangGraph {system_time} and Llama's {{ today }}, and the fixtures'.
	if corpusCompared < 2 || compared < 10 {
		t.Errorf("compared %d placeholders, %d of them the corpus's; want the corpus's two and the fixtures'", compared, corpusCompared)
	}
}

// globAll lists the files the patterns match, pattern by pattern.
func globAll(patterns ...string) []string {
	var out []string
	for _, g := range patterns {
		m, _ := filepath.Glob(g)
		out = append(out, m...)
	}
	return out
}

// placeholderStyle names how a placeholder is filled, from how the scanner wrote it: {name}
// by str.format, %(name)s by %, $name by string.Template, a bare expression (from {{ }}) by
// Jinja.
func placeholderStyle(expr string) string {
	switch {
	case strings.HasPrefix(expr, "{"):
		return "format"
	case strings.HasPrefix(expr, "%"):
		return "percent"
	case strings.HasPrefix(expr, "$"):
		return "dollar"
	}
	return "jinja"
}

func TestParseAssume(t *testing.T) {
	got, err := ParseAssume([]string{"agent_name=fixed", " current_date = daily"})
	if err != nil || got["agent_name"] != Fixed || got["current_date"] != Daily {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"agent_name", "=fixed", "x=weekly"} {
		if _, err := ParseAssume([]string{bad}); err == nil {
			t.Errorf("--assume %q: no error", bad)
		}
	}
	if _, err := ParseAssume([]string{"x=fixed", "x=daily"}); err == nil {
		t.Error("two classes for one name: no error")
	}
}

func TestStrftime(t *testing.T) {
	tests := map[string]string{
		"%d %b %Y":          "26 Jul 2024",
		"%-d %B %Y":         "26 July 2024",
		"%Y-%m-%dT%H:%M:%S": "2024-07-26T10:00:00",
		"%A %j %U %W %p %I": "Friday 208 29 30 AM 10",
		"%f %%":             "250000 %",
	}
	for f, want := range tests {
		if got := strftime(renderClock, f); got != want {
			t.Errorf("strftime(%q) = %q, want %q", f, got, want)
		}
	}
}
