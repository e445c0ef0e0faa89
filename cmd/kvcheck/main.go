// Command kvcheck measures whether prefix-aware routing pays off for a vLLM fleet.
package main

import (
	"context"
	"os"
)

func main() {
	ctx, stop := interruptContext(context.Background())
	code := run(ctx, os.Args[1:], stdStreams(), os.Environ())
	stop()
	os.Exit(code)
}
