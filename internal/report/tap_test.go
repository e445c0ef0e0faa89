package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/blockhash"
	"github.com/kvcheck/kvcheck/internal/events"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// tapReport accounts a small fixed stream: two replicas, one seeded and one not, with loss.
func tapReport(t *testing.T) *events.Report {
	t.Helper()
	seed := "0"
	c := events.NewCollector(events.Options{HashSeed: &seed, TokensPerSec: 10000})
	add := func(source, topic string, seq uint64, none blockhash.Digest, w events.Wire, tokens []int64) {
		ds, err := blockhash.Chain(none, tokens, 16, nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := events.Event{Type: events.TypeBlockStored, TokenIDs: tokens, BlockSize: 16, Medium: []byte("GPU")}
		for _, d := range ds {
			ev.BlockHashes = append(ev.BlockHashes, events.Hash{Form: events.HashInt, Value: d.Wire()})
		}
		b := events.Batch{TS: 1764460800, HasDPRank: true, Events: []events.Event{ev}}
		m := events.Message{Source: source, Topic: []byte(topic), Seq: seq, Payload: events.AppendBatch(nil, &b, w),
			Frames: 3, SeqLen: 8, RecvNanos: 1764460800_250_000_000}
		c.Add(&m)
	}
	tokens := make([]int64, 64)
	for i := range tokens {
		tokens[i] = int64(100 + i)
	}
	add("tcp://10.0.0.5:5557", "kv@a@m", 0, blockhash.NoneHash(seed), events.Wire{Era: events.EraMap}, tokens)
	add("tcp://10.0.0.5:5557", "kv@a@m", 4, blockhash.NoneHash(seed), events.Wire{Era: events.EraMap}, tokens[:32])
	add("tcp://10.0.0.6:5557", "kv@b@m", 0, blockhash.NoneHash("other"), events.Wire{Era: events.EraArray, StoredFields: 9}, tokens)
	return c.Report(10 * time.Second)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "tap", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got), run go test -update if intended:\n%s", name, diff)
	}
}

func TestTapText(t *testing.T) {
	var buf bytes.Buffer
	if err := NewText(&buf, false).Tap(tapReport(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt.golden", buf.Bytes())
}

func TestTapJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := TapJSON(&buf, tapReport(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", buf.Bytes())
}
