package events

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

func codes(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Code)
	}
	return out
}

// TestOwnDropsAreNotLoss: a real publisher sends ten batches, numbered 0 to 9 without a gap,
// to a tap whose queue holds two and is not drained. The receiver drops eight itself; the
// next batch it queues carries their numbers, so the collector counts own drops and no lost
// batch, and blames no publisher (with a queue of 100 the report said lost_batches = own_drops
// and an ERROR blamed the publisher's high-water mark). A recording keeps the runs, so a
// replay of it agrees.
func TestOwnDropsAreNotLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "tcp://" + l.Addr().String()
	_ = l.Close()
	pub := zmq4.NewPub(ctx)
	defer func() { _ = pub.Close() }()
	if err := pub.Listen(ep); err != nil {
		t.Fatal(err)
	}
	payload := AppendBatch(nil, &Batch{TS: float64(time.Now().Unix()), HasDPRank: true}, Wire{Era: EraMap})
	send := func(seq uint64) {
		if err := pub.Send(zmq4.NewMsgFrom([]byte("kv"), binary.BigEndian.AppendUint64(nil, seq), payload)); err != nil {
			t.Fatal(err)
		}
	}
	queue := make(chan received, 2)
	var lk link
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		receive(rctx, Config{Topic: "", Now: time.Now, Logger: slog.New(slog.DiscardHandler)}, Source{Endpoint: ep}, queue, &lk)
	}()
	// Batch 0 until the subscription reaches the publisher (earlier ones are not sent).
	var got []received
	for len(got) == 0 {
		send(0)
		select {
		case r := <-queue:
			got = append(got, r)
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the receiver never connected")
		}
	}
	for seq := uint64(1); seq <= 10; seq++ {
		send(seq)
	}
	// Two fit in the queue, the other eight are dropped: wait for that, then make room.
	for lk.drops.Load() < 8 {
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the receiver dropped %d, want 8", lk.drops.Load())
		}
	}
	got = append(got, <-queue, <-queue)
	send(11)
	got = append(got, <-queue)
	stop()
	<-done
	if runs := got[3].msg.OwnDropped; len(runs) != 1 || runs[0] != (DropRun{Topic: "kv", From: 3, To: 10}) {
		t.Fatalf("batch 11 carries %+v, want the run 3..10", runs)
	}

	var rec bytes.Buffer
	recorder, err := NewRecorder(&rec)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Options{Ordered: true})
	for _, r := range got {
		recorder.Message(&r.msg, r.frames)
		c.Add(&r.msg)
	}
	c.OwnDrops(ep, lk.drops.Load())
	recorder.OwnDrops(ep, lk.drops.Load())
	if err := recorder.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, c *Collector) {
		t.Helper()
		r := c.Report(time.Second)
		p := r.Publishers[0]
		if p.OwnDrops != 8 || p.LostBatches != 0 || p.Batches != 4 || strings.Contains(strings.Join(codes(r), " "), "batches-lost") {
			t.Errorf("%s: own drops %d, lost %d, batches %d, findings %v; want 8, 0, 4 and no batches-lost",
				what, p.OwnDrops, p.LostBatches, p.Batches, codes(r))
		}
	}
	check("live", c)

	rd, err := NewReader(&rec)
	if err != nil {
		t.Fatal(err)
	}
	replayed := NewCollector(Options{Ordered: true})
	for {
		var r Record
		if err := rd.Next(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if r.OwnDrops > 0 {
			replayed.OwnDrops(r.Message.Source, r.OwnDrops)
			continue
		}
		replayed.Add(&r.Message)
	}
	check("replayed", replayed)
}

// TestImplausibleNumbers: a sequence jump to 2^64-1 and a timestamp in milliseconds are
// named in findings and never shown as a loss or a clock offset; a block size of 0 is named.
func TestImplausibleNumbers(t *testing.T) {
	c := NewCollector(Options{Ordered: true})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := Wire{Era: EraMap}
	add := func(seq uint64, ts float64, evs ...Event) {
		b := Batch{TS: ts, Events: evs, HasDPRank: true}
		c.Add(&Message{Source: "a", Topic: []byte("kv"), Seq: seq, Payload: AppendBatch(nil, &b, w), Frames: 3, SeqLen: 8, RecvNanos: now.UnixNano()})
	}
	secs := float64(now.Unix()) - 0.25
	add(0, secs)
	add(1, secs)
	add(^uint64(0), secs)
	add(2, secs)
	add(3, secs*1000) // milliseconds
	add(4, secs, Event{Type: TypeBlockStored, TokenIDs: toks(0, 16), BlockSize: 0, BlockHashes: []Hash{{Form: HashInt, Value: 1}}})
	r := c.Report(time.Second)
	p := r.Publishers[0]
	if p.LostBatches != 0 || p.SequenceJumps != 1 || p.BadTimestamps != 1 || p.BadBlockSizes != 1 {
		t.Errorf("lost %d, jumps %d, bad timestamps %d, bad block sizes %d; want 0, 1, 1, 1", p.LostBatches, p.SequenceJumps, p.BadTimestamps, p.BadBlockSizes)
	}
	if p.ClockOffsetSeconds == nil || math.Abs(*p.ClockOffsetSeconds-0.25) > 1e-6 {
		t.Errorf("clock offset %v, want 0.25 s from the plausible timestamps only", p.ClockOffsetSeconds)
	}
	msgs := map[string]string{}
	for _, f := range r.Findings {
		msgs[f.Code] = f.Message
	}
	for code, want := range map[string]string{"sequence-jump": "from 1 to 18446744073709551615", "bad-timestamps": "milliseconds sent as seconds?", "bad-block-size": "1 BlockStored"} {
		if !strings.Contains(msgs[code], want) {
			t.Errorf("finding %s = %q, want it to contain %q (findings %v)", code, msgs[code], want, codes(r))
		}
	}
	if _, ok := msgs["batches-lost"]; ok {
		t.Errorf("a batches-lost finding for a jump: %q", msgs["batches-lost"])
	}
}

// TestRecordingSessionSpan: rates over a recording are over the time the tap ran, which it
// records; a capture whose traffic sat in one second of a ten-second tap showed ten times the
// live bandwidth when measured over its first to last message. A recording without a session
// record (older, or a killed tap) falls back to the messages' span.
func TestRecordingSessionSpan(t *testing.T) {
	payload := AppendBatch(nil, &Batch{TS: 5, HasDPRank: true}, Wire{Era: EraMap})
	write := func(session bool) string {
		var buf bytes.Buffer
		rec, err := NewRecorder(&buf)
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range []int64{5e9, 6e9} {
			frames := [][]byte{[]byte("kv"), binary.BigEndian.AppendUint64(nil, uint64(i)), payload}
			m := FromFrames("tcp://a:1", frames, at)
			rec.Message(&m, frames)
		}
		if session {
			rec.Session(1e9, 11e9)
		}
		if err := rec.Flush(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "r.kvtap")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct {
		session bool
		want    time.Duration
	}{{true, 10 * time.Second}, {false, time.Second}} {
		c := NewCollector(Options{})
		d, _, err := c.AddRecordings(context.Background(), []string{write(tt.session)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if d != tt.want {
			t.Errorf("session recorded %v: duration %v, want %v", tt.session, d, tt.want)
		}
		if bps, want := c.Report(d).Publishers[0].BytesPerSec, float64(2*len(payload))/tt.want.Seconds(); bps != want {
			t.Errorf("session recorded %v: %g bytes/s, want %g", tt.session, bps, want)
		}
	}
}
