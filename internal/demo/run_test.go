package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// fakeExec answers each command line by its first argument: "ok" writes a JSON document,
// "findings" exits 3, "fail" fails; every call is recorded.
type fakeExec struct{ calls []string }

func (f *fakeExec) exec(_ context.Context, args []string, out io.Writer) (int, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	switch args[0] {
	case "ok":
		fmt.Fprintf(out, "{\"n\": %d}\n", len(f.calls))
		return 0, nil
	case "findings":
		fmt.Fprintln(out, "{\"findings\": 1}")
		return 3, errors.New("findings at or above --fail-on error")
	}
	return 1, errors.New("broken")
}

func testSteps() []Step {
	section := func(name, heading string, cmds ...[]string) Step {
		return Step{name, func(Env) (*Section, error) {
			return &Section{Heading: heading, Notes: []string{"  note " + name}, Commands: cmds}, nil
		}}
	}
	return []Step{
		section("one", "Demo: one", []string{"ok", "a b"}, []string{"findings"}),
		{"two", func(Env) (*Section, error) {
			return &Section{Commands: [][]string{{"ok", "--self"}}, selfIntro: true}, nil
		}},
	}
}

// TestRunnerText: each section prints its heading and notes, each command line is printed
// before it runs (quoted where a shell needs it) unless the command introduces itself, a
// findings exit is noted and the demo goes on, and sections are set apart by a blank line.
func TestRunnerText(t *testing.T) {
	var out bytes.Buffer
	f := &fakeExec{}
	r := &Runner{Out: &out, Text: func(w io.Writer) *report.Text { return report.NewText(w, false) }, Exec: f.exec, Warn: t.Errorf}
	res, err := r.Run(context.Background(), testSteps())
	if err != nil || !res.Empty() {
		t.Fatalf("Run: %v, result empty %v; want nil and an empty result (text is written as it runs)", err, res.Empty())
	}
	want := "Demo: one\n  note one\n$ kvcheck ok 'a b'\n{\"n\": 1}\n$ kvcheck findings\n{\"findings\": 1}\n" +
		"(exit 3: findings at or above --fail-on error)\n\n{\"n\": 3}\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := strings.Join(f.calls, "|"); got != "ok a b|findings|ok --self" {
		t.Errorf("commands run %q", got)
	}
}

// TestRunnerJSON: nothing is printed; the result holds each section with each command's own
// document and exit code.
func TestRunnerJSON(t *testing.T) {
	var out bytes.Buffer
	r := &Runner{Out: &out, JSON: true, Exec: (&fakeExec{}).exec, Warn: t.Errorf}
	res, err := r.Run(context.Background(), testSteps())
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("JSON mode printed %q", out.String())
	}
	var doc bytes.Buffer
	if err := report.Write(&doc, report.FormatJSON, res, report.Options{}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Sections []struct {
			Name string
			Runs []struct {
				Command  []string
				ExitCode int `json:"exit_code"`
				Output   json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(doc.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sections) != 2 || got.Sections[0].Name != "one" || len(got.Sections[0].Runs) != 2 || got.Sections[1].Name != "two" {
		t.Fatalf("sections %+v", got.Sections)
	}
	r0, r1 := got.Sections[0].Runs[0], got.Sections[0].Runs[1]
	var compact bytes.Buffer
	if err := json.Compact(&compact, r0.Output); err != nil || strings.Join(r0.Command, " ") != "ok a b" || r0.ExitCode != 0 || compact.String() != `{"n":1}` {
		t.Errorf("first run %+v", r0)
	}
	if r1.ExitCode != 3 {
		t.Errorf("findings run: exit %d, want 3", r1.ExitCode)
	}
}

// TestRunnerFailure: a command that fails ends the demo with an error naming the section and
// the command line, and what the section started is stopped.
func TestRunnerFailure(t *testing.T) {
	f := &fakeExec{}
	r := &Runner{Out: io.Discard, Text: func(w io.Writer) *report.Text { return report.NewText(w, false) }, Exec: f.exec, Warn: t.Errorf}
	steps := []Step{
		{"broken", func(Env) (*Section, error) { return &Section{Commands: [][]string{{"fail", "x"}, {"ok"}}}, nil }},
		{"never", func(Env) (*Section, error) { t.Error("a section after the failure was set up"); return &Section{}, nil }},
	}
	_, err := r.Run(context.Background(), steps)
	if err == nil || err.Error() != "demo broken: kvcheck fail x: broken" {
		t.Errorf("Run: %v, want demo broken: kvcheck fail x: broken", err)
	}
	if len(f.calls) != 1 {
		t.Errorf("ran %q after the failure", f.calls)
	}
}

func TestCheckWindow(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{time.Second, true}, {30 * time.Second, true}, {0, false}, {31 * time.Second, false}} {
		err := CheckWindow(c.d)
		if (err == nil) != c.ok || (err != nil && !usage.Is(err)) {
			t.Errorf("CheckWindow(%s) = %v, want ok %v (else a usage error)", c.d, err, c.ok)
		}
	}
}

// TestAssessTargets runs what kvcheck demo's assess section runs against its four emulated
// replicas (StartAssessFleet, serving the trace): the intro, then a KV-aware router (the 32
// tenants' prompts do not fit in one), with no reason against it from metrics that disagree
// with the replay of today's routing. The ranking starts from the demo fleet's own stack,
// production-stack (AssessToday): its prefixaware router keeps each tenant's 1,024-token system
// prompt on the replica that has it, as the other text-reading KV routers do, so it serves
// within the 5-point stack margin of the best and a change of product brings less than a change
// of product must (issue 22, failure 7: the demo named Ray Serve, a change of framework, on a
// tie).
func TestAssessTargets(t *testing.T) {
	tr := AssessTrace()
	f, err := StartAssessFleet(tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := AssessTargets(ctx, report.NewStatus(&errOut), report.NewText(&out, false), f.Targets(), tr)
	if err == nil {
		err = report.Write(&out, report.FormatText, res, report.Options{})
	}
	if err != nil {
		t.Fatalf("AssessTargets: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"Demo: kvcheck assess against 4 emulated vLLM replicas", "$ kvcheck assess --scrape ", "Recommendation: a KV-aware router", "Figures the reasons cite", "Next steps",
		// The router ranking: the text-reading routers run on the trace's text.
		"Routers on this traffic, against today's", "First: ", "the configuration to apply (",
		// The fleet's own stack: the ranking starts from production-stack, which breaks the
		// tie between Ray's and SGLang's trees (both keep every shared prefix) too.
		"--today " + AssessToday, "starting from prodstack-", "First: prodstack-", "the configuration to apply (values.yaml)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "not the one the metrics measured") {
		t.Errorf("the demo's metrics disagree with the replay of its own trace:\n%s", out.String())
	}
	// A router that reads the text is among the rows shown, and none is said to need it.
	text := false
	for _, p := range []string{"prodstack-prefixaware", "sglang-cache-aware", "ray-prefix-affinity", "litellm-"} {
		text = text || strings.Contains(out.String(), p)
	}
	if !text || strings.Contains(out.String(), "holds only block hashes") {
		t.Errorf("demo ranking shows no router that reads the text, or says one cannot run:\n%s", out.String())
	}
	if _, err := AssessTargets(ctx, report.NewStatus(&errOut), nil, nil, tr); err == nil {
		t.Error("no targets: no error")
	}
}
