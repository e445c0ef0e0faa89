package testutil

import (
	"runtime"
	"sync/atomic"
	"time"
)

// PeakHeap runs fn while sampling the heap in use (runtime.MemStats.HeapInuse) every
// millisecond, and returns the highest sample less what was in use before fn began (after a
// collection): what fn made the process hold at its worst, garbage not yet collected
// included, as an operating system sees a Go process's heap.
func PeakHeap(fn func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak.Store(max(peak.Load(), m.HeapInuse))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return max(peak.Load(), base.HeapInuse) - base.HeapInuse
}
