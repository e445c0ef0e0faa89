// Command kvcheck measures whether prefix-aware routing pays off for a vLLM fleet.
package main

import (
	"context"
	"os"

	"github.com/kvcheck/kvcheck/internal/cli"
)

func main() {
	ctx, stop := cli.InterruptContext(context.Background())
	code := cli.RunInterruptible(ctx, func() int { return run(ctx, os.Args[1:], stdStreams(), os.Environ()) }, os.Stderr, cli.Grace)
	stop()
	os.Exit(code)
}
