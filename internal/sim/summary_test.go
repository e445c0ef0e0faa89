package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewReport(t *testing.T) {
	share := func(x float64) *float64 { return &x }
	fleet := func(r Result) Result { r.Replicas, r.KVBlocks = 2, 64; return r }
	results := []Result{
		fleet(Result{Policy: "round-robin", LoadMaxOverMean: 1, TTFTP99: 1, FreshShare: share(1.0 / 3)}),
		// Everything on one replica, 100 times slower than round-robin, nothing to the added
		// replica: a hot spot and a starved replica, both reported.
		fleet(Result{Policy: "kv-longest", PerReplica: []int{10, 0, 0}, Requests: 10, LoadMaxOverMean: 3, TTFTP99: 100, PrefillSaved: 0.3, FreshShare: share(0)}),
		// Saves the most but is slower than approx-prefix, which is within BestMargin of it.
		fleet(Result{Policy: "kv-llmd", LoadMaxOverMean: 1.1, TTFTP99: 0.9, PrefillSaved: 0.2, FreshShare: share(0.3)}),
		fleet(Result{Policy: "approx-prefix", LoadMaxOverMean: 1.1, TTFTP99: 0.8, PrefillSaved: 0.198, FreshShare: share(0.01)}),
	}
	tr := &Trace{Name: "t", BlockSize: 4, PrefixInfo: true}
	sw := Sweep{Base: Config{AddReplicaAt: 10}}
	rep := NewReport(tr, Stats(tr), sw, results)
	if len(rep.Fleets) != 1 {
		t.Fatalf("fleets = %d, want 1", len(rep.Fleets))
	}
	f := rep.Fleets[0]
	if f.Best != "approx-prefix" {
		t.Errorf("best = %q, want approx-prefix (within %.3f of the most saved, lower TTFT p99)", f.Best, BestMargin)
	}
	if d := cmp.Diff([]string{"kv-longest"}, f.HotSpots); d != "" {
		t.Errorf("hot spots (-want +got):\n%s", d)
	}
	type key struct{ Code, Subject string }
	var got []key
	for _, fd := range rep.Findings {
		got = append(got, key{fd.Code, fd.Subject})
	}
	want := []key{
		{"hot-spot", "kv-longest@2x64"},
		{"starved-replica", "kv-longest@2x64"},
		{"starved-replica", "approx-prefix@2x64"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}
