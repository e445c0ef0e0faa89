package sim

import (
	"context"
	"slices"
	"testing"
)

// TestHead: a trace's head shares its requests and dense block ids, and replays as a trace
// built of the same first requests does. Five requests over blocks 7, 8, 9 in the order
// (7 8) (8 9) (7) (9 7) (8): numbered by first appearance 7->0, 8->1, 9->2, so the first three
// requests' ids are 0 1, 1 2, 0, with 3 distinct blocks; the first one's 0 1 with 2.
func TestHead(t *testing.T) {
	build := func(n int) *Trace {
		tr := &Trace{Name: "head", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
		for i, b := range [][]uint64{{7, 8}, {8, 9}, {7}, {9, 7}, {8}}[:n] {
			tr.Requests = append(tr.Requests, Request{Arrival: float64(i), Blocks: b, InputTokens: 16 * len(b), OutputTokens: 8})
		}
		return tr
	}
	whole := build(5)
	for _, c := range []struct {
		n, distinct int
		ids         []int32
	}{{3, 3, []int32{0, 1, 1, 2, 0}}, {1, 2, []int32{0, 1}}, {9, 3, []int32{0, 1, 1, 2, 0, 2, 0, 1}}} {
		h := whole.Head(c.n)
		h.intern()
		if !slices.Equal(h.ids, c.ids) || h.distinct != c.distinct || len(h.Requests) != min(c.n, 5) {
			t.Errorf("head %d: ids %v distinct %d requests %d, want %v %d", c.n, h.ids, h.distinct, len(h.Requests), c.ids, c.distinct)
		}
	}
	cfg := Config{Replicas: 2, KVBlocks: 2, Model: DefaultModel(), Seed: 1, AddReplicaAt: -1, Siblings: 1, Params: DefaultParams()}
	got, err := SimulatePolicy(context.Background(), whole.Head(3), cfg, kvLongestInfo)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SimulatePolicy(context.Background(), build(3), cfg, kvLongestInfo)
	if err != nil {
		t.Fatal(err)
	}
	if got.HitTokens != want.HitTokens || got.InputTokens != want.InputTokens || !slices.Equal(got.PerReplica, want.PerReplica) {
		t.Errorf("head replay %+v, want %+v", got, want)
	}
}
