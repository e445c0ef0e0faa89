package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/report"
)

// demoTap runs kvcheck tap against three emulated replicas on loopback for a few seconds: a
// seeded map-era one (vLLM 0.26) with a replay socket and occasional lost batches, a seeded
// array-era one (0.23), and an unseeded one with a high-water mark of 1 that drops bursts.
func demoTap(ctx context.Context, s streams, g *globalOptions) error {
	res, err := runDemoTap(ctx, report.NewStatus(s.ErrOut), &tapOptions{Duration: 3 * time.Second, DPRanks: 1, MaxBlocks: events.DefaultMaxBlocks,
		QueueSize: 65536, TokensPerSec: 20000, MaxMessage: events.DefaultMaxMessage})
	return g.write(s.Out, res, err)
}

// demoReplica is one emulated engine with its own prefix cache.
type demoReplica struct {
	pub    *fleet.Publisher
	cache  *fleet.Cache
	lossy  bool // loses a batch now and then (recoverable by replay)
	bursty bool // sends in bursts past its high-water mark
}

func runDemoTap(ctx context.Context, st *report.Status, o *tapOptions) (report.Result, error) {
	seed := "0"
	specs := []struct {
		cfg           fleet.PublisherConfig
		lossy, bursty bool
	}{
		{fleet.PublisherConfig{Version: "0.26.0", Seed: &seed, Replay: true, Topic: "kv@replica-a@demo"}, true, false},
		{fleet.PublisherConfig{Version: "0.23.0", Seed: &seed, Topic: "kv@replica-b@demo", DPRank: 1}, false, false},
		{fleet.PublisherConfig{Version: "0.26.0", HWM: 1, Topic: "kv@replica-c@demo"}, false, true},
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var reps []*demoReplica
	var args, replays []string
	for _, sp := range specs {
		p, err := fleet.NewPublisher(pctx, sp.cfg)
		if err != nil {
			return report.Result{}, fmt.Errorf("start emulated publisher: %w", err)
		}
		defer func() { _ = p.Close() }()
		reps = append(reps, &demoReplica{pub: p, cache: fleet.NewCache(400), lossy: sp.lossy, bursty: sp.bursty})
		args = append(args, p.Endpoint())
		replays = append(replays, p.ReplayEndpoint())
	}
	o.Replay = replays // only the first replica has a replay socket; "" means none
	if !o.hashSeedSet {
		o.HashSeed, o.hashSeedSet = seed, true
	}
	var wg sync.WaitGroup
	wg.Go(func() { demoTraffic(pctx, reps) })
	defer wg.Wait()
	defer stop()
	return runTap(ctx, st, o, args)
}

// demoTraffic sends requests that share a 64-token system prompt and differ after it,
// spread at random over the replicas, each of which caches 400 blocks (fleet.Cache: least
// recently used evicted first).
func demoTraffic(ctx context.Context, reps []*demoReplica) {
	rng := rand.New(rand.NewPCG(1, 2))
	system := make([]int64, 64)
	for i := range system {
		system[i] = int64(1000 + i)
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n%250 == 100 {
			// A cache reset now and then, as vLLM's reset_prefix_cache sends: chains start
			// again at token 0 while the tap watches, so every replica's hashes get checked.
			for _, r := range reps {
				r.cache.Reset()
				_ = r.pub.Publish(events.Event{Type: events.TypeAllBlocksCleared})
			}
			continue
		}
		r := reps[rng.IntN(len(reps))]
		user := rng.IntN(40)
		tokens := append([]int64{}, system...)
		for k := range 32 + 16*rng.IntN(4) {
			tokens = append(tokens, int64(5000+user*100+k))
		}
		batch, err := r.pub.Serve(r.cache, tokens)
		if err != nil {
			return
		}
		if len(batch) == 0 {
			continue
		}
		switch {
		case r.lossy && n%97 == 0:
			_ = r.pub.PublishLost(batch...)
		case r.bursty && n%50 == 0:
			for range 200 { // a burst of cache-clear batches past the high-water mark
				_ = r.pub.Publish(events.Event{Type: events.TypeBlockRemoved, BlockHashes: []events.Hash{{Form: events.HashInt, Value: 1}}})
			}
			_ = r.pub.Publish(batch...)
		default:
			_ = r.pub.Publish(batch...)
		}
	}
}
