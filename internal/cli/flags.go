package cli

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// Duration is a flag value in Prometheus duration syntax (7d, 1h30m).
type Duration model.Duration

// String prints the duration the way Prometheus does (7d prints as 1w).
func (d *Duration) String() string { return model.Duration(*d).String() }

// Type names the flag's value in --help.
func (d *Duration) Type() string { return "duration" }

// Set parses a Prometheus duration.
func (d *Duration) Set(s string) error {
	v, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: write a duration such as 7d, 36h or 90m", s)
	}
	*d = Duration(v)
	return nil
}

// Time is a flag value for a point in time given as RFC 3339, a date, or a duration before
// now; it sets *T.
type Time struct {
	T   *time.Time
	raw string
}

func (f *Time) String() string { return f.raw }
func (f *Time) Type() string   { return "time" }

func (f *Time) Set(s string) error {
	t, err := ParseTime(s, time.Now())
	if err != nil {
		return err
	}
	*f.T, f.raw = t, s
	return nil
}

// ParseTime reads s as RFC 3339, a date or a date and time in UTC, or a duration before now.
func ParseTime(s string, now time.Time) (time.Time, error) {
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
