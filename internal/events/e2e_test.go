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
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
)

// e2eArgs make pub.py send vLLM-shaped batches (8 BlockStored events of 64 tokens, about
// 2.5 KB) at full speed for 3 s through a PUB socket with libzmq's default high-water mark.
var e2eArgs = []string{"--seconds", "3", "--hwm", "1000", "--events", "8", "--block-size", "16"}

type pubResult struct {
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
	Sent     int64 `json:"sent"`
}

func readResult(t testing.TB, r *bufio.Reader) pubResult {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("publisher result: %v", err)
	}
	var res pubResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &res); err != nil {
		t.Fatalf("publisher result %q: %v", line, err)
	}
	return res
}

// BenchmarkEndToEndRate measures a pyzmq SUB and kvcheck's tap (receive, decode and account)
// against the same pyzmq publisher at full speed, one round of each per iteration, alternating
// so both see the same machine load (run it with -benchtime=3x for three rounds). It reports
// the medians over the rounds: both rates in MB/s and MB per CPU second, and the ratios
// tap/pyzmq that BENCHMARKS.md records; the rounds are logged with -v.
func BenchmarkEndToEndRate(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var pys, taps, pyCPUs, tapCPUs, ratios, cpuRatios []float64
	for round := range b.N {
		py, pyLost, pyCPU := e2ePySub(b, ctx)
		tap, tapLost, own, tapCPU := e2eTap(b, ctx)
		pys, taps, pyCPUs, tapCPUs = append(pys, py), append(taps, tap), append(pyCPUs, pyCPU), append(tapCPUs, tapCPU)
		ratios = append(ratios, tap/py)
		cpuRatios = append(cpuRatios, tapCPU/pyCPU)
		b.Logf("round %d: pyzmq SUB %.0f MB/s, %.0f MB per CPU second (%d lost at the publisher); kvcheck tap %.0f MB/s, %.0f MB per CPU second, decoded and accounted (%d lost at the publisher, %d own drops); ratio %.2f, per CPU second %.2f",
			round+1, py, pyCPU, pyLost, tap, tapCPU, tapLost, own, tap/py, tapCPU/pyCPU)
	}
	b.ReportMetric(0, "ns/op") // a round's wall time says nothing
	b.ReportMetric(median(pys), "pyzmq-MB/s")
	b.ReportMetric(median(taps), "tap-MB/s")
	b.ReportMetric(median(pyCPUs), "pyzmq-MB/cpu-s")
	b.ReportMetric(median(tapCPUs), "tap-MB/cpu-s")
	b.ReportMetric(median(ratios), "tap/pyzmq")
	b.ReportMetric(median(cpuRatios), "tap/pyzmq-cpu")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuSeconds is the CPU time (user + system) this process has used.
func cpuSeconds(t testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func e2ePySub(t testing.TB, ctx context.Context) (float64, int64, float64) {
	ep, stdin, out := pyPublisher(t, ctx, e2eArgs...)
	defer func() { _ = stdin.Close() }()
	script, _ := filepath.Abs("../../testdata/tap/sub.py")
	sub := exec.CommandContext(ctx, python, script, ep)
	subIn, _ := sub.StdinPipe()
	subOutPipe, _ := sub.StdoutPipe()
	sub.Stderr = os.Stderr
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Process.Kill(); _ = sub.Wait() }()
	subOut := bufio.NewReader(subOutPipe)
	if l, err := subOut.ReadString('\n'); err != nil || strings.TrimSpace(l) != "READY" {
		t.Fatalf("sub.py said %q: %v", l, err)
	}
	_, _ = io.WriteString(stdin, "GO\n")
	res := readResult(t, out)
	fmt.Fprintf(subIn, "%d\n", res.LastSeq)
	var py struct {
		PayloadBytes int64   `json:"payload_bytes"`
		Seconds      float64 `json:"seconds"`
		Lost         int64   `json:"lost"`
		CPU          float64 `json:"cpu_seconds"`
	}
	line, err := subOut.ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &py) != nil {
		t.Fatalf("sub.py result %q: %v", line, err)
	}
	return float64(py.PayloadBytes) / py.Seconds / 1e6, py.Lost, float64(py.PayloadBytes) / py.CPU / 1e6
}

func e2eTap(t testing.TB, ctx context.Context) (float64, uint64, uint64, float64) {
	ep, stdin, out := pyPublisher(t, ctx, e2eArgs...)
	defer func() { _ = stdin.Close() }()
	c := events.NewCollector(events.Options{})
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	var first, last, lastSeq atomic.Int64
	lastSeq.Store(-1)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: []events.Source{{Endpoint: ep}}, Observe: func(m *events.Message) {
			if first.Load() == 0 {
				first.Store(m.RecvNanos)
				close(started)
			}
			last.Store(m.RecvNanos)
			if l := lastSeq.Load(); l >= 0 && int64(m.Seq) >= l {
				stop()
			}
		}}, c)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no probe batch arrived from the publisher")
	}
	cpu0 := cpuSeconds(t)
	_, _ = io.WriteString(stdin, "GO\n")
	res := readResult(t, out)
	lastSeq.Store(res.LastSeq)
	go func() {
		select {
		case <-time.After(15 * time.Second):
			stop()
		case <-tctx.Done():
		}
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cpu := cpuSeconds(t) - cpu0
	r := c.Report(time.Duration(last.Load() - first.Load()))
	p := r.Publishers[0]
	return float64(p.PayloadBytes) / r.DurationSeconds / 1e6, p.LostBatches, p.OwnDrops, float64(p.PayloadBytes) / cpu / 1e6
}
