package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/litellmdb"
)

// bindRequestSource registers the flags that window a request log read from LiteLLM's
// database (audit, simulate, assess: --requests postgres://...) into o.
func bindRequestSource(fs *pflag.FlagSet, o *audit.SourceOptions) {
	fs.Var(&timeFlag{t: &o.Window.Since}, "since", `--requests postgres://...: read rows whose startTime is at or after this: an RFC 3339 time, a date (2006-01-02, UTC), or a duration before now ("24h")`)
	fs.Var(&timeFlag{t: &o.Window.Until}, "until", "--requests postgres://...: read rows whose startTime is before this (same forms as --since)")
	fs.IntVar(&o.Window.MaxRows, "max-rows", 0, fmt.Sprintf("--requests postgres://...: the most rows to read, in startTime order (0: %d)", litellmdb.DefaultMaxRows))
}

// timeFlag is a point in time given as RFC 3339, a date, or a duration before now.
type timeFlag struct {
	t   *time.Time
	raw string
}

func (f *timeFlag) String() string { return f.raw }
func (f *timeFlag) Type() string   { return "time" }

func (f *timeFlag) Set(s string) error {
	t, err := parseTimeFlag(s, time.Now())
	if err != nil {
		return err
	}
	*f.t, f.raw = t, s
	return nil
}

// parseTimeFlag reads s as RFC 3339, a date or a date and time in UTC, or a duration before now.
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration before now is positive (24h)", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-11-30T09:00:00Z), a date (2026-11-30, UTC) or a duration before now (24h)", s)
}
