package assess

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
)

// TestOneLongConversation: one conversation of 50 turns on 4 replicas, worked by hand (the
// model facts of hand_test.go). Turn k's prompt is the conversation so far, 2k blocks of 512
// tokens; it asks for 100 output tokens (2 s of decode).
//   - A turn every 10 s: session affinity keeps all 50 turns on one replica (load max/mean
//     4.00), but each turn arrives 8 s after the last one's answer (a prefill of 1,024 new
//     tokens takes 0.1 s): no request waits, so no hot spot. Round-robin sends turn k to
//     replica (k-1) mod 4, which last served turn k-4: it hits 2(k-4) blocks and computes 8,
//     where session affinity computes 2. The gains count turns 26..50: 25 x 6 = 150 blocks of
//     2 x (26+...+50) = 1,900, +7.9 points: session affinity (a KV router keeps the
//     conversation together too, and adds nothing more). Before, every option was a hot spot
//     at 4.00 and the verdict was nothing.
//   - The same turns 10 ms apart: each prefill takes 0.1 s, so every turn after the first
//     finds the replica's prefill engine busy: 49 of 50 wait, and session affinity is a hot
//     spot, never the answer.
func TestOneLongConversation(t *testing.T) {
	trace := func(t *testing.T, gapMs int) []mooncakeRow {
		var rows []mooncakeRow
		for k := 1; k <= 50; k++ {
			var ids []uint64
			for b := range 2 * k {
				ids = append(ids, uint64(b))
			}
			rows = append(rows, mooncakeRow{Timestamp: (k - 1) * gapMs, Input: 1024 * k, Output: 100, HashIDs: ids, Session: "c"})
		}
		return rows
	}
	o := Options{Thresholds: advise.DefaultThresholds(), Replicas: 4, KVBlocks: 1024}

	rec, err := Assess(context.Background(), Inputs{Trace: mooncake(t, "one.jsonl", trace(t, 10_000))}, o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != advise.SessionAffinity {
		t.Fatalf("a turn every 10 s: verdict %s, want session affinity\n%s", rec.Verdict, showRec(rec))
	}
	if !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool {
		return r.Rule == "session-affinity-saves" && strings.Contains(r.Text, "+7.9 points of all prefill")
	}) {
		t.Errorf("a turn every 10 s: no session-affinity-saves reason with +7.9 points\n%s", showRec(rec))
	}
	for _, r := range rec.Reasons {
		if r.Rule == "hot-spots" && strings.Contains(r.Text, "session") {
			t.Errorf("a turn every 10 s: session named a hot spot: %s", r.Text)
		}
	}
	// The evidence says why the 4.00 imbalance was let through: no request waited (0%), where a
	// hot spot needs half the busiest replica's requests waiting.
	if !slices.ContainsFunc(rec.Evidence, func(e advise.Evidence) bool {
		return e.ID == "replay.idle_imbalance" && strings.Contains(e.Figure, "session (load max/mean 4.00, 0% of the busiest replica's requests waited; a hot spot needs 50%)")
	}) {
		t.Errorf("a turn every 10 s: no replay.idle_imbalance evidence naming session at 4.00 and 0%%\n%s", showRec(rec))
	}

	rec, err = Assess(context.Background(), Inputs{Trace: mooncake(t, "compressed.jsonl", trace(t, 10))}, o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict == advise.SessionAffinity || !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool {
		return r.Rule == "hot-spots" && strings.Contains(r.Text, "session")
	}) {
		t.Errorf("turns 10 ms apart: verdict %s, want session affinity named a hot spot and not the answer\n%s", rec.Verdict, showRec(rec))
	}
}
