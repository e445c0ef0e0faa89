package events

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kvcheck/kvcheck/internal/secret"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Status is where a tap says what it is doing: a note when it starts and progress while it
// runs (report.Status is one).
type Status interface {
	Note(format string, args ...any)
	Progress(format string, args ...any)
	Done()
}

// TapRun is one kvcheck tap: recordings to analyse (From), or publishers to tap live for
// Duration, recording to Record when it is set.
type TapRun struct {
	From      []string
	Endpoints Endpoints
	Topic     string
	// QueueSize and MaxMessage bound a live tap (Config); Logger gets its warnings.
	QueueSize  int
	MaxMessage uint64
	Logger     *slog.Logger
	Record     string
	Duration   time.Duration
	Options    Options
}

// Check returns a usage error for a tap that cannot run as given, before any socket is opened.
func (t TapRun) Check() error {
	live := len(t.Endpoints.Dial) > 0 || len(t.Endpoints.Listen) > 0
	switch {
	case len(t.From) > 0 && live:
		return usage.Errorf("give endpoints or --from recordings, not both")
	case len(t.From) == 0 && !live:
		return usage.Errorf("give at least one ENDPOINT (e.g. tcp://10.0.0.5:5557), --listen ADDR or --from FILE")
	case t.Endpoints.Ranks < 1:
		return usage.Errorf("--dp-ranks must be at least 1, got %d", t.Endpoints.Ranks)
	case t.Duration <= 0:
		return usage.Errorf("--duration must be positive, got %s", t.Duration)
	case t.Options.MaxBlocks < 1:
		return usage.Errorf("--max-blocks must be positive, got %d", t.Options.MaxBlocks)
	case t.MaxMessage < 1<<10:
		return usage.Errorf("--max-message must be at least 1024 bytes, got %d", t.MaxMessage)
	case t.Record != "" && !live:
		return usage.Errorf("--record needs endpoints to tap")
	}
	return nil
}

// NoneConnectedError is a live tap that reached none of its endpoints: a failed run, since
// every number is zero because nothing was measured, not because the stream is quiet.
type NoneConnectedError struct{ Endpoints int }

func (e *NoneConnectedError) Error() string {
	return fmt.Sprintf("tap: none of the %d endpoints could be reached, nothing was measured (see the findings)", e.Endpoints)
}

// Run is kvcheck tap: it checks t, taps (or reads the recordings) in order with warnings
// logged to logs, and returns the report. A live tap that connected to nothing returns its
// report with a *NoneConnectedError.
func (t TapRun) Run(ctx context.Context, st Status, logs io.Writer) (*Report, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	t.Options.MaxMessage, t.Options.Ordered = t.MaxMessage, true
	// A record is one write: an endpoint's credentials, if it names any, are masked in it.
	t.Logger = slog.New(slog.NewTextHandler(secret.Writer{W: logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := RunTap(ctx, st, t)
	if err == nil && len(t.From) == 0 && r.NoneConnected() {
		err = &NoneConnectedError{Endpoints: len(r.Publishers)}
	}
	return r, err
}

// RunTap analyses the recordings, or taps the publishers into a new Collector for the
// duration (or until ctx ends), and returns the report with the endpoint collisions. An
// endpoint spec that cannot work is an *EndpointError.
func RunTap(ctx context.Context, st Status, t TapRun) (*Report, error) {
	var r *Report
	var err error
	if len(t.From) > 0 {
		r, err = ReportRecordings(ctx, t.From, t.Topic, t.Options)
	} else {
		r, err = tapLive(ctx, st, t, NewCollector(t.Options))
	}
	if err != nil {
		return nil, err
	}
	r.Findings = append(r.Findings, t.Endpoints.Collisions()...)
	return r, nil
}

// tapLive taps the publishers into c for t.Duration (or until ctx ends), recording with
// t.Record, and returns c's report for the time tapped.
func tapLive(ctx context.Context, st Status, t TapRun, c *Collector) (_ *Report, err error) {
	sources, err := t.Endpoints.Sources()
	if err != nil {
		return nil, err
	}
	cfg := Config{Sources: sources, Topic: t.Topic, QueueSize: t.QueueSize, MaxMessage: t.MaxMessage, Logger: t.Logger}
	if t.Record != "" {
		rec, closeRec, err := CreateRecording(t.Record)
		if err != nil {
			return nil, err
		}
		defer func() {
			if cerr := closeRec(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		cfg.Recorder = rec
	}
	st.Note("tapping %d publishers for %s (Ctrl-C stops early and prints the report)", len(sources), t.Duration)
	dur, err := TapFor(ctx, cfg, c, t.Duration, func(elapsed time.Duration, received uint64) {
		st.Progress("%s of %s, %d messages received", elapsed.Truncate(time.Second), t.Duration, received)
	})
	st.Done()
	if err != nil {
		return nil, err
	}
	return c.Report(dur), nil
}
