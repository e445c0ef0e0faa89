package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
)

// Exit codes, documented in the root command's help and in README.md.
const (
	exitOK       = 0
	exitRuntime  = 1
	exitUsage    = 2
	exitFindings = 3
)

const exitCodesHelp = `Exit codes:
  0  ok
  1  runtime error (unreachable source, unreadable input, ...)
  2  usage error (unknown flag, bad flag value)
  3  findings at or above --fail-on
  130  interrupted by Ctrl-C (SIGINT; 143 for SIGTERM), after printing what it had, marked partial
       (not hitrate --watch: Ctrl-C is its normal end)`

// streams are the process's standard streams; tests substitute buffers.
type streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

func stdStreams() streams { return streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// globalOptions are the flags every subcommand shares.
type globalOptions struct {
	Output  string
	NoColor bool
	// Wide turns off fitting tables to the terminal's width.
	Wide    bool
	environ []string
}

// getenv looks a variable up in the environment run was given, not the process's.
func (g *globalOptions) getenv(key string) string {
	for _, kv := range slices.Backward(g.environ) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// color reports whether text output may use colour.
func (g *globalOptions) color() bool {
	return !g.NoColor && g.getenv("NO_COLOR") == ""
}

// format checks --output against the formats a command supports.
func (g *globalOptions) format(allowed ...report.Format) (report.Format, error) {
	f := report.Format(strings.ToLower(g.Output))
	if slices.Contains(allowed, f) {
		return f, nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", usageErrorf("--output %q is not supported by this command: use one of %s", g.Output, strings.Join(names, ", "))
}

// text returns a text writer for the command's standard output.
func (g *globalOptions) text(w io.Writer) *report.Text {
	t := report.NewText(w, g.color())
	t.SetWide(g.Wide)
	return t
}

// usageError marks errors caused by how the command was called (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// findingsError reports that findings reached --fail-on (exit 3). The report has already been
// written when it is returned.
type findingsError struct {
	worst     finding.Severity
	threshold finding.Severity
	// byDefault is set when the threshold is the command's default, not a --fail-on given.
	byDefault bool
}

func (e findingsError) Error() string {
	level := fmt.Sprintf("--fail-on %s", e.threshold)
	if e.byDefault {
		level += ", the default"
	}
	return fmt.Sprintf("findings at or above %s (the worst is %s)", level, e.worst)
}

// failOn is the value of a --fail-on flag: empty means never fail on findings.
type failOn string

// check returns a findingsError when the worst severity reaches the threshold.
func (f failOn) check(sevs ...finding.Severity) error {
	if f == "" || f == "never" {
		return nil
	}
	threshold, err := finding.ParseSeverity(string(f))
	if err != nil {
		return usageErrorf("--fail-on: %v", err)
	}
	for _, s := range sevs {
		if s >= threshold {
			worst := s
			for _, o := range sevs {
				worst = max(worst, o)
			}
			return findingsError{worst: worst, threshold: threshold}
		}
	}
	return nil
}

// validate rejects unknown --fail-on values before any work is done.
func (f failOn) validate() error {
	if f == "" || f == "never" {
		return nil
	}
	if _, err := finding.ParseSeverity(string(f)); err != nil {
		return usageErrorf("--fail-on: %v", err)
	}
	return nil
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v + " " + bi.GoVersion
}

func newRootCmd(s streams, g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "kvcheck",
		Short: "Measure whether prefix-aware routing pays off for a vLLM fleet",
		Long: `kvcheck answers, with measurements: is prefix-aware routing worth it for this traffic,
and is the vLLM fleet ready for it?

` + exitCodesHelp,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetIn(s.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err}
	})
	pf := root.PersistentFlags()
	pf.StringVarP(&g.Output, "output", "o", "text", "output format: text or json (lint also: sarif, github)")
	pf.BoolVar(&g.NoColor, "no-color", false, "never colour the output (also when NO_COLOR is set)")
	pf.BoolVar(&g.Wide, "wide", false, "at a terminal, show every table column unwrapped instead of fitting the width")

	for _, add := range subcommands {
		root.AddCommand(add(s, g))
	}
	return root
}

// subcommands lists the constructors of the subcommands, one file each.
var subcommands = []func(streams, *globalOptions) *cobra.Command{
	newHitrateCmd,
	newLintCmd,
	newMetricsCmd,
	newAuditCmd,
	newTapCmd,
	newSimulateCmd,
	newDemoCmd,
	newAssessCmd,
}

// run executes the command line and returns the process exit code; only run picks exit codes.
func run(ctx context.Context, args []string, s streams, environ []string) int {
	g := &globalOptions{environ: environ}
	root := newRootCmd(s, g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if in, ok := interruption(ctx); ok && !endsByInterrupt(cmd) {
		// What the command printed before stopping is partial, whatever it returned: the
		// exit code says so, as shells expect of a process stopped by a signal.
		fmt.Fprintf(s.ErrOut, "kvcheck: %v; any output above is partial\n", in)
		return exitInterrupted + int(in.sig)
	}
	if err == nil {
		return exitOK
	}
	var fe findingsError
	if errors.As(err, &fe) {
		if f := cmd.Flags().Lookup("fail-on"); f != nil && !f.Changed {
			fe.byDefault = true
		}
		fmt.Fprintf(s.ErrOut, "kvcheck: %v\n", fe)
		return exitFindings
	}
	fmt.Fprintf(s.ErrOut, "kvcheck: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		// The help of the command that was run: its flags are what the error is about.
		fmt.Fprintf(s.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitRuntime
}

// endsByInterrupt reports whether a signal is the run's normal end, not a stop part-way:
// hitrate --watch, whose refreshes are each complete when printed.
func endsByInterrupt(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("watch")
	return f != nil && f.Changed
}

// isCobraUsage recognises the argument errors cobra raises itself (unknown command, wrong
// number of arguments), which do not pass through the flag error function.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
