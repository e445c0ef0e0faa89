package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

// TestTapDPRanks taps two data-parallel ranks given as one endpoint and --dp-ranks 2.
func TestTapDPRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed := "0"
	pubs, err := fleet.NewRankedPublishers(ctx, fleet.PublisherConfig{Seed: &seed}, 2)
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range pubs {
		defer func() { _ = p.Close() }()
		ev, err := p.Stored(make([]int64, 32), "")
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-tick.C:
					_ = p.Publish(ev)
				}
			}
		})
	}
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"tap", pubs[0].Endpoint(), "--dp-ranks", "2", "--duration", "1500ms", "-o", "json"},
		streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
	stop()
	wg.Wait()
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	var doc struct {
		Publishers []struct {
			Endpoint string `json:"endpoint"`
			DPRank   *int   `json:"dp_rank"`
			Batches  int    `json:"batches"`
		} `json:"publishers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Publishers) != 2 {
		t.Fatalf("got %d publishers, want 2: %s", len(doc.Publishers), out.String())
	}
	for r, p := range doc.Publishers {
		if p.Endpoint != pubs[r].Endpoint() || p.DPRank == nil || *p.DPRank != r || p.Batches == 0 {
			t.Errorf("publisher %d: %+v, want endpoint %s, rank %d and batches", r, p, pubs[r].Endpoint(), r)
		}
	}
}

// TestDemoTap runs the command line kvcheck demo runs: three emulated replicas, a few seconds.
func TestDemoTap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"tap", "--demo", "--duration", "3s", "--tokens-per-sec", "20000"}, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"}); code != exitOK {
		t.Fatalf("tap --demo: exit %d\n%s", code, errOut.String())
	}
	for _, want := range []string{"KV-event stream, 3 publishers", "kv@replica-c@demo", "hash parity:", "Findings"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTapFromTruncated: a recording cut inside its last record (a tap killed hard, a partial
// copy) is read up to the cut, and the cut is reported, not silently dropped.
func TestTapFromTruncated(t *testing.T) {
	var buf bytes.Buffer
	rec, err := events.NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	payload := events.AppendBatch(nil, &events.Batch{TS: 1000, HasDPRank: true}, events.Wire{Era: events.EraMap})
	for seq := range uint64(3) {
		frames := [][]byte{nil, binary.BigEndian.AppendUint64(nil, seq), payload}
		m := events.FromFrames("tcp://10.0.0.5:5557", frames, int64(seq+1)*1e9)
		rec.Message(&m, frames)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(t.TempDir(), "full.kvtap")
	cut := filepath.Join(t.TempDir(), "cut.kvtap")
	if err := os.WriteFile(full, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, buf.Bytes()[:buf.Len()-3], 0o644); err != nil {
		t.Fatal(err)
	}
	// A message of 100 frames, as kvcheck recorded before it bounded frames at receive time:
	// the reader skips it and says so; the rest of the recording counts.
	hostile := filepath.Join(t.TempDir(), "hostile.kvtap")
	bad := append(slices.Clone(buf.Bytes()), 0x02, 0x00, 0x04, 100)
	for range 100 {
		bad = append(bad, 1, 'x')
	}
	if err := os.WriteFile(hostile, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file    string
		batches int
		finding bool
		code    string
	}{{full, 3, false, "recording-truncated"}, {cut, 2, true, "recording-truncated"}, {hostile, 3, true, "recording-skipped"}} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"tap", "--from", tc.file, "-o", "json"},
			streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
		if code != exitOK {
			t.Fatalf("%s: exit %d, stderr %s", tc.file, code, errOut.String())
		}
		var doc struct {
			Publishers []struct{ Batches int } `json:"publishers"`
			Findings   []struct{ Code, Subject string }
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range doc.Findings {
			found = found || (f.Code == tc.code && f.Subject == tc.file)
		}
		if len(doc.Publishers) != 1 || doc.Publishers[0].Batches != tc.batches || found != tc.finding {
			t.Errorf("%s: publishers %+v, findings %+v; want %d batches and a %s finding %v",
				filepath.Base(tc.file), doc.Publishers, doc.Findings, tc.batches, tc.code, tc.finding)
		}
	}
}

// TestTapDPRanksReplay: one event endpoint and one replay endpoint expanded to two
// data-parallel ranks (port + r for both, SPEC §1.2) reach the right sockets: each rank's lost
// batches are recovered from its own replay socket.
func TestTapDPRanksReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed := "0"
	pubs, err := fleet.NewRankedPublishers(ctx, fleet.PublisherConfig{Seed: &seed, Replay: true, Version: "0.26.0"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pubs {
		defer func() { _ = p.Close() }()
	}
	sources, err := events.Endpoints{Dial: []string{pubs[0].Endpoint()}, Replay: []string{pubs[0].ReplayEndpoint()}, Ranks: 2}.Sources()
	if err != nil {
		t.Fatal(err)
	}
	for r, p := range pubs {
		if sources[r].Endpoint != p.Endpoint() || sources[r].Replay != p.ReplayEndpoint() {
			t.Fatalf("rank %d expands to %+v, want %s and %s", r, sources[r], p.Endpoint(), p.ReplayEndpoint())
		}
	}
	type obs struct {
		source    string
		recovered bool
	}
	seen := make(chan obs, 4096)
	c := events.NewCollector(events.Options{HashSeed: &seed})
	tctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: sources, Observe: func(m *events.Message) {
			select {
			case seen <- obs{m.Source, m.Recovered}:
			default:
			}
		}}, c)
	}()
	recovered := map[string]int{}
	for _, p := range pubs {
		ev, err := p.Stored(make([]int64, 32), "")
		if err != nil {
			t.Fatal(err)
		}
		// Publish until this rank's subscription is live, then lose two and send one.
		for live := false; !live; {
			if err := p.Publish(ev); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-seen:
				live = o.source == p.Endpoint()
				if o.recovered { // the other rank's, already
					recovered[o.source]++
				}
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				t.Fatalf("nothing received from %s", p.Endpoint())
			}
		}
		for range 2 {
			if err := p.PublishLost(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
	for recovered[pubs[0].Endpoint()] < 2 || recovered[pubs[1].Endpoint()] < 2 {
		select {
		case o := <-seen:
			if o.recovered {
				recovered[o.source]++
			}
		case <-ctx.Done():
			t.Fatalf("recovered by source %v, want 2 from each rank", recovered)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for r, p := range c.Report(time.Second).Publishers {
		if p.DPRank == nil || *p.DPRank != int64(r) || p.LostBatches != 2 || p.RecoveredBatches != 2 || p.UnrecoverableBatches != 0 {
			t.Errorf("rank %d: dp_rank %v lost %d recovered %d unrecoverable %d; want %d, 2, 2, 0", r, p.DPRank, p.LostBatches, p.RecoveredBatches, p.UnrecoverableBatches, r)
		}
	}
}
