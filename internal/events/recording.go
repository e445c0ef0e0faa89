package events

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A recording is a byte stream that starts with the magic "KVTAP\x00\x01\n" and continues with
// records, each a kind byte followed by unsigned varints (uv) and bytes:
//
//	0x01 source:    uv id, uv len, name bytes (defines a source id before first use)
//	0x02 message:   uv source id, uv receive time (Unix ns), uv frame count,
//	                then per frame uv len and bytes
//	0x03 recovered: as message, for a batch fetched from a replay socket
//	0x04 own drops: uv source id, uv count of messages the tap dropped itself
//	0x05 drop run:  uv source id, uv topic len, topic bytes, uv first seq, uv last seq: a
//	                run of batches the tap dropped itself, written before the next message
//	                of the source (it belongs to that message's Message.OwnDropped)
//	0x06 session:   uv start, uv end (Unix ns): when the tap that wrote the recording started
//	                and stopped, written last; rates over a recording use this span
//
// Records are written whole through a buffer that is flushed every second and on exit, so an
// interrupted recording loses at most its last second and its last record may be cut short;
// the reader stops cleanly at a cut record.
const recordingMagic = "KVTAP\x00\x01\n"

// maxRecordFrame bounds a frame the reader allocates, so a corrupt length cannot make it
// allocate without limit; a longer frame is skipped over without being read into memory.
const maxRecordFrame = 256 << 20

// maxFrames bounds the frames of one message as the tap keeps it (a vLLM message has 3): the
// tap records at most that many of a message's frames, and the reader skips a record that
// claims more.
const maxFrames = 64

// Recorder writes a recording.
type Recorder struct {
	w       *bufio.Writer
	ids     map[string]uint64
	scratch []byte
	err     error
}

// NewRecorder starts a recording on w.
func NewRecorder(w io.Writer) (*Recorder, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.WriteString(recordingMagic); err != nil {
		return nil, fmt.Errorf("write recording header: %w", err)
	}
	return &Recorder{w: bw, ids: map[string]uint64{}}, nil
}

func (r *Recorder) source(name string) uint64 {
	if id, ok := r.ids[name]; ok {
		return id
	}
	id := uint64(len(r.ids))
	r.ids[name] = id
	b := append(r.scratch[:0], 0x01)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	r.write(b)
	return id
}

func (r *Recorder) write(b []byte) {
	if r.err == nil {
		_, r.err = r.w.Write(b)
	}
	r.scratch = b[:0]
}

// Message records one received message with its frames as they arrived.
func (r *Recorder) Message(m *Message, frames [][]byte) {
	id := r.source(m.Source)
	for _, d := range m.OwnDropped {
		b := append(r.scratch[:0], 0x05)
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(len(d.Topic)))
		b = append(b, d.Topic...)
		b = binary.AppendUvarint(b, d.From)
		b = binary.AppendUvarint(b, d.To)
		r.write(b)
	}
	kind := byte(0x02)
	if m.Recovered {
		kind = 0x03
	}
	b := append(r.scratch[:0], kind)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(max(m.RecvNanos, 0)))
	frames = frames[:min(len(frames), maxFrames)] // the reader skips a record of more
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	r.write(b)
}

// Session records when the tap started and stopped (Unix ns), so that a recording's rates are
// over the time tapped, not over its first to last message.
func (r *Recorder) Session(start, end int64) {
	b := append(r.scratch[:0], 0x06)
	b = binary.AppendUvarint(b, uint64(max(start, 0)))
	b = binary.AppendUvarint(b, uint64(max(end, start, 0)))
	r.write(b)
}

// OwnDrops records messages the tap dropped itself.
func (r *Recorder) OwnDrops(source string, n uint64) {
	id := r.source(source)
	b := append(r.scratch[:0], 0x04)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, n)
	r.write(b)
}

// Flush writes buffered records out and returns the first write error.
func (r *Recorder) Flush() error {
	if r.err != nil {
		return fmt.Errorf("write recording: %w", r.err)
	}
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	return nil
}

