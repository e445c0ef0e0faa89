package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scaleSizes are BenchmarkScale's trace sizes: the Mooncake sample, about a sixteenth of a
// day, and a day of a busy gateway.
var scaleSizes = []int{12031, 200_000, 2_000_000}

// scaleFleets are BenchmarkScale's fleet sizes, each replica of 2048 blocks (1 Mi tokens).
var scaleFleets = []int{8, 64}

// BenchmarkScale replays tiled traces of three sizes through every policy on two fleets and
// reports, per size, fleet and policy: requests/s (wall) and requests/cpu-s (the figure a shared
// machine disturbs less), the replay's heap growth per distinct block of the trace
// (sim-bytes/distinct-block: what a replay costs for each block the trace names), and the peak
// heap during the replay, the trace included (peak-heap-MB).
//
// The trace is the Mooncake conversation trace when KVCHECK_CORPUS is set, else a synthetic one
// of the same size (seeded), tiled end to end with fresh block ids and session ids for each
// copy, as a longer capture of the same traffic would be. Pick sizes with the sub-benchmark
// name, e.g. -bench 'Scale/requests=(12031|200000)/'.
func BenchmarkScale(b *testing.B) {
	base := scaleBase(b)
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			tr := tileTrace(base, n)
			st := Stats(tr) // interns the trace, outside the timed replays
			for _, reps := range scaleFleets {
				b.Run(fmt.Sprintf("replicas=%d", reps), func(b *testing.B) {
					for _, p := range PolicyNames() {
						b.Run(p, func(b *testing.B) {
							c := benchConfig()
							c.Replicas = reps
							runtime.GC()
							before := heapBytes()
							peak := watchHeap()
							cpu0 := cpuTime()
							for b.Loop() {
								if _, err := Simulate(tr, c, p); err != nil {
									b.Fatal(err)
								}
							}
							cpu := cpuTime() - cpu0
							top := peak()
							reqs := float64(st.Requests) * float64(b.N)
							b.ReportMetric(reqs/b.Elapsed().Seconds(), "requests/s")
							b.ReportMetric(reqs/cpu.Seconds(), "requests/cpu-s")
							b.ReportMetric(float64(max(top-before, 0))/float64(st.DistinctBlocks), "sim-bytes/distinct-block")
							b.ReportMetric(float64(top)/1e6, "peak-heap-MB")
							b.ReportMetric(float64(st.DistinctBlocks), "distinct-blocks")
						})
					}
				})
			}
		})
	}
}

// BenchmarkScaleWindows asks whether a replay slows down as it goes, inside one replay of the
// 2,000,000-request tiled trace on 64 replicas per policy: it samples the requests routed and
// the process's CPU time every 50 ms and reports requests per CPU second over windows of the
// replay, requests 4,096-12,288 (after the replay's set-up; the caches are filling), 12,288-200,704,
// then every 200,000 to the end, and the largest window's figure over the smallest
// (window-max/min). A cost that grew with the trace would show as a falling row; BenchmarkScale's
// separate traces also differ in what every replay pays once (set-up, the final duplicate count).
func BenchmarkScaleWindows(b *testing.B) {
	tr := tileTrace(scaleBase(b), 2_000_000)
	Stats(tr)
	edges := []int64{watchEvery, 3 * watchEvery, 49 * watchEvery}
	for e := int64(400_000); e <= 2_000_000; e += 200_000 {
		edges = append(edges, e)
	}
	for _, p := range PolicyNames() {
		b.Run(p, func(b *testing.B) {
			c := benchConfig()
			c.Replicas = 64
			for b.Loop() {
				type sample struct {
					routed int64
					cpu    time.Duration
				}
				w := &watch{ctx: context.Background(), routed: new(atomic.Int64)}
				var (
					mu      sync.Mutex
					samples []sample
				)
				done, stopped := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(stopped)
					tk := time.NewTicker(50 * time.Millisecond)
					defer tk.Stop()
					for {
						select {
						case <-done:
							return
						case <-tk.C:
							mu.Lock()
							samples = append(samples, sample{w.routed.Load(), cpuTime()})
							mu.Unlock()
						}
					}
				}()
				info, err := lookup(p, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := simulateInfo(tr, c, info, false, w); err != nil {
					b.Fatal(err)
				}
				close(done)
				<-stopped
				samples = append(samples, sample{w.routed.Load(), cpuTime()})
				var rates []string
				lo, hi := 0.0, 0.0
				for ei := 1; ei < len(edges); ei++ {
					var from, to *sample
					for i := range samples {
						if from == nil && samples[i].routed >= edges[ei-1] {
							from = &samples[i]
						}
						if to == nil && samples[i].routed >= edges[ei] {
							to = &samples[i]
						}
					}
					if from == nil || to == nil || to.cpu <= from.cpu || to.routed <= from.routed {
						rates = append(rates, "-")
						continue
					}
					r := float64(to.routed-from.routed) / (to.cpu - from.cpu).Seconds()
					rates = append(rates, fmt.Sprintf("%.0fk", r/1000))
					if lo == 0 || r < lo {
						lo = r
					}
					hi = max(hi, r)
				}
				b.Logf("%s, requests/cpu-s in windows ending at %v: %s", p, edges[1:], strings.Join(rates, " "))
				if lo > 0 {
					b.ReportMetric(hi/lo, "window-max/min")
				}
			}
		})
	}
}

