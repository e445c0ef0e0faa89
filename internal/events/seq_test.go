package events

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSeqTracker(t *testing.T) {
	type obs struct{ seq, hash uint64 }
	type counts struct{ Batches, Gaps, Lost, Dups, Late, Restarts uint64 }
	tests := []struct {
		name string
		in   []obs
		want counts
	}{
		{"in order from 0", []obs{{0, 1}, {1, 2}, {2, 3}}, counts{Batches: 3}},
		{"starts at 1", []obs{{1, 1}, {2, 2}}, counts{Batches: 2}},
		{"gap of 3", []obs{{0, 1}, {4, 2}, {5, 3}}, counts{Batches: 3, Gaps: 1, Lost: 3}},
		{"two gaps", []obs{{0, 1}, {2, 2}, {5, 3}}, counts{Batches: 3, Gaps: 2, Lost: 3}},
		{"duplicate", []obs{{0, 1}, {1, 2}, {1, 2}}, counts{Batches: 2, Dups: 1}},
		{"restart to 0", []obs{{0, 1}, {1, 2}, {2, 3}, {0, 9}, {1, 8}}, counts{Batches: 5, Restarts: 1}},
		{"restart far back", []obs{{10000, 1}, {10001, 2}, {3, 9}}, counts{Batches: 3, Restarts: 1}},
		{"late fills gap", []obs{{0, 1}, {3, 2}, {1, 5}, {2, 6}}, counts{Batches: 4, Gaps: 1, Lost: 2, Late: 2}},
		{"late in middle", []obs{{0, 1}, {5, 2}, {3, 5}, {3, 5}}, counts{Batches: 3, Gaps: 1, Lost: 4, Late: 1, Dups: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seqTracker
			for _, o := range tt.in {
				s.observe(o.seq, o.hash, false)
			}
			got := counts{s.batches, s.gapCount, s.lost, s.dups, s.late, s.restarts}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeqGapsSplit(t *testing.T) {
	var s seqTracker
	s.observe(0, 1, false)
	_, g := s.observe(10, 2, false)
	if g != (Gap{1, 9}) {
		t.Fatalf("gap = %v, want {1 9}", g)
	}
	for _, seq := range []uint64{5, 1, 9} {
		if v, _ := s.observe(seq, seq+100, false); v != seqLate {
			t.Fatalf("observe(%d) = %v, want late", seq, v)
		}
	}
	want := []Gap{{2, 4}, {6, 8}}
	if diff := cmp.Diff(want, s.gaps); diff != "" {
		t.Errorf("open gaps (-want +got):\n%s", diff)
	}
}

// TestRecoveredNeverRestart: a replayed batch whose gap is no longer remembered (more gaps
// opened meanwhile than maxOpenGaps) is old news, not a publisher restart; counting it as one
// would also reset the expected sequence and report the whole stream since as lost.
func TestRecoveredNeverRestart(t *testing.T) {
	c := NewCollector(Options{})
	w := Wire{Era: EraMap}
	var seq uint64
	c.Add(msg("a", seq, w))
	for range maxOpenGaps + 1 { // each skips one sequence number
		seq += 2
		c.Add(msg("a", seq, w))
	}
	old := msg("a", 1, w) // the first gap, replayed after it was forgotten
	old.Recovered = true
	c.Add(old)
	c.Add(msg("a", seq+1, w))
	p := c.Report(0).Publishers[0]
	got := [4]uint64{p.Restarts, p.LostBatches, p.Gaps, p.Batches}
	want := [4]uint64{0, maxOpenGaps + 1, maxOpenGaps + 1, maxOpenGaps + 3}
	if got != want {
		t.Errorf("restarts, lost, gaps, batches = %v, want %v", got, want)
	}
}

// TestMergedRecordingsFillGaps: two taps of one publisher, merged by receive time. One lost a
// batch the other received; it arrives late in the merge. Nothing is missing in the end, so
// nothing is unrecoverable and the report does not claim loss.
func TestMergedRecordingsFillGaps(t *testing.T) {
	c := NewCollector(Options{})
	w := Wire{Era: EraMap}
	c.Add(msg("a", 0, w))
	c.Add(msg("a", 2, w)) // tap 1 lost seq 1
	c.Add(msg("a", 1, w)) // tap 2 had it
	c.Add(msg("a", 3, w))
	r := c.Report(1e9)
	p := r.Publishers[0]
	if p.LostBatches != 1 || p.LateBatches != 1 || p.UnrecoverableBatches != 0 || p.Batches != 4 {
		t.Errorf("lost %d late %d unrecoverable %d batches %d; want 1 1 0 4", p.LostBatches, p.LateBatches, p.UnrecoverableBatches, p.Batches)
	}
	for _, f := range r.Findings {
		if f.Code == "batches-lost" {
			t.Errorf("finding %s: %s", f.Code, f.Message)
		}
	}
}

// TestOrderedRestartInGap: a live tap receives each publisher over one ordered connection, so
// a lower sequence number that is not a replay is a restart even when it falls in an open
// gap. (Merged recordings are not ordered: there it fills the gap, see
// TestMergedRecordingsFillGaps.)
func TestOrderedRestartInGap(t *testing.T) {
	c := NewCollector(Options{Ordered: true})
	w := Wire{Era: EraMap}
	for seq := range uint64(5) {
		c.Add(msg("a", seq, w))
	}
	c.Add(msg("a", 100, w)) // 5..99 lost
	c.Add(msg("a", 7, w))   // the publisher restarted; the tap saw its batches from 7 on
	c.Add(msg("a", 8, w))
	p := c.Report(1e9).Publishers[0]
	got := [4]uint64{p.Restarts, p.LateBatches, p.LostBatches, p.UnrecoverableBatches}
	if want := [4]uint64{1, 0, 95, 95}; got != want {
		t.Errorf("restarts, late, lost, unrecoverable = %v, want %v", got, want)
	}
}

// TestSeqImplausibleJump: a jump of more than maxJump batches ahead is never a loss figure
// (one to 2^64-1 gave 1.8e19 lost batches). When the next batch continues the old numbering
// the jump was one corrupt frame; when it continues from the jump the publisher numbers anew.
// Either way nothing is lost; a jump of maxJump exactly is still a loss anyone could have had.
func TestSeqImplausibleJump(t *testing.T) {
	const top = ^uint64(0)
	type counts struct{ Batches, Gaps, Lost, Restarts, Jumps uint64 }
	tests := []struct {
		name string
		in   []uint64
		want counts
	}{
		{"corrupt frame, old numbering goes on", []uint64{0, 1, 2, top, 3, 4}, counts{Batches: 6, Jumps: 1}},
		{"numbering anew from the jump", []uint64{0, 1, 2, 1 << 40, 1<<40 + 1}, counts{Batches: 5, Jumps: 1}},
		{"to 2^64-1 then wrapping to 0", []uint64{0, 1, top, 0, 1}, counts{Batches: 5, Jumps: 1}},
		{"largest plausible gap", []uint64{0, maxJump + 1}, counts{Batches: 2, Gaps: 1, Lost: maxJump}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seqTracker
			s.ordered = true
			for i, seq := range tt.in {
				s.observe(seq, uint64(i), false)
			}
			got := counts{s.batches, s.gapCount, s.lost, s.restarts, s.jumps}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSeqSkipOwnDrops: batches the tap dropped itself are skipped, not lost; a gap before them
// is still the publisher's.
func TestSeqSkipOwnDrops(t *testing.T) {
	var s seqTracker
	s.observe(0, 1, false)
	s.observe(1, 2, false)
	s.skip(2, 4) // the tap dropped 2..4
	s.observe(5, 3, false)
	if s.lost != 0 || s.gapCount != 0 {
		t.Errorf("after own drops: lost %d in %d gaps, want none", s.lost, s.gapCount)
	}
	s.skip(8, 9) // the publisher lost 6 and 7, then the tap dropped 8 and 9
	s.observe(10, 4, false)
	if s.lost != 2 || s.gapCount != 1 {
		t.Errorf("publisher gap then own drops: lost %d in %d gaps, want 2 in 1", s.lost, s.gapCount)
	}
}
