package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// genLog produces a request log on the fly, never holding more than one line: agent sessions
// of several turns behind a shared 2 KB system prompt; every tenth session stamps the time at
// the start of its system prompt.
type genLog struct {
	limit, n int64
	i        int
	buf      bytes.Buffer
	system   string
}

func newGenLog(limit int64) *genLog {
	sys := strings.Repeat("You are the ACME operations agent. Follow the runbook, call tools, report briefly. ", 25)
	return &genLog{limit: limit, system: sys}
}

func (g *genLog) Read(p []byte) (int, error) {
	for g.buf.Len() == 0 {
		if g.n >= g.limit {
			return 0, io.EOF
		}
		g.line()
	}
	k, _ := g.buf.Read(p)
	g.n += int64(k)
	return k, nil
}

func (g *genLog) line() {
	session := g.i / 4
	turn := g.i % 4
	sys := g.system
	if session%10 == 0 {
		sys = fmt.Sprintf("Time: 2026-11-30T%02d:%02d:%02d.%06dZ. ", session/3600%24, session/60%60, session%60, g.i) + sys
	}
	msgs := []map[string]string{{"role": "system", "content": sys}}
	for t := 0; t <= turn; t++ {
		msgs = append(msgs, map[string]string{"role": "user", "content": "Ticket " + strconv.Itoa(session*7+t) + ": " + strings.Repeat("the disk on node-7 is filling up; ", 8)})
		if t < turn {
			msgs = append(msgs, map[string]string{"role": "assistant", "content": "Checked. Rotating logs on node-7 and opening a change."})
		}
	}
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "metadata": map[string]string{"session_id": "s" + strconv.Itoa(session)}})
	g.buf.Write(b)
	g.buf.WriteByte('\n')
	g.i++
}

// TestStreamBoundedMemory streams a generated log through the audit and checks the heap stays
// bounded. Default 256 MB (32 MB under the race detector); KVCHECK_AUDIT_STREAM_MB sets the size (2048 for the 2 GB run in
// BENCHMARKS.md). The bound: the block index and the (session, block) pairs hold at most
// MaxBlocks entries each (~24 bytes an entry, twice that just after a map grows), the divergence samples at most 250k blocks of text, and the reader one
// line: with MaxBlocks 1M the live heap must stay under 256 MB however long the log.
func TestStreamBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MB; skipped with -short")
	}
	size := int64(256 << 20)
	if raceEnabled {
		size = 32 << 20
	}
	if v := os.Getenv("KVCHECK_AUDIT_STREAM_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("KVCHECK_AUDIT_STREAM_MB=%q: %v", v, err)
		}
		size = int64(mb) << 20
	}
	const bound = 256 << 20
	var peak uint64
	var ms runtime.MemStats
	sample := func(int64) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	gen := newGenLog(size)
	sum, err := AuditRequests(context.Background(), gen, RequestOptions{MaxBlocks: 1_000_000, Progress: sample})
	if err != nil {
		t.Fatal(err)
	}
	sample(0)
	t.Logf("%d MB, %d requests, %d sessions, cacheable %.1f%%, index full %v, peak heap in use %d MB",
		gen.n>>20, sum.Requests, sum.Sessions, 100*float64(sum.CacheableTokens)/float64(sum.PromptTokens), sum.Capped, peak>>20)
	if peak > bound {
		t.Errorf("peak heap in use %d MB, want under %d MB", peak>>20, bound>>20)
	}
	if sum.Requests == 0 || sum.CacheableTokens == 0 {
		t.Errorf("summary %+v: want requests with reuse", sum)
	}
}

// BenchmarkAuditRequests measures the request audit over a 64 MB generated log held in memory,
// against the cost of only decoding the same lines with encoding/json (the reference).
func BenchmarkAuditRequests(b *testing.B) {
	data, err := io.ReadAll(newGenLog(64 << 20))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(data, []byte("\n"))
	b.Run("audit", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := AuditRequests(context.Background(), bytes.NewReader(data), RequestOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	})
	b.Run("json-decode-reference", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			for line := range bytes.Lines(data) {
				var v map[string]any
				if err := json.Unmarshal(line, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	})
}
