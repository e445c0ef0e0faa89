package promql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The states a replica can be in from one watch refresh to the next.
const (
	StateNew       = "new"       // a row now, none at the refresh before
	StateGone      = "gone"      // a row at the refresh before, none now
	StateRestarted = "restarted" // its counters went back inside the window
)

// Change is how one replica moved since the previous refresh of a watch: its state and the
// differences of its figures (nil when either side is unknown). Hit rates differ in fractions
// (0.05 is 5 percentage points).
type Change struct {
	Replica                string
	State                  string
	HitRateDelta           *float64
	QueriesPerSecDelta     *float64
	PreemptionsPerSecDelta *float64
	KVUsageDelta           *float64
	WaitingDelta           *float64
}

// Changes compares a refresh with the one before (nil for the first): one change per replica
// of cur, in its order, then one per replica that is gone.
func Changes(prev *Report, cur Report) []Change {
	restarted := map[string]bool{}
	for _, f := range cur.Findings {
		if f.Code == "counter-reset" {
			restarted[f.Subject] = true
		}
	}
	before := map[string]Replica{}
	if prev != nil {
		for _, r := range prev.Replicas {
			before[r.Replica] = r
		}
	}
	out := make([]Change, 0, len(cur.Replicas))
	seen := map[string]bool{}
	for _, r := range cur.Replicas {
		seen[r.Replica] = true
		c := Change{Replica: r.Replica}
		p, ok := before[r.Replica]
		switch {
		case prev != nil && !ok:
			c.State = StateNew
		case restarted[r.Replica]:
			c.State = StateRestarted
		}
		if ok {
			c.HitRateDelta = delta(r.HitRate, p.HitRate)
			c.QueriesPerSecDelta = delta(r.QueriesPerSec, p.QueriesPerSec)
			c.PreemptionsPerSecDelta = delta(r.PreemptionsPerSec, p.PreemptionsPerSec)
			c.KVUsageDelta = delta(r.KVUsage, p.KVUsage)
			c.WaitingDelta = delta(r.Waiting, p.Waiting)
		}
		out = append(out, c)
	}
	if prev != nil {
		var gone []Change
		for _, r := range prev.Replicas {
			if !seen[r.Replica] {
				gone = append(gone, Change{Replica: r.Replica, State: StateGone})
			}
		}
		slices.SortFunc(gone, func(a, b Change) int { return strings.Compare(a.Replica, b.Replica) })
		out = append(out, gone...)
	}
	return out
}

func delta(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	d := *a - *b
	return &d
}

// Watcher checks that the spec is a live source and returns the function that takes one
// refresh of a watch every interval: the Prometheus queries evaluated now over the window, or
// the rates between the last two scrape rounds, one interval apart (the first call scrapes the
// baseline). Dumps and logs do not change: they are a *SpecError.
func (s Spec) Watcher(interval time.Duration) (func(context.Context) (Input, error), error) {
	given := s.sources()
	switch {
	case len(given) != 1 || given[0].flag == "--file" || given[0].flag == "--log":
		return nil, specErrorf("--watch needs one live source: --prometheus or --scrape (or --targets)")
	case s.Time != "":
		return nil, specErrorf("--time with --watch: a watch evaluates now, every refresh")
	case given[0].flag == "--scrape/--targets" && s.WindowSet:
		return nil, specErrorf("--window with --watch and --scrape: the rates are over the interval between refreshes (%s)", interval)
	}
	if s.Window < 0 || (s.WindowSet && s.Window == 0) {
		return nil, specErrorf("--window %s: must be positive", s.Window)
	}
	for _, l := range s.By {
		if !labelName.MatchString(l) {
			return nil, specErrorf("--by %q: not a label name (letters, digits and _, such as pod or namespace)", l)
		}
	}
	if given[0].flag == "--prometheus" {
		// Settings that cannot work fail now, not at every refresh.
		if _, err := s.Conn.API(); err != nil {
			return nil, err
		}
		if _, err := NormalizeSelector(s.Selector); err != nil {
			return nil, specErrorf("--selector: %v", err)
		}
		return s.openPrometheus, nil
	}
	targets, sc, err := s.scraper()
	if err != nil {
		return nil, err
	}
	var prev map[string]Dump
	return func(ctx context.Context) (Input, error) {
		cur, down := sc.Round(ctx, targets, true)
		if prev == nil {
			prev = cur
			return Input{}, ErrBaseline
		}
		in := Compare(targets, prev, cur, down, sc.By)
		prev = cur
		if len(cur) == 0 {
			return in, fmt.Errorf("no target answered: %s", downSummary(down))
		}
		return in, nil
	}, nil
}

// ErrBaseline is what a scrape watcher's first call returns: it scraped the baseline the next
// refresh's rates start from, and there is nothing to show yet.
var ErrBaseline = errors.New("baseline scraped")
