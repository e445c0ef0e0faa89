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

// TestMemProfile: the hidden --memprofile writes a heap profile (gzip-compressed) of the
// command it runs, is not in the help, and a file it cannot create is a usage error before any
// work.
func TestMemProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "mem.prof")
	var out, errOut bytes.Buffer
	if got := run(context.Background(), []string{"lint", "--memprofile", prof, "--fail-on", "never", "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK {
		t.Fatalf("lint --memprofile exited %d; stderr:\n%s", got, errOut.String())
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the profile is %d bytes starting %q, want a gzip stream", len(b), b[:min(len(b), 2)])
	}
	out.Reset()
	if got := run(context.Background(), []string{"--help"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK || strings.Contains(out.String(), "memprofile") {
		t.Errorf("--help exited %d and shows memprofile: %v", got, strings.Contains(out.String(), "memprofile"))
	}
	errOut.Reset()
	if got := run(context.Background(), []string{"lint", "--memprofile", filepath.Join(prof, "no", "such"), "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitUsage || !strings.Contains(errOut.String(), "--memprofile") {
		t.Errorf("an uncreatable profile exited %d, want %d naming --memprofile; stderr:\n%s", got, exitUsage, errOut.String())
	}
}

// TestCPUProfile: the hidden --cpuprofile writes a profile (gzip-compressed, as pprof writes
// them) of the command it runs, is not in the help, and a file it cannot create is a usage
// error before any work.
func TestCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errOut bytes.Buffer
	if got := run(context.Background(), []string{"lint", "--cpuprofile", prof, "--fail-on", "never", "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK {
		t.Fatalf("lint --cpuprofile exited %d; stderr:\n%s", got, errOut.String())
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the profile is %d bytes starting %q, want a gzip stream", len(b), b[:min(len(b), 2)])
	}
	out.Reset()
	if got := run(context.Background(), []string{"--help"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitOK || strings.Contains(out.String(), "cpuprofile") {
		t.Errorf("--help exited %d and shows cpuprofile: %v", got, strings.Contains(out.String(), "cpuprofile"))
	}
	errOut.Reset()
	if got := run(context.Background(), []string{"lint", "--cpuprofile", filepath.Join(prof, "no", "such"), "../../testdata/lint"}, streams{Out: &out, ErrOut: &errOut}, nil); got != exitUsage || !strings.Contains(errOut.String(), "--cpuprofile") {
		t.Errorf("an uncreatable profile exited %d, want %d naming --cpuprofile; stderr:\n%s", got, exitUsage, errOut.String())
	}
}
