package vllmrouter

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// Second models of vLLM Router's policies, written from the source's description (hash_key.rs,
// consistent_hash.rs, rendezvous_hash.rs, round_robin.rs, random.rs, power_of_two.rs), not from
// the emulations' code: a ring as a sorted list of (hash, url) pairs searched linearly, keys
// built by one function over the request's fields, the replica found by its URL.

// refText is the text route_typed_request hands a policy: a chat's non-blank
// session_params.session_id, else nothing; a completion's prompt, or for token ids
// "token_ids:<n>".
func refText(v *sim.View) string {
	if v.Chat {
		if strings.Trim(v.SessionParams, " \t\n\r") != "" {
			return v.SessionParams
		}
		return ""
	}
	if v.PromptIDs > 0 {
		if v.BatchLeft > 0 {
			return "token_ids_batch:" + fmt.Sprint(v.BatchLeft+1) + ":" + fmt.Sprint(v.PromptIDs)
		}
		return "token_ids:" + fmt.Sprint(v.PromptIDs)
	}
	return v.Text
}

// refKey is extract_hash_key for the random traffic below, whose texts carry a field only as
// "user: <name>" at their start (a prompt written that way) or not at all.
func refKey(v *sim.View) string {
	for _, h := range []string{"x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id", "x-trace-id"} {
		if v.Headers[h] != "" {
			return "header:" + h + ":" + v.Headers[h]
		}
	}
	text := refText(v)
	if name, ok := strings.CutPrefix(text, "user: "); ok {
		return "user:" + strings.Fields(name)[0]
	}
	if len(text) > 100 {
		return "request_hash:" + fmt.Sprintf("%016x", refFBI(text))
	}
	return "request:" + text
}

func refURL(i int) string { return "http://vllm-" + fmt.Sprint(i) + ":8000" }

// refConsistentHash walks a ring of (hash, url) pairs sorted by hash, a later worker's point
// overwriting an earlier one's at the same hash, to the first pair at or above the key's hash.
func refConsistentHash(r *sim.Request, n int) int {
	type point struct {
		h   uint64
		url string
	}
	owner := map[uint64]string{}
	for w := range n {
		for i := range 160 {
			owner[refFBI(refURL(w)+":"+fmt.Sprint(i))] = refURL(w)
		}
	}
	var ring []point
	for h, u := range owner {
		ring = append(ring, point{h, u})
	}
	sort.Slice(ring, func(a, b int) bool { return ring[a].h < ring[b].h })
	h := refFBI(refKey(r.View))
	pick := ring[0].url
	for _, p := range ring {
		if p.h >= h {
			pick = p.url
			break
		}
	}
	for w := range n {
		if refURL(w) == pick {
			return w
		}
	}
	return -1
}

// refRendezvous scores each worker with the hash of "<key>:<url>", the last of the highest.
func refRendezvous(r *sim.Request, n int) int {
	key := refKey(r.View)
	best := -1
	var top uint64
	for w := range n {
		if s := refFBI(key + ":" + refURL(w)); best < 0 || s >= top {
			best, top = w, s
		}
	}
	return best
}

// viewTraffic is random traffic whose requests carry what vLLM Router reads: chats with one of
// the session headers (or another header, or none), with session_params.session_id (blank
// sometimes), completions of short or long prompts (some opening "user: <name>"), prompts of
// token ids.
func viewTraffic(seed uint64, n int) *sim.Trace {
	tr := simtest.RandomTraffic(seed, n, simtest.Block)
	rng := rand.New(rand.NewPCG(seed, 11))
	headers := []string{"x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id", "x-trace-id", "x-litellm-session-id"}
	for i := range tr.Requests {
		v := &sim.View{}
		switch rng.IntN(5) {
		case 0, 1:
			v.Chat = true
			if rng.IntN(3) > 0 {
				v.Headers = map[string]string{headers[rng.IntN(len(headers))]: fmt.Sprint("s", rng.IntN(9))}
				if rng.IntN(4) == 0 {
					v.Headers[headers[rng.IntN(len(headers))]] = ""
				}
			}
			if rng.IntN(2) == 0 {
				v.SessionParams = []string{"", "  ", "conv-1", "conv-2", "user: dan"}[rng.IntN(5)]
			}
		case 2, 3:
			v.Text = strings.Repeat("lorem ipsum ", rng.IntN(12))
			if rng.IntN(3) == 0 {
				v.Text = fmt.Sprintf("user: u%d asks %s", rng.IntN(5), v.Text)
			}
		default:
			v.PromptIDs = 1 + rng.IntN(50)
			if rng.IntN(4) == 0 {
				v.BatchLeft = 1 + rng.IntN(3)
			}
		}
		tr.Requests[i].View = v
	}
	tr.Format = "requests"
	return tr
}

// TestSecondModels: each emulation and its second model route random traffic alike, request by
// request, on three replicas and across a fourth added mid-way.
func TestSecondModels(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		tr := viewTraffic(seed, 300)
		for _, add := range []float64{-1, tr.Requests[150].Arrival} {
			c := simtest.ModelConfig(seed, 3, add)
			for _, tt := range []struct {
				name  string
				model func(r *sim.Request, n int) int
			}{
				{"vllm-router-consistent-hash", refConsistentHash},
				{"vllm-router-rendezvous-hash", refRendezvous},
			} {
				want := simtest.Replay(tr, c, tt.model, simtest.NewRefFleet(simtest.Block, c.Model))
				got := simtest.Routes(t, tr, c, emulation(t, tt.name, Shipped()))
				if d := cmp.Diff(want.Routes, got.Routes); d != "" {
					t.Fatalf("%s seed %d add %v: routes differ from the second model (-model +emulation):\n%s", tt.name, seed, add, d)
				}
			}
			// round_robin: a counter modulo the replicas; random: one draw of the PCG on the
			// emulations' stream per request; power_of_two: two distinct draws, the first kept.
			rr, draws, p2 := 0, rand.New(rand.NewPCG(seed, drawStream)), rand.New(rand.NewPCG(seed, drawStream))
			for _, tt := range []struct {
				name  string
				model func(r *sim.Request, n int) int
			}{
				{"vllm-router-round-robin", func(_ *sim.Request, n int) int { rr++; return (rr - 1) % n }},
				{"vllm-router-random", func(_ *sim.Request, n int) int { return draws.IntN(n) }},
				{"vllm-router-power-of-two", func(_ *sim.Request, n int) int {
					a, b := p2.IntN(n), p2.IntN(n)
					for b == a {
						b = p2.IntN(n)
					}
					return a
				}},
			} {
				want := simtest.Replay(tr, c, tt.model, simtest.NewRefFleet(simtest.Block, c.Model))
				got := simtest.Routes(t, tr, c, emulation(t, tt.name, Shipped()))
				if d := cmp.Diff(want.Routes, got.Routes); d != "" {
					t.Fatalf("%s seed %d add %v: routes differ from the second model (-model +emulation):\n%s", tt.name, seed, add, d)
				}
			}
		}
	}
}
