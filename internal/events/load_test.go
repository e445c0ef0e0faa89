package events_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
)

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	if v := os.Getenv(key); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: want an integer", key, v)
		}
		return n
	}
	return def
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestLoadHeld taps 64 libzmq (pyzmq) publishers on loopback, each sending vLLM-shaped batches
// at a steady 1 MB/s for 60 s, and checks that the tap keeps up: no batch dropped by the tap
// itself, none lost, and the heap within the bound the README states (the queue's messages
// plus the tracked blocks). It is a measurement for BENCHMARKS.md, opt-in:
//
//	KVCHECK_BENCH_LOAD=1 go test -run TestLoadHeld -v ./internal/events/
//
// KVCHECK_BENCH_LOAD_PUBLISHERS, _RATE (bytes a second each) and _SECONDS change the load.
func TestLoadHeld(t *testing.T) {
	if os.Getenv("KVCHECK_BENCH_LOAD") == "" {
		t.Skip("set KVCHECK_BENCH_LOAD=1 to measure")
	}
	pubs := envInt(t, "KVCHECK_BENCH_LOAD_PUBLISHERS", 64)
	rate := envInt(t, "KVCHECK_BENCH_LOAD_RATE", 1_000_000)
	secs := envInt(t, "KVCHECK_BENCH_LOAD_SECONDS", 60)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+3*time.Minute)
	defer cancel()
	requirePython(t, ctx)
	script, err := filepath.Abs("../../testdata/tap/loadpub.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, script, "--publishers", fmt.Sprint(pubs), "--rate", fmt.Sprint(rate), "--seconds", fmt.Sprint(secs))
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("loadpub.py said %q: %v", line, err)
	}
	var sources []events.Source
	for _, p := range strings.Fields(strings.TrimPrefix(line, "READY ")) {
		sources = append(sources, events.Source{Endpoint: "tcp://127.0.0.1:" + p})
	}
	opts := events.Options{}
	c := events.NewCollector(opts)
	var received atomic.Int64
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	cpu0 := cpuSeconds(t)
	start := time.Now()
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: sources, Observe: func(*events.Message) { received.Add(1) }}, c)
	}()
	// Sample the heap while the load runs.
	var peakHeap atomic.Uint64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for tctx.Err() == nil {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			select {
			case <-time.After(200 * time.Millisecond):
			case <-tctx.Done():
			}
		}
	}()
	// Publishers drop what they send before the tap's subscription reaches them; the tap
	// starts each one's accounting at the first batch it sees, so none of that is loss.
	_, _ = io.WriteString(stdin, "GO\n")
	line, err = out.ReadString('\n')
	if err != nil {
		t.Fatalf("loadpub.py result: %v", err)
	}
	var res struct {
		Sent    []int64 `json:"sent"`
		Bytes   []int64 `json:"bytes"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("loadpub.py result %q: %v", line, err)
	}
	var sent int64
	for _, n := range res.Sent {
		sent += n
	}
	// Wait for the last batches in flight: received stops growing.
	for prev := int64(-1); received.Load() != prev; {
		prev = received.Load()
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			t.Fatal("deadline while draining")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-sampled
	wall := time.Since(start).Seconds()
	cpu := cpuSeconds(t) - cpu0
	r := c.Report(time.Duration(res.Seconds * float64(time.Second)))
	var payload, own, lost, batches, maxBatch uint64
	for _, p := range r.Publishers {
		payload += p.PayloadBytes
		own += p.OwnDrops
		lost += p.LostBatches
		batches += p.Batches
		if p.Batches > 0 {
			maxBatch = max(maxBatch, p.FrameBytes/p.Messages)
		}
	}
	// The bound the README states: what is live, a full queue of messages (65,536 of the
	// largest size seen here, as zmq4 allocates them and as the queue holds them: twice its
	// bytes) plus the tracked blocks at ~145 B each, times two, since the garbage collector
	// lets the heap reach twice what is live before it collects (GOGC=100), plus 64 MB.
	bound := 2*(uint64(65536)*2*maxBatch+uint64(events.DefaultMaxBlocks)*145) + 64<<20
	t.Logf("%d publishers x %.2f MB/s for %.0f s: sent %d batches, tap accounted %d (%.1f MB payload, %.1f MB/s); own drops %d, lost %d; tap CPU %.1f s over %.0f s wall (%.0f%% of one core), %.1f MB per CPU second; peak heap %.0f MB, peak RSS %.0f MB, stated bound %.0f MB",
		pubs, float64(rate)/1e6, res.Seconds, sent, batches, float64(payload)/1e6, float64(payload)/1e6/res.Seconds, own, lost, cpu, wall, 100*cpu/wall, float64(payload)/1e6/cpu,
		float64(peakHeap.Load())/1e6, float64(peakRSS(t))/1e6, float64(bound)/1e6)
	if own != 0 || lost != 0 {
		t.Errorf("own drops %d, lost %d: the tap did not hold the load", own, lost)
	}
	if peakHeap.Load() > bound {
		t.Errorf("peak heap %d MB over the stated bound %d MB", peakHeap.Load()>>20, bound>>20)
	}
}
