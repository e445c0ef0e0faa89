package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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

// TestProfiles: the hidden --cpuprofile and --memprofile each write a profile (gzip-compressed,
// as pprof writes them) of the command they run, are not in the help, and a file they cannot
// create is a usage error before any work.
func TestProfiles(t *testing.T) {
	for _, name := range []string{"cpuprofile", "memprofile"} {
		t.Run(name, func(t *testing.T) {
			flag := "--" + name
			prof := filepath.Join(t.TempDir(), name)
			var out, errOut bytes.Buffer
			if got := run(context.Background(), []string{"lint", flag, prof, "--fail-on", "never", "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK {
				t.Fatalf("lint %s exited %d; stderr:\n%s", flag, got, errOut.String())
			}
			b, err := os.ReadFile(prof)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("the profile is %d bytes starting %q, want a gzip stream", len(b), b[:min(len(b), 2)])
			}
			out.Reset()
			if got := run(context.Background(), []string{"--help"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK || strings.Contains(out.String(), name) {
				t.Errorf("--help exited %d and shows %s: %v", got, name, strings.Contains(out.String(), name))
			}
			errOut.Reset()
			if got := run(context.Background(), []string{"lint", flag, filepath.Join(prof, "no", "such"), "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitUsage || !strings.Contains(errOut.String(), flag) {
				t.Errorf("an uncreatable profile exited %d, want %d naming %s; stderr:\n%s", got, exitUsage, flag, errOut.String())
			}
		})
	}
}
