package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// statusLog is a Status that keeps the notes.
type statusLog struct{ notes []string }

func (s *statusLog) Note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}
func (s *statusLog) Progress(string, ...any) {}
func (s *statusLog) Done()                   {}

func runOptions(f func(*RunOptions)) RunOptions {
	o := RunOptions{BlockSize: DefaultBlockSize, MaxBlocks: DefaultMaxBlocks, MaxLine: DefaultMaxLine, Tokenize: DefaultTokenize}
	f(&o)
	return o
}

// TestRunAuditTemplatesAndLog audits testdata/run: clock.jinja prints the time to the second
// before the conversation (a breaker in block 0), plain.jinja has no dynamic value (clean),
// and support.jsonl is four chat requests with one 190-byte system prompt and four questions.
// Estimated at 4 bytes a token, the system prompt is over 47 tokens, so each of the three
// requests after the first reuses at least its first two 16-token blocks: at least 96
// cacheable tokens.
func TestRunAuditTemplatesAndLog(t *testing.T) {
	log := filepath.Join("testdata", "run", "support.jsonl")
	o := runOptions(func(o *RunOptions) {
		o.Templates = []string{filepath.Join("testdata", "run", "clock.jinja"), filepath.Join("testdata", "run", "plain.jinja")}
		o.Requests = log
	})
	var st statusLog
	res, err := RunAudit(context.Background(), &st, o)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]Verdict{}
	for _, tpl := range res.Templates {
		verdicts[filepath.Base(tpl.File)] = tpl.Verdict
	}
	if verdicts["clock.jinja"] != VerdictBreaker || verdicts["plain.jinja"] != VerdictClean || len(verdicts) != 2 {
		t.Errorf("verdicts %v, want clock.jinja breaker and plain.jinja clean", verdicts)
	}
	breakers := 0
	for _, f := range res.Findings {
		if f.Code == "audit/breaker" && filepath.Base(f.File) == "clock.jinja" && f.Block == 0 {
			breakers++
		}
	}
	if breakers != 1 {
		t.Errorf("%d breaker findings in block 0 of clock.jinja, want 1: %+v", breakers, res.Findings)
	}
	if res.Exact || res.BlockSize != DefaultBlockSize || res.RequestsSource != log || res.Requests == nil {
		t.Fatalf("exact %v, block size %d, source %q, requests %v; want estimated, %d, %s, a summary", res.Exact, res.BlockSize, res.RequestsSource, res.Requests, DefaultBlockSize, log)
	}
	if s := res.Requests; s.Requests != 4 || s.Chat != 4 || s.Skipped != 0 || s.CacheableTokens < 96 || s.Exact {
		t.Errorf("requests %d, chat %d, skipped %d, cacheable %d, exact %v; want 4, 4, 0, at least 96, estimated", s.Requests, s.Chat, s.Skipped, s.CacheableTokens, s.Exact)
	}
	if len(st.notes) != 0 {
		t.Errorf("notes %q without a server", st.notes)
	}
}

// TestRunAuditStdin reads "-" from Stdin and names it standard input; nothing given but a
// log gives no templates and an empty (not nil) template list.
func TestRunAuditStdin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "run", "support.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	res, err := RunAudit(context.Background(), &statusLog{}, runOptions(func(o *RunOptions) {
		o.Requests, o.Stdin = "-", strings.NewReader(lines[0]+lines[1])
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestsSource != "standard input" || res.Requests.Requests != 2 || res.Templates == nil || len(res.Templates) != 0 {
		t.Errorf("source %q, %d requests, templates %v; want standard input, 2, []", res.RequestsSource, res.Requests.Requests, res.Templates)
	}
}

