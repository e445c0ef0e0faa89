// Command kvcheck measures whether prefix-aware routing pays off for a vLLM fleet.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdStreams(), os.Environ())
	stop()
	os.Exit(code)
}
