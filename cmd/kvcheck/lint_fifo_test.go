//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// blockedInFIFOOpen reports whether a thread of process pid waits in the kernel for a named
// pipe's other end (open(2) of a FIFO sleeps in wait_for_partner).
func blockedInFIFOOpen(pid int) bool {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, w := range tasks {
		if b, err := os.ReadFile(w); err == nil && strings.TrimSpace(string(b)) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// awaitFIFOOpen waits until cmd blocks in open(2) of a named pipe.
func awaitFIFOOpen(ctx context.Context, t *testing.T, cmd *exec.Cmd, errOut *bytes.Buffer) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !blockedInFIFOOpen(cmd.Process.Pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("kvcheck never opened the pipe; stderr %s", errOut.String())
		case <-tick.C:
		}
	}
}

// termAndWait sends cmd SIGTERM and fails the test unless it then exits 143 before ctx ends.
func termAndWait(ctx context.Context, t *testing.T, cmd *exec.Cmd, out, errOut *bytes.Buffer) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("%v (%v), want exit 143; stdout %s stderr %s", err, ctx.Err(), out.String(), errOut.String())
	}
}

// TestLintFIFOSignal runs kvcheck lint on a named pipe in a real child process and sends it
// SIGTERM while it waits: in open(2) for a writer that never comes, and in read(2) from a
// writer that never writes. Both runs end with 143 and say they were interrupted (the open
// blocked and ignored SIGTERM).
func TestLintFIFOSignal(t *testing.T) {
	bin, err := exec.LookPath("kvcheck")
	if err != nil {
		t.Skipf("kvcheck is not on PATH (testscript.Main puts it there): %v", err)
	}
	for _, tc := range []string{"open", "read"} {
		t.Run(tc, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "rules.yaml")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out, errOut bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, "lint", fifo)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc == "open" {
				awaitFIFOOpen(ctx, t, cmd, &errOut)
			} else {
				// The write end's open returns once kvcheck has the read end open; no byte
				// is written, so its read waits.
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = w.Close() }()
			}
			termAndWait(ctx, t, cmd, &out, &errOut)
			if !strings.Contains(out.String(), "interrupted") || !strings.Contains(errOut.String(), "SIGTERM") {
				t.Errorf("stdout %q stderr %q, want the pipe marked interrupted and SIGTERM named", out.String(), errOut.String())
			}
		})
	}
}

// TestInputFIFOSignal: every other input a command opens by name (request logs, traces,
// recordings, /metrics dumps, vLLM logs, target lists, baselines, ignore files and kvcheck
// configs, HTTP client configs) is opened with open(2), which waits for a named pipe's writer
// and cannot be interrupted: before, each of these runs ignored SIGTERM and waited for ever. The
// run now ends cli.Grace after the first SIGTERM with 143 and says why
// (cli.RunInterruptible).
func TestInputFIFOSignal(t *testing.T) {
	bin, err := exec.LookPath("kvcheck")
	if err != nil {
		t.Skipf("kvcheck is not on PATH (testscript.Main puts it there): %v", err)
	}
	for _, args := range [][]string{
		{"audit", "--requests", "FIFO"},
		{"simulate", "--trace", "FIFO", "--format", "mooncake"},
		{"simulate", "--recording", "FIFO"},
		{"assess", "--requests", "FIFO"},
		{"hitrate", "--file", "FIFO"},
		{"hitrate", "--log", "FIFO"},
		{"hitrate", "--targets", "FIFO"},
		{"tap", "--from", "FIFO"},
		{"lint", "--baseline", "FIFO", "../../testdata/lint"},
		{"lint", "--ignore-file", "FIFO", "../../testdata/lint"},
		{"lint", "--config", "FIFO", "../../testdata/lint"},
		{"hitrate", "--http-config-file", "FIFO", "--prometheus", "http://127.0.0.1:1"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			fifo := filepath.Join(t.TempDir(), "input")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			for i, a := range args {
				if a == "FIFO" {
					args[i] = fifo
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out, errOut bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			awaitFIFOOpen(ctx, t, cmd, &errOut)
			termAndWait(ctx, t, cmd, &out, &errOut)
			if !strings.Contains(errOut.String(), "SIGTERM") {
				t.Errorf("stderr %q, want SIGTERM named", errOut.String())
			}
		})
	}
}
