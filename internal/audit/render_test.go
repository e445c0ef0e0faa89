package audit

import (
	"os"
	"path/filepath"
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
	}{
		// "Your current session started on **{{ current_date }}**." after ~177 tokens of
		// fixed instructions (block 177/16 = 11), before the system message and the
		// conversation: the words say it is the session's start, so it changes per session
		// and only the 11 blocks before it are shared across sessions: early, a warning.
		{"session start", "session_start.jinja", "session_start.jinja", 2, nil,
			result{VerdictEarly, VerdictEarly, "audit/early", 11, PerSession, EvidenceText, finding.Warning}},
		// suggest_disable, the only unknown, is printed after the conversation (~406 tokens
		// in, block 25): whatever it is, every block before it is shared, so the worst case
		// is late (info, nothing for a gate), and fixed per deployment it is clean.
		{"late unknown", "late_flag.jinja", "late_flag.jinja", 7, nil,
			result{VerdictLate, VerdictClean, "audit/check", 25, Unknown, EvidenceNone, finding.Info}},
		// "- Current date: {{date}}" at the end of a module's prompt (~290 tokens, block 18,
		// more static text before it than after), filled through a local variable by
		// date.today().strftime("%B %d, %Y"): no time of day in the format, so daily; after
		// the shared text, so late.
		{"late daily date", "doc_assistant.py", "doc_assistant.py", 23, nil,
			result{VerdictLate, VerdictLate, "audit/late", 18, Daily, EvidenceCode, finding.Info}},
		// LangGraph: {agent_name} at token 0 is filled from Configuration.agent_name, a
		// field whose default is the literal "Volt": fixed per deployment, nothing lost.
		// The system time (datetime.now().isoformat(), per call) lands at ~token 223, block
		// 13, with more instructions after it than before: early, a warning.
		{"langgraph", "langgraph", "prompts.py", 14, nil,
			result{VerdictEarly, VerdictEarly, "audit/early", 13, PerCall, EvidenceCode, finding.Warning}},
		// The same without the configuration module: nothing settles agent_name, whose name
		// suggests a per-user value. Worst case it changes per user, and at token 0 that is
		// a breaker (an error for a gate); best case it is fixed and the verdict is the
		// date's, early.
		{"langgraph unsettled", "langgraph_noconfig", "prompts.py", 3, nil,
			result{VerdictBreaker, VerdictEarly, "audit/check", 0, PerUser, EvidenceName, finding.Error}},
		// --assume agent_name=fixed settles it: the date's early verdict is both.
		{"langgraph assumed", "langgraph_noconfig", "prompts.py", 14, map[string]Frequency{"agent_name": Fixed},
			result{VerdictEarly, VerdictEarly, "audit/early", 13, PerCall, EvidenceCode, finding.Warning}},
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
			if tt.want.Verdict != tt.want.Best && len(tpl.Assumptions) == 0 {
				t.Errorf("verdicts %s and %s, but no assumption named", tpl.Verdict, tpl.Best)
			}
			for _, a := range tpl.Assumptions {
				if tt.want.Code == "audit/check" && !strings.Contains(a, "clean if it is fixed per deployment") {
					t.Errorf("assumption %q does not name the best case", a)
				}
			}
		})
	}
}

// TestRenderAgreesWithScanner: on the corpus's chat templates, the offline render and the
// static scanner put each clock at the same place: the same position class and the same
// block or the next (the scanner counts the shortest branch, the render a real
// conversation). Every corpus template gets a verdict.
func TestRenderAgreesWithScanner(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	files, _ := filepath.Glob(filepath.Join(corpus, "templates", "*.jinja"))
	if len(files) == 0 {
		t.Fatal("no chat template in the corpus")
	}
	compared := 0
	for _, file := range files {
		src, err := readTemplate(file)
		if err != nil {
			t.Fatal(err)
		}
		static := scanJinja(file, src, 16)
		rr := renderChatTemplate(t.Context(), src, freeVariables(src), 16, nil)
		if rr.Err != nil {
			t.Errorf("%s: not rendered: %v", filepath.Base(file), rr.Err)
			continue
		}
		for _, e := range rr.elements(16, false) {
			if e.pair != "clock" {
				continue
			}
			var s *Finding
			for i := range static {
				if static[i].Kind == KindClock && containsAny(static[i].Expression, e.formats) {
					s = &static[i]
				}
			}
			if s == nil {
				t.Errorf("%s: the render finds a clock (%v at byte %d) the scanner does not", filepath.Base(file), e.formats, e.worst.Offset)
				continue
			}
			compared++
			if s.Position != e.pos || absInt(s.Block-e.worst.Block) > 1 {
				t.Errorf("%s: scanner %s at block %d (~token %d), render %s at block %d (~token %d, %s)", filepath.Base(file),
					s.Position, s.Block, s.TokensBefore, e.pos, e.worst.Block, e.worst.TokensBefore, e.worst.Variant)
			}
		}
	}
	if compared < 2 {
		t.Errorf("compared %d clocks, want the two of the corpus (Llama 3.1's and Mistral 3's)", compared)
	}
	rep, err := AuditTemplates([]string{filepath.Join(corpus, "templates")}, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range rep.Templates {
		if tp.Verdict == "" || tp.Best == "" {
			t.Errorf("%s: no verdict", tp.File)
		}
	}
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
