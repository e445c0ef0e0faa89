package sim

import (
	"bytes"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchConfig is the fleet of the benchmarks: 8 replicas of 2048 blocks (1 Mi tokens).
func benchConfig() Config {
	return Config{Replicas: 8, KVBlocks: 2048, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams(), Seed: 1}
}

// traceBytes is the size of the Mooncake trace, for SetBytes.
const traceBytes = 3029533

// BenchmarkPolicies replays the Mooncake conversation trace through each policy at 8 replicas.
// MB/s is trace bytes per second; requests/s and blockrefs/s count the trace's requests and block
// references replayed per second.
func BenchmarkPolicies(b *testing.B) {
	tr := mooncake(b)
	st := Stats(tr)
	for _, p := range PolicyNames() {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(traceBytes)
			for b.Loop() {
				if _, err := Simulate(tr, benchConfig(), p); err != nil {
					b.Fatal(err)
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(st.Requests)*float64(b.N)/s, "requests/s")
			b.ReportMetric(float64(st.BlockRefs)*float64(b.N)/s, "blockrefs/s")
		})
	}
}

// BenchmarkReadMooncake measures the JSONL reader on the conversation trace, and in the same
// run the reader with every line decoded by encoding/json (the reader before its fast path):
// x-cpu is the reference's CPU time over the reader's, from the interleaved sub-benchmark.
func BenchmarkReadMooncake(b *testing.B) {
	data, err := io.ReadAll(corpusTrace(b, "mooncake_conversation_trace.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B, slow bool) {
		mooncakeSlowOnly = slow
		defer func() { mooncakeSlowOnly = false }()
		if _, err := ReadMooncake(bytes.NewReader(data), "mooncake", MooncakeBlockSize); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		slow bool
	}{{"reader", false}, {"encoding-json-reference", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				read(b, c.slow)
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		var fast, slow time.Duration
		for b.Loop() {
			t0 := cpuTime()
			read(b, false)
			t1 := cpuTime()
			read(b, true)
			fast, slow = fast+t1-t0, slow+cpuTime()-t1
		}
		mb := float64(len(data)) * float64(b.N) / 1e6
		b.ReportMetric(mb/fast.Seconds(), "reader-MB/cpu-s")
		b.ReportMetric(mb/slow.Seconds(), "reference-MB/cpu-s")
		b.ReportMetric(slow.Seconds()/fast.Seconds(), "x-cpu")
	})
}

// BenchmarkDefaultSweep times what `kvcheck simulate --trace <mooncake>` does by default: every
// policy at 2, 4, 8 and 16 replicas of 2048 blocks, in parallel on the available cores.
func BenchmarkDefaultSweep(b *testing.B) {
	tr := mooncake(b)
	s := Sweep{Replicas: []int{2, 4, 8, 16}, KVBlocks: []int{2048}, Policies: PolicyNames(), Base: benchConfig()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(b.Context(), tr, s, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVersusReference runs the simulator and testdata/sim/reference.py on the same trace,
// fleet and policies in the same run, and reports the speed ratio: x-wall from wall time (best
// of three reference runs against the Go mean), x-cpu from CPU time, which the other users of a
// shared machine disturb less.
func BenchmarkVersusReference(b *testing.B) {
	tr := mooncake(b)
	ref := sync.OnceValue(func() referenceOutput { return runReference(b, 8, 2048, 3, referencePolicies) })
	for _, p := range referencePolicies {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(traceBytes)
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := Simulate(tr, benchConfig(), p); err != nil {
					b.Fatal(err)
				}
			}
			goWall := b.Elapsed().Seconds() / float64(b.N)
			goCPU := (cpuTime() - cpu0).Seconds() / float64(b.N)
			b.StopTimer()
			for _, r := range ref().Results {
				if r.Policy == p {
					b.ReportMetric(r.Seconds*1e3, "ref-ms/op")
					b.ReportMetric(r.Seconds/goWall, "x-wall")
					b.ReportMetric(r.CPUSeconds/goCPU, "x-cpu")
				}
			}
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
