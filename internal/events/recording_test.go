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

// TestRecordingCorrupt: a record the reader cannot read ends the reading there, as a clean end
// with Stop set (where, why, how much was left), not an error that loses what came before.
func TestRecordingCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason string
	}{
		{"undefined source", recordingMagic + "\x02\x05\x00\x00", "source 5, which no record defined"},
		{"unknown kind", recordingMagic + "\x09", "kind 0x09"},
		{"overlong number", recordingMagic + "\x04" + strings.Repeat("\xff", 11), "longer than 64 bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := NewReader(bytes.NewReader([]byte(tt.in)))
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			if err := rd.Next(&r); !errors.Is(err, io.EOF) {
				t.Fatalf("Next = %v, want io.EOF with Stop set", err)
			}
			want := int64(len(tt.in) - len(recordingMagic))
			if rd.Stop == nil || rd.Stop.At != int64(len(recordingMagic)) || rd.Stop.Left != want || !strings.Contains(rd.Stop.Reason, tt.reason) {
				t.Errorf("Stop = %+v, want at byte 8 with %d bytes left, for %q", rd.Stop, want, tt.reason)
			}
		})
	}
	if _, err := NewReader(bytes.NewReader([]byte("hello"))); err == nil {
		t.Error("NewReader accepted a file without the header")
	}
}

// TestRecordingReadsWhatIsReadable (issue 23 item 6): junk appended, two recordings
// concatenated, one byte flipped. The recording of tcp://a with messages at 1, 2, 3 is 96
// bytes: the 8-byte header, a 10-byte source record (kind, id 0, length 7, "tcp://a") and
// three 26-byte message records (kind, source, time, 3 frames: 1+2 "kv", 1+8 sequence, 1+9
// "tcp://a@N"), starting at bytes 18, 44 and 70.
func TestRecordingReadsWhatIsReadable(t *testing.T) {
	a := recordingOf(t, "tcp://a", 1, 2, 3)
	if len(a) != 96 {
		t.Fatalf("the recording is %d bytes, want the 96 worked out", len(a))
	}
	b := recordingOf(t, "tcp://b", 4, 5)
	flip := func(at int, mask byte) []byte {
		c := bytes.Clone(a)
		c[at] ^= mask
		return c
	}
	tests := []struct {
		name       string
		in         []byte
		sources    []string // of the messages read, in order
		stop       *Stop
		recordings int
	}{
		{"whole", a, []string{"tcp://a", "tcp://a", "tcp://a"}, nil, 1},
		{"junk appended", append(bytes.Clone(a), "garbage\n"...), []string{"tcp://a", "tcp://a", "tcp://a"},
			&Stop{At: 96, Left: 8, Reason: "a record of kind 0x67, which this kvcheck does not know (bytes appended to the recording, a corrupt byte, or a newer kvcheck's record)"}, 1},
		// The second recording's source 0 is tcp://b, not the first's tcp://a.
		{"two concatenated", append(bytes.Clone(a), b...), []string{"tcp://a", "tcp://a", "tcp://a", "tcp://b", "tcp://b"}, nil, 2},
		// The second message's kind byte 0x02 flipped to 0x42: one message read, 52 bytes left.
		{"flipped kind", flip(44, 0x40), []string{"tcp://a"},
			&Stop{At: 44, Left: 52, Reason: "a record of kind 0x42, which this kvcheck does not know (bytes appended to the recording, a corrupt byte, or a newer kvcheck's record)"}, 1},
		// The third message's source id 0 flipped to 4.
		{"flipped source", flip(71, 0x04), []string{"tcp://a", "tcp://a"}, &Stop{At: 70, Left: 26, Reason: "a record names source 4, which no record defined"}, 1},
		// A byte of a frame's content: the record still reads; the message differs.
		{"flipped payload", flip(94, 0x01), []string{"tcp://a", "tcp://a", "tcp://a"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := NewReader(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				var r Record
				if err := rd.Next(&r); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("Next: %v", err)
				}
				got = append(got, r.Message.Source)
			}
			if diff := cmp.Diff(tt.sources, got); diff != "" {
				t.Errorf("messages read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stop, rd.Stop); diff != "" {
				t.Errorf("Stop (-want +got):\n%s", diff)
			}
			if rd.Recordings != tt.recordings || rd.Messages != uint64(len(tt.sources)) || rd.Truncated {
				t.Errorf("recordings %d, messages %d, truncated %v; want %d, %d, false", rd.Recordings, rd.Messages, rd.Truncated, tt.recordings, len(tt.sources))
			}
		})
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
			if err := rd.Next(&r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				// Whatever the bytes, the reader ends cleanly and says where it stopped.
				t.Fatalf("Next = %v, want records or io.EOF", err)
			}
			c.Add(&r.Message)
		}
		_ = c.Report(1)
		if st := rd.Stop; st != nil && st.At+st.Left != int64(len(data)) {
			t.Errorf("stopped at byte %d with %d left, in %d bytes", st.At, st.Left, len(data))
		}
	})
}
