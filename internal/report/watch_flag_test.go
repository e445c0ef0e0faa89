package report

import (
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

func TestWatchInterval(t *testing.T) {
	for _, c := range []struct {
		name   string
		format Format
		given  bool
		value  time.Duration
		args   []string
		want   time.Duration
		err    string
	}{
		{"no watch", FormatText, false, DefaultWatch, nil, 0, ""},
		{"bare", FormatText, true, DefaultWatch, nil, DefaultWatch, ""},
		{"flag value", FormatJSON, true, 5 * time.Second, nil, 5 * time.Second, ""},
		{"argument after", FormatText, true, DefaultWatch, []string{"1m"}, time.Minute, ""},
		{"argument without watch", FormatText, false, DefaultWatch, []string{"5s"}, 0, `unexpected argument "5s"`},
		{"two arguments", FormatText, true, DefaultWatch, []string{"5s", "6s"}, 0, "one interval, not 2"},
		{"not a duration", FormatText, true, DefaultWatch, []string{"often"}, 0, `--watch "often"`},
		{"zero", FormatText, true, 0, nil, 0, "must be positive"},
		{"sarif", FormatSARIF, true, DefaultWatch, nil, 0, "--watch writes text or JSON Lines, not sarif"},
	} {
		got, err := WatchInterval(c.format, c.given, c.value, c.args)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %s, %v; want %s", c.name, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !usage.Is(err)):
			t.Errorf("%s: %v, want a usage error containing %q", c.name, err, c.err)
		}
	}
}
