package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/cli"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/report"
)

// lintOptions are the flags of kvcheck lint.
type lintOptions struct {
	lint.Flags
	FailOn finding.FailOn
}

func newLintCmd(s streams, g *globalOptions) *cobra.Command {
	opts := &lintOptions{FailOn: "error", Flags: lint.Flags{Lookback: lint.DefaultLookback}}
	cmd := &cobra.Command{
		Use:   "lint PATH...",
		Short: "Find renamed vLLM metrics and router/engine configuration traps",
		Long: `lint reads Grafana dashboards, Perses dashboards, Google Cloud Monitoring dashboards,
Prometheus rule files and PrometheusRule resources, KEDA ScaledObjects, HorizontalPodAutoscalers,
prometheus-adapter rules and AIBrix PodAutoscalers (files or directories, format detected by
content) and reports every metric name of vLLM, the llm-d router's endpoint picker and its
KV-cache index, or the Gateway API Inference Extension's picker that is removed, hidden or
deprecated at the target release of its family, unknown names (such as a counter queried without _total), label drift and queries
that do not parse. --fix rewrites the references that have an exact replacement in place
(keeping mode and owner, through a temporary file renamed over it, never over an edit made
since lint read the file).

It also checks router and engine configuration, detected by content: LiteLLM config.yaml,
llm-d EndpointPickerConfig (plain, in a ConfigMap, in the router chart's values),
production-stack values, Dynamo DynamoGraphDeployments, Ray Serve LLM configs, AIBrix gateways,
InferencePools and InferenceObjectives, and the vLLM engines that Deployments, StatefulSets,
LeaderWorkerSets, compose files and shell scripts start. Files given in one run are also checked
against each other (KV-event topics and ports, hash seeds, retries on both layers). The rules are
listed in the README with their codes and table ids.

A "kvcheck:ignore CODE reason" comment on a finding's line or the line above suppresses it, as
does a line "CODE [PATH-GLOB] [# reason]" in the ignore file; suppressed findings are counted.

The repository's config, .kvcheck.yaml (the first found in the working directory or above it,
or --config FILE; --no-config for none), sets lint.targets (per family), lint.fail-on,
lint.baseline, lint.include and lint.exclude globs, lint.ignore entries and lint.severity
overrides per code, its paths relative to its own directory. Flags given win over it (--target
per family); its ignores add to the ignore file's and to kvcheck:ignore comments. A bad value is
a usage error naming the file, line and key; an unknown key is a warning. --skip-unknown skips
named files that hold nothing kvcheck checks, as pre-commit needs.

With --prometheus it also asks the server whether each referenced name has series now, and when
it last had any within --lookback.

` + exitCodesHelp,
		Example: `  kvcheck lint dashboards/ autoscaling/
  kvcheck lint --target-version 0.11 --fail-on warning deploy/
  kvcheck lint --target vllm=0.30,llm-d=0.9 dashboards/
  kvcheck lint --diff grafana/vllm.json
  kvcheck lint -o text -o sarif=kvcheck.sarif -o github dashboards/
  kvcheck lint --prometheus http://prometheus:9090 --lookback 3d dashboards/`,
		Args: minArgs(1),
		RunE: g.command(func(cmd *cobra.Command, args []string) (report.Result, error) {
			res, failOn, err := runLint(cmd.Context(), g.status, opts, args)
			if failOn != nil && !cmd.Flags().Changed("fail-on") {
				err = errors.Join(err, configFailOn(cmd, failOn))
			}
			return res, err
		}),
	}
	fs := cmd.Flags()
	fs.StringVar((*string)(&opts.FailOn), "fail-on", "error", "exit 3 when a finding reaches this severity: error, warning, info or never")
	fs.StringVar(&opts.Target, "target-version", "", "vLLM version to judge against, X.Y or X.Y.Z (X.Y means X.Y.0); default the newest the catalog knows")
	fs.StringVar(&opts.Targets, "target", "", catalog.TargetsFlag())
	fs.BoolVar(&opts.Fix, "fix", false, "rewrite references that have an exact replacement, in place; a file edited since it was read, read-only, hard-linked or whose owner cannot be kept is left as it is (exit 1)")
	fs.BoolVar(&opts.Diff, "diff", false, "print the rewrite --fix would make as a unified diff, without writing")
	fs.Var((*cli.Duration)(&opts.Lookback), "lookback", "with --prometheus: how far back to look for series (Prometheus duration)")
	fs.IntVar(&opts.MaxFileMiB, "max-file-mib", 16, "largest file read, in MiB; a larger one is not checked and is an error")
	fs.IntVar(&opts.Jobs, "jobs", 0, "files read and linted at once; 0 means one per CPU (the output is the same for any number)")
	fs.StringVar(&opts.IgnoreFile, "ignore-file", "", "ignore file of CODE [PATH-GLOB] [# reason] lines (default "+lint.IgnoreFileName+" in the working directory, when present)")
	fs.StringVar(&opts.ChangedSince, "changed-since", "", "lint only the files changed since the merge base of this git revision and HEAD (committed, staged, unstaged or untracked), as pint ci does: --changed-since origin/main")
	fs.StringVar(&opts.Baseline, "baseline", "", "findings in this baseline file (matched by code, file and metric) do not fail the run and are not shown; new ones do")
	fs.StringVar(&opts.WriteBaseline, "write-baseline", "", "write this run's findings to FILE as the baseline to give --baseline, and accept them in this run")
	fs.StringVar(&opts.Config, "config", "", "the kvcheck config to read (default "+lint.ProjectConfigNames[0]+" in the working directory or the nearest directory above it); flags given win over it")
	fs.BoolVar(&opts.NoConfig, "no-config", false, "read no kvcheck config")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	fs.BoolVar(&opts.SkipUnknown, "skip-unknown", false, "skip and count, as in a directory, the files named that hold nothing kvcheck checks (pre-commit names every changed file); a run that checked nothing then passes")
	bindConn(fs, &opts.Prom)
	return cmd
}

// runLint lints; the run it also returns, when not nil, is one whose kvcheck config sets
// lint.fail-on.
func runLint(ctx context.Context, st *report.Status, opts *lintOptions, paths []string) (report.Result, *lint.Run, error) {
	opts.SrcRoot, opts.WorkDir = cli.SourceRoot()
	run, err := lint.CheckFlags(ctx, st, opts.Flags, paths)
	var failOn *lint.Run
	if run.FailOn != "" {
		failOn = &run
	}
	switch {
	case err != nil && run.Files == nil:
		return report.Result{}, failOn, err
	case opts.Diff:
		return report.LintDiff(run, lint.DiffAll(run.Files)), failOn, nil
	}
	// With an error, run holds files --fix could not rewrite: they are reported (their
	// findings still to fix), then the error, and the exit code is 1.
	return report.Lint(run), failOn, err
}

// configFailOn makes the config's lint.fail-on the --fail-on in force, marked with where it
// was written, so the exit-3 line names the file rather than a flag that was not given.
func configFailOn(cmd *cobra.Command, run *lint.Run) error {
	fs := cmd.Flags()
	if err := fs.Set("fail-on", run.FailOn); err != nil {
		return err
	}
	return fs.SetAnnotation("fail-on", failOnFromAnnotation, []string{run.FailOnAt})
}
