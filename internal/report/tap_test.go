package report

import (
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/blockhash"
	"github.com/kvcheck/kvcheck/internal/events"
)

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

func TestTapText(t *testing.T) {
	golden(t, "tap/report.txt.golden", render(t, FormatText, Tap(tapReport(t))))
}

func TestTapJSON(t *testing.T) {
	res := Tap(tapReport(t))
	golden(t, "tap/report.json.golden", render(t, FormatJSON, res))
	golden(t, "tap/report.sarif.golden", render(t, FormatSARIF, res))
	golden(t, "tap/report.github.golden", render(t, FormatGitHub, res))
}
