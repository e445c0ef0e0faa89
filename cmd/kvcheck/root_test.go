package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, exitOK},
		{"unknown flag", []string{"--nope"}, exitUsage},
		{"unknown command", []string{"nope"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), tt.args, streams{Out: &out, ErrOut: &errOut}, nil)
			if got != tt.want {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, errOut.String())
			}
		})
	}
}

func TestFailOn(t *testing.T) {
	sev := func(ss ...finding.Severity) []finding.Finding {
		var out []finding.Finding
		for _, s := range ss {
			out = append(out, finding.Finding{Severity: s})
		}
		return out
	}
	if err := failOn("warning").check(sev(finding.Info)); err != nil {
		t.Errorf("info under --fail-on warning: got %v, want nil", err)
	}
	var fe findingsError
	if err := failOn("warning").check(sev(finding.Info, finding.Warning)); !errors.As(err, &fe) || fe.worst != finding.Warning {
		t.Errorf("warning under --fail-on warning: got %v, want a findings error at warning", err)
	}
	if err := failOn("warning").check([]finding.Finding{{Severity: finding.Error, Exempt: true}}); err != nil {
		t.Errorf("an exempt error (lint --fix rewrote it) under --fail-on warning: got %v, want nil", err)
	}
	if err := failOn("").check(sev(finding.Error)); err != nil {
		t.Errorf("no --fail-on: got %v, want nil", err)
	}
	if err := failOn("bogus").validate(); err == nil {
		t.Error("--fail-on bogus: got nil, want usage error")
	}
}

// Exit codes come from error types alone: cobra's argument errors are usage errors because the
// validators say so, and a runtime error whose text looks like a usage error (EINVAL is
// "invalid argument") stays a runtime error without the usage hint.
func TestExitCodesByType(t *testing.T) {
	if _, err := os.Stat("/proc/self/pagemap"); err != nil {
		t.Skip("no /proc/self/pagemap here")
	}
	tests := []struct {
		name     string
		args     []string
		want     int
		wantHint bool
	}{
		{"runtime EINVAL", []string{"hitrate", "--log", "/proc/self/pagemap"}, exitRuntime, false},
		{"lint without paths", []string{"lint"}, exitUsage, true},
		{"argument to a command that takes none", []string{"hitrate", "extra"}, exitUsage, true},
		{"sarif for a command without findings", []string{"metrics", "-o", "sarif"}, exitUsage, true},
		{"--watch refreshes are not SARIF", []string{"hitrate", "--file", "/nonexistent", "--watch", "-o", "sarif"}, exitUsage, true},
		{"unknown --fail-on before any work", []string{"hitrate", "--log", "/nonexistent", "--fail-on", "loud"}, exitUsage, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), tt.args, streams{Out: &out, ErrOut: &errOut}, nil)
			if got != tt.want {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, errOut.String())
			}
			if hint := strings.Contains(errOut.String(), "--help' for usage"); hint != tt.wantHint {
				t.Errorf("run(%q): usage hint shown = %v, want %v; stderr:\n%s", tt.args, hint, tt.wantHint, errOut.String())
			}
		})
	}
}
