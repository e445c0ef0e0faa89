package events

import (
	"bytes"
	"errors"
	"io"
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
		{"huge frame", recordingMagic + "\x01\x00\x01a\x02\x00\x00\x01\xff\xff\xff\xff\x0f"},
		{"many frames", recordingMagic + "\x01\x00\x01a\x02\x00\x00\xff\x01"},
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
