package events

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRecordingRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][][]byte{
		{[]byte("kv@a"), {0, 0, 0, 0, 0, 0, 0, 7}, []byte("payload-a")},
		{[]byte(""), {0, 0, 0, 0, 0, 0, 0, 1}, []byte("payload-b")},
		{[]byte("odd")}, // a malformed message is recorded as it came
	}
	msgs := []Message{
		FromFrames("tcp://a:1", frames[0], 100),
		FromFrames("tcp://b:2", frames[1], 200),
		FromFrames("tcp://a:1", frames[2], 300),
	}
	msgs[1].Recovered = true
	for i := range msgs {
		rec.Message(&msgs[i], frames[i])
	}
	rec.OwnDrops("tcp://b:2", 5)
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()

	rd, err := NewReader(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	for {
		var r Record
		if err := rd.Next(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []Record{
		{Message: msgs[0], Frames: frames[0]},
		{Message: msgs[1], Frames: frames[1]},
		{Message: msgs[2], Frames: frames[2]},
		{Message: Message{Source: "tcp://b:2"}, OwnDrops: 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if rd.Truncated {
		t.Error("complete recording reported as truncated")
	}

	// An interrupted recording: every record before the cut is read, then a clean end.
	rd, err = NewReader(bytes.NewReader(full[:len(full)-2]))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		var r Record
		if err := rd.Next(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 || !rd.Truncated {
		t.Errorf("cut recording gave %d records, truncated %v; want 3, true", n, rd.Truncated)
	}
}

func TestRecordingCorrupt(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"undefined source", recordingMagic + "\x02\x05\x00\x00"},
		{"unknown kind", recordingMagic + "\x09"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := NewReader(bytes.NewReader([]byte(tt.in)))
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			if err := rd.Next(&r); err == nil || errors.Is(err, io.EOF) {
				t.Errorf("Next = %v, want a corruption error", err)
			}
		})
	}
	if _, err := NewReader(bytes.NewReader([]byte("hello"))); err == nil {
		t.Error("NewReader accepted a file without the header")
	}
}

// TestRecordingSkipsHostileRecord: a record the reader does not keep (a 100-frame message, as
// kvcheck recorded before it bounded frames at receive time, or a frame over 256 MiB) is read
// past and counted; the records after it are read as usual, instead of the whole file being
// refused as corrupt.
func TestRecordingSkipsHostileRecord(t *testing.T) {
	good := [][]byte{[]byte("kv"), {0, 0, 0, 0, 0, 0, 0, 2}, []byte("payload")}
	record := func(frameLens ...uint64) []byte {
		b := []byte{0x02, 0x00, 0x05}
		b = binary.AppendUvarint(b, uint64(len(frameLens)))
		for _, n := range frameLens {
			b = binary.AppendUvarint(b, n)
			b = append(b, bytes.Repeat([]byte{'x'}, int(min(n, 1<<20)))...)
		}
		return b
	}
	hundred := make([]uint64, 100)
	for i := range hundred {
		hundred[i] = 1
	}
	tests := []struct {
		name, reason string
		bad          []byte
	}{
		{"100 frames", "a message of 100 frames", record(hundred...)},
		// The frame claims 300 MiB but holds 1 MiB: the reader skips to where its length
		// says it ends, which here is past the end of the file.
		{"huge frame", "", record(3, 300<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(recordingMagic + "\x01\x00\x01a")
			in = append(in, tt.bad...)
			in = append(in, 0x02, 0x00, 0x06, 0x03)
			for _, f := range good {
				in = binary.AppendUvarint(in, uint64(len(f)))
				in = append(in, f...)
			}
			rd, err := NewReader(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			var got []Record
			for {
				var r Record
				if err := rd.Next(&r); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("Next = %v, want the bad record skipped", err)
				}
				got = append(got, r)
			}
			if tt.reason == "" { // the huge frame runs past the end: a cut recording
				if !rd.Truncated || len(got) != 0 {
					t.Errorf("got %d records, truncated %v; want 0, true", len(got), rd.Truncated)
				}
				return
			}
			if rd.Skipped != 1 || !strings.Contains(rd.SkipReason, tt.reason) {
				t.Errorf("skipped %d (%q), want 1 naming %q", rd.Skipped, rd.SkipReason, tt.reason)
			}
			if len(got) != 1 || got[0].Message.Seq != 2 || got[0].Message.RecvNanos != 6 {
				t.Errorf("records %+v, want the good message after the skipped one", got)
			}
		})
	}
}

// TestRecorderBoundsFrames: the recorder writes at most maxFrames frames of a message, so what
// it writes is always readable.
func TestRecorderBoundsFrames(t *testing.T) {
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, 100)
	for i := range frames {
		frames[i] = []byte{byte(i)}
	}
	m := FromFrames("s", frames, 1)
	rec.Message(&m, frames)
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := rd.Next(&r); err != nil {
		t.Fatalf("Next = %v, want the recorded message", err)
	}
	if len(r.Frames) != maxFrames || rd.Skipped != 0 {
		t.Errorf("read %d frames, skipped %d; want %d, 0", len(r.Frames), rd.Skipped, maxFrames)
	}
}

// FuzzRecording reads arbitrary recordings: errors are fine, panics and unbounded
// allocations are not.
func FuzzRecording(f *testing.F) {
	var buf bytes.Buffer
	rec, _ := NewRecorder(&buf)
	fr := [][]byte{[]byte("t"), {0, 0, 0, 0, 0, 0, 0, 1}, {0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 0xc0}}
	m := FromFrames("s", fr, 1)
	rec.Message(&m, fr)
	rec.OwnDrops("s", 3)
	_ = rec.Flush()
	f.Add(buf.Bytes())
	f.Add([]byte(recordingMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		c := NewCollector(Options{MaxBlocks: 64})
		for range 1000 {
			var r Record
			if err := rd.Next(&r); err != nil {
				return
			}
			c.Add(&r.Message)
		}
		_ = c.Report(1)
	})
}
