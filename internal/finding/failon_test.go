package finding

import (
	"errors"
	"testing"

	"github.com/kvcheck/kvcheck/internal/usage"
)

func TestFailOn(t *testing.T) {
	sev := func(ss ...Severity) []Finding {
		fs := make([]Finding, len(ss))
		for i, s := range ss {
			fs[i] = Finding{Severity: s}
		}
		return fs
	}
	tests := []struct {
		name  string
		f     FailOn
		fs    []Finding
		worst Severity // the ThresholdError's, when exceeded
		want  bool     // exceeded
	}{
		{"below", "warning", sev(Info), 0, false},
		{"at", "warning", sev(Info, Warning), Warning, true},
		{"above", "info", sev(Error, Warning), Error, true},
		{"exempt findings do not count", "warning", []Finding{{Severity: Error, Exempt: true}}, 0, false},
		{"empty never fails", "", sev(Error), 0, false},
		{"never", "never", sev(Error), 0, false},
		{"none", "info", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Check(tt.fs)
			var te *ThresholdError
			switch {
			case !tt.want && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.want && (!errors.As(err, &te) || te.Worst != tt.worst || te.Threshold.String() != string(tt.f)):
				t.Fatalf("Check = %v, want a ThresholdError at %s, worst %s", err, tt.f, tt.worst)
			}
		})
	}
	if err := FailOn("bogus").Validate(); !usage.Is(err) {
		t.Errorf("Validate(bogus) = %v, want a usage error", err)
	}
	e := &ThresholdError{Worst: Error, Threshold: Warning, ByDefault: true}
	if want := "findings at or above --fail-on warning, the default (the worst is error)"; e.Error() != want {
		t.Errorf("message %q, want %q", e.Error(), want)
	}
}
