// Package cli holds what kvcheck's command needs from the process around it and is not a
// command: signals and the exit codes they give, a standard input that stops at the first signal,
// the CPU profile, the source tree's root and the command-line value types. cmd/kvcheck wires
// them to cobra; nothing here knows a subcommand.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ExitInterrupted is the exit code base of a run stopped by a signal: 128 + the signal's
// number, as shells report a process killed by it (130 for SIGINT, 143 for SIGTERM).
const ExitInterrupted = 128

// Interrupted is the cause of a context cancelled by a signal.
type Interrupted struct{ Sig syscall.Signal }

func (e Interrupted) Error() string { return fmt.Sprintf("interrupted by %s", e.name()) }

func (e Interrupted) name() string {
	if e.Sig == syscall.SIGINT {
		return "SIGINT (Ctrl-C)"
	}
	if e.Sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return e.Sig.String()
}

// InterruptContext returns a context cancelled, with an interrupted cause, at the first SIGINT or
// SIGTERM. It is signal.NotifyContext with a cause run can map to an exit code: after the
// first signal the default handling is back, so a second Ctrl-C ends a run that does not stop.
func InterruptContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			sig, _ := s.(syscall.Signal)
			cancel(Interrupted{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// Interruption returns the signal that cancelled ctx, if one did.
func Interruption(ctx context.Context) (Interrupted, bool) {
	var in Interrupted
	if ctx.Err() == nil || !errors.As(context.Cause(ctx), &in) {
		return in, false
	}
	return in, true
}

// Grace is how long a run has, after the signal that interrupted it, to stop on its own
// and print what it has (the readers of pipes and stdin stop at once; a simulation stops between
// requests).
const Grace = 5 * time.Second

// RunInterruptible returns run's exit code, and ends a run that does not return within grace of
// the signal that cancelled ctx: some reads cannot be interrupted (open(2) of a named pipe no one
// writes, given as --requests, --trace, --file, --from, a baseline or a config; a device or a
// network file system that does not answer), and the first SIGTERM of a CI runner must end the
// run all the same (issue 23 item 3: those runs ignored it). It then says so on errOut and
// returns 128 + the signal, as a run that stopped by itself does; what the run had not yet
// printed is lost. A context cancelled otherwise waits for run.
func RunInterruptible(ctx context.Context, run func() int, errOut io.Writer, grace time.Duration) int {
	done := make(chan int, 1)
	go func() { done <- run() }()
	select {
	case code := <-done:
		return code
	case <-ctx.Done():
	}
	in, ok := Interruption(ctx)
	if !ok {
		return <-done
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case code := <-done:
		return code
	case <-t.C:
	}
	_, _ = fmt.Fprintf(errOut, "kvcheck: %s; a read did not stop within %s of it (a named pipe no one writes, a device or a file system that does not answer): exiting without the output not yet written\n", in, grace)
	return ExitInterrupted + int(in.Sig)
}
