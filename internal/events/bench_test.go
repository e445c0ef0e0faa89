package events

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// vllmBatches returns n vLLM-shaped batches: 8 BlockStored events of 64 tokens (4 blocks of
// 16, 64-bit hashes) each, as SPEC §8 measured them.
func vllmBatches(n int, w Wire) [][]byte { return vllmBatchesRooted(n, w, false) }

// vllmBatchesRooted makes the same batches; rooted ones start their chains at token 0 (parent
// nil), so the collector runs every analysis on them instead of skipping unanchored blocks.
func vllmBatchesRooted(n int, w Wire, rooted bool) [][]byte {
	rng := rand.New(rand.NewPCG(7, 9))
	out := make([][]byte, n)
	for i := range out {
		b := Batch{TS: 1.7e9 + float64(i), HasDPRank: true}
		for range 8 {
			ev := Event{Type: TypeBlockStored, BlockSize: 16, Medium: []byte("GPU"), HasGroupIdx: true, SpecKind: []byte("full_attention"),
				HasParent: !rooted, Parent: Hash{Form: HashInt, Value: rng.Uint64()}}
			for range 4 {
				ev.BlockHashes = append(ev.BlockHashes, Hash{Form: HashInt, Value: rng.Uint64()})
			}
			for range 64 {
				ev.TokenIDs = append(ev.TokenIDs, int64(rng.IntN(151000)))
			}
			b.Events = append(b.Events, ev)
		}
		out[i] = AppendBatch(nil, &b, w)
	}
	return out
}

var benchWires = []struct {
	name string
	w    Wire
}{
	{"map", Wire{Era: EraMap}},
	{"array", Wire{Era: EraArray, StoredFields: 12}},
}

// BenchmarkDecode measures the decoder on vLLM-shaped batches of both eras. With
// KVCHECK_BENCH_PYTHON=1 it also runs python3-msgpack on the same bytes in the same run and
// reports its rate and our ratio to it (py-MB/s, x-python).
func BenchmarkDecode(b *testing.B) {
	for _, bw := range benchWires {
		b.Run(bw.name, func(b *testing.B) {
			ps := vllmBatches(256, bw.w)
			var total int
			for _, p := range ps {
				total += len(p)
			}
			var batch Batch
			b.ReportAllocs()
			b.SetBytes(int64(total / len(ps)))
			i := 0
			for b.Loop() {
				if err := Decode(ps[i%len(ps)], &batch); err != nil {
					b.Fatal(err)
				}
				i++
			}
			goMBs := float64(b.N) * float64(total/len(ps)) / b.Elapsed().Seconds() / 1e6
			b.ReportMetric(float64(b.N)*8/b.Elapsed().Seconds(), "events/s")
			if os.Getenv("KVCHECK_BENCH_PYTHON") == "" {
				return
			}
			py := pythonDecode(b, ps)
			b.ReportMetric(py, "py-MB/s")
			b.ReportMetric(goMBs/py, "x-python")
		})
	}
}

