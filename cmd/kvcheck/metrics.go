package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
)

// metricsOptions are the flags of kvcheck metrics.
type metricsOptions struct {
	Target string
}

func newMetricsCmd(s streams, g *globalOptions) *cobra.Command {
	opts := &metricsOptions{}
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Print the catalog of vLLM metric names and their history",
		Long: `metrics prints every metric name kvcheck knows vLLM (and production-stack's router) to
publish, with its type, the versions where it was added, deprecated, hidden and removed, its
replacement, and its status at --target-version.

` + exitCodesHelp,
		Example: `  kvcheck metrics
  kvcheck metrics --target-version 0.11 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMetrics(cmd.Context(), s, g, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Target, "target-version", "", "vLLM version for the status column, X.Y or X.Y.Z; default the newest the catalog knows")
	return cmd
}

func runMetrics(_ context.Context, s streams, g *globalOptions, opts *metricsOptions) error {
	format, err := g.format(report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	cat, err := catalog.Load()
	if err != nil {
		return err
	}
	target := cat.Newest
	if opts.Target != "" {
		if target, err = catalog.ParseVersion(opts.Target); err != nil {
			return usageErrorf("--target-version: %v", err)
		}
		if cat.Newest.Less(target) {
			fmt.Fprintf(s.ErrOut, "kvcheck: --target-version %s is newer than the metric catalog (vLLM %s): changes after %s are not known to this kvcheck\n",
				target, cat.Newest, cat.Newest)
		}
	}
	if format == report.FormatJSON {
		return report.MetricsJSON(s.Out, cat, target)
	}
	return report.MetricsText(g.text(s.Out), cat, target)
}