// Reader reads a recording. It reads what is readable and says what it did not: a record cut
// short at the end (Truncated), records it read past (Skipped), a second recording appended to
// the first (Recordings), and the first record it cannot read at all (Stop), where it stops.
type Reader struct {
	r       *bufio.Reader
	count   *countingReader
	sources []string
	// Truncated is set when the recording ends inside a record (an interrupted tap); CutAt is
	// the byte offset where that record starts.
	Truncated bool
	CutAt     int64
	// Records counts the records read, Messages the message records among them.
	Records, Messages uint64
	// Recordings counts the recordings read from the stream: more than 1 when recordings were
	// concatenated (cat a.kvtap b.kvtap), each with its own header and source ids.
	Recordings int
	// Stop, when set, is the record the reader could not read (an unknown kind, a source never
	// defined, a span that goes backwards: junk appended, or a corrupt byte): everything
	// before it was read, nothing from it on.
	Stop *Stop
	// Skipped counts the message records the reader skipped because they hold what it does
	// not accept (more than 64 frames, a frame over 256 MiB): recordings of older kvcheck
	// versions, which recorded any message. SkipReason says why the first one was skipped.
	Skipped    uint64
	SkipReason string
	// dropped holds the drop runs read for the next message.
	dropped []DropRun
	// SessionStart and SessionEnd are when the tap started and stopped (Unix ns), known once
	// the session record, written last, is read; 0 for recordings without one (older ones,
	// or a tap killed before it could write it).
	SessionStart, SessionEnd int64
}