func pythonDecode(b *testing.B, ps [][]byte) float64 {
	b.Helper()
	var buf []byte
	for _, p := range ps {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(p)))
		buf = append(buf, p...)
	}
	f := filepath.Join(b.TempDir(), "payloads.bin")
	if err := os.WriteFile(f, buf, 0o600); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "../../testdata/tap/decode_bench.py", f, "1").Output()
	if err != nil {
		b.Skipf("python3-msgpack: %v", err)
	}
	var r struct {
		MBs float64 `json:"mb_per_sec"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("python said %q: %v", out, err)
	}
	return r.MBs
}

// BenchmarkCollector measures decoding plus the full accounting and analyses.
func BenchmarkCollector(b *testing.B) {
	ps := vllmBatchesRooted(4096, Wire{Era: EraMap}, true)
	c := NewCollector(Options{MaxBlocks: 1 << 16})
	b.ReportAllocs()
	b.SetBytes(int64(len(ps[0])))
	i := 0
	for b.Loop() {
		m := Message{Source: "a", Seq: uint64(i), Payload: ps[i%len(ps)], Frames: 3, SeqLen: 8, RecvNanos: time.Now().UnixNano()}
		c.Add(&m)
		i++
	}
}

// TestBytesPerBlock measures the heap held per tracked block, the figure behind --max-blocks.
// It asserts only a generous bound; the measured value is logged for BENCHMARKS.md.
func TestBytesPerBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MB")
	}
	// A quarter of the default bound: the tables of a generation are then as full as at the
	// default (half), so the figure per block is the default's.
	const n = DefaultMaxBlocks / 4
	c := NewCollector(Options{MaxBlocks: n})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tokens := make([]int64, 16)
	for i := range n {
		for k := range tokens {
			tokens[k] = int64(i*16 + k)
		}
		ev := Event{Type: TypeBlockStored, BlockSize: 16, TokenIDs: tokens, BlockHashes: []Hash{{Form: HashInt, Value: uint64(i) + 1}}}
		c.stored(c.pub("a", nil), &ev)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Signed: memory an earlier test frees meanwhile must not wrap the difference around.
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f bytes per tracked block (%d blocks)", per, n)
	if per > 1000 {
		t.Errorf("%.0f bytes per tracked block, want well under 1000", per)
	}
	runtime.KeepAlive(c)
}

// TestDecodeVsPython alternates short rounds of our decoder and python3-msgpack on the same
// payloads, timed in CPU seconds so that other processes on the machine do not count, and logs
// the median ratio per era. It is a
// measurement for BENCHMARKS.md, not a check: set KVCHECK_BENCH_PYTHON=1 to run it.
func TestDecodeVsPython(t *testing.T) {
	if os.Getenv("KVCHECK_BENCH_PYTHON") == "" {
		t.Skip("set KVCHECK_BENCH_PYTHON=1 to measure")
	}
	for _, bw := range benchWires {
		ps := vllmBatches(256, bw.w)
		var total int
		for _, p := range ps {
			total += len(p)
		}
		var ratios, goRates, pyRates []float64
		for range 7 {
			// CPU time, like the Python side: the machine is shared, and wall time would also
			// count whoever else runs.
			var b Batch
			n := 0
			start := cpuTime(t)
			for cpuTime(t)-start < 0.7 {
				for range 20 {
					for _, p := range ps {
						if err := Decode(p, &b); err != nil {
							t.Fatal(err)
						}
					}
					n++
				}
			}
			goRate := float64(n*total) / (cpuTime(t) - start) / 1e6
			py := pythonDecodeT(t, ps)
			goRates, pyRates = append(goRates, goRate), append(pyRates, py)
			ratios = append(ratios, goRate/py)
		}
		perEvent := float64(total) / float64(len(ps)) / 8 // bytes per event
		t.Logf("%s era (%d-byte batches of 8 events): Go %.0f MB per CPU second (%.2fM events), python3-msgpack %.0f MB per CPU second (medians of 7 alternating rounds); median ratio %.2fx (range %.2f-%.2f)",
			bw.name, total/len(ps), median(goRates), median(goRates)*1e6/perEvent/1e6, median(pyRates), median(ratios), slices.Min(ratios), slices.Max(ratios))
	}
}

// cpuTime is the CPU time (user + system) this process has used, in seconds.
func cpuTime(t testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func pythonDecodeT(t *testing.T, ps [][]byte) float64 {
	t.Helper()
	var buf []byte
	for _, p := range ps {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(p)))
		buf = append(buf, p...)
	}
	f := filepath.Join(t.TempDir(), "payloads.bin")
	if err := os.WriteFile(f, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "../../testdata/tap/decode_bench.py", f, "0.7").Output()
	if err != nil {
		t.Skipf("python3-msgpack: %v", err)
	}
	var r struct {
		MBs float64 `json:"mb_per_sec"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("python said %q: %v", out, err)
	}
	return r.MBs
}

// BenchmarkCollectorCPU measures decoding plus the full accounting and analyses on distinct
// rooted blocks (map-era batches of 8 events), one batch per iteration: MB/s is the wall rate,
// MB/cpu-s the rate per CPU second of this process, the figure BENCHMARKS.md records.
func BenchmarkCollectorCPU(b *testing.B) {
	ps := vllmBatchesRooted(4096, Wire{Era: EraMap}, true)
	total := 0
	for _, p := range ps {
		total += len(p)
	}
	b.SetBytes(int64(total / len(ps)))
	c := NewCollector(Options{MaxBlocks: 1 << 16})
	b.ResetTimer()
	start, n := cpuTime(b), 0
	for i := range b.N {
		m := Message{Source: "a", Seq: uint64(i), Payload: ps[i%len(ps)], Frames: 3, SeqLen: 8, RecvNanos: int64(i)}
		c.Add(&m)
		n += len(ps[i%len(ps)])
	}
	if cpu := cpuTime(b) - start; cpu > 0 {
		b.ReportMetric(float64(n)/cpu/1e6, "MB/cpu-s")
	}
}

// pubStream makes the batches testdata/tap/pub.py sends in the end-to-end benchmark (8
// BlockStored of 4 blocks of 16 tokens, rooted; every block new), so the collector's block
// indexes see what they see in a live tap: a new key for every block.
type pubStream struct {
	b   Batch
	buf []byte
}

