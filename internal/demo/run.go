package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Exec runs one kvcheck command line (the arguments after "kvcheck") as a user would, with
// its standard output on out. It returns the exit code with the error: 0 and nil, 3 and the
// findings error (findings at --fail-on are part of the show), or any other code and the error
// that ended the command.
type Exec func(ctx context.Context, args []string, out io.Writer) (code int, err error)

// Runner runs the walkthrough: each section is set up (Env), prints its heading, notes and
// command lines in text, runs its commands through Exec and stops what it started. In JSON
// the commands' own documents are collected instead, one section each.
type Runner struct {
	Env  Env
	Out  io.Writer
	JSON bool
	// Text writes text to w with the run's colour and width settings.
	Text func(w io.Writer) *report.Text
	Exec Exec
	// Warn says on stderr what failed to stop; the demo goes on.
	Warn func(format string, args ...any)

	// started is set once a section has printed, so the next one is set apart by a blank line.
	started  bool
	sections []report.DemoSection
}

// Step is one section of the walkthrough: its name in JSON and how it is set up.
type Step struct {
	Name  string
	Setup func(Env) (*Section, error)
}

// Steps are the walkthrough's sections in order.
func Steps() []Step {
	return []Step{
		{"hitrate", Hitrate}, {"tap", Tap}, {"audit", Audit}, {"lint", Lint},
		{"config", Config}, {"simulate", Simulate}, {"assess", AssessSection},
	}
}

// CheckWindow rejects a scrape window the demo cannot use: it is meant to finish in well
// under a minute.
func CheckWindow(d time.Duration) error {
	if d <= 0 || d > 30*time.Second {
		return usage.Errorf("--window %s: keep the demo between 0 and 30s", d)
	}
	return nil
}

// Run runs the steps in order; in JSON its result holds every section, in text the sections
// have been written as they ran.
func (r *Runner) Run(ctx context.Context, steps []Step) (report.Result, error) {
	for _, st := range steps {
		if r.JSON {
			r.sections = append(r.sections, report.DemoSection{Name: st.Name})
		}
		if err := r.section(ctx, st.Setup); err != nil {
			return report.Result{}, fmt.Errorf("demo %s: %w", st.Name, err)
		}
	}
	if r.JSON {
		return report.Demo(r.sections), nil
	}
	return report.Result{}, nil
}

// section sets up one section, prints its heading and notes, runs each command and stops
// what it started.
func (r *Runner) section(ctx context.Context, setup func(Env) (*Section, error)) error {
	sec, err := setup(r.Env)
	if err != nil {
		return err
	}
	defer func() {
		// A loopback server that fails to close is worth a line, not the end of the demo.
		if err := sec.Close(); err != nil {
			r.Warn("%v", err)
		}
	}()
	if !r.JSON {
		t := r.Text(r.Out)
		if r.started {
			t.Line("")
		}
		r.started = true
		if sec.Heading != "" {
			t.Heading(sec.Heading)
		}
		for _, n := range sec.Notes {
			t.Muted("%s", n)
		}
	}
	for _, args := range sec.Commands {
		if err := r.exec(ctx, sec, args); err != nil {
			return err
		}
	}
	return nil
}

// exec runs one command line, printing it first unless the command introduces itself. A
// findings exit (code 3) is part of the show and is noted; any other failure ends the demo.
func (r *Runner) exec(ctx context.Context, sec *Section, args []string) error {
	out := r.Out
	var buf bytes.Buffer
	if r.JSON {
		out = &buf
	} else if !sec.selfIntro {
		r.Text(r.Out).Line("$ kvcheck %s", CommandLine(args))
	}
	code, err := r.Exec(ctx, args, out)
	switch {
	case code == 3 && !r.JSON && sec.selfIntro:
		r.Text(r.Out).Line("(exit 3: %v)", err)
	case code == 3 && !r.JSON:
		r.Text(r.Out).Muted("(exit 3: %v)", err)
	case code == 3:
	case err != nil:
		return fmt.Errorf("kvcheck %s: %w", CommandLine(args), err)
	}
	if r.JSON {
		sec := &r.sections[len(r.sections)-1]
		sec.Runs = append(sec.Runs, report.DemoRun{Command: args, ExitCode: code, Output: bytes.TrimSpace(buf.Bytes())})
	}
	return nil
}
