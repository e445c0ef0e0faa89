package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// demoOptions are the flags of kvcheck demo.
type demoOptions struct {
	window time.Duration
	seed   uint64
	dir    string
}

// demoStep is one section of the demo. Each step starts what it needs on loopback, runs
// kvcheck commands through d (which prints each command line before its output) and cleans
// up, so sections can be added without touching the others.
type demoStep struct {
	title string
	run   func(ctx context.Context, d *demoSession) error
}

// demoSession is what the steps share: the streams and global options, the directory holding
// the input files, and in JSON mode the sections collected so far.
type demoSession struct {
	s    streams
	g    *globalOptions
	o    *demoOptions
	dir  string
	json bool
	// started is set once a section has printed, so the next one is set apart by a blank line.
	started bool

	sections []report.DemoSection
}

func newDemoCmd(s streams, g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run kvcheck against an emulated vLLM fleet on loopback",
		Long: `Starts emulated vLLM replicas on 127.0.0.1 with a built-in workload and runs kvcheck's
commands against them, section by section: hitrate (scraping four replicas), tap (the KV-event
streams of three emulated publishers), audit (a request log and a prompt template, with exact
tokens from a replica's /tokenize), lint (an old Grafana dashboard and its fix), simulate (a
synthetic multi-turn trace under three routing policies) and assess (the recommendation, from
four scraped replicas and a built-in chat trace).
Each section prints the command it ran. Nothing leaves the machine; it finishes in well under a
minute. With --dir the input files are written there and kept, so the commands can be run again.

` + exitCodesHelp,
		Args: noArgs,
		RunE: g.command(func(cmd *cobra.Command, _ []string) (report.Result, error) {
			return runDemo(cmd.Context(), s, g, o)
		}),
	}
	cmd.Flags().DurationVar(&o.window, "window", 3*time.Second, "scrape window of the hitrate section (short, for the demo)")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "workload seed")
	cmd.Flags().StringVar(&o.dir, "dir", "", "write the demo's input files here and keep them (default: a temporary directory, removed at the end)")
	return cmd
}

// demoSteps lists the demo's sections in order.
func demoSteps() []demoStep {
	return []demoStep{
		{title: "hitrate", run: demoCommands(demo.Hitrate)},
		{title: "tap", run: demoTapSection},
		{title: "audit", run: demoCommands(demo.Audit)},
		{title: "lint", run: demoCommands(demo.Lint)},
		{title: "config", run: demoCommands(demo.Config)},
		{title: "simulate", run: demoCommands(demo.Simulate)},
		{title: "assess", run: demoAssessSection},
	}
}

// runDemo writes each section as it runs in text; in JSON its result holds every section.
func runDemo(ctx context.Context, s streams, g *globalOptions, o *demoOptions) (report.Result, error) {
	if o.window <= 0 || o.window > 30*time.Second {
		return report.Result{}, usage.Errorf("--window %s: keep the demo between 0 and 30s", o.window)
	}
	d := &demoSession{s: s, g: g, o: o, json: g.format == report.FormatJSON}
	dir, remove, err := demo.Inputs(o.dir)
	defer func() {
		if err := remove(); err != nil {
			g.status.Warn("remove the demo's input files: %v", err)
		}
	}()
	if err != nil {
		return report.Result{}, err
	}
	d.dir = dir
	for _, st := range demoSteps() {
		if d.json {
			d.sections = append(d.sections, report.DemoSection{Name: st.title})
		}
		if err := st.run(ctx, d); err != nil {
			return report.Result{}, fmt.Errorf("demo %s: %w", st.title, err)
		}
	}
	if d.json {
		return report.Demo(d.sections), nil
	}
	return report.Result{}, nil
}

// stop closes what a section started; a loopback server that fails to close is worth a line
// on stderr, not the end of the demo.
func (d *demoSession) stop(sec *demo.Section) {
	if err := sec.Close(); err != nil {
		report.NewStatus(d.s.ErrOut).Warn("%v", err)
	}
}

// env is what the sections of internal/demo are set up with.
func (d *demoSession) env() demo.Env {
	return demo.Env{Dir: d.dir, Seed: d.o.seed, Window: d.o.window}
}

// heading starts a section in text mode: a heading and muted lines saying what runs where.
func (d *demoSession) heading(title string, notes ...string) {
	if d.json {
		return
	}
	t := d.g.text(d.s.Out)
	if d.started {
		t.Line("")
	}
	d.started = true
	t.Heading(title)
	for _, n := range notes {
		t.Muted("%s", n)
	}
}

// exec runs one kvcheck command line as a user would, printing it first. A findings exit
// (code 3) is part of the show and is noted; any other failure ends the demo.
func (d *demoSession) exec(ctx context.Context, args ...string) error {
	out := d.s.Out
	var buf bytes.Buffer
	if d.json {
		out = &buf
	} else {
		d.g.text(d.s.Out).Line("$ kvcheck %s", demo.CommandLine(args))
	}
	newCmd := demoCommand(args[0])
	if newCmd == nil {
		return fmt.Errorf("kvcheck %s: not a command the demo runs", args[0])
	}
	sub := &globalOptions{Output: string(report.FormatText), NoColor: d.g.NoColor, environ: d.g.environ}
	if d.json {
		sub.Output = string(report.FormatJSON)
	}
	// The subcommand runs as its own root, as cobra allows; the global flags are set above.
	ss := streams{In: strings.NewReader(""), Out: out, ErrOut: d.s.ErrOut}
	root := newCmd(ss, sub)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return sub.prepare(c, ss) }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage.Wrap(err) })
	root.SetArgs(args[1:])
	c, err := root.ExecuteContextC(ctx)
	code := exitOK
	var fe findingsError
	switch {
	case errors.As(err, &fe):
		code = exitFindings
		if f := c.Flags().Lookup("fail-on"); f != nil && !f.Changed {
			fe.byDefault = true
		}
		if !d.json {
			d.g.text(d.s.Out).Muted("(exit 3: %v)", fe)
		}
	case err != nil:
		return fmt.Errorf("kvcheck %s: %w", demo.CommandLine(args), err)
	}
	d.record(args, code, buf.Bytes())
	return nil
}

// capture runs a section that drives a command from code, printing args, the equivalent
// command line, first and collecting its JSON in JSON mode.
func (d *demoSession) capture(args []string, run func(s streams) error) error {
	if !d.json {
		d.g.text(d.s.Out).Line("$ kvcheck %s", demo.CommandLine(args))
		return run(d.s)
	}
	var buf bytes.Buffer
	err := run(streams{In: strings.NewReader(""), Out: &buf, ErrOut: d.s.ErrOut})
	code := exitOK
	var fe findingsError
	switch {
	case errors.As(err, &fe):
		code = exitFindings
	case err != nil:
		return err
	}
	d.record(args, code, buf.Bytes())
	return nil
}

func (d *demoSession) record(args []string, code int, out []byte) {
	if !d.json {
		return
	}
	sec := &d.sections[len(d.sections)-1]
	sec.Runs = append(sec.Runs, report.DemoRun{Command: args, ExitCode: code, Output: bytes.TrimSpace(out)})
}

// demoCommand returns the constructor of a subcommand the demo runs. It does not go through
// the root command, whose list of subcommands includes the demo itself.
func demoCommand(name string) func(streams, *globalOptions) *cobra.Command {
	switch name {
	case "hitrate":
		return newHitrateCmd
	case "audit":
		return newAuditCmd
	case "lint":
		return newLintCmd
	case "simulate":
		return newSimulateCmd
	}
	return nil
}
