package events

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Recording is one recording to read, named as the user gave it (usually its path).
type Recording struct {
	Name string
	R    io.Reader
}

// Merge reads several recordings together and yields their records in receive-time order, so
// that recordings taken at the same time by several taps interleave as the batches arrived.
// Records with equal receive times come in the order the recordings were given. An own-drops
// record (the tap's own losses, which carry no receive time) is yielded as soon as it is read.
//
// The earliest pending message of each recording sits in a heap: each record costs O(log k)
// for k recordings, and memory is one record per recording.
//
//	m, err := events.NewMerge(recs)
//	for m.Next(ctx) {
//		rec, name := m.Record(), m.Name()
//		...
//	}
//	if err := m.Err(); err != nil { ... }
type Merge struct {
	h       mergeHeap
	drops   []mergeDrop // own-drops records read but not yet yielded
	cur     *Record
	curName string
	drop    Record
	err     error
	ends    []End
	// start and end span the recorded sessions read so far (0: none).
	start, end int64
}

// End is how one recording ended: cut short inside a record (an interrupted tap or a partial
// copy; everything before the cut was read), or with records read past (see Reader.Skipped).
type End struct {
	Name       string
	Truncated  bool
	Skipped    uint64
	SkipReason string
	// CutAt is where the cut record starts (byte offset), when Truncated.
	CutAt int64
	// Records and Messages are what was read (see Reader); Recordings how many recordings the
	// file held one after another; Stop the record the reader could not read, where it stopped.
	Records, Messages uint64
	Recordings        int
	Stop              *Stop
}

// Findings are the end's findings: recording-stopped, recording-truncated, recording-skipped
// (warnings: something was not read) and recording-concatenated (a note).
func (e End) Findings() []finding.Finding {
	var out []finding.Finding
	read := fmt.Sprintf("%d messages in %d records", e.Messages, e.Records)
	if e.Stop != nil {
		out = append(out, finding.Finding{Severity: finding.Warning, Code: "recording-stopped", Subject: e.Name,
			Message: fmt.Sprintf("read %s, bytes 0 to %d; the record at byte %d is %s: reading stopped there, and the remaining %d bytes were not read", read, e.Stop.At, e.Stop.At, e.Stop.Reason, e.Stop.Left),
			Fix:     "check the file: bytes appended to a recording, or a copy that was damaged; the figures cover what was read"})
	}
	if e.Skipped > 0 {
		out = append(out, finding.Finding{Severity: finding.Warning, Code: "recording-skipped", Subject: e.Name,
			Message: fmt.Sprintf("%d record(s) skipped, the first holding %s: a hostile or broken publisher's message that an older kvcheck recorded; everything else was read", e.Skipped, e.SkipReason)})
	}
	if e.Truncated {
		// What the cut record held is unknown, maybe the last batch of a publisher: the
		// sequence numbers cannot show it, so say so.
		out = append(out, finding.Finding{Severity: finding.Warning, Code: "recording-truncated", Subject: e.Name,
			Message: fmt.Sprintf("the recording ends inside the record at byte %d (the tap was killed, or the file is a partial copy); the %s before it were read, the cut record is lost", e.CutAt, read)})
	}
	if e.Recordings > 1 {
		out = append(out, finding.Finding{Severity: finding.Info, Code: "recording-concatenated", Subject: e.Name,
			Message: fmt.Sprintf("%d recordings one after another in one file (concatenated): each was read with its own sources, %s in all; rates are over the span from the first session's start to the last one's end", e.Recordings, read)})
	}
	return out
}

type mergeSource struct {
	name  string
	index int
	rd    *Reader
	rec   Record
}

type mergeDrop struct {
	name string
	rec  Record
}

// mergeHeap orders the sources by their pending message's receive time, then by their index.
type mergeHeap []*mergeSource

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	a, b := h[i].rec.Message.RecvNanos, h[j].rec.Message.RecvNanos
	return a < b || a == b && h[i].index < h[j].index
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeSource)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// NewMerge checks each recording's header and reads its first message. An error names the
// recording.
func NewMerge(recs []Recording) (*Merge, error) {
	m := &Merge{}
	for i, r := range recs {
		rd, err := NewReader(r.R)
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", r.Name, err)
		}
		src := &mergeSource{name: r.Name, index: i, rd: rd}
		ok, err := m.advance(src)
		if err != nil {
			return nil, err
		}
		if ok {
			m.h = append(m.h, src)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

// OpenRecordings opens the recording files at paths, named by their paths; closeAll closes
// them.
func OpenRecordings(paths []string) (recs []Recording, closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			_ = f.Close() // opened for reading: a close error loses nothing
		}
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("open recording: %w", err)
		}
		files = append(files, f)
		recs = append(recs, Recording{Name: p, R: f})
	}
	return recs, closeAll, nil
}

