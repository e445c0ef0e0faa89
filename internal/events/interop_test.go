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
	"github.com/kvcheck/kvcheck/internal/fleet"
)

const python = "/usr/bin/python3"

// requirePython fails the test, quickly and saying what to install, when /usr/bin/python3 with
// python3-zmq and python3-msgpack is missing: CI installs them (scripts/install-deps.sh), so a
// skip there would hide that the interop tests never ran. KVCHECK_NO_PYTHON=1 skips instead,
// for machines that cannot have them.
func requirePython(t testing.TB, ctx context.Context) {
	t.Helper()
	if os.Getenv("KVCHECK_NO_PYTHON") != "" {
		t.Skip("KVCHECK_NO_PYTHON is set")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", "import zmq, msgpack").CombinedOutput()
	if err != nil {
		t.Fatalf("%s with python3-zmq and python3-msgpack is needed for the libzmq interop tests: run scripts/install-deps.sh (Debian), or set KVCHECK_NO_PYTHON=1 to skip them: %v\n%s", python, err, out)
	}
}

// pyPublisher starts testdata/tap/pub.py and returns its endpoint, its stdin and stdout.
func pyPublisher(t testing.TB, ctx context.Context, args ...string) (string, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	requirePython(t, ctx)
	script, err := filepath.Abs("../../testdata/tap/pub.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("publisher did not start: %v", err)
	}
	var port int
	if _, err := fmt.Sscanf(line, "READY %d", &port); err != nil {
		t.Fatalf("publisher said %q, want READY <port>", line)
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", port), stdin, r
}

// TestInteropLibzmq proves that the tap receives from libzmq (pyzmq, the library vLLM uses)
// and that loss at a small high-water mark is counted exactly: every sequence number from the
// first one seen to the publisher's last is either received or counted lost.
func TestInteropLibzmq(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"map era, default hwm", []string{"--count", "2000", "--era", "map"}},
		{"array era, hwm 1", []string{"--count", "20000", "--era", "array", "--hwm", "1", "--events", "8", "--block-size", "64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ep, stdin, out := pyPublisher(t, ctx, tc.args...)
			c := events.NewCollector(events.Options{})
			tapCtx, stopTap := context.WithCancel(ctx)
			var first atomic.Bool
			started := make(chan struct{})
			var lastSeq, maxSeen atomic.Int64
			lastSeq.Store(-1)
			done := make(chan error, 1)
			go func() {
				done <- events.Tap(tapCtx, events.Config{
					Sources: []events.Source{{Endpoint: ep}},
					Observe: func(m *events.Message) {
						if first.CompareAndSwap(false, true) {
							close(started)
						}
						if int64(m.Seq) > maxSeen.Load() {
							maxSeen.Store(int64(m.Seq))
						}
						if l := lastSeq.Load(); l >= 0 && int64(m.Seq) >= l {
							stopTap()
						}
					},
				}, c)
			}()
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("no probe batch arrived from the publisher")
			}
			if _, err := io.WriteString(stdin, "GO\n"); err != nil {
				t.Fatal(err)
			}
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("publisher result: %v", err)
			}
			var res struct{ FirstSeq, LastSeq, Sent int64 }
			if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &struct {
				FirstSeq *int64 `json:"first_seq"`
				LastSeq  *int64 `json:"last_seq"`
				Sent     *int64 `json:"sent"`
			}{&res.FirstSeq, &res.LastSeq, &res.Sent}); err != nil {
				t.Fatalf("publisher result %q: %v", line, err)
			}
			lastSeq.Store(res.LastSeq)
			if maxSeen.Load() >= res.LastSeq {
				stopTap() // a batch at or past the last was accounted before lastSeq was known
			}
			// The publisher keeps sending tail batches, so one at or past last_seq arrives
			// even when the final batch itself was dropped at the high-water mark; the test's
			// deadline is the only bound.
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("no batch at or past the publisher's last sequence %d arrived (highest seen %d)", res.LastSeq, maxSeen.Load())
			}
			r := c.Report(time.Second)
			p := r.Publishers[0]
			if p.FirstSeq == nil {
				t.Fatal("nothing accounted")
			}
			// Every sequence number from the first seen to the highest seen is either received
			// or counted lost; the highest is at least the publisher's last.
			highest := uint64(maxSeen.Load())
			span := highest - *p.FirstSeq + 1
			t.Logf("publisher sent %d after GO (seq %d..%d); tap: first seq %d, highest %d, batches %d, lost %d in %d gaps, own drops %d",
				res.Sent, res.FirstSeq, res.LastSeq, *p.FirstSeq, highest, p.Batches, p.LostBatches, p.Gaps, p.OwnDrops)
			if got := p.Batches + p.LostBatches + p.Malformed; got != span {
				t.Errorf("received %d + lost %d + malformed %d = %d, want every sequence number from %d to %d (%d)",
					p.Batches, p.LostBatches, p.Malformed, got, *p.FirstSeq, highest, span)
			}
			if p.Malformed != 0 || p.Restarts != 0 || p.Duplicates != 0 || p.OwnDrops != 0 {
				t.Errorf("malformed %d restarts %d duplicates %d own drops %d; want 0", p.Malformed, p.Restarts, p.Duplicates, p.OwnDrops)
			}
		})
	}
}

