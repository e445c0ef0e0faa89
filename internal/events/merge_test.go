package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordingOf writes a recording of one message per receive time (ns), from source src; a
// negative time stands for an own-drops record of that many messages.
func recordingOf(t *testing.T, src string, times ...int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range times {
		if at < 0 {
			rec.OwnDrops(src, uint64(-at))
			continue
		}
		frames := [][]byte{[]byte("kv"), {0, 0, 0, 0, 0, 0, 0, byte(i)}, []byte(fmt.Sprintf("%s@%d", src, at))}
		m := FromFrames(src, frames, at)
		rec.Message(&m, frames)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// drain runs the merge to its end and returns what it yielded: "payload" for a message,
// "drops source n" for own drops.
func drain(t *testing.T, ctx context.Context, m *Merge) []string {
	t.Helper()
	var got []string
	for m.Next(ctx) {
		r := m.Record()
		if r.OwnDrops > 0 {
			got = append(got, fmt.Sprintf("drops %s %d (%s)", r.Message.Source, r.OwnDrops, m.Name()))
			continue
		}
		got = append(got, fmt.Sprintf("%s (%s)", r.Message.Payload, m.Name()))
	}
	return got
}

func TestMergeOrder(t *testing.T) {
	// Three taps of overlapping time. Receive times tie across recordings at 20 and 50: the
	// recording given first comes first. Own drops carry no time and come as they are read.
	a := recordingOf(t, "tcp://a", 10, 20, 50, 70)
	b := recordingOf(t, "tcp://b", 5, -3, 20, 60)
	c := recordingOf(t, "tcp://c", 50)
	m, err := NewMerge([]Recording{{"a.kvtap", bytes.NewReader(a)}, {"b.kvtap", bytes.NewReader(b)}, {"c.kvtap", bytes.NewReader(c)}})
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, context.Background(), m)
	want := []string{
		"tcp://b@5 (b.kvtap)",
		"drops tcp://b 3 (b.kvtap)", // read when b advanced past its first message
		"tcp://a@10 (a.kvtap)",
		"tcp://a@20 (a.kvtap)",
		"tcp://b@20 (b.kvtap)",
		"tcp://a@50 (a.kvtap)",
		"tcp://c@50 (c.kvtap)",
		"tcp://b@60 (b.kvtap)",
		"tcp://a@70 (a.kvtap)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged order (-want +got):\n%s", diff)
	}
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v at a clean end", err)
	}
	if e := m.Ends(); len(e) != 0 {
		t.Errorf("Ends() = %v for whole recordings", e)
	}
}

func TestMergeManySorted(t *testing.T) {
	// 50 recordings, each with every 50th time: the merge must give 0..n-1 in order.
	const k, per = 50, 40
	var recs []Recording
	for i := range k {
		var times []int64
		for j := range per {
			times = append(times, int64(j*k+i))
		}
		recs = append(recs, Recording{Name: fmt.Sprint(i), R: bytes.NewReader(recordingOf(t, "s", times...))})
	}
	m, err := NewMerge(recs)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for m.Next(context.Background()) {
		if got := m.Record().Message.RecvNanos; got != n {
			t.Fatalf("record %d has receive time %d", n, got)
		}
		n++
	}
	if n != k*per || m.Err() != nil {
		t.Errorf("merged %d records (err %v), want %d", n, m.Err(), k*per)
	}
}

func TestMergeTruncatedAndErrors(t *testing.T) {
	whole := recordingOf(t, "tcp://a", 1, 2, 3)
	m, err := NewMerge([]Recording{{"cut.kvtap", bytes.NewReader(whole[:len(whole)-2])}, {"whole.kvtap", bytes.NewReader(whole)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(drain(t, context.Background(), m)); got != 5 {
		t.Errorf("yielded %d records, want 5 (2 before the cut, 3 whole)", got)
	}
	// The cut is in the third message record, at byte 70 (see TestRecordingReadsWhatIsReadable).
	if diff := cmp.Diff([]End{{Name: "cut.kvtap", Truncated: true, CutAt: 70, Records: 3, Messages: 2, Recordings: 1}}, m.Ends()); diff != "" {
		t.Errorf("Ends() (-want +got):\n%s", diff)
	}

	_, err = NewMerge([]Recording{{"ok.kvtap", bytes.NewReader(whole)}, {"notes.txt", strings.NewReader("hello")}})
	if err == nil || !strings.HasPrefix(err.Error(), "recording notes.txt: not a kvcheck tap recording") {
		t.Errorf("bad header: err = %v, want one naming notes.txt", err)
	}

	// Junk after the last record ends that recording there, with a finding saying what was
	// read, instead of an error that loses the whole merge (issue 23).
	bad := append([]byte{}, whole...)
	bad = append(bad, 0x7f)
	m, err = NewMerge([]Recording{{"bad.kvtap", bytes.NewReader(bad)}, {"whole.kvtap", bytes.NewReader(whole)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(drain(t, context.Background(), m)); got != 6 || m.Err() != nil {
		t.Errorf("yielded %d records (err %v), want all 6", got, m.Err())
	}
	ends := m.Ends()
	if len(ends) != 1 || ends[0].Stop == nil || ends[0].Stop.At != int64(len(whole)) || ends[0].Stop.Left != 1 || ends[0].Messages != 3 {
		t.Fatalf("Ends() = %+v, want bad.kvtap stopped at byte %d with 1 byte left, 3 messages read", ends, len(whole))
	}
	fs := ends[0].Findings()
	if len(fs) != 1 || fs[0].Code != "recording-stopped" || !strings.Contains(fs[0].Message, fmt.Sprintf("read 3 messages in 4 records, bytes 0 to %d", len(whole))) {
		t.Errorf("findings %+v, want recording-stopped saying what was read", fs)
	}
}

func TestMergeCancel(t *testing.T) {
	m, err := NewMerge([]Recording{{"a", bytes.NewReader(recordingOf(t, "s", 1, 2, 3, 4))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !m.Next(ctx) {
		t.Fatal("no first record")
	}
	cancel()
	if m.Next(ctx) {
		t.Error("Next went on after the context was cancelled")
	}
	if err := m.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", err)
	}
	if m.Next(context.Background()) {
		t.Error("Next went on after it had stopped on an error")
	}
}
