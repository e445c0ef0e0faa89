package events

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var writeRecordings = flag.Bool("write-recordings", false, "rewrite testdata/run/*.kvtap from the batches in runtap_test.go")

// stored is one batch of one BlockStored event: a block of 16 tokens (16 copies of tok)
// with hash h, received at second at.
type stored struct {
	seq uint64
	at  int64
	tok int64
	h   uint64
}

// runRecordings are the two recordings of testdata/run, written by writeRecording:
//
//	a.kvtap  tcp://10.0.0.1:5557 topic kv@a: sequence 0, 1, 3 (2 never arrives), storing the
//	         blocks of tokens 1, 2 and 4 at seconds 0, 1 and 3
//	b.kvtap  tcp://10.0.0.2:5557 topic kv@b: sequence 0, 1, storing tokens 1 (the content a
//	         stored at second 0 and still holds) and 5 at seconds 2 and 4
var runRecordings = map[string]struct {
	src, topic string
	batches    []stored
}{
	"a.kvtap": {"tcp://10.0.0.1:5557", "kv@a", []stored{{0, 0, 1, 101}, {1, 1, 2, 102}, {3, 3, 4, 104}}},
	"b.kvtap": {"tcp://10.0.0.2:5557", "kv@b", []stored{{0, 2, 1, 101}, {1, 4, 5, 105}}},
}

func writeRecording(t *testing.T, name string) {
	t.Helper()
	r := runRecordings[name]
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = 1764590400 // 2025-12-01T12:00:00Z
	for _, b := range r.batches {
		toks := make([]int64, 16)
		for i := range toks {
			toks[i] = b.tok
		}
		batch := Batch{TS: float64(t0 + b.at), Events: []Event{{
			Type: TypeBlockStored, BlockHashes: []Hash{{Form: HashInt, Value: b.h}}, TokenIDs: toks, BlockSize: 16,
		}}}
		seq := binary.BigEndian.AppendUint64(nil, b.seq)
		frames := [][]byte{[]byte(r.topic), seq, AppendBatch(nil, &batch, Wire{Era: EraMap})}
		m := FromFrames(r.src, frames, (t0+b.at)*int64(time.Second))
		rec.Message(&m, frames)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "run", name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunTapRecordings analyses the two recordings together, merged by receive time: a lost
// one batch (sequence 2), b none; b's first block has the content a stored at second 0 and
// still held at second 2, so it is one duplicated block (16 tokens) of five stored.
func TestRunTapRecordings(t *testing.T) {
	paths := []string{filepath.Join("testdata", "run", "a.kvtap"), filepath.Join("testdata", "run", "b.kvtap")}
	if *writeRecordings {
		writeRecording(t, "a.kvtap")
		writeRecording(t, "b.kvtap")
	}
	r, err := RunTap(context.Background(), nil, TapRun{From: paths, Options: Options{MaxBlocks: DefaultMaxBlocks}})
	if err != nil {
		t.Fatal(err)
	}
	type pub struct {
		batches, stored, lost uint64
	}
	got := map[string]pub{}
	for _, p := range r.Publishers {
		got[p.Endpoint+" "+p.Topic] = pub{p.Batches, p.Events.BlockStored, p.LostBatches}
	}
	want := map[string]pub{"tcp://10.0.0.1:5557 kv@a": {3, 3, 1}, "tcp://10.0.0.2:5557 kv@b": {2, 2, 0}}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: batches, stored, lost = %v, want %v", k, got[k], w)
		}
	}
	if len(got) != 2 {
		t.Errorf("publishers %v, want the two", got)
	}
	if a := r.Analysis; a.StoredBlocks != 5 || a.DuplicateBlocks != 1 || a.DuplicateTokens != 16 {
		t.Errorf("stored %d, duplicated %d blocks (%d tokens); want 5, 1 (16)", a.StoredBlocks, a.DuplicateBlocks, a.DuplicateTokens)
	}
	lost := false
	for _, f := range r.Findings {
		lost = lost || (strings.Contains(f.Code, "lost") && strings.Contains(f.Subject, "10.0.0.1"))
	}
	if !lost {
		t.Errorf("findings %+v, want one about a's lost batch", r.Findings)
	}

	if _, err := RunTap(context.Background(), nil, TapRun{From: []string{filepath.Join(t.TempDir(), "absent.kvtap")}}); err == nil || !strings.Contains(err.Error(), "absent.kvtap") {
		t.Errorf("a missing recording: %v, want an error naming it", err)
	}
}

// tapStatus counts what a live tap says.
type tapStatus struct{ notes, progress int }

func (s *tapStatus) Note(string, ...any)     { s.notes++ }
func (s *tapStatus) Progress(string, ...any) { s.progress++ }
func (s *tapStatus) Done()                   {}

// TestRunTapLiveNoneConnected taps, for a short while, an endpoint no publisher binds on a
// real zmq4 socket: the report has the publisher, not connected, and NoneConnected. Endpoints
// that cannot work are an *EndpointError before any socket opens.
func TestRunTapLiveNoneConnected(t *testing.T) {
	run := TapRun{
		Endpoints: Endpoints{Dial: []string{"tcp://127.0.0.1:1"}, Ranks: 1}, Duration: 300 * time.Millisecond,
		QueueSize: 16, MaxMessage: DefaultMaxMessage, Options: Options{MaxBlocks: DefaultMaxBlocks, Ordered: true},
	}
	r, err := RunTap(context.Background(), &tapStatus{}, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Publishers) != 1 || r.Publishers[0].Connected == nil || *r.Publishers[0].Connected || !r.NoneConnected() {
		t.Errorf("publishers %+v, none connected %v; want one, not connected", r.Publishers, r.NoneConnected())
	}
	// Run, kvcheck tap's entry, says so with its error, the report still returned.
	r, err = run.Run(context.Background(), &tapStatus{}, io.Discard)
	var nc *NoneConnectedError
	if !errors.As(err, &nc) || nc.Endpoints != 1 || r == nil || !r.NoneConnected() {
		t.Errorf("Run: %v, report %v; want a NoneConnectedError for 1 endpoint with the report", err, r)
	}
	// Run checks first: no socket is opened for a tap that cannot run.
	bad := run
	bad.Duration = 0
	if r, err := bad.Run(context.Background(), &tapStatus{}, io.Discard); r != nil || err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Errorf("Run with no duration: %v, %v; want the usage error and no report", r, err)
	}
	run.Endpoints.Replay = []string{"tcp://127.0.0.1:2", "tcp://127.0.0.1:3"}
	var ee *EndpointError
	if _, err := RunTap(context.Background(), &tapStatus{}, run); !errors.As(err, &ee) {
		t.Errorf("two replay endpoints for one publisher: %v, want an *EndpointError", err)
	}
}
