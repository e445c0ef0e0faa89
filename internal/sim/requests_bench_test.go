package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/events"
)

// genRequestLog writes a gateway export of about size bytes: sessions of 1 to 4 turns behind a
// shared 2 KB system prompt, each turn repeating the conversation so far (~3 KB a request),
// with a start_time, a session id in the metadata and max_tokens in the body, the shape
// `kvcheck audit`'s benchmark log has.
func genRequestLog(tb testing.TB, size int) []byte {
	tb.Helper()
	system := strings.Repeat("You are the ACME operations agent. Follow the runbook, cite tickets by id, never guess. ", 24)[:2048]
	var buf bytes.Buffer
	t := 1764496800.0
	for s := 0; buf.Len() < size; s++ {
		msgs := []map[string]string{{"role": "system", "content": system}}
		for turn := range 1 + s%4 {
			msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("session %d turn %d: %s", s, turn, strings.Repeat("status of ticket INC-4411 and its dependencies? ", 4))})
			body, err := json.Marshal(map[string]any{"model": "m", "messages": msgs, "max_tokens": 200})
			if err != nil {
				tb.Fatal(err)
			}
			line, err := json.Marshal(map[string]any{"start_time": t, "metadata": map[string]string{"session_id": fmt.Sprint("s", s)}, "request": json.RawMessage(body)})
			if err != nil {
				tb.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
			t += 0.05
			msgs = append(msgs, map[string]string{"role": "assistant", "content": strings.Repeat("Checked. ", 12)})
		}
	}
	return buf.Bytes()
}

// BenchmarkReadRequests measures the request-log adapter (estimated tokens, block size 16)
// against audit's own request audit over the same bytes in the same run: both stream the log
// through audit's reader and estimate; the adapter also reads times and max_tokens and keeps
// the chains, the audit indexes prefixes and classifies divergences. The interleaved
// sub-benchmark runs the two alternately and compares their CPU time, which the other users of
// the shared machine disturb less than wall time.
func BenchmarkReadRequests(b *testing.B) {
	data := genRequestLog(b, 32<<20)
	lines := bytes.Count(data, []byte("\n"))
	b.Run("requests-adapter", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := ReadRequests(context.Background(), bytes.NewReader(data), "bench", RequestLogOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	})
	b.Run("audit-reference", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := audit.AuditRequests(context.Background(), bytes.NewReader(data), audit.RequestOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	})
	b.Run("interleaved", func(b *testing.B) {
		var adapter, reference time.Duration
		for b.Loop() {
			t0 := cpuTime()
			if _, err := ReadRequests(context.Background(), bytes.NewReader(data), "bench", RequestLogOptions{}); err != nil {
				b.Fatal(err)
			}
			t1 := cpuTime()
			if _, err := audit.AuditRequests(context.Background(), bytes.NewReader(data), audit.RequestOptions{}); err != nil {
				b.Fatal(err)
			}
			adapter, reference = adapter+t1-t0, reference+cpuTime()-t1
		}
		mb := float64(len(data)) * float64(b.N) / 1e6
		b.ReportMetric(mb/adapter.Seconds(), "adapter-MB/cpu-s")
		b.ReportMetric(float64(lines)*float64(b.N)/adapter.Seconds(), "adapter-requests/cpu-s")
		b.ReportMetric(mb/reference.Seconds(), "audit-MB/cpu-s")
		b.ReportMetric(reference.Seconds()/adapter.Seconds(), "x-cpu")
	})
}

// genRecording writes a recording of n conversations from 4 publishers, one batch each: the
// conversation's 4 turns store 8 new 4-token blocks each, each turn after the previous turn's
// last block, all behind a 16-block prefix each publisher stores once.
func genRecording(tb testing.TB, n int) []byte {
	tb.Helper()
	var msgs []msg
	seq := map[string]uint64{}
	next := uint64(1000)
	for c := range n {
		src := fmt.Sprintf("r%d:5557", c%4)
		var parent uint64
		var ss []stored
		if seq[src] == 0 {
			// The shared prefix, once per publisher.
			s := stored{}
			for k := range 16 {
				s.hashes = append(s.hashes, uint64(k+1))
				s.blocks = append(s.blocks, tok(int64(k)))
			}
			ss = append(ss, s)
		}
		parent = 16
		for turn := range 4 {
			s := stored{parent: parent}
			for k := range 8 {
				next++
				s.hashes = append(s.hashes, next)
				s.blocks = append(s.blocks, tok(int64(c*100+turn*10+k)))
			}
			parent = next
			ss = append(ss, s)
		}
		msgs = append(msgs, msg{source: src, seq: seq[src], ts: float64(c) / 100, events: ss})
		seq[src]++
	}
	return record(tb, msgs...)
}

// BenchmarkReadRecordings measures the recording adapter against the tap's own analysis of
// the same recording (events.Collector, what `kvcheck tap --from` runs), alternating the two
// and comparing CPU time.
func BenchmarkReadRecordings(b *testing.B) {
	const conversations = 100_000
	data := genRecording(b, conversations)
	blocks := float64(conversations*4*8 + 4*16)
	var adapter, reference time.Duration
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		t0 := cpuTime()
		if _, err := ReadRecordings(context.Background(), []events.Recording{{Name: "bench", R: bytes.NewReader(data)}}, RecordingOptions{}); err != nil {
			b.Fatal(err)
		}
		t1 := cpuTime()
		rd, err := events.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		c := events.NewCollector(events.Options{})
		var rec events.Record
		for rd.Next(&rec) == nil {
			c.Add(&rec.Message)
		}
		adapter, reference = adapter+t1-t0, reference+cpuTime()-t1
	}
	mb := float64(len(data)) * float64(b.N) / 1e6
	b.ReportMetric(mb/adapter.Seconds(), "adapter-MB/cpu-s")
	b.ReportMetric(mb/reference.Seconds(), "collector-MB/cpu-s")
	b.ReportMetric(reference.Seconds()/adapter.Seconds(), "x-cpu")
	b.ReportMetric(float64(len(data))/1e6, "MB-recording")
	b.ReportMetric(blocks*float64(b.N)/adapter.Seconds(), "adapter-blocks/cpu-s")
}
