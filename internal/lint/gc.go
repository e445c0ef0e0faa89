package lint

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	// gcFloor is the heap a lint run may reach before a collection while its live heap is
	// under half of it (collectLess).
	gcFloor = 64 << 20
	// gcSlack is how far over that bound the heap may go before the memory limit collects it
	// (collectLess).
	gcSlack = 16 << 20
	// gcWatch is how often the live heap is looked at. It changes only when a collection
	// ends, and a run's collections are tens of milliseconds apart or more.
	gcWatch = 10 * time.Millisecond
)

// collectLess sets the garbage collector for a kvcheck lint run (CheckFlags) and returns the function restoring
// its settings. A run's live heap is what its results hold (a few KB a file) and almost all it
// allocates is each file's garbage, so at Go's default GOGC=100, which collects each time the
// heap doubles the live heap, a run collects every few megabytes while its results are small:
// 38 collections for 200 MB of dashboards, each marking on the second core beside the one
// worker (BENCHMARKS.md, issue 28). Instead the heap is collected when it reaches
// max(gcFloor, 2 x live): GOGC=100's bound once the live heap is over gcFloor/2, never more,
// and never fewer collections. A goroutine looks at the live heap every gcWatch and sets
// GOGC to (gcFloor - live) / live, at least 100 (debug.SetGCPercent), and a memory limit
// gcSlack above that bound (debug.SetMemoryLimit), so that a heap whose live part grew since
// the last look is still collected near the bound, not at the old GOGC times the new live
// heap. GOGC or GOMEMLIMIT in the process's environment (which the runtime reads) win: nothing
// is changed.
func collectLess() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prevPercent := debug.SetGCPercent(gcPercent(0))
	prevLimit := debug.SetMemoryLimit(gcLimit(0))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(gcWatch)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			n := live[0].Value.Uint64()
			debug.SetMemoryLimit(gcLimit(n))
			debug.SetGCPercent(gcPercent(n))
		}
	}()
	return func() {
		close(stop)
		<-done
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	}
}

// gcPercent is the GOGC that lets a heap of this live size grow to max(gcFloor, 2 x live)
// before a collection. A live heap under 1 MiB (none measured yet) counts as 1 MiB.
func gcPercent(live uint64) int {
	if live >= gcFloor/2 {
		return 100
	}
	return int((gcFloor - live) * 100 / max(live, 1<<20))
}

// gcLimit is the memory limit beside gcPercent: gcSlack over its bound.
func gcLimit(live uint64) int64 {
	return int64(max(gcFloor, 2*min(live, 1<<60))) + gcSlack
}