func (s *pubStream) next(i int) []byte {
	s.b.TS, s.b.HasDPRank = 1.7e9+float64(i)/1000, true
	s.b.Events = s.b.Events[:0]
	for j := range 8 {
		e := i*8 + j
		ev := Event{Type: TypeBlockStored, BlockSize: 16, Medium: []byte("GPU"), HasGroupIdx: true, SpecKind: []byte("full_attention")}
		for b := range 4 {
			ev.BlockHashes = append(ev.BlockHashes, Hash{Form: HashInt, Value: uint64(e<<8 + b)})
		}
		for k := range 64 {
			ev.TokenIDs = append(ev.TokenIDs, int64((e*7+k)%50000))
		}
		s.b.Events = append(s.b.Events, ev)
	}
	s.buf = AppendBatch(s.buf[:0], &s.b, Wire{Era: EraMap})
	return s.buf
}

// BenchmarkCollectorFresh measures decoding plus the full accounting of pub.py's stream with
// the default bounds, every block new, as in BenchmarkEndToEndRate without the sockets. The
// batches are made 4,096 at a time outside the measurement; cpu-us/batch is the CPU time of
// this process per batch (what the end-to-end ratio per CPU second is made of).
func BenchmarkCollectorFresh(b *testing.B) {
	const chunk = 4096
	var s pubStream
	c := NewCollector(Options{Ordered: true})
	batch := make([][]byte, chunk)
	var cpu float64
	size := 0
	for done := 0; done < b.N; done += chunk {
		b.StopTimer()
		n := min(chunk, b.N-done)
		for i := range n {
			batch[i] = append(batch[i][:0], s.next(done+i)...)
			size += len(batch[i])
		}
		b.StartTimer()
		c0 := cpuTime(b)
		for i := range n {
			m := Message{Source: "a", Seq: uint64(done + i), Payload: batch[i], Frames: 3, SeqLen: 8, RecvNanos: int64(done+i) * 1e5}
			c.Add(&m)
		}
		cpu += cpuTime(b) - c0
	}
	b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-us/batch")
	b.ReportMetric(float64(size)/cpu/1e6, "MB/cpu-s")
}

// BenchmarkDecodeCPU measures the decoder alone in CPU time of this process per batch
// (cpu-ns/batch), on pub.py's stream (ids under 50,000: uint16 nearly all), on random ids of a
// 151,000-token vocabulary (uint16 and uint32 mixed at random) and, with KVCHECK_CORPUS set, on
// the token ids of the corpus's captured Qwen3 event (83% uint16, 11% fixint, 5% uint32), map
// era; the batches are made before the measurement.
func BenchmarkDecodeCPU(b *testing.B) {
	var s pubStream
	pub := make([][]byte, 4096)
	for i := range pub {
		pub[i] = slices.Clone(s.next(i))
	}
	sets := []struct {
		name string
		ps   [][]byte
	}{{"pub", pub}, {"random", vllmBatches(4096, Wire{Era: EraMap})}}
	if qwen := corpusTokenBatches(b); qwen != nil {
		sets = append(sets, struct {
			name string
			ps   [][]byte
		}{"qwen", qwen})
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			var batch Batch
			c0 := cpuTime(b)
			for i := range b.N {
				if err := Decode(set.ps[i%len(set.ps)], &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime(b)-c0)/float64(b.N)*1e9, "cpu-ns/batch")
		})
	}
}

// corpusTokenBatches makes batches like pub.py's (8 BlockStored of 4 blocks of 16 tokens) from
// the token ids of the corpus's captured vLLM event, in order and wrapping around; nil when
// KVCHECK_CORPUS is not set.
func corpusTokenBatches(b *testing.B) [][]byte {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, "events", "llmd-kvcache_kv_event_base.json"))
	if err != nil {
		b.Fatal(err)
	}
	var ev struct {
		TokenIDs []int64 `json:"token_ids"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.TokenIDs) == 0 {
		b.Fatalf("corpus event: %v (%d token ids)", err, len(ev.TokenIDs))
	}
	out := make([][]byte, 4096)
	t := 0
	for i := range out {
		batch := Batch{TS: 1.7e9 + float64(i), HasDPRank: true}
		for j := range 8 {
			e := Event{Type: TypeBlockStored, BlockSize: 16, Medium: []byte("GPU"), HasGroupIdx: true, SpecKind: []byte("full_attention")}
			for k := range 4 {
				e.BlockHashes = append(e.BlockHashes, Hash{Form: HashInt, Value: uint64((i*8+j)<<8 + k)})
			}
			for range 64 {
				e.TokenIDs = append(e.TokenIDs, ev.TokenIDs[t%len(ev.TokenIDs)])
				t++
			}
			batch.Events = append(batch.Events, e)
		}
		out[i] = AppendBatch(nil, &batch, Wire{Era: EraMap})
	}
	return out
}
