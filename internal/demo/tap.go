package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

// HashSeed is the PYTHONHASHSEED the seeded publishers hash with.
const HashSeed = "0"

// Publishers are the tap section's three emulated KV-event publishers on loopback, with traffic
// running: a seeded map-era one (vLLM 0.26) with a replay socket and occasional lost batches, a
// seeded array-era one (0.23), and an unseeded one with a high-water mark of 1 that drops bursts.
type Publishers struct {
	// Endpoints are the publishers' ZMQ endpoints; Replays their replay endpoints, "" for none.
	Endpoints, Replays []string

	reps []*replica
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// replica is one emulated engine with its own prefix cache.
type replica struct {
	pub    *fleet.Publisher
	cache  *fleet.Cache
	lossy  bool // loses a batch now and then (recoverable by replay)
	bursty bool // sends in bursts past its high-water mark
}

// StartPublishers starts the publishers and their traffic until ctx ends or Close is called.
func StartPublishers(ctx context.Context) (*Publishers, error) {
	seed := HashSeed
	specs := []struct {
		cfg           fleet.PublisherConfig
		lossy, bursty bool
	}{
		{fleet.PublisherConfig{Version: "0.26.0", Seed: &seed, Replay: true, Topic: "kv@replica-a@demo"}, true, false},
		{fleet.PublisherConfig{Version: "0.23.0", Seed: &seed, Topic: "kv@replica-b@demo", DPRank: 1}, false, false},
		{fleet.PublisherConfig{Version: "0.26.0", HWM: 1, Topic: "kv@replica-c@demo"}, false, true},
	}
	pctx, stop := context.WithCancel(ctx)
	p := &Publishers{stop: stop}
	for _, sp := range specs {
		pub, err := fleet.NewPublisher(pctx, sp.cfg)
		if err != nil {
			_ = p.Close() // the start failed; that error is the one to report
			return nil, fmt.Errorf("start emulated publisher: %w", err)
		}
		p.reps = append(p.reps, &replica{pub: pub, cache: fleet.NewCache(400), lossy: sp.lossy, bursty: sp.bursty})
		p.Endpoints = append(p.Endpoints, pub.Endpoint())
		p.Replays = append(p.Replays, pub.ReplayEndpoint())
	}
	p.wg.Go(func() { traffic(pctx, p.reps) })
	return p, nil
}

// Close stops the traffic and closes the publishers.
func (p *Publishers) Close() error {
	p.stop()
	p.wg.Wait()
	var errs []error
	for _, r := range p.reps {
		errs = append(errs, r.pub.Close())
	}
	return errors.Join(errs...)
}

// traffic sends requests that share a 64-token system prompt and differ after it, spread at
// random over the replicas, each of which caches 400 blocks (fleet.Cache: least recently used
// evicted first).
func traffic(ctx context.Context, reps []*replica) {
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

// Tap points a tap at the publishers: their endpoints, the first one's replay socket, and
// the seeded publishers' HashSeed unless t already names a seed.
func (p *Publishers) Tap(t events.TapRun) events.TapRun {
	t.Endpoints.Dial, t.Endpoints.Replay = p.Endpoints, p.Replays
	if t.Options.HashSeed == nil {
		seed := HashSeed
		t.Options.HashSeed = &seed
	}
	return t
}
