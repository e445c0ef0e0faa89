package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/cli"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
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

// globalOptions are the flags every subcommand shares, and what the root works out from them
// before a subcommand runs.
type globalOptions struct {
	// Output are the --output values, each FORMAT or FORMAT=FILE.
	Output  []string
	NoColor bool
	// Wide turns off fitting tables to the terminal's width.
	Wide bool
	// CPUProfile is the hidden --cpuprofile: the file a CPU profile of the command goes to,
	// for `go tool pprof`; stopProfile ends it (nil when none runs).
	CPUProfile  string
	stopProfile func() error
	// MemProfile is the hidden --memprofile: the file the heap profile taken at the command's
	// largest live heap goes to; stopMemProfile ends the watch (nil when none runs).
	MemProfile     string
	stopMemProfile func() error
	// allEvidence is assess --evidence all: every figure in the text, not the brief view.
	allEvidence bool
	environ     []string
	// outputs are --output checked against the command's formats; format is the one a
	// command that writes only to standard output uses (report.Primary); status writes its
	// progress, notes and warnings on stderr.
	outputs []report.Output
	format  report.Format
	status  *report.Status
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

// text returns a text writer for the command's standard output.
func (g *globalOptions) text(w io.Writer) *report.Text {
	t := report.NewText(w, g.color())
	t.SetWide(g.Wide)
	return t
}

// prepare runs before every subcommand: it checks --output against the formats the command
// offers (SARIF and GitHub annotations when it has findings, which is when it has --fail-on) and
// --fail-on's value, before any work is done.
func (g *globalOptions) prepare(cmd *cobra.Command, s streams) error {
	g.status = report.NewStatus(s.ErrOut)
	if g.CPUProfile != "" {
		stop, err := cli.StartCPUProfile(g.CPUProfile)
		if err != nil {
			return err
		}
		g.stopProfile = stop
	}
	if g.MemProfile != "" {
		stop, err := cli.StartMemProfile(g.MemProfile)
		if err != nil {
			return err
		}
		g.stopMemProfile = stop
	}
	fo := failOnFlag(cmd)
	outs, err := report.ParseOutputs(g.Output, report.Formats(fo != nil))
	if err != nil {
		return usage.Wrap(err)
	}
	g.outputs, g.format = outs, report.Primary(outs)
	if fo != nil {
		return finding.FailOn(fo.Value.String()).Validate()
	}
	return nil
}

// write writes the result in every --output (w is standard output), if there is one, and
// passes err on.
func (g *globalOptions) write(w io.Writer, res report.Result, err error) error {
	if !res.Empty() {
		root, wd := cli.SourceRoot()
		o := report.Options{Color: g.color(), Wide: g.Wide, All: g.allEvidence, Version: version(), SrcRoot: root, WorkDir: wd,
			Actions: g.getenv("GITHUB_ACTIONS") == "true"}
		if werr := report.WriteOutputs(w, g.outputs, res, o); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// stdoutOnly refuses outputs to files and more than one output, for a command whose output
// goes to standard output as it runs (what names it).
func (g *globalOptions) stdoutOnly(what string) error {
	if len(g.outputs) > 1 || (len(g.outputs) == 1 && g.outputs[0].Path != "") {
		return usage.Errorf("%s writes one output, to standard output: give a single -o FORMAT", what)
	}
	return nil
}

// failOnFlag is the command's --fail-on flag, nil when it has none.
func failOnFlag(cmd *cobra.Command) *pflag.Flag { return cmd.Flags().Lookup("fail-on") }

// failOnFromAnnotation marks a --fail-on set from a config file with where it was written.
const failOnFromAnnotation = "kvcheck-from"

// command turns a run function into a cobra RunE that emits its result.
func (g *globalOptions) command(run func(cmd *cobra.Command, args []string) (report.Result, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		res, err := run(cmd, args)
		return g.emit(cmd, res, err)
	}
}

// emit writes a command's result in the --output format, even when the command also failed
// (a report of the replicas that could be read, then exit 1), and turns findings at --fail-on
// into exit 3. It is the one place that writes a result and the one place that decides exit 3.
func (g *globalOptions) emit(cmd *cobra.Command, res report.Result, err error) error {
	if g.status != nil {
		g.status.Done()
	}
	fo := failOnFlag(cmd)
	res.Command = cmd.CommandPath()
	if p := g.getenv("GITHUB_STEP_SUMMARY"); p != "" && fo != nil && !res.Empty() {
		if serr := report.WriteStepSummary(p, cmd.CommandPath(), res); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	if err != nil && res.Empty() && fo != nil {
		// Nothing to report, but a CI job reads the SARIF and the summary whatever the exit.
		if ferr := report.WriteFailure(cmd.OutOrStdout(), g.outputs, cmd.CommandPath(), err,
			report.Options{Version: version()}, g.getenv("GITHUB_STEP_SUMMARY")); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}
	if err := g.write(cmd.OutOrStdout(), res, err); err != nil {
		return err
	}
	if fo != nil {
		return finding.FailOn(fo.Value.String()).Check(res.Findings)
	}
	return nil
}

// usageArgs makes a cobra argument validator return a usage error, so a wrong number of
// arguments or an unknown command exits 2 by its type, like a bad flag.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usage.Wrap(err)
		}
		return nil
	}
}

// noArgs accepts no positional arguments; minArgs at least n.
var noArgs = usageArgs(cobra.NoArgs)

func minArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.MinimumNArgs(n)) }

