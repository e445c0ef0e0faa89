package events

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CreateRecording creates the recording file at path for a tap's Config.Recorder; closeFn
// closes the file, and its error says which file.
func CreateRecording(path string) (_ *Recorder, closeFn func() error, _ error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("create recording: %w", err)
	}
	rec, err := NewRecorder(f)
	if err != nil {
		_ = f.Close() // the recording failed to start; that error is the one to report
		return nil, nil, err
	}
	return rec, func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close recording %s: %w", path, err)
		}
		return nil
	}, nil
}

// TapFor is a tap of a set length, as kvcheck tap runs one: it taps cfg's sources into c for d
// or until ctx ends, and calls tick every second with the time tapped and the messages received
// so far. It sets cfg.Observe itself, and returns the time tapped.
func TapFor(ctx context.Context, cfg Config, c *Collector, d time.Duration, tick func(elapsed time.Duration, received uint64)) (time.Duration, error) {
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var received atomic.Uint64
	cfg.Observe = func(*Message) { received.Add(1) }
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-t.C:
				tick(time.Since(start), received.Load())
			}
		}
	})
	err := Tap(tctx, cfg, c)
	cancel()
	wg.Wait()
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
