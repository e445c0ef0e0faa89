// Package finding defines the severity scale and the finding record that every analysis returns.
package finding

import (
	"fmt"
	"strings"
)

// Severity ranks a finding; higher is worse.
type Severity int

// The severities, in increasing order.
const (
	Info Severity = iota
	Warning
	Error
)

// String returns the lower-case name used in text and JSON output.
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText renders the severity as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity parses "info", "warning" or "error" (case-insensitive).
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "info":
		return Info, nil
	case "warning", "warn":
		return Warning, nil
	case "error":
		return Error, nil
	}
	return Info, fmt.Errorf("unknown severity %q: use error, warning or info", s)
}

// Finding is one observation with a stable code. Analyses embed or fill it; the report package
// renders it. Subject names what the finding is about (a replica, a file, a publisher) when it
// applies.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Subject  string   `json:"subject,omitempty"`
}

// Worst returns the highest severity among fs and whether there was any finding.
func Worst(fs []Finding) (Severity, bool) {
	worst, any := Info, false
	for _, f := range fs {
		if !any || f.Severity > worst {
			worst, any = f.Severity, true
		}
	}
	return worst, any
}
