package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Options configure a fleet.
type Options struct {
	// Replicas configures each replica; see Uniform for n alike.
	Replicas []Config
	// Tick, when positive, steps every replica StepsPerTick times per tick in the background
	// once the fleet starts. Zero leaves stepping to the caller (Fleet.Step), for exact tests.
	Tick time.Duration
	// StepsPerTick defaults to 1.
	StepsPerTick int
}

// Uniform returns n replica configurations equal to c, with distinct names and seeds derived
// from c.Seed so the fleet stays deterministic.
func Uniform(n int, c Config) []Config {
	out := make([]Config, n)
	for i := range out {
		out[i] = c
		out[i].Name = ""
		out[i].Seed = c.Seed + uint64(i)
	}
	return out
}

// Fleet is a set of emulated replicas, each on its own loopback port.
type Fleet struct {
	opts     Options
	replicas []*Replica
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New builds the replicas without starting them, so that callers can add endpoints with
// Replica.Handle first.
func New(opts Options) (*Fleet, error) {
	if len(opts.Replicas) == 0 {
		return nil, errors.New("fleet: no replicas configured")
	}
	if opts.StepsPerTick <= 0 {
		opts.StepsPerTick = 1
	}
	f := &Fleet{opts: opts}
	for i, c := range opts.Replicas {
		c.fill(i)
		r, err := newReplica(c)
		if err != nil {
			return nil, err
		}
		f.replicas = append(f.replicas, r)
	}
	return f, nil
}

// Start opens every replica's listener on 127.0.0.1 and, when Options.Tick is set, starts the
// background workload.
func (f *Fleet) Start() error {
	for _, r := range f.replicas {
		if err := r.start(); err != nil {
			_ = f.Close()
			return err
		}
	}
	if f.opts.Tick > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			t := time.NewTicker(f.opts.Tick)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					f.Step(f.opts.StepsPerTick)
				}
			}
		}()
	}
	return nil
}

// Replicas returns the replicas in configuration order.
func (f *Fleet) Replicas() []*Replica { return f.replicas }

// URLs returns the replicas' base URLs in configuration order.
func (f *Fleet) URLs() []string {
	out := make([]string, len(f.replicas))
	for i, r := range f.replicas {
		out[i] = r.URL()
	}
	return out
}

// Targets returns the replicas as name=URL, the form kvcheck hitrate --scrape takes, so the
// report names each replica as the fleet does.
func (f *Fleet) Targets() []string {
	out := make([]string, len(f.replicas))
	for i, r := range f.replicas {
		out[i] = r.Name() + "=" + r.URL()
	}
	return out
}

// Step runs n scheduler steps on every replica.
func (f *Fleet) Step(n int) {
	for _, r := range f.replicas {
		r.Step(n)
	}
}

// Close stops the workload and every server.
func (f *Fleet) Close() error {
	if f.cancel != nil {
		f.cancel()
		f.wg.Wait()
	}
	var errs []error
	for _, r := range f.replicas {
		if err := r.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close fleet: %w", err)
	}
	return nil
}
