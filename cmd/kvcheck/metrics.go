package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// metricsOptions are the flags of kvcheck metrics.
type metricsOptions struct {
	Target   string
	Targets  string
	Families []string
	Status   string
	Name     string
}

func newMetricsCmd(s streams, g *globalOptions) *cobra.Command {
	opts := &metricsOptions{}
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Print the catalog of metric names (vLLM, llm-d, GAIE, SGLang) and their history",
		Long: `metrics prints every metric name kvcheck knows, one table per family: vLLM (with
production-stack's router re-exports), the llm-d router's endpoint picker and KV-cache index,
the Gateway API Inference Extension's picker, and SGLang's engine. Each row has the type, the releases of its
family where it was added, deprecated, hidden and removed, its replacement, and its status at
the target release (--target-version for vLLM, --target for any family; default the newest
known). -o json adds the sources each entry was read from.

` + exitCodesHelp,
		Example: `  kvcheck metrics
  kvcheck metrics --target-version 0.11 -o json
  kvcheck metrics --family llm-d --status deprecated
  kvcheck metrics --name prefix_cache`,
		Args: noArgs,
		RunE: g.command(func(cmd *cobra.Command, _ []string) (report.Result, error) {
			return runMetrics(cmd.Context(), g.status, opts)
		}),
	}
	cmd.Flags().StringVar(&opts.Target, "target-version", "", "vLLM version for the status column, X.Y or X.Y.Z; default the newest the catalog knows")
	cmd.Flags().StringVar(&opts.Targets, "target", "", targetFlagHelp)
	cmd.Flags().StringSliceVar(&opts.Families, "family", nil, "only these families ("+catalogFamilies()+"); repeatable or comma-separated")
	cmd.Flags().StringVar(&opts.Status, "status", "", "only metrics in this status at the target: current, deprecated, hidden, removed or not-yet")
	cmd.Flags().StringVar(&opts.Name, "name", "", "only metrics whose name contains this text")
	return cmd
}

func runMetrics(_ context.Context, st *report.Status, opts *metricsOptions) (report.Result, error) {
	cat, err := catalog.Load()
	if err != nil {
		return report.Result{}, err
	}
	targets, err := parseTargets(cat, opts.Target, opts.Targets, st)
	if err != nil {
		return report.Result{}, err
	}
	for _, f := range opts.Families {
		if cat.Family(f) == nil {
			return report.Result{}, usage.Errorf("--family %q: not a family of the catalog (%s)", f, cat.FamilyNames())
		}
	}
	switch catalog.Status(opts.Status) {
	case "", catalog.Current, catalog.Deprecated, catalog.Hidden, catalog.Removed, catalog.NotYet:
	default:
		return report.Result{}, usage.Errorf("--status %q: write current, deprecated, hidden, removed or not-yet", opts.Status)
	}
	return report.Metrics(cat, report.MetricsView{Targets: targets, Families: opts.Families, Status: opts.Status, Name: opts.Name}), nil
}
