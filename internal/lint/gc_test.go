package lint

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent: the heap may grow to max(64 MiB, 2 x live) before a collection. With live L
// MiB under 32, GOGC g gives a bound of L x (1 + g/100) = 64 MiB, so g = (64 - L) / L x 100:
// 700 at 8 MiB (8 x 8 = 64), 300 at 16 MiB, 6,300 at 1 MiB and, before a collection has
// measured anything, as at 1 MiB; from 32 MiB on, GOGC=100's own bound of 2 x L is the larger.
func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{{0, 6400}, {mib, 6300}, {8 * mib, 700}, {16 * mib, 300}, {32*mib - 1, 100}, {32 * mib, 100}, {1 << 40, 100}} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}

// TestGCLimit: the memory limit is 16 MiB over the bound: 80 MiB while the live heap is under
// 32 MiB, 2 x 40 + 16 = 96 MiB at 40 MiB.
func TestGCLimit(t *testing.T) {
	const mib = 1 << 20
	for live, want := range map[uint64]int64{0: 80 * mib, 31 * mib: 80 * mib, 40 * mib: 96 * mib} {
		if got := gcLimit(live); got != want {
			t.Errorf("gcLimit(%d MiB) = %d MiB, want %d MiB", live/mib, got/mib, want/mib)
		}
	}
}

// TestCollectLess: it raises GOGC for the run and puts it back, with the memory limit; GOGC set in the environment
// wins and nothing is changed.
func TestCollectLess(t *testing.T) {
	orig := debug.SetGCPercent(150)
	defer debug.SetGCPercent(orig)
	limit := debug.SetMemoryLimit(-1)
	restore := collectLess()
	if during := debug.SetMemoryLimit(-1); during >= limit {
		t.Errorf("memory limit during the run = %d, want under %d", during, limit)
	}
	if during := debug.SetGCPercent(150); during <= 100 {
		t.Errorf("GOGC during the run = %d, want over 100", during)
	}
	restore()
	if after := debug.SetGCPercent(150); after != 150 {
		t.Errorf("GOGC after the run = %d, want 150 as before", after)
	}
	if after := debug.SetMemoryLimit(-1); after != limit {
		t.Errorf("memory limit after the run = %d, want %d as before", after, limit)
	}
	t.Setenv("GOGC", "80")
	restore = collectLess()
	during := debug.SetGCPercent(150)
	restore()
	if during != 150 {
		t.Errorf("with GOGC=80 in the environment, GOGC = %d during the run, want 150 untouched", during)
	}
}
