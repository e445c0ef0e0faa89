package cli

import (
	"strings"
	"testing"
	"time"
)

// TestParseTime reads each form --since and --until accept, and refuses a negative duration
// and a form it does not know with the forms it wants.
func TestParseTime(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"24h":                       time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		"90m":                       time.Date(2026, 12, 2, 8, 30, 0, 0, time.UTC),
		"2026-11-30":                time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"2026-11-30 09:15:00":       time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC),
		"2026-11-30T09:15:00":       time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC),
		"2026-11-30T09:15:00+01:00": time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC),
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-24h", "yesterday", "30/11/2026"} {
		if _, err := ParseTime(in, now); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseTime(%q): %v, want an error naming it", in, err)
		}
	}
}

// TestDuration reads Prometheus durations (days included) and prints them as Prometheus does.
func TestDuration(t *testing.T) {
	var d Duration
	if err := d.Set("7d"); err != nil || time.Duration(d) != 7*24*time.Hour || d.String() != "1w" {
		t.Errorf("Set(7d): %v, %v (%s); want a week printed as 1w", err, time.Duration(d), d.String())
	}
	if err := d.Set("7 days"); err == nil || !strings.Contains(err.Error(), "7d, 36h or 90m") {
		t.Errorf("Set(7 days): %v, want the forms it accepts", err)
	}
}
