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
	"strings"
	"sync/atomic"
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

func readResult(t *testing.T, r *bufio.Reader) pubResult {
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

// TestEndToEndRate measures, in one run, a pyzmq SUB and kvcheck's tap (receive, decode and
// account) against the same pyzmq publisher at full speed, and logs both rates and their
// ratio. It is a measurement, not a check: set KVCHECK_BENCH_E2E=1 to run it.
func TestEndToEndRate(t *testing.T) {
	if os.Getenv("KVCHECK_BENCH_E2E") == "" {
		t.Skip("set KVCHECK_BENCH_E2E=1 to measure")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Reference: pyzmq SUB.
	ep, stdin, out := pyPublisher(t, ctx, e2eArgs...)
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
	io.WriteString(stdin, "GO\n")
	res := readResult(t, out)
	fmt.Fprintf(subIn, "%d\n", res.LastSeq)
	var py struct {
		Messages     int64   `json:"messages"`
		PayloadBytes int64   `json:"payload_bytes"`
		Seconds      float64 `json:"seconds"`
		Lost         int64   `json:"lost"`
	}
	line, err := subOut.ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &py) != nil {
		t.Fatalf("sub.py result %q: %v", line, err)
	}
	pyRate := float64(py.PayloadBytes) / py.Seconds / 1e6
	stdin.Close()

	// kvcheck tap.
	ep, stdin, out = pyPublisher(t, ctx, e2eArgs...)
	c := events.NewCollector(events.Options{})
	tctx, stop := context.WithCancel(ctx)
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
	<-started
	io.WriteString(stdin, "GO\n")
	res = readResult(t, out)
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
	r := c.Report(time.Duration(last.Load() - first.Load()))
	p := r.Publishers[0]
	goRate := float64(p.PayloadBytes) / r.DurationSeconds / 1e6
	t.Logf("pyzmq SUB: %d messages, %.0f MB/s, %d lost at the publisher", py.Messages, pyRate, py.Lost)
	t.Logf("kvcheck tap: %d batches decoded and accounted, %.0f MB/s, %d lost at the publisher, %d own drops, %.0f events/s",
		p.Batches, goRate, p.LostBatches, p.OwnDrops, float64(p.Events.Total())/r.DurationSeconds)
	t.Logf("ratio tap/pyzmq: %.2f", goRate/pyRate)
}
