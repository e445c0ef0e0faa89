package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// exitInterrupted is the exit code base of a run stopped by a signal: 128 + the signal's
// number, as shells report a process killed by it (130 for SIGINT, 143 for SIGTERM).
const exitInterrupted = 128

// interrupted is the cause of a context cancelled by a signal.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return fmt.Sprintf("interrupted by %s", e.name()) }

func (e interrupted) name() string {
	if e.sig == syscall.SIGINT {
		return "SIGINT (Ctrl-C)"
	}
	if e.sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return e.sig.String()
}

// interruptContext returns a context cancelled, with an interrupted cause, at the first SIGINT or
// SIGTERM. It is signal.NotifyContext with a cause run can map to an exit code: after the
// first signal the default handling is back, so a second Ctrl-C ends a run that does not stop.
func interruptContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			sig, _ := s.(syscall.Signal)
			cancel(interrupted{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// interruption returns the signal that cancelled ctx, if one did.
func interruption(ctx context.Context) (interrupted, bool) {
	var in interrupted
	if ctx.Err() == nil || !errors.As(context.Cause(ctx), &in) {
		return in, false
	}
	return in, true
}
