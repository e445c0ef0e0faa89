package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/promql"
)

// watchRefreshes are two refreshes of a two-replica fleet: b restarted between them, a's hit
// rate rose from 50% to 60%, and c, shown before, is gone.
func watchRefreshes() (promql.Report, promql.Report) {
	in := func(hitsA float64, c bool) promql.Input {
		obs := []promql.Observation{
			{Replica: "a", Window: 10, Queries: fp(1000), Hits: fp(hitsA), Generation: promql.Current},
			{Replica: "b", Window: 10, Queries: fp(1000), Hits: fp(300), Generation: promql.Current},
		}
		if c {
			obs = append(obs, promql.Observation{Replica: "c", Window: 10, Queries: fp(1000), Hits: fp(400), Generation: promql.Current})
		} else {
			obs[1].Resets = []string{"vllm:prefix_cache_queries_total"}
		}
		return promql.Input{Source: promql.SourceScrape, Mode: promql.ModeRate, Window: 10, Inputs: []string{"a", "b", "c"}, Observations: obs}
	}
	return promql.Analyze(in(500, true)), promql.Analyze(in(600, false))
}

// TestHitrateWatchFrame: at a terminal a refresh redraws in place (cursor home, every line
// cleared to its end, the rest of the screen cleared) and shows each replica's state and
// deltas: a +10.0pp, b restarted, c gone.
func TestHitrateWatchFrame(t *testing.T) {
	first, second := watchRefreshes()
	var b bytes.Buffer
	tx := terminalText(&b, false, 200)
	at := time.Date(2026, 12, 1, 11, 20, 5, 0, time.UTC)
	if err := HitrateWatch(tx, Refresh{N: 2, At: at, Interval: 10 * time.Second, Report: second, Changes: promql.Changes(&first, second)}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "\x1b[H") || !strings.HasSuffix(out, "\x1b[J") {
		t.Errorf("frame does not redraw in place: %q", out)
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(strings.TrimPrefix(out, "\x1b[H"), "\x1b[J"), "\n") {
		if l != "" && !strings.HasSuffix(l, "\x1b[K\n") {
			t.Errorf("line not cleared to its end: %q", l)
		}
	}
	plain := strings.NewReplacer("\x1b[H", "", "\x1b[K", "", "\x1b[J", "").Replace(out)
	for _, want := range []string{
		"Prefix-cache hit rate, refresh 2 at 11:20:05 every 10s (Ctrl-C ends)",
		"rates over 10s; Δ since the last refresh",
		"REPLICA  STATE      MODEL  HIT RATE    Δ HIT",
		"a        -          -         60.0%  +10.0pp",
		"b        restarted  -         30.0%   +0.0pp",
		"c        gone       -             -        -",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("frame lacks %q:\n%s", want, plain)
		}
	}
}

