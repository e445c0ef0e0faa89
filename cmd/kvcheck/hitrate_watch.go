package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
)

// defaultWatch is the refresh interval of a bare --watch.
const defaultWatch = 10 * time.Second

// watchInterval reads --watch [INTERVAL]: the flag's own value (--watch=5s), or the one
// argument after a bare --watch (--watch 5s).
func watchInterval(o *hitrateOptions, args []string) error {
	switch {
	case !o.watchSet && len(args) > 0:
		return usageErrorf("unexpected argument %q (an interval goes after --watch)", args[0])
	case !o.watchSet:
		return nil
	case len(args) > 1:
		return usageErrorf("--watch takes one interval, not %d arguments", len(args))
	case len(args) == 1:
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return usageErrorf("--watch %q: give an interval such as 5s or 1m", args[0])
		}
		o.watch = d
	}
	if o.watch <= 0 {
		return usageErrorf("--watch %s: the interval must be positive", o.watch)
	}
	return nil
}

// runHitrateWatch refreshes the hitrate report every interval until ctx ends (Ctrl-C, which
// ends the watch cleanly): in place at a terminal, one JSON object per line when piped or with
// -o json. --fail-on applies to the last refresh.
func runHitrateWatch(ctx context.Context, s streams, g *globalOptions, o *hitrateOptions) (report.Result, error) {
	next, err := o.metrics.Watcher(o.watch)
	if err != nil {
		return report.Result{}, specUsage(err)
	}
	lines := g.format != report.FormatText || !report.IsTerminal(s.Out)
	text := g.text(s.Out)
	var prev *promql.Report
	tick := time.NewTicker(o.watch)
	defer tick.Stop()
	for n := 1; ; {
		in, err := next(ctx)
		switch {
		case ctx.Err() != nil:
			return watchEnd(prev), nil
		case errors.Is(err, promql.ErrBaseline):
			if !lines && o.metrics.Progress != nil {
				o.metrics.Progress(fmt.Sprintf("first refresh in %s, when the second scrape is in", o.watch))
			}
		case err != nil:
			// One failed refresh does not end an incident's watch: say so and go on.
			g.status.Note("refresh %d: %v", n, err)
		default:
			rep := promql.Analyze(in)
			f := report.Refresh{N: n, At: time.Now(), Interval: o.watch, Report: rep, Changes: promql.Changes(prev, rep)}
			if lines {
				err = report.HitrateWatchJSON(s.Out, f)
			} else {
				err = report.HitrateWatch(text, f)
			}
			if err != nil {
				return report.Result{}, err
			}
			prev = &rep
			n++
		}
		select {
		case <-ctx.Done():
			return watchEnd(prev), nil
		case <-tick.C:
		}
	}
}

// watchEnd ends a watch: the refreshes are written, and the last one decides --fail-on.
func watchEnd(last *promql.Report) report.Result {
	res := report.Result{Streamed: true, Findings: []finding.Finding{}}
	if last != nil {
		res.Findings = last.Findings
	}
	return res
}
