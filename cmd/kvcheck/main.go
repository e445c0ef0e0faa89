// Command kvcheck measures whether prefix-aware routing pays off for a vLLM fleet.
package main

import (
	"context"
	"os"
)

func main() {
	ctx, stop := interruptContext(context.Background())
	code := runInterruptible(ctx, func() int { return run(ctx, os.Args[1:], stdStreams(), os.Environ()) }, os.Stderr, interruptGrace)
	stop()
	os.Exit(code)
}