// TestHitrateWatchJSON: piped, each refresh is one line of JSON with the hitrate document,
// the refresh's number, time and interval, and the changes.
func TestHitrateWatchJSON(t *testing.T) {
	first, second := watchRefreshes()
	var b bytes.Buffer
	at := time.Date(2026, 12, 1, 11, 20, 5, 0, time.UTC)
	for i, r := range []promql.Report{first, second} {
		var prev *promql.Report
		if i == 1 {
			prev = &first
		}
		if err := HitrateWatchJSON(&b, Refresh{N: i + 1, At: at.Add(time.Duration(i) * 10 * time.Second), Interval: 10 * time.Second, Report: r, Changes: promql.Changes(prev, r)}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per refresh:\n%s", len(lines), b.String())
	}
	var doc struct {
		SchemaVersion   int     `json:"schema_version"`
		Refresh         int     `json:"refresh"`
		Time            string  `json:"time"`
		IntervalSeconds float64 `json:"interval_seconds"`
		Replicas        []any   `json:"replicas"`
		Changes         []struct {
			Replica string `json:"replica"`
			State   string `json:"state"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || doc.Refresh != 2 || doc.Time != "2026-12-01T11:20:15Z" || doc.IntervalSeconds != 10 || len(doc.Replicas) != 2 {
		t.Errorf("line 2: %+v", doc)
	}
	states := map[string]string{}
	for _, c := range doc.Changes {
		states[c.Replica] = c.State
	}
	if states["a"] != "" || states["b"] != promql.StateRestarted || states["c"] != promql.StateGone {
		t.Errorf("states %v, want a unchanged, b restarted, c gone", states)
	}
}

// TestWatchHitrate: the loop waits out the baseline, notes failed refreshes and goes on
// without counting them (nor labelling them as the refresh that follows), writes one JSON line per refresh numbered from 1, and when ctx ends
// returns a streamed result holding the last refresh's findings.
func TestWatchHitrate(t *testing.T) {
	first, second := watchRefreshes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	next := func(ctx context.Context) (promql.Input, error) {
		calls++
		switch calls {
		case 1:
			return promql.Input{}, promql.ErrBaseline
		case 2:
			return promql.Input{}, errors.New("connection refused")
		case 3:
			return promql.Input{Source: first.Source, Mode: first.Mode}, nil
		case 4, 5:
			return promql.Input{}, errors.New("timeout")
		case 6:
			return promql.Input{Source: second.Source, Mode: second.Mode}, nil
		}
		cancel()
		return promql.Input{}, ctx.Err()
	}
	var out, errs bytes.Buffer
	progressed := false
	res, err := WatchHitrate(ctx, Watch{Interval: time.Millisecond, Next: next, Lines: true, Out: &out,
		Status: NewStatus(&errs), Progress: func(string) { progressed = true }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Streamed || res.Findings == nil {
		t.Errorf("result streamed %v, findings %v; want streamed with a non-nil list", res.Streamed, res.Findings)
	}
	// Failures are not numbered as the refresh that follows them: each names how many failed
	// in a row and the last refresh shown.
	for _, want := range []string{
		"(1 in a row; none shown yet): connection refused",
		"(1 in a row; last shown: refresh 1): timeout",
		"(2 in a row; last shown: refresh 1): timeout",
	} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr %q: want %q", errs.String(), want)
		}
	}
	if strings.Contains(errs.String(), "refresh 2:") {
		t.Errorf("stderr %q: a failure labelled as the next refresh", errs.String())
	}
	if progressed {
		t.Error("JSON Lines output called Progress")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	// Each line names the failures since the line before: one before refresh 1, two before 2.
	wantFailed := [][]string{{"connection refused"}, {"timeout", "timeout"}}
	for i, l := range lines {
		var doc struct {
			Refresh      int
			FailedBefore []struct{ Time, Error string } `json:"failed_before"`
		}
		if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.Refresh != i+1 {
			t.Errorf("line %d: refresh %d (%v), want %d", i+1, doc.Refresh, err, i+1)
		}
		var got []string
		for _, f := range doc.FailedBefore {
			if _, err := time.Parse(time.RFC3339Nano, f.Time); err != nil {
				t.Errorf("line %d: failure time %q: %v", i+1, f.Time, err)
			}
			got = append(got, f.Error)
		}
		if !slices.Equal(got, wantFailed[i]) {
			t.Errorf("line %d: failed_before %q, want %q", i+1, got, wantFailed[i])
		}
	}
}

// TestWatchFrameNamesFailures: at a terminal a frame replaces the screen, the failure notes
// on stderr with it, so the frame after failures names them by their times and the refresh
// they followed, and a frame after none says nothing of them.
func TestWatchFrameNamesFailures(t *testing.T) {
	_, second := watchRefreshes()
	at := time.Date(2026, 12, 1, 11, 20, 15, 0, time.UTC)
	failed := []Failure{{At: at.Add(-10 * time.Second), Err: "timeout"}, {At: at.Add(-5 * time.Second), Err: "503 Service Unavailable"}}
	var b bytes.Buffer
	if err := HitrateWatch(terminalText(&b, false, 120), Refresh{N: 3, At: at, Interval: 5 * time.Second, Report: second, Failed: failed}); err != nil {
		t.Fatal(err)
	}
	want := "WARNING 2 refreshes failed since refresh 2, at 11:20:05, 11:20:10: 503 Service Unavailable"
	if !strings.Contains(b.String(), want) {
		t.Errorf("frame lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := HitrateWatch(terminalText(&b, false, 120), Refresh{N: 3, At: at, Interval: 5 * time.Second, Report: second}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "failed") {
		t.Errorf("a frame after no failure mentions one:\n%s", b.String())
	}
}

// TestHitrateWatchJSONGolden pins the JSON names of a refresh line and its changes.
func TestHitrateWatchJSONGolden(t *testing.T) {
	first, second := watchRefreshes()
	var b bytes.Buffer
	at := time.Date(2026, 12, 1, 11, 20, 5, 0, time.UTC)
	if err := HitrateWatchJSON(&b, Refresh{N: 2, At: at, Interval: 10 * time.Second, Report: second, Changes: promql.Changes(&first, second)}); err != nil {
		t.Fatal(err)
	}
	golden(t, "hitrate/watch.jsonl", b.Bytes())
}
