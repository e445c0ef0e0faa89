package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/secret"
)

// Watch is how kvcheck hitrate --watch runs: Next takes one refresh (promql.Spec.Watcher),
// every Interval. Lines writes one JSON object per refresh to Out (piped, or -o json); else
// each refresh is drawn in place on Text. Status takes the notes of failed refreshes, Progress
// (optional) the wait for the first one.
type Watch struct {
	Interval time.Duration
	Next     func(context.Context) (promql.Input, error)
	Lines    bool
	Out      io.Writer
	Text     *Text
	Status   *Status
	Progress func(string)
}

// WatchHitrate refreshes the hitrate report every interval until ctx ends (Ctrl-C, which ends
// the watch cleanly). Its result is streamed: the refreshes are written, and the findings of
// the last one decide --fail-on.
func WatchHitrate(ctx context.Context, w Watch) (Result, error) {
	var prev *promql.Report
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	failed := 0 // refreshes failed in a row
	var lastErr error
	var missed []Failure // the failures since the refresh shown last, for the next one to name
	for n := 1; ; {
		in, err := w.Next(ctx)
		switch {
		case ctx.Err() != nil:
			return watchEnd(prev, failed, lastErr)
		case errors.Is(err, promql.ErrBaseline):
			if !w.Lines && w.Progress != nil {
				w.Progress(fmt.Sprintf("first refresh in %s, when the second scrape is in", w.Interval))
			}
		case err != nil:
			// One failed refresh does not end an incident's watch: say so and go on. A failure
			// gets no refresh number of its own (numbers count refreshes shown), so it is named
			// by its time and by the last refresh shown.
			failed++
			lastErr = err
			last := "none shown yet"
			if n > 1 {
				last = fmt.Sprintf("last shown: refresh %d", n-1)
			}
			at := time.Now()
			missed = append(missed, Failure{At: at, Err: err.Error()})
			w.Status.Note("refresh failed at %s (%d in a row; %s): %v", at.Format("15:04:05"), failed, last, err)
		default:
			rep := promql.Analyze(in)
			f := Refresh{N: n, At: time.Now(), Interval: w.Interval, Report: rep, Changes: promql.Changes(prev, rep), Failed: missed}
			if w.Lines {
				err = HitrateWatchJSON(w.Out, f)
			} else {
				err = HitrateWatch(w.Text, f)
			}
			if err != nil {
				return Result{}, err
			}
			prev = &rep
			n++
			failed, missed = 0, nil
		}
		select {
		case <-ctx.Done():
			return watchEnd(prev, failed, lastErr)
		case <-tick.C:
		}
	}
}

// watchEnd ends a watch: the refreshes are written, and the last one decides --fail-on. A
// watch that showed no refresh because every one failed measured nothing: that is the error
// of the last failure, not a clean end (a watch stopped before its first refresh was due,
// with no failure, is one).
func watchEnd(last *promql.Report, failed int, lastErr error) (Result, error) {
	res := Result{Streamed: true, Findings: []finding.Finding{}}
	if last == nil && lastErr != nil {
		return Result{}, fmt.Errorf("no refresh succeeded (%d failed): the last failure: %w", failed, lastErr)
	}
	if last != nil {
		res.Findings = last.Findings
	}
	return res, nil
}

// Refresh is one refresh of kvcheck hitrate --watch: its number (from 1), when it was taken,
// the interval between refreshes, and how each replica moved since the one before.
type Refresh struct {
	N        int
	At       time.Time
	Interval time.Duration
	Report   promql.Report
	Changes  []promql.Change
	// Failed are the refreshes that failed since the one shown before, each by its time: at a
	// terminal the frame replaces the screen, notes on stderr included, so it names them.
	Failed []Failure
}

// Failure is a refresh that failed: when, and why.
type Failure struct {
	At  time.Time
	Err string
}

// hitrateWatchDoc is one line of hitrate --watch's JSON Lines output.
type hitrateWatchDoc struct {
	Refresh         int     `json:"refresh"`
	Time            string  `json:"time"`
	IntervalSeconds float64 `json:"interval_seconds"`
	hitrateDoc
	Changes []hitrateChangeDoc `json:"changes"`
	// FailedBefore are the refreshes that failed since the line before, by time.
	FailedBefore []watchFailureDoc `json:"failed_before"`
}

type watchFailureDoc struct {
	Time  string `json:"time"`
	Error string `json:"error"`
}

// HitrateWatchJSON writes a refresh as one line of JSON (JSON Lines, for a log): the hitrate
// document with the refresh's number, time, interval and changes.
func HitrateWatchJSON(w io.Writer, f Refresh) error {
	doc := hitrateWatchDoc{Refresh: f.N, Time: f.At.UTC().Format(time.RFC3339Nano), IntervalSeconds: f.Interval.Seconds(),
		hitrateDoc: newHitrateDoc(f.Report), Changes: newHitrateChangeDocs(f.Changes), FailedBefore: []watchFailureDoc{}}
	for _, x := range f.Failed {
		doc.FailedBefore = append(doc.FailedBefore, watchFailureDoc{Time: x.At.UTC().Format(time.RFC3339Nano), Error: x.Err})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	_, err = w.Write(append(secret.MaskJSON(b), '\n'))
	return err
}

// failTimes lists the failures' times: "15:04:05", "15:04:05, 15:04:10", "15:04:05 to 15:04:20".
func failTimes(fs []Failure) string {
	const layout = "15:04:05"
	switch len(fs) {
	case 1:
		return fs[0].At.Format(layout)
	case 2:
		return fs[0].At.Format(layout) + ", " + fs[1].At.Format(layout)
	}
	return fs[0].At.Format(layout) + " to " + fs[len(fs)-1].At.Format(layout) + " (the last)"
}

// HitrateWatch writes a refresh for a person at a terminal, in place of the one before: the
// frame is built whole, then written from the top left with each line cleared to its end and
// the rest of the screen cleared after it, so nothing flickers and nothing stale remains.
func HitrateWatch(t *Text, f Refresh) error {
	var b bytes.Buffer
	frame := &Text{w: &b, terminal: t.terminal, color: t.color, width: t.width, wide: t.wide, r: t.r}
	frame.Heading(fmt.Sprintf("Prefix-cache hit rate, refresh %d at %s every %s (Ctrl-C ends)", f.N, f.At.Format("15:04:05"), f.Interval))
	prov := hitrateProvenance(f.Report)
	if f.N > 1 {
		prov += "; Δ since the last refresh"
	}
	frame.Muted("%s", prov)
	if n := len(f.Failed); n > 0 {
		last := f.Failed[n-1]
		since := "before it"
		if f.N > 1 {
			since = fmt.Sprintf("since refresh %d", f.N-1)
		}
		what := "a refresh failed"
		if n > 1 {
			what = fmt.Sprintf("%d refreshes failed", n)
		}
		frame.Line("%s %s, at %s: %s", t.Badge(finding.Warning), what+" "+since, failTimes(f.Failed), last.Err)
	}
	if err := hitrateTable(frame, f.Report, f.Changes); err != nil {
		return err
	}
	hitrateFleet(frame, f.Report)
	if !t.terminal {
		_, err := t.w.Write(b.Bytes())
		return err
	}
	var out strings.Builder
	out.WriteString("\x1b[H")
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(strings.TrimSuffix(line, "\n"))
		out.WriteString("\x1b[K\n")
	}
	out.WriteString("\x1b[J")
	_, err := io.WriteString(t.w, out.String())
	return err
}