// advance reads src's next message, setting own-drops records aside to be yielded first. It
// reports false at the end of the recording.
func (m *Merge) advance(src *mergeSource) (bool, error) {
	for {
		err := src.rd.Next(&src.rec)
		if errors.Is(err, io.EOF) {
			if s, e := src.rd.SessionStart, src.rd.SessionEnd; e > 0 {
				if m.start == 0 || s < m.start {
					m.start = s
				}
				m.end = max(m.end, e)
			}
			if rd := src.rd; rd.Truncated || rd.Skipped > 0 || rd.Stop != nil || rd.Recordings > 1 {
				m.ends = append(m.ends, End{Name: src.name, Truncated: rd.Truncated, Skipped: rd.Skipped, SkipReason: rd.SkipReason,
					CutAt: rd.CutAt, Records: rd.Records, Messages: rd.Messages, Recordings: rd.Recordings, Stop: rd.Stop})
			}
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("recording %s: %w", src.name, err)
		}
		if src.rec.OwnDrops > 0 {
			m.drops = append(m.drops, mergeDrop{name: src.name, rec: src.rec})
			continue
		}
		return true, nil
	}
}

// Next moves to the next record, reporting false at the end of every recording, on a read
// error or when ctx is done; Err then says which.
func (m *Merge) Next(ctx context.Context) bool {
	if m.err != nil {
		return false
	}
	if err := ctx.Err(); err != nil {
		m.err = fmt.Errorf("read recordings: %w", err)
		return false
	}
	// The record yielded last is replaced only now, so it stayed valid until this call.
	if m.cur != nil && m.cur != &m.drop {
		src := m.h[0]
		ok, err := m.advance(src)
		switch {
		case err != nil:
			m.err = err
			return false
		case ok:
			heap.Fix(&m.h, 0)
		default:
			heap.Pop(&m.h)
		}
	}
	m.cur = nil
	if len(m.drops) > 0 {
		d := m.drops[0]
		m.drops = m.drops[1:]
		m.drop, m.curName, m.cur = d.rec, d.name, &m.drop
		return true
	}
	if len(m.h) == 0 {
		return false
	}
	m.cur, m.curName = &m.h[0].rec, m.h[0].name
	return true
}

// Record is the current record, valid until the next call to Next.
func (m *Merge) Record() *Record { return m.cur }

// Name is the name of the recording the current record comes from.
func (m *Merge) Name() string { return m.curName }

// Err is the error that ended the merge, nil at a clean end.
func (m *Merge) Err() error { return m.err }

// Sessions spans the sessions of the taps that wrote the recordings (Unix ns), from the
// earliest start to the latest end, once every recording was read to its end; ok is false when
// none of them recorded its session.
func (m *Merge) Sessions() (start, end int64, ok bool) { return m.start, m.end, m.end > 0 }

// Ends are the recordings that ended cut short or with records skipped, in the order the merge
// reached their ends; whole recordings are not listed.
func (m *Merge) Ends() []End { return m.ends }

// AddRecordings feeds the recording files at paths to c in receive-time order (see Merge),
// keeping the topics that start with topic, and returns the time they span and a finding for
// each recording cut short.
func (c *Collector) AddRecordings(ctx context.Context, paths []string, topic string) (time.Duration, []finding.Finding, error) {
	recs, closeAll, err := OpenRecordings(paths)
	if err != nil {
		return 0, nil, err
	}
	defer closeAll()
	m, err := NewMerge(recs)
	if err != nil {
		return 0, nil, err
	}
	var first, last int64
	for m.Next(ctx) {
		rec := m.Record()
		if rec.OwnDrops > 0 {
			c.OwnDrops(rec.Message.Source, rec.OwnDrops)
			continue
		}
		msg := &rec.Message
		if !strings.HasPrefix(string(msg.Topic), topic) {
			continue
		}
		if first == 0 || msg.RecvNanos < first {
			first = msg.RecvNanos
		}
		last = max(last, msg.RecvNanos)
		c.Add(msg)
	}
	if err := m.Err(); err != nil {
		return 0, nil, err
	}
	cut := []finding.Finding{}
	for _, e := range m.Ends() {
		cut = append(cut, e.Findings()...)
	}
	// Rates are over the time tapped: the first to the last message understates it, by the
	// quiet time at both ends (a replay of one capture showed 1.8 MB/s against 271 KB/s live).
	if s, e, ok := m.Sessions(); ok {
		if first == 0 || s < first {
			first = s
		}
		last = max(last, e)
	}
	return time.Duration(last - first), cut, nil
}

// ReportRecordings analyses the recording files at paths as a tap of their publishers would
// have: a Collector with o, ordered only for one file (merged recordings are not in any one
// publisher's order), fed by AddRecordings; the report's findings end with the recordings cut
// short.
func ReportRecordings(ctx context.Context, paths []string, topic string, o Options) (*Report, error) {
	o.Ordered = len(paths) <= 1
	c := NewCollector(o)
	dur, cut, err := c.AddRecordings(ctx, paths, topic)
	if err != nil {
		return nil, err
	}
	r := c.Report(dur)
	r.Findings = append(r.Findings, cut...)
	return r, nil
}
