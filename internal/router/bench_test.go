package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// chatTextTrace is n chat requests with their text: 32 tenants' system prompts of 4,000
// characters, conversations growing by 400 characters a turn, one request every 50 ms, 16
// characters a block (4 tokens of 4 characters).
func chatTextTrace(n int) *sim.Trace {
	rng := rand.New(rand.NewPCG(1, 2))
	var prompts []string
	for k := range 32 {
		prompts = append(prompts, strings.Repeat(fmt.Sprintf("tenant %02d says: be brief. ", k), 4000/26+1)[:4000])
	}
	var convs []string
	var rs []sim.Request
	for i := range n {
		var text string
		if len(convs) > 0 && rng.IntN(3) > 0 {
			c := rng.IntN(len(convs))
			convs[c] += fmt.Sprintf("%0400d", rng.Int64())
			text = convs[c]
		} else {
			text = prompts[rng.IntN(len(prompts))] + fmt.Sprintf("%0400d", rng.Int64())
			convs = append(convs, text)
		}
		r := simtest.CharReq(float64(i)/20, 50, text)
		rs = append(rs, r)
	}
	return simtest.CharTrace(rs...)
}

// BenchmarkTreeEmulations replays 5,000 chat requests with their text through the character-tree
// emulations at 8 and 64 replicas, beside round-robin, which reads no text, in the same run: the
// cost of the tree is the ratio. requests/s counts requests routed per second.
func BenchmarkTreeEmulations(b *testing.B) {
	tr := chatTextTrace(5000)
	for _, reps := range []int{8, 64} {
		for _, p := range []string{"round-robin", "sglang-cache-aware", "ray-prefix-affinity"} {
			b.Run(fmt.Sprintf("%s/%d", p, reps), func(b *testing.B) {
				c := sim.Config{Replicas: reps, KVBlocks: 2048, AddReplicaAt: -1, Model: sim.DefaultModel(), Params: sim.DefaultParams(), Seed: 1}
				info, ok := Emulation(p, nil)
				if !ok {
					info = sim.Policies()[1] // round-robin
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := sim.SimulatePolicy(context.Background(), tr, c, info); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(tr.Requests))*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
			})
		}
	}
}