// Stop is where a reader stopped before the end of its input: the record's byte offset and
// kind, why it is no record kvcheck can read, and how many bytes were left from there.
type Stop struct {
	At, Left int64
	Reason   string
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// offset is the position in the recording of the next byte the reader will look at.
func (rd *Reader) offset() int64 { return rd.count.n - int64(rd.r.Buffered()) }

// errSkip marks a record that was read past but not kept.
type errSkip struct{ reason string }

func (e errSkip) Error() string { return e.reason }

// NewReader checks the magic and returns a reader positioned at the first record.
func NewReader(r io.Reader) (*Reader, error) {
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	magic := make([]byte, len(recordingMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != recordingMagic {
		return nil, errors.New("not a kvcheck tap recording (bad header): record one with kvcheck tap --record FILE")
	}
	return &Reader{r: br, count: cr, Recordings: 1}, nil
}

// Record is one record read back: a message with its frames, or own drops.
type Record struct {
	Message  Message
	Frames   [][]byte
	OwnDrops uint64
}

// Next reads the next message or own-drops record. It returns io.EOF at the end, also after a
// cut-short last record (then Truncated is set).
//
// A record it cannot read does not fail the recording: Next stops there, sets Stop, and
// returns io.EOF, so that what came before is kept. A second recording's header at a record
// boundary (two recordings concatenated) starts a new recording with its own sources.
func (rd *Reader) Next(rec *Record) error {
	if rd.Stop != nil {
		return io.EOF
	}
	for {
		at := rd.offset()
		if b, _ := rd.r.Peek(len(recordingMagic)); string(b) == recordingMagic {
			_, _ = rd.r.Discard(len(recordingMagic)) // peeked: buffered
			rd.sources, rd.dropped = nil, nil
			rd.Recordings++
			continue
		}
		kind, err := rd.r.ReadByte()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("read recording: %w", err)
		}
		err = rd.record(kind, rec)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			rd.Truncated, rd.CutAt = true, at
			return io.EOF
		}
		var skip errSkip
		if errors.As(err, &skip) {
			if rd.Skipped == 0 {
				rd.SkipReason = skip.reason
			}
			rd.Skipped++
			continue
		}
		var bad errCorrupt
		if errors.As(err, &bad) {
			// The rest is counted, not kept: its length says how much was not read.
			_, _ = io.Copy(io.Discard, rd.r)
			rd.Stop = &Stop{At: at, Left: rd.count.n - at, Reason: bad.reason}
			return io.EOF
		}
		if err != nil {
			return err
		}
		rd.Records++
		if kind == 0x01 || kind == 0x05 || kind == 0x06 {
			continue
		}
		if kind != 0x04 {
			rd.Messages++
		}
		return nil
	}
}

// errCorrupt marks a record the reader cannot read: the bytes there are no record of a known
// kind, or contradict what came before.
type errCorrupt struct{ reason string }

func (e errCorrupt) Error() string { return e.reason }

func corrupt(format string, args ...any) error { return errCorrupt{fmt.Sprintf(format, args...)} }

func (rd *Reader) uv() (uint64, error) {
	v, err := binary.ReadUvarint(rd.r)
	switch {
	case err == io.EOF:
		return 0, io.ErrUnexpectedEOF
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return 0, corrupt("a number longer than 64 bits")
	}
	return v, err
}

// discard reads past n bytes without keeping them.
func (rd *Reader) discard(n uint64) error {
	for n > 0 {
		k, err := rd.r.Discard(int(min(n, 1<<30)))
		n -= uint64(k)
		if err != nil {
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}

func (rd *Reader) bytes(n uint64) ([]byte, error) {
	if n > maxRecordFrame {
		return nil, corrupt("a record claims a %d-byte name or topic, over %d MiB", n, maxRecordFrame>>20)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// source reads a source id and returns the name an earlier record defined for it.
func (rd *Reader) source() (string, error) {
	id, err := rd.uv()
	if err != nil {
		return "", err
	}
	if id >= uint64(len(rd.sources)) {
		return "", corrupt("a record names source %d, which no record defined", id)
	}
	return rd.sources[id], nil
}

func (rd *Reader) record(kind byte, rec *Record) error {
	switch kind {
	case 0x01:
		id, err := rd.uv()
		if err != nil {
			return err
		}
		n, err := rd.uv()
		if err != nil {
			return err
		}
		name, err := rd.bytes(n)
		if err != nil {
			return err
		}
		if id != uint64(len(rd.sources)) {
			return corrupt("source %d is defined out of order (%d sources so far)", id, len(rd.sources))
		}
		rd.sources = append(rd.sources, string(name))
		return nil
	case 0x02, 0x03:
		src, err := rd.source()
		if err != nil {
			return err
		}
		rx, err := rd.uv()
		if err != nil {
			return err
		}
		nf, err := rd.uv()
		if err != nil {
			return err
		}
		// A record the reader does not keep is read past frame by frame (each frame carries
		// its length), so one hostile message costs that message, not the recording.
		var skip string
		if nf > maxFrames {
			skip = fmt.Sprintf("a message of %d frames (at most %d are kept; vLLM sends 3)", nf, maxFrames)
		}
		frames := make([][]byte, min(nf, maxFrames))
		for i := uint64(0); i < nf; i++ {
			n, err := rd.uv()
			if err != nil {
				return err
			}
			if skip == "" && n > maxRecordFrame {
				skip = fmt.Sprintf("a frame of %d bytes (over the reader's %d MiB)", n, maxRecordFrame>>20)
			}
			if skip != "" {
				if err := rd.discard(n); err != nil {
					return err
				}
				continue
			}
			if frames[i], err = rd.bytes(n); err != nil {
				return err
			}
		}
		if skip != "" {
			return errSkip{skip}
		}
		*rec = Record{Message: FromFrames(src, frames, int64(rx)), Frames: frames}
		rec.Message.Recovered = kind == 0x03
		rec.Message.OwnDropped, rd.dropped = rd.dropped, nil
		return nil
	case 0x05:
		if _, err := rd.source(); err != nil {
			return err
		}
		n, err := rd.uv()
		if err != nil {
			return err
		}
		topic, err := rd.bytes(n)
		if err != nil {
			return err
		}
		from, err := rd.uv()
		if err != nil {
			return err
		}
		to, err := rd.uv()
		if err != nil {
			return err
		}
		if to < from {
			return corrupt("a drop run %d..%d goes backwards", from, to)
		}
		if len(rd.dropped) < maxDropRuns {
			rd.dropped = append(rd.dropped, DropRun{Topic: string(topic), From: from, To: to})
		}
		return nil
	case 0x06:
		start, err := rd.uv()
		if err != nil {
			return err
		}
		end, err := rd.uv()
		if err != nil {
			return err
		}
		if end < start || end > 1<<63-1 {
			return corrupt("a session %d..%d is not a time span", start, end)
		}
		// Recordings concatenated have a session each: the span covers them all.
		if rd.SessionEnd == 0 || int64(start) < rd.SessionStart {
			rd.SessionStart = int64(start)
		}
		rd.SessionEnd = max(rd.SessionEnd, int64(end))
		return nil
	case 0x04:
		src, err := rd.source()
		if err != nil {
			return err
		}
		n, err := rd.uv()
		if err != nil {
			return err
		}
		*rec = Record{Message: Message{Source: src}, OwnDrops: n}
		return nil
	}
	return corrupt("a record of kind 0x%02x, which this kvcheck does not know (bytes appended to the recording, a corrupt byte, or a newer kvcheck's record)", kind)
}
