package main

import (
	"context"
	"time"

	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// defaultWatch is the refresh interval of a bare --watch.
const defaultWatch = 10 * time.Second

// watchInterval reads --watch [INTERVAL]: the flag's own value (--watch=5s), or the one
// argument after a bare --watch (--watch 5s).
func watchInterval(o *hitrateOptions, args []string) error {
	switch {
	case !o.watchSet && len(args) > 0:
		return usage.Errorf("unexpected argument %q (an interval goes after --watch)", args[0])
	case !o.watchSet:
		return nil
	case len(args) > 1:
		return usage.Errorf("--watch takes one interval, not %d arguments", len(args))
	case len(args) == 1:
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return usage.Errorf("--watch %q: give an interval such as 5s or 1m", args[0])
		}
		o.watch = d
	}
	if o.watch <= 0 {
		return usage.Errorf("--watch %s: the interval must be positive", o.watch)
	}
	return nil
}

// runHitrateWatch refreshes the hitrate report every interval until Ctrl-C: in place at a
// terminal, one JSON object per line when piped or with -o json. --fail-on applies to the last
// refresh.
func runHitrateWatch(ctx context.Context, s streams, g *globalOptions, o *hitrateOptions) (report.Result, error) {
	next, err := o.metrics.Watcher(o.watch)
	if err != nil {
		return report.Result{}, err
	}
	return report.WatchHitrate(ctx, report.Watch{Interval: o.watch, Next: next, Out: s.Out, Text: g.text(s.Out), Status: g.status,
		Lines: g.format != report.FormatText || !report.IsTerminal(s.Out), Progress: o.metrics.Progress})
}
