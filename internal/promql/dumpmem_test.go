package promql

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fleetDump describes a federation dump of a fleet, written family by family as Prometheus
// writes one: every family's # HELP and # TYPE lines once, then its series for every replica.
type fleetDump struct {
	replicas int
	// other is how many vllm: counter families hitrate does not read each replica exports
	// (vllm:prompt_tokens_total and the like), with one series each per replica.
	other int
	// buckets is the bucket count of each of the five vllm: histograms (0: none).
	buckets int
	// step advances the counters: the second dump of a pair is written with step 1.
	step int
}

// readFamilies are the families hitrate reads in the dump, with the series each replica has.
var readFamilies = []struct {
	name, typ string
	labels    []string
}{
	{"vllm:cache_config_info", "gauge", []string{`block_size="16",enable_prefix_caching="True"`}},
	{"vllm:num_requests_running", "gauge", []string{`engine="0"`}},
	{"vllm:num_requests_waiting", "gauge", []string{`engine="0"`}},
	{"vllm:kv_cache_usage_perc", "gauge", []string{`engine="0"`}},
	{"vllm:prefix_cache_queries_total", "counter", []string{`engine="0"`}},
	{"vllm:prefix_cache_hits_total", "counter", []string{`engine="0"`}},
	{"vllm:num_preemptions_total", "counter", []string{`engine="0"`}},
	{"vllm:request_success_total", "counter", []string{`finished_reason="stop"`, `finished_reason="length"`, `finished_reason="abort"`}},
}

// series is how many series the dump has.
func (f fleetDump) series() int {
	per := f.other
	if f.buckets > 0 {
		per += 5 * (f.buckets + 2)
	}
	for _, fam := range readFamilies {
		per += len(fam.labels)
	}
	return f.replicas * per
}

func (f fleetDump) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	pod := func(r int) string { return fmt.Sprintf(`pod="r%d"`, r) }
	for _, fam := range readFamilies {
		fmt.Fprintf(bw, "# HELP %s x\n# TYPE %s %s\n", fam.name, fam.name, fam.typ)
		for r := range f.replicas {
			for i, l := range fam.labels {
				v := 1
				switch fam.name {
				case "vllm:prefix_cache_queries_total":
					v = 1000 * (r + 1) * (f.step + 1)
				case "vllm:prefix_cache_hits_total":
					v = 500 * (r + 1) * (f.step + 1)
				case "vllm:request_success_total":
					v = (10 + i) * (f.step + 1)
				}
				fmt.Fprintf(bw, "%s{%s,%s} %d\n", fam.name, pod(r), l, v)
			}
		}
	}
	for k := range f.other {
		name := fmt.Sprintf("vllm:other_%d_total", k)
		fmt.Fprintf(bw, "# HELP %s x\n# TYPE %s counter\n", name, name)
		for r := range f.replicas {
			fmt.Fprintf(bw, "%s{%s,engine=\"0\"} %d\n", name, pod(r), 7*(f.step+1))
		}
	}
	if f.buckets > 0 {
		for _, h := range []string{"ttft", "e2e", "prompt", "gen", "iter"} {
			name := "vllm:" + h + "_seconds"
			fmt.Fprintf(bw, "# HELP %s x\n# TYPE %s histogram\n", name, name)
			for r := range f.replicas {
				for b := range f.buckets {
					fmt.Fprintf(bw, "%s_bucket{%s,le=\"%d\"} %d\n", name, pod(r), 1<<b, b)
				}
				fmt.Fprintf(bw, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, pod(r), f.buckets)
				fmt.Fprintf(bw, "%s_sum{%s} 1\n%s_count{%s} %d\n", name, pod(r), name, pod(r), f.buckets)
			}
		}
	}
	return bw.Flush()
}

// writeFile writes the dump to dir/name and returns the path and its size.
func (f fleetDump) writeFile(t testing.TB, dir, name string) (string, int64) {
	t.Helper()
	p := filepath.Join(dir, name)
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.write(fh); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, st.Size()
}

