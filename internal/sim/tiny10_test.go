package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTiny10 replays testdata/sim/tiny10.jsonl, ten Mooncake-format requests with partial last
// blocks, repeated prefixes, an odd prefix (block 100), arrivals at the same instant, two
// replicas of 4 blocks (so evictions) and two running requests per replica (so queues). The
// wanted routes, hits and evictions come from testdata/sim/tiny10.py, a second model written
// from the prose of Model and of each policy's doc comment, sharing no code with the simulator
// or with reference.py.
func TestTiny10(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "sim", "tiny10.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	tr, err := ReadMooncake(f, "tiny10.jsonl", MooncakeBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{
		Replicas: 2, KVBlocks: 4, AddReplicaAt: -1, Seed: 1,
		Model:  Model{PrefillPerToken: 0.001, DecodePerToken: 0.01, MaxRunning: 2},
		Params: DefaultParams(),
	}
	type want struct {
		Routes, Hits []int
		Evictions    int64
	}
	cases := []struct {
		policy string
		want   want
	}{
		{"round-robin", want{[]int{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, []int{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, 10}},
		{"least-loaded", want{[]int{0, 1, 0, 1, 0, 1, 0, 1, 1, 0}, []int{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, 9}},
		{"kv-longest", want{[]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []int{0, 0, 1, 1, 2, 1, 1, 2, 1, 1}, 9}},
		{"kv-llmd", want{[]int{0, 1, 1, 0, 0, 1, 0, 1, 1, 1}, []int{0, 0, 1, 0, 2, 1, 1, 1, 1, 1}, 9}},
		{"kv-cost", want{[]int{0, 1, 1, 0, 1, 1, 1, 1, 1, 1}, []int{0, 0, 1, 0, 2, 1, 1, 2, 1, 1}, 9}},
		{"kv-load", want{[]int{0, 1, 0, 1, 0, 1, 0, 1, 1, 1}, []int{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, 9}},
		{"kv-decay", want{[]int{0, 1, 1, 0, 1, 1, 1, 1, 1, 1}, []int{0, 0, 1, 0, 2, 1, 1, 2, 1, 1}, 9}},
		{"approx-prefix", want{[]int{0, 1, 1, 0, 0, 1, 0, 1, 1, 0}, []int{0, 0, 1, 0, 2, 1, 1, 1, 1, 1}, 9}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			res, jobs, err := simulate(tr, c, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			var got want
			for _, j := range jobs {
				got.Routes = append(got.Routes, j.rep)
				got.Hits = append(got.Hits, j.hit)
			}
			got.Evictions = res.Evictions
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s on tiny10 (-want +got):\n%s", tc.policy, d)
			}
		})
	}
}
