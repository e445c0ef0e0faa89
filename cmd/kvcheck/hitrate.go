package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
)

// hitrateOptions are the flags of kvcheck hitrate.
type hitrateOptions struct {
	metrics promql.Spec
	failOn  finding.FailOn
	// watch is the refresh interval of --watch, when given.
	watch time.Duration
}

const hitrateLong = `Per replica: the prefix-cache hit rate in tokens (hits/queries over a window), query volume,
external-tier hit rate, preemptions per second and per 1k requests, KV usage, running and waiting
requests, block size and whether prefix caching is on; then a fleet row (token-weighted hit rate,
spread) and findings.

Exactly one source per run:
  --prometheus URL       Prometheus HTTP API (also Thanos, Mimir, Cortex, VictoriaMetrics): five
                         queries whatever the fleet size, run concurrently (default window 5m)
  --scrape URL...        scrape each replica's /metrics twice, --window apart (default 30s)
  --targets FILE         the same, targets one per line (# comments)
  --file A.prom [--file B.prom]  saved dumps: one gives lifetime totals, two give rates
  --log FILE...          vLLM engine log lines (V1 and V0 formats), the engine's own hit rate

`

func newHitrateCmd(s streams, g *globalOptions) *cobra.Command {
	o := &hitrateOptions{}
	cmd := &cobra.Command{
		Use:   "hitrate",
		Short: "Per-replica prefix-cache hit rate, preemptions and KV usage",
		Long:  hitrateLong + exitCodesHelp,
		Example: `  kvcheck hitrate --prometheus http://prometheus:9090 --selector 'namespace="prod"'
  kvcheck hitrate --scrape 10.0.0.7:8000,10.0.0.8:8000 --window 1m
  kvcheck hitrate --file before.prom --file after.prom --window 60s -o json
  kvcheck hitrate --log vllm.log
  kvcheck hitrate --scrape 10.0.0.7:8000,10.0.0.8:8000 --watch 5s     # refresh in place until Ctrl-C`,
		Args: usageArgs(cobra.MaximumNArgs(2)),
		RunE: g.command(func(cmd *cobra.Command, args []string) (report.Result, error) {
			o.metrics.WindowSet = cmd.Flags().Changed("window")
			watch, err := report.WatchInterval(g.format, cmd.Flags().Changed("watch"), o.watch, args)
			if err != nil {
				return report.Result{}, err
			}
			o.metrics.Progress = func(msg string) { g.status.Progress("%s", msg) }
			if watch > 0 {
				if err := g.stdoutOnly("--watch"); err != nil {
					return report.Result{}, err
				}
				next, err := o.metrics.Watcher(watch)
				if err != nil {
					return report.Result{}, err
				}
				// In place at a terminal, one JSON object per line when piped or with -o json;
				// --fail-on applies to the last refresh.
				return report.WatchHitrate(cmd.Context(), report.Watch{Interval: watch, Next: next, Out: s.Out, Text: g.text(s.Out), Status: g.status,
					Lines: g.format != report.FormatText || !report.IsTerminal(s.Out), Progress: o.metrics.Progress})
			}
			return runHitrate(cmd.Context(), o)
		}),
	}
	fs := cmd.Flags()
	bindMetrics(fs, &o.metrics)
	fs.StringVar((*string)(&o.failOn), "fail-on", "", "exit 3 when a finding is at or above this severity (info, warning, error)")
	fs.DurationVar(&o.watch, "watch", report.DefaultWatch, "refresh every INTERVAL (--watch 5s) until Ctrl-C: in place at a terminal, one JSON object per line when piped")
	fs.Lookup("watch").NoOptDefVal = report.DefaultWatch.String()
	return cmd
}

func runHitrate(ctx context.Context, o *hitrateOptions) (report.Result, error) {
	in, err := promql.Open(ctx, o.metrics)
	if err != nil {
		return report.Result{}, err
	}
	rep := promql.Analyze(in)
	return report.Hitrate(rep), rep.Incomplete()
}
