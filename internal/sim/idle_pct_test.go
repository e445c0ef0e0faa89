package sim

import (
	"strings"
	"testing"
)

// TestIdleWaitedNeverPrintsTheLine: an idle imbalance is one whose busiest replica had under
// 1/HotSpotRatio (50%) of its requests waiting. At 49.6% the note printed "%.0f%%", "50% of that
// replica's requests waited ... no hot spot until 50% of them wait", a note that contradicts
// itself. The share is cut to a whole percent (49%), so a reader can see it is under the line.
func TestIdleWaitedNeverPrintsTheLine(t *testing.T) {
	res := []Result{
		{Policy: "round-robin", Replicas: 4, KVBlocks: 64, Requests: 20, PerReplica: []int{5, 5, 5, 5}, LoadMaxOverMean: 1},
		{Policy: "session", Replicas: 4, KVBlocks: 64, Requests: 20, PerReplica: []int{20, 0, 0, 0}, LoadMaxOverMean: 4, HotWaited: 0.496},
	}
	rep := NewReport(&Trace{}, TraceStats{}, Sweep{}, res)
	var msg string
	for _, f := range rep.Findings {
		if f.Code == "idle-imbalance" {
			msg = f.Message
		}
	}
	if !strings.Contains(msg, "only 49% of that replica's requests waited") {
		t.Errorf("idle-imbalance %q, want the share cut to 49%% (findings %+v)", msg, rep.Findings)
	}
	if got := WaitedPct(0.29); got != "29%" {
		t.Errorf("WaitedPct(0.29) = %s, want 29%% (not 28%% from 28.999...)", got)
	}
}
