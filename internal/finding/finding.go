// Package finding is kvcheck's one finding record and its severity scale. Every analysis reports
// with it: hitrate (promql), lint, audit, tap (events), simulate (sim) and assess (advise) return
// findings or domain records that embed one; the report package writes them in every format and
// --fail-on is decided from them once, by Worst.
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

// Finding is one observation with a stable code: the one finding record of kvcheck. Every
// analysis (hitrate, lint, audit, tap, simulate, assess) returns it, or a domain record that
// embeds it; the report package renders it in every format and computes --fail-on from it.
//
// Subject names what the finding is about (a replica, a file, a publisher, "fleet") when it
// applies. Source names the analysis a finding was passed on from (assess combines several);
// Fix says what to do about it.
//
// File, Line and Column locate a finding inside an input file (lint, the template audit), for
// SARIF and GitHub annotations; Pointer is the JSON pointer there (RFC 6901). They, Rule,
// Fixable, Exempt and Properties are not part of the finding's JSON: each command's JSON document
// chooses which of them it shows and under which names.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Subject  string   `json:"subject,omitempty"`
	Source   string   `json:"source,omitempty"`
	Fix      string   `json:"fix,omitempty"`

	File    string `json:"-"`
	Line    int    `json:"-"`
	Column  int    `json:"-"`
	Pointer string `json:"-"`
	// Rule is the id of the documented rule a finding applies, when its code is not enough (a
	// router facts table id such as LL-02, for lint's config checks).
	Rule string `json:"-"`
	// Fixable says kvcheck has an exact rewrite for the finding (lint --fix).
	Fixable bool `json:"-"`
	// Exempt says the finding is reported but does not count for --fail-on: lint --fix rewrote
	// it in this run, or assess's verdict does not hinge on it.
	Exempt bool `json:"-"`
	// Properties are extra named facts machine formats carry (SARIF result properties).
	Properties map[string]string `json:"-"`
	// Edits are the exact rewrite of a Fixable finding in File as it was read (SARIF fixes);
	// empty when the rewrite is not known edit by edit, or was already written.
	Edits []Edit `json:"-"`
	// Baseline is "new" or "unchanged" when the run was compared with a baseline (lint
	// --baseline): an unchanged finding is Exempt. Empty without one.
	Baseline string `json:"-"`
}

// Edit replaces the bytes [Start, End) of a file with Text; the same span in 1-based lines
// and character columns is StartLine:StartColumn to EndLine:EndColumn, the end exclusive (an
// insertion has Start == End).
type Edit struct {
	Start, End             int
	StartLine, StartColumn int
	EndLine, EndColumn     int
	Text                   string
}

// Worst returns the highest severity among the findings that count (not Exempt) and whether
// there was any.
func Worst(fs []Finding) (Severity, bool) {
	worst, any := Info, false
	for _, f := range fs {
		if f.Exempt {
			continue
		}
		if !any || f.Severity > worst {
			worst, any = f.Severity, true
		}
	}
	return worst, any
}