// TestRunAuditServer tokenizes through an emulated replica with 32-token blocks and prefix
// caching off: the server's block size replaces the --block-size given (and a note says so),
// the caching-off finding comes first and names the server, and the server's own template is
// probed (its date line breaks block 0).
func TestRunAuditServer(t *testing.T) {
	srv := replica(t, 32, "False", func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) })
	var st statusLog
	res, err := RunAudit(context.Background(), &st, runOptions(func(o *RunOptions) {
		o.BlockSize, o.BlockSizeGiven = 16, true
		o.Requests = filepath.Join("testdata", "run", "support.jsonl")
		o.Tokenize = Tokenize{URL: srv.URL, Concurrency: 2, Timeout: 10 * time.Second}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "the server's block size is 32, not --block-size 16; using the server's"; len(st.notes) != 1 || st.notes[0] != want {
		t.Errorf("notes %q, want %q", st.notes, want)
	}
	if !res.Exact || res.BlockSize != 32 || !res.Requests.Exact || res.Requests.BlockSize != 32 {
		t.Errorf("exact %v, block size %d (requests: %v, %d); want exact at 32", res.Exact, res.BlockSize, res.Requests.Exact, res.Requests.BlockSize)
	}
	shown := strings.TrimPrefix(srv.URL, "http://")
	if len(res.Findings) == 0 || res.Findings[0].Code != "prefix-caching-off" || !strings.Contains(res.Findings[0].File, shown) {
		t.Fatalf("first finding %+v, want prefix-caching-off naming %s", res.Findings, shown)
	}
	var server *Template
	for i := range res.Templates {
		if res.Templates[i].Format == "server" {
			server = &res.Templates[i]
		}
	}
	if server == nil || server.Verdict != VerdictBreaker {
		t.Errorf("templates %+v, want the server's chat template, a breaker (its date line)", res.Templates)
	}
}

// TestRunAuditErrors: an input that cannot be read ends the audit with an error naming it;
// a server that cannot be reached ends it before anything is read.
func TestRunAuditErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    RunOptions
		want string
	}{
		{"template", runOptions(func(o *RunOptions) { o.Templates = []string{filepath.Join(dir, "absent.jinja")} }), "absent.jinja"},
		{"log", runOptions(func(o *RunOptions) { o.Requests = filepath.Join(dir, "absent.jsonl") }), "open request log"},
		{"server", runOptions(func(o *RunOptions) {
			o.Requests, o.Tokenize.URL = filepath.Join("testdata", "run", "support.jsonl"), "http://127.0.0.1:1"
		}), "check --tokenize"},
	} {
		if _, err := RunAudit(context.Background(), &statusLog{}, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestRunOptionsCheck holds kvcheck audit's usage errors.
func TestRunOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		o    RunOptions
		want string // "" passes
	}{
		{runOptions(func(o *RunOptions) { o.Requests = "r.jsonl" }), ""},
		{runOptions(func(o *RunOptions) { o.Tokenize.URL = "http://x" }), ""},
		{runOptions(func(*RunOptions) {}), "nothing to audit"},
		{runOptions(func(o *RunOptions) { o.Requests, o.BlockSize = "r.jsonl", 0 }), "--block-size 0"},
		{runOptions(func(o *RunOptions) { o.Requests, o.MaxBlocks = "r.jsonl", 0 }), "--max-blocks 0"},
		{runOptions(func(o *RunOptions) { o.Requests, o.MaxLine = "r.jsonl", -1 }), "--max-line -1"},
		{runOptions(func(o *RunOptions) { o.Requests, o.Tokenize.Timeout = "r.jsonl", 0 }), "--timeout 0s"},
	} {
		err := c.o.Check()
		if (c.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), c.want) || !usage.Is(err))) {
			t.Errorf("Check(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
}

// TestRunAuditCorpus audits the shared corpus's templates directory as one unit: LangGraph's
// ReAct agent's SYSTEM_PROMPT (prompts.py) ends with "System time: {system_time}", which
// graph.py, another file of the directory, fills with datetime.now(tz=UTC).isoformat() on
// every call. The whole prompt is about 12 tokens, so the per-request timestamp lands in
// block 0: a breaker. Given as two separate files the fill is not seen (each file is a unit).
func TestRunAuditCorpus(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	tpl := filepath.Join(dir, "templates")
	res, err := RunAudit(context.Background(), &statusLog{}, runOptions(func(o *RunOptions) {
		o.Templates = []string{tpl}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Templates {
		if filepath.Base(x.File) == "langgraph-react-agent_prompts.py" && x.Verdict == VerdictBreaker {
			return
		}
	}
	t.Errorf("templates %+v, want langgraph-react-agent_prompts.py a breaker", res.Templates)
}