// TestTapFleetPublisher runs the tap against emulated publishers: loss in the network is
// counted, replay recovers it, and a publisher that is not running yet is picked up when it
// starts.
func TestTapFleetPublisher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed := "0"
	pub, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Seed: &seed, Version: "0.26.0", Replay: true, Topic: "kv@a@m"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	c := events.NewCollector(events.Options{HashSeed: &seed})
	tapCtx, stopTap := context.WithCancel(ctx)
	type obs struct {
		seq       uint64
		recovered bool
	}
	seen := make(chan obs, 1024)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tapCtx, events.Config{
			Sources: []events.Source{{Endpoint: pub.Endpoint(), Replay: pub.ReplayEndpoint()}},
			Observe: func(m *events.Message) { seen <- obs{m.Seq, m.Recovered} },
		}, c)
	}()
	tokens := make([]int64, 64)
	for i := range tokens {
		tokens[i] = int64(i + 1)
	}
	ev, err := pub.Stored(tokens, "")
	if err != nil {
		t.Fatal(err)
	}
	// Send until the subscription is live (the slow-joiner window).
	probe := func() uint64 {
		for {
			if err := pub.Publish(ev); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-seen:
				return o.seq
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	firstSeen := probe()
	for range 2 {
		if err := pub.PublishLost(ev); err != nil {
			t.Fatal(err)
		}
	}
	pub.SkipSeq(3) // three more never sent nor buffered: unrecoverable
	for range 5 {
		if err := pub.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for the last batch and for the two recoverable ones, which come back through replay
	// once the gap is seen, before or after the last batch.
	last := pub.Sent() - 1
	for gotLast, recovered := false, 0; !gotLast || recovered < 2; {
		select {
		case o := <-seen:
			gotLast = gotLast || o.seq == last
			if o.recovered {
				recovered++
			}
		case <-ctx.Done():
			t.Fatalf("last batch seen %v, %d of 2 replayed batches arrived", gotLast, recovered)
		}
	}
	stopTap()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := c.Report(time.Second)
	p := r.Publishers[0]
	if len(r.Publishers) != 1 || p.LostBatches != 5 || p.Gaps != 1 || p.RecoveredBatches != 2 || p.UnrecoverableBatches != 3 || p.Topic != "kv@a@m" || p.WireEra != "map" {
		t.Errorf("first seen %d: %d publishers, lost %d gaps %d recovered %d unrecoverable %d topic %q era %q; want 1, 5 1 2 3 kv@a@m map",
			firstSeen, len(r.Publishers), p.LostBatches, p.Gaps, p.RecoveredBatches, p.UnrecoverableBatches, p.Topic, p.WireEra)
	}
	if hp := r.Analysis.HashParity; hp.Reproducible == nil || !*hp.Reproducible {
		t.Errorf("hash parity %+v, want reproducible", hp)
	}
}

// TestInteropCorpusEvent sends the BlockStored captured from vLLM through pyzmq and
// python3-msgpack and checks that the tap reproduces all of its hashes from its tokens.
func TestInteropCorpusEvent(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, stdin, _ := pyPublisher(t, ctx, "--corpus-event", filepath.Join(dir, "events", "llmd-kvcache_kv_event_base.json"))
	defer func() { _ = stdin.Close() }()
	seed := "42"
	c := events.NewCollector(events.Options{HashSeed: &seed})
	tctx, stop := context.WithCancel(ctx)
	n := 0
	err := events.Tap(tctx, events.Config{Sources: []events.Source{{Endpoint: ep}}, Observe: func(*events.Message) {
		if n++; n == 3 {
			stop()
		}
	}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("fewer than 3 batches arrived")
	}
	hp := c.Report(time.Second).Analysis.HashParity
	if hp.Reproducible == nil || !*hp.Reproducible || hp.CheckedBlocks < 25 || hp.CheckedBlocks%25 != 0 {
		t.Errorf("hash parity %+v, want every block of every copy of the 25-block event reproduced", hp)
	}
}
