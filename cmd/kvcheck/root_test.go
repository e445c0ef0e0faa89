package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
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
