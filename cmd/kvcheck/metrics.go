package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
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
		Short: "Print the catalog of metric names (vLLM, llm-d, GAIE, SGLang, Dynamo) and their history",
		Long: `metrics prints every metric name kvcheck knows, one table per family: vLLM (with
production-stack's router re-exports), the llm-d router's endpoint picker and KV-cache index,
the Gateway API Inference Extension's picker, SGLang's engine and NVIDIA Dynamo's frontend. Each row has the type, the releases of its
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
	cmd.Flags().StringVar(&opts.Targets, "target", "", catalog.TargetsFlag())
	cmd.Flags().StringSliceVar(&opts.Families, "family", nil, "only these families ("+catalog.FamiliesHelp()+"); repeatable or comma-separated")
	cmd.Flags().StringVar(&opts.Status, "status", "", "only metrics in this status at the target: current, deprecated, hidden, removed or not-yet")
	cmd.Flags().StringVar(&opts.Name, "name", "", "only metrics whose name contains this text")
	return cmd
}

func runMetrics(_ context.Context, st *report.Status, opts *metricsOptions) (report.Result, error) {
	cat, err := catalog.Load()
	if err != nil {
		return report.Result{}, err
	}
	targets, err := cat.ResolveTargets(opts.Target, opts.Targets, st.Warn)
	if err != nil {
		return report.Result{}, err
	}
	if err := cat.CheckView(opts.Families, opts.Status); err != nil {
		return report.Result{}, err
	}
	return report.Metrics(cat, report.MetricsView{Targets: targets, Families: opts.Families, Status: opts.Status, Name: opts.Name}), nil
}