// scaleBase is the trace BenchmarkScale tiles: the corpus's Mooncake conversation trace, or
// without a corpus a synthetic trace of as many requests (see syntheticTrace).
func scaleBase(b *testing.B) *Trace {
	if os.Getenv("KVCHECK_CORPUS") != "" {
		return mooncake(b)
	}
	return syntheticTrace(12031, 1)
}

// syntheticTrace is a seeded conversation trace shaped like Mooncake's: every prompt starts with
// one shared system block; conversations of 1 to 6 turns each repeat the previous turn's prompt
// and add 1 to 20 blocks of 512 tokens; arrivals over about an hour.
func syntheticTrace(n int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 16))
	t := &Trace{Name: "synthetic", Format: FormatMooncake, BlockSize: MooncakeBlockSize, PrefixInfo: true}
	next := uint64(1) // block 0 is the system prompt
	var at float64
	for conv := 0; len(t.Requests) < n; conv++ {
		prompt := []uint64{0}
		start := at
		for turn := range 1 + rng.IntN(6) {
			if len(t.Requests) == n {
				break
			}
			for range 1 + rng.IntN(20) {
				prompt = append(prompt, next)
				next++
			}
			blocks := append([]uint64(nil), prompt...)
			t.Requests = append(t.Requests, Request{
				Arrival:      start + float64(turn)*30,
				Blocks:       blocks,
				InputTokens:  len(blocks)*MooncakeBlockSize - rng.IntN(MooncakeBlockSize),
				OutputTokens: 1 + rng.IntN(800),
				N:            1,
			})
		}
		at += rng.ExpFloat64() * 0.9
	}
	t.sortByArrival()
	return t
}

// tileTrace repeats base end to end until it has n requests: copy k starts when copy k-1 ends,
// and its block ids and session ids are fresh (block ids shifted past the largest of base), so
// the copies share nothing, as a longer capture of the same traffic would not.
func tileTrace(base *Trace, n int) *Trace {
	var top uint64
	for i := range base.Requests {
		for _, k := range base.Requests[i].Blocks {
			top = max(top, k)
		}
	}
	span := base.Requests[len(base.Requests)-1].Arrival + 1
	t := &Trace{Name: fmt.Sprintf("%s x%d requests", base.Name, n), Format: base.Format, BlockSize: base.BlockSize, PrefixInfo: true}
	t.Requests = make([]Request, 0, n)
	var keys keyStore
	var scratch []uint64
	for k := 0; len(t.Requests) < n; k++ {
		for _, r := range base.Requests {
			if len(t.Requests) == n {
				break
			}
			scratch = scratch[:0]
			for _, b := range r.Blocks {
				scratch = append(scratch, b+uint64(k)*(top+1))
			}
			r.Blocks = keys.add(scratch)
			r.Arrival += float64(k) * span
			if r.Session != "" && k > 0 {
				r.Session = fmt.Sprintf("%s/%d", r.Session, k)
			}
			t.Requests = append(t.Requests, r)
		}
	}
	return t
}

// heapBytes is the heap's object bytes now, live or not yet swept.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// watchHeap samples heapBytes every millisecond until the returned function is called, which
// returns the largest sample.
func watchHeap() func() int64 {
	var (
		mu   sync.Mutex
		top  = heapBytes()
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				h := heapBytes()
				mu.Lock()
				top = max(top, h)
				mu.Unlock()
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		h := heapBytes()
		mu.Lock()
		defer mu.Unlock()
		return max(top, h)
	}
}

// TestTileTrace works a tiling by hand: two requests tiled to five, copies shifted by the span
// of the base (last arrival + 1 s) and by the largest block id + 1.
func TestTileTrace(t *testing.T) {
	base := tinyTrace(req(0, "s", 1, 0, 3), req(2, "", 1, 0, 1))
	tr := tileTrace(base, 5)
	var got []string
	for _, r := range tr.Requests {
		got = append(got, fmt.Sprintf("%v %s %v", r.Arrival, r.Session, r.Blocks))
	}
	want := []string{"0 s [0 3]", "2  [0 1]", "3 s/1 [4 7]", "5  [4 5]", "6 s/2 [8 11]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tiled = %q, want %q", got, want)
	}
	if st := Stats(tr); st.DistinctBlocks != 8 || st.Repeats != 2 {
		t.Errorf("stats %+v, want 8 distinct blocks, 2 repeats (block 0 of each full copy)", st)
	}
}
