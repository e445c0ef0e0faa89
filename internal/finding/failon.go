package finding

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// FailOn is the value of a --fail-on flag: a severity, or empty or "never" for never failing
// on findings.
type FailOn string

// Check returns a *ThresholdError when the worst finding that counts (Worst) reaches the
// threshold, and a usage error for a value that is not a severity.
func (f FailOn) Check(fs []Finding) error {
	if f == "" || f == "never" {
		return nil
	}
	threshold, err := ParseSeverity(string(f))
	if err != nil {
		return usage.Errorf("--fail-on: %v", err)
	}
	if worst, any := Worst(fs); any && worst >= threshold {
		return &ThresholdError{Worst: worst, Threshold: threshold}
	}
	return nil
}

// Validate rejects a value that is not a severity before any work is done.
func (f FailOn) Validate() error { return f.Check(nil) }

// ThresholdError reports that findings reached --fail-on: kvcheck exits 3 on it by its type.
type ThresholdError struct {
	Worst, Threshold Severity
	// ByDefault is set when the threshold is the command's default, not a --fail-on given.
	ByDefault bool
	// From is where a config file set the threshold (file:line), when it did.
	From string
}

func (e *ThresholdError) Error() string {
	level := fmt.Sprintf("--fail-on %s", e.Threshold)
	switch {
	case e.From != "":
		level = fmt.Sprintf("fail-on %s (%s)", e.Threshold, e.From)
	case e.ByDefault:
		level += ", the default"
	}
	return fmt.Sprintf("findings at or above %s (the worst is %s)", level, e.Worst)
}
