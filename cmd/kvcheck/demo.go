package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// demoOptions are the flags of kvcheck demo.
type demoOptions struct {
	window time.Duration
	seed   uint64
	dir    string
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

// runDemo runs the walkthrough: each section's commands run as their own root (as cobra
// allows), with the global flags given and the output in the demo's format.
func runDemo(ctx context.Context, s streams, g *globalOptions, o *demoOptions) (report.Result, error) {
	if err := g.stdoutOnly("demo"); err != nil {
		return report.Result{}, err
	}
	if err := demo.CheckWindow(o.window); err != nil {
		return report.Result{}, err
	}
	dir, remove, err := demo.Inputs(o.dir)
	defer func() {
		if err := remove(); err != nil {
			g.status.Warn("remove the demo's input files: %v", err)
		}
	}()
	if err != nil {
		return report.Result{}, err
	}
	r := &demo.Runner{
		Env: demo.Env{Dir: dir, Seed: o.seed, Window: o.window}, Out: s.Out, JSON: g.format == report.FormatJSON,
		Text: g.text, Warn: report.NewStatus(s.ErrOut).Warn,
		Exec: func(ctx context.Context, args []string, out io.Writer) (int, error) {
			newCmd := demoCommand(args[0])
			if newCmd == nil {
				return exitRuntime, fmt.Errorf("not a command the demo runs")
			}
			sub := &globalOptions{Output: []string{string(g.format)}, NoColor: g.NoColor, Wide: g.Wide, environ: g.environ}
			ss := streams{In: strings.NewReader(""), Out: out, ErrOut: s.ErrOut}
			root := newCmd(ss, sub)
			root.SilenceUsage, root.SilenceErrors = true, true
			root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return sub.prepare(c, ss) }
			root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage.Wrap(err) })
			root.SetArgs(args[1:])
			c, err := root.ExecuteContextC(ctx)
			var te *finding.ThresholdError
			if errors.As(err, &te) {
				te.ByDefault = !c.Flags().Changed("fail-on")
				return exitFindings, te
			}
			return exitOK, err
		},
	}
	return r.Run(ctx, demo.Steps())
}

// demoCommand returns the constructor of a subcommand the demo runs. It does not go through
// the root command, whose list of subcommands includes the demo itself.
func demoCommand(name string) func(streams, *globalOptions) *cobra.Command {
	return map[string]func(streams, *globalOptions) *cobra.Command{
		"hitrate": newHitrateCmd, "tap": newTapCmd, "audit": newAuditCmd, "lint": newLintCmd,
		"simulate": newSimulateCmd, "assess": newAssessCmd,
	}[name]
}