// peakHeap runs fn while sampling the heap every millisecond and returns fn's result and by
// how much the heap grew at its peak over what it held before.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak.Store(max(peak.Load(), m.HeapAlloc))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return max(peak.Load(), base.HeapAlloc) - base.HeapAlloc
}

// BenchmarkDumpMillionSeries reads two federation dumps of a million series each (11,000
// replicas; every replica 10 series hitrate reads, 20 other counters and five histograms of
// 10 buckets) as hitrate --file does, and reports the peak heap and the dumps' size.
func BenchmarkDumpMillionSeries(b *testing.B) {
	f := fleetDump{replicas: 11000, other: 20, buckets: 10}
	dir := b.TempDir()
	pa, size := f.writeFile(b, dir, "a.prom")
	f.step = 1
	pb, _ := f.writeFile(b, dir, "b.prom")
	var peak uint64
	for b.Loop() {
		peak = max(peak, peakHeap(func() {
			in, err := FromDumps(context.Background(), []string{pa, pb}, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(in.Observations) != f.replicas {
				b.Fatalf("%d replicas, want %d", len(in.Observations), f.replicas)
			}
		}))
	}
	b.ReportMetric(float64(f.series()), "series/dump")
	b.ReportMetric(float64(size)/1e6, "MB/dump")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// TestDumpKeepsWhatHitrateReads: of a dump, the series hitrate reads are kept whole and every
// other vllm: family once per replica, so memory follows the replicas and the series read, not
// the file. The dump has 2,000 replicas, each with 10 series hitrate reads and a family of 100
// series (one per LoRA adapter) it does not read: 220,000 series, of which 22,000 are kept
// (10 read and one for the other family per replica). Reading every series whole, as before,
// held about 100 MB more than the bound.
func TestDumpKeepsWhatHitrateReads(t *testing.T) {
	const replicas, adapters = 2000, 100
	dir := t.TempDir()
	p := filepath.Join(dir, "fleet.prom")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := (fleetDump{replicas: replicas}).write(fh); err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(fh)
	fmt.Fprint(bw, "# HELP vllm:lora_requests_total x\n# TYPE vllm:lora_requests_total counter\n")
	for r := range replicas {
		for a := range adapters {
			fmt.Fprintf(bw, "vllm:lora_requests_total{pod=\"r%d\",model_name=\"m\",lora=\"adapter-%d\"} %d\n", r, a, a)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	var d Dump
	grew := peakHeap(func() {
		if d, err = ReadDump(context.Background(), p, nil); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		return
	}
	read, other := 0, 0
	for _, s := range d.Samples {
		if s.Name == "vllm:lora_requests_total" {
			other++
			if len(s.Labels) != 2 || s.Labels["pod"] == "" || s.Labels["model_name"] != "m" {
				t.Fatalf("kept %v of the family hitrate does not read, want its pod and model_name only", s.Labels)
			}
		} else {
			read++
		}
	}
	if read != 10*replicas || other != replicas {
		t.Errorf("kept %d series hitrate reads and %d others, want %d and %d (one per replica)", read, other, 10*replicas, replicas)
	}
	// What is held, plus the garbage collector's allowance of as much again, and the parser's
	// buffers.
	if grew > 48<<20 {
		t.Errorf("the heap grew by %d MiB reading the dump, want at most 48 MiB", grew>>20)
	}
	// Grouped --by lora, the adapters are replicas of their own and each is kept.
	if d, err = ReadDump(context.Background(), p, []string{"lora"}); err != nil {
		t.Fatal(err)
	}
	if other := len(d.Samples) - 10*replicas; other != replicas*adapters {
		t.Errorf("--by lora: kept %d series of the other family, want all %d", other, replicas*adapters)
	}
	// The figures: the family it does not read still dates the replica and names its model.
	in, err := FromDumps(context.Background(), []string{p}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Observations) != replicas || in.Observations[0].Model != "m" {
		t.Errorf("%d replicas, first model %q; want %d and m", len(in.Observations), in.Observations[0].Model, replicas)
	}
}
