package demo

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestAssessFleetMatchesReplay: the hit rate the assess section's fleet exposes over the
// demo's 3 s window, scraped as assess scrapes it, is within the threshold assess judges gains
// on (advise.DefaultThresholds().MinGain) of the replay of today's round-robin on the same
// trace, on the fleet shape read from the same scrape; and that shape is the trace's (4
// replicas of ChatKVBlocks blocks of the trace's block size). Assess says the replay is not the
// fleet measured when the two are MinGain or more apart.
func TestAssessFleetMatchesReplay(t *testing.T) {
	tr := AssessTrace()
	f, err := StartAssessFleet(tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := promql.Open(ctx, promql.Spec{Scrape: f.Targets(), Window: 3 * time.Second, WindowSet: true, ScrapeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep := promql.Analyze(raw)
	if rep.Fleet.HitRate == nil || len(rep.Replicas) != AssessReplicas || len(rep.Down) > 0 {
		t.Fatalf("scrape: fleet hit rate %v, %d replicas, down %v", rep.Fleet.HitRate, len(rep.Replicas), rep.Down)
	}
	for _, r := range rep.Replicas {
		if r.NumGPUBlocks == nil || *r.NumGPUBlocks != ChatKVBlocks || r.BlockSize == nil || *r.BlockSize != tr.BlockSize {
			t.Fatalf("replica %s: %v blocks of %v tokens, want %d of %d", r.Replica, r.NumGPUBlocks, r.BlockSize, ChatKVBlocks, tr.BlockSize)
		}
	}
	o := assess.Options{Thresholds: advise.DefaultThresholds(), Today: AssessToday}
	shape := assess.Shape{Replicas: AssessReplicas, KVTokens: int64(ChatKVBlocks * tr.BlockSize), ReplicasFrom: advise.ShapeMetrics, KVFrom: advise.ShapeMetrics}
	rp, err := assess.Replay(ctx, tr, "trace", shape, o)
	if err != nil {
		t.Fatal(err)
	}
	var today *advise.Policy
	for i := range rp.Policies {
		if rp.Policies[i].Name == rp.Today {
			today = &rp.Policies[i]
		}
	}
	if today == nil || rp.Today != AssessToday {
		t.Fatalf("no replay of today's routing (%q) among %+v", rp.Today, rp.Policies)
	}
	measured := *rep.Fleet.HitRate
	if d := math.Abs(measured - today.HitRate); d >= o.Thresholds.MinGain {
		t.Errorf("the fleet measured %.1f%%, the replay of today's %s on its trace serves %.1f%%: %.1f points apart, the threshold is %.0f",
			100*measured, today.Name, 100*today.HitRate, 100*d, 100*o.Thresholds.MinGain)
	}
	t.Logf("measured %.2f%%, replayed %s %.2f%% (threshold %.0f points)", 100*measured, today.Name, 100*today.HitRate, 100*o.Thresholds.MinGain)
}

// TestAssessFleetTraffic: the fleet gives request i of the trace to replica i mod 4 (round-robin
// in arrival order), with its blocks, prompt and output lengths, and sizes every replica as the
// trace is replayed: ChatKVBlocks blocks of the trace's block size.
func TestAssessFleetTraffic(t *testing.T) {
	tr := ChatTrace(1)
	o, err := AssessFleet(tr, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Replicas) != 4 || o.Tick <= 0 || o.StepsPerTick < 1 {
		t.Fatalf("options %d replicas, tick %s x %d", len(o.Replicas), o.Tick, o.StepsPerTick)
	}
	n := 0
	for k, c := range o.Replicas {
		if c.KVBlocks != ChatKVBlocks || c.BlockSize != tr.BlockSize {
			t.Errorf("replica %d: %d blocks of %d, want %d of %d", k, c.KVBlocks, c.BlockSize, ChatKVBlocks, tr.BlockSize)
		}
		for j, r := range c.Traffic {
			want := tr.Requests[4*j+k]
			if r.Prompt != want.InputTokens || r.Output != want.OutputTokens || len(r.Blocks) != len(want.Blocks) || r.Blocks[0] != want.Blocks[0] {
				t.Fatalf("replica %d request %d: %+v, want trace request %d", k, j, r, 4*j+k)
			}
			n++
		}
	}
	if n != len(tr.Requests) {
		t.Errorf("%d requests served, the trace has %d", n, len(tr.Requests))
	}
	if _, err := AssessFleet(&sim.Trace{BlockSize: 16, Requests: make([]sim.Request, 3)}, 4); err == nil {
		t.Error("3 requests over 4 replicas: no error")
	}
	// The round is short enough that the 3 s window holds several: a replica's share of the
	// trace takes at most assessRound at StepsPerTick steps a tick.
	for k, c := range o.Replicas {
		steps := 0
		for _, r := range c.Traffic {
			steps += 1 + r.Output
		}
		if ticks := float64(steps) / float64(o.StepsPerTick); ticks*float64(o.Tick) > float64(assessRound) {
			t.Errorf("replica %d: a round takes %.0f ticks of %s, more than %s", k, ticks, o.Tick, assessRound)
		}
	}
}
