package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// hitrateOptions are the flags of kvcheck hitrate.
type hitrateOptions struct {
	metrics promql.Spec
	failOn  finding.FailOn
	// watch is the refresh interval of --watch; watchSet says whether --watch was given.
	watch    time.Duration
	watchSet bool
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
			o.watchSet = cmd.Flags().Changed("watch")
			if err := watchInterval(o, args); err != nil {
				return report.Result{}, err
			}
			o.metrics.Progress = func(msg string) { g.status.Progress("kvcheck: %s", msg) }
			if o.watchSet {
				if g.format != report.FormatText && g.format != report.FormatJSON {
					return report.Result{}, usage.Errorf("--watch writes text or JSON Lines, not %s: a report for %s is one run without --watch", g.format, g.format)
				}
				return runHitrateWatch(cmd.Context(), s, g, o)
			}
			return runHitrate(cmd.Context(), o)
		}),
	}
	fs := cmd.Flags()
	bindMetrics(fs, &o.metrics)
	fs.StringVar((*string)(&o.failOn), "fail-on", "", "exit 3 when a finding is at or above this severity (info, warning, error)")
	fs.DurationVar(&o.watch, "watch", defaultWatch, "refresh every INTERVAL (--watch 5s) until Ctrl-C: in place at a terminal, one JSON object per line when piped")
	fs.Lookup("watch").NoOptDefVal = defaultWatch.String()
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
