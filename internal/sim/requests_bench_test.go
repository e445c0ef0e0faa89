package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/audit"
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
// the chains, the audit indexes prefixes and classifies divergences.
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
}
