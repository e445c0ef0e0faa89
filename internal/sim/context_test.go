package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSimulateContext: a replay stops with the context's error once it ends (assess's router
// ranking replays with it, so Ctrl-C does not wait for replays of millions of requests), and
// gives Simulate's result when it does not.
func TestSimulateContext(t *testing.T) {
	tr := randomTraffic(3, 3*watchEvery, 16)
	c := tinyConfig(4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SimulatePolicy(ctx, tr, c, roundRobinInfo); !errors.Is(err, context.Canceled) {
		t.Fatalf("replay with an ended context: %v, want context.Canceled", err)
	}
	a, err := SimulatePolicy(context.Background(), tr, c, roundRobinInfo)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(tr, c, "round-robin")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(b, a); d != "" {
		t.Errorf("SimulateContext differs from Simulate (-Simulate +SimulateContext):\n%s", d)
	}
}
