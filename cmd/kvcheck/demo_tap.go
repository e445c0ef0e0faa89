package main

import (
	"context"
	"time"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/report"
)

// demoTap runs kvcheck tap against the demo's three emulated publishers on loopback for a few
// seconds (demo.StartPublishers says what each does).
func demoTap(ctx context.Context, s streams, g *globalOptions) error {
	res, err := runDemoTap(ctx, report.NewStatus(s.ErrOut), &tapOptions{Duration: 3 * time.Second, DPRanks: 1, MaxBlocks: events.DefaultMaxBlocks,
		QueueSize: 65536, TokensPerSec: 20000, MaxMessage: events.DefaultMaxMessage})
	return g.write(s.Out, res, err)
}

func runDemoTap(ctx context.Context, st *report.Status, o *tapOptions) (report.Result, error) {
	p, err := demo.StartPublishers(ctx)
	if err != nil {
		return report.Result{}, err
	}
	// Loopback publishers that fail to close do not change what the tap saw.
	defer func() { _ = p.Close() }()
	o.Replay = p.Replays // only the first replica has a replay socket; "" means none
	if !o.hashSeedSet {
		o.HashSeed, o.hashSeedSet = demo.HashSeed, true
	}
	return runTap(ctx, st, o, p.Endpoints)
}