// version is the build's one-line version, as SARIF's driver records it.
func version() string { return buildInfo().Short() }

func newRootCmd(s streams, g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "kvcheck",
		Short: "Measure whether prefix-aware routing pays off for a vLLM fleet",
		Long: `kvcheck answers, with measurements: is prefix-aware routing worth it for this traffic,
and is the vLLM fleet ready for it?

` + exitCodesHelp,
		Version:       "-", // cobra adds --version for a non-empty Version; the template prints it
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.prepare(cmd, s)
		},
	}
	root.SetVersionTemplate(strings.ReplaceAll(report.VersionText(buildInfo()), "{{", `{{"{{"}}`))
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetIn(s.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usage.Wrap(err)
	})
	pf := root.PersistentFlags()
	pf.StringArrayVarP(&g.Output, "output", "o", []string{"text"}, "output format, FORMAT or FORMAT=FILE, repeatable (-o text -o sarif=kvcheck.sarif): text or json; commands with findings also sarif, github and codeclimate")
	pf.BoolVar(&g.NoColor, "no-color", false, "never colour the output (also when NO_COLOR is set)")
	pf.BoolVar(&g.Wide, "wide", false, "at a terminal, show every table column unwrapped instead of fitting the width")
	// For whoever measures kvcheck (BENCHMARKS.md), not for its users: out of the help.
	pf.StringVar(&g.CPUProfile, "cpuprofile", "", "write a CPU profile of the command to FILE (go tool pprof)")
	_ = pf.MarkHidden("cpuprofile")
	pf.StringVar(&g.MemProfile, "memprofile", "", "write the heap profile at the command's largest live heap to FILE (go tool pprof)")
	_ = pf.MarkHidden("memprofile")

	for _, add := range subcommands {
		root.AddCommand(add(s, g))
	}
	completeFlagValues(root)
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
	newVersionCmd,
}

// run executes the command line and returns the process exit code; only run picks exit codes.
func run(ctx context.Context, args []string, s streams, environ []string) int {
	g := &globalOptions{environ: environ}
	s.In = cli.StdinUntil(ctx, s.In)
	root := newRootCmd(s, g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	for _, stop := range []func() error{g.stopProfile, g.stopMemProfile} {
		if stop != nil {
			if perr := stop(); perr != nil {
				err = errors.Join(err, perr)
			}
		}
	}
	if in, ok := cli.Interruption(ctx); ok && !endsByInterrupt(cmd) {
		// What the command printed before stopping is partial, whatever it returned: the
		// exit code says so, as shells expect of a process stopped by a signal.
		fmt.Fprintf(s.ErrOut, "kvcheck: %v; any output above is partial\n", in)
		return cli.ExitInterrupted + int(in.Sig)
	}
	if err == nil {
		return exitOK
	}
	var te *finding.ThresholdError
	if errors.As(err, &te) {
		te.ByDefault = !cmd.Flags().Changed("fail-on")
		if fo := cmd.Flags().Lookup("fail-on"); fo != nil && len(fo.Annotations[failOnFromAnnotation]) > 0 {
			te.From = fo.Annotations[failOnFromAnnotation][0]
		}
		report.WriteError(s.ErrOut, te)
		return exitFindings
	}
	// An error can carry a URL as the HTTP client wrote it, its token included, and an
	// input's name or text: WriteError masks and escapes it, one line per error.
	report.WriteError(s.ErrOut, err)
	if isUsage(err) {
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
