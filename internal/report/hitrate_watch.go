package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/promql"
)

// Refresh is one refresh of kvcheck hitrate --watch: its number (from 1), when it was taken,
// the interval between refreshes, and how each replica moved since the one before.
type Refresh struct {
	N        int
	At       time.Time
	Interval time.Duration
	Report   promql.Report
	Changes  []promql.Change
}

// hitrateWatchDoc is one line of hitrate --watch's JSON Lines output.
type hitrateWatchDoc struct {
	Refresh         int     `json:"refresh"`
	Time            string  `json:"time"`
	IntervalSeconds float64 `json:"interval_seconds"`
	hitrateDoc
	Changes []promql.Change `json:"changes"`
}

// HitrateWatchJSON writes a refresh as one line of JSON (JSON Lines, for a log): the hitrate
// document with the refresh's number, time, interval and changes.
func HitrateWatchJSON(w io.Writer, f Refresh) error {
	doc := hitrateWatchDoc{Refresh: f.N, Time: f.At.UTC().Format(time.RFC3339Nano), IntervalSeconds: f.Interval.Seconds(),
		hitrateDoc: newHitrateDoc(f.Report), Changes: f.Changes}
	if doc.Changes == nil {
		doc.Changes = []promql.Change{}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
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
