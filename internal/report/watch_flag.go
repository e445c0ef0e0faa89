package report

import (
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// DefaultWatch is the refresh interval of a bare --watch.
const DefaultWatch = 10 * time.Second

// WatchInterval reads --watch [INTERVAL] when given: the flag's own value (--watch=5s), or
// the one argument after a bare --watch (--watch 5s), in a format a watch writes (text, or
// JSON Lines). Anything else is a usage error; without --watch no argument is taken.
func WatchInterval(format Format, given bool, value time.Duration, args []string) (time.Duration, error) {
	switch {
	case !given && len(args) > 0:
		return 0, usage.Errorf("unexpected argument %q (an interval goes after --watch)", args[0])
	case !given:
		return 0, nil
	case len(args) > 1:
		return 0, usage.Errorf("--watch takes one interval, not %d arguments", len(args))
	case len(args) == 1:
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return 0, usage.Errorf("--watch %q: give an interval such as 5s or 1m", args[0])
		}
		value = d
	}
	if value <= 0 {
		return 0, usage.Errorf("--watch %s: the interval must be positive", value)
	}
	if format != FormatText && format != FormatJSON {
		return 0, usage.Errorf("--watch writes text or JSON Lines, not %s: a report for %s is one run without --watch", format, format)
	}
	return value, nil
}
