// Package simtest holds what tests of routing policies outside package sim share (the router
// emulations in internal/router/<product>): tiny traces whose routes and hits can be worked out
// by hand, a replay that returns every route, random traffic, and RefFleet, a second model of
// the fleet written apart from sim's, for second models of a router to route over.
package simtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// Block is the block size of tiny traces, in tokens: small enough that every hit and every cost
// can be worked out by hand.
const Block = 4

// Req builds a request of len(blocks) full blocks of Block tokens, in flight for out seconds
// under Config (decode 1 s a token).
func Req(at float64, session string, out int, blocks ...uint64) sim.Request {
	return sim.Request{Arrival: at, Session: session, Blocks: blocks, InputTokens: len(blocks) * Block, OutputTokens: out, N: 1}
}

// Trace is a trace of tiny requests.
func Trace(rs ...sim.Request) *sim.Trace {
	return &sim.Trace{Name: "tiny", Format: "test", BlockSize: Block, PrefixInfo: true, Requests: rs}
}

// TextReq is a completion of len(blocks) full blocks of bs tokens whose prompt is text.
func TextReq(at float64, out int, text string, bs int, blocks ...uint64) sim.Request {
	return sim.Request{Arrival: at, Blocks: blocks, InputTokens: len(blocks) * bs, OutputTokens: out, N: 1, View: &sim.View{Text: text}}
}

// ChatReq is a chat request of len(blocks) full blocks of bs tokens with the headers given; its
// messages' text is irrelevant to the routers tested with it.
func ChatReq(at float64, out int, headers map[string]string, bs int, blocks ...uint64) sim.Request {
	v := sim.StringChat("system", " prompt")
	v.Headers = headers
	return sim.Request{Arrival: at, Blocks: blocks, InputTokens: len(blocks) * bs, OutputTokens: out, N: 1, View: v}
}

// TextTrace is a trace of requests with views (a request log's), in blocks of bs tokens.
func TextTrace(bs int, rs ...sim.Request) *sim.Trace {
	return &sim.Trace{Name: "text", Format: "requests", BlockSize: bs, PrefixInfo: true, Requests: rs}
}

// Config is a tiny fleet: prefill 10 ms per token, decode 1 s per output token, so a request
// with output 100 stays in flight for 100 s and one with output 0 leaves right after its
// prefill; 64 blocks a replica, 8 running at once, seed 1.
func Config(replicas int) sim.Config {
	return sim.Config{
		Replicas: replicas, KVBlocks: 64, AddReplicaAt: -1, Seed: 1,
		Model:  sim.Model{PrefillPerToken: 0.01, DecodePerToken: 1, MaxRunning: 8},
		Params: sim.DefaultParams(),
	}
}

// ModelConfig has caches no random trace fills, so that RefFleet applies, and three running
// slots per replica, so that requests wait; addAt < 0 adds no replica.
func ModelConfig(seed uint64, replicas int, addAt float64) sim.Config {
	return sim.Config{Replicas: replicas, KVBlocks: 1 << 16, AddReplicaAt: addAt, Seed: seed,
		Model: sim.Model{PrefillPerToken: 0.002, DecodePerToken: 0.05, MaxRunning: 3}, Params: sim.DefaultParams()}
}

// RoomyConfig is ModelConfig with running slots no random trace fills.
func RoomyConfig(seed uint64, replicas int, addAt float64) sim.Config {
	c := ModelConfig(seed, replicas, addAt)
	c.Model.MaxRunning = 1 << 16
	return c
}

// Outcome is where each request went and how many blocks it hit, in the order sent.
type Outcome struct {
	Routes []int
	Hits   []int
}

// Run replays tr under the policy info describes and returns its outcome and reasons.
func Run(t testing.TB, tr *sim.Trace, c sim.Config, info sim.PolicyInfo) (Outcome, []string) {
	t.Helper()
	_, routes, err := sim.SimulateRoutes(context.Background(), tr, c, info)
	if err != nil {
		t.Fatalf("simulate %s: %v", info.Name, err)
	}
	var o Outcome
	var reasons []string
	for _, r := range routes {
		o.Routes = append(o.Routes, r.Replica)
		o.Hits = append(o.Hits, r.CachedTokens/tr.BlockSize)
		reasons = append(reasons, r.Reason)
	}
	return o, reasons
}

// Routes is Run without the reasons.
func Routes(t testing.TB, tr *sim.Trace, c sim.Config, info sim.PolicyInfo) Outcome {
	t.Helper()
	o, _ := Run(t, tr, c, info)
	return o
}

// Model wraps a second model of a router as a policy, to replay it through sim's fleet.
func Model(name string, needsText bool, p sim.Policy) sim.PolicyInfo {
	return sim.PolicyInfo{Name: name, NeedsText: needsText, New: func(sim.Config, int) sim.Policy { return p }}
}

// RandomTraffic is n requests of blocks of bs tokens: conversations that go on (a previous
// request's full blocks and more), prompts on one of four shared system prompts, prompts that
// share nothing and exact repeats; last blocks partial or whole, outputs of 0 to 19 tokens,
// arrivals 0 to 0.3 s apart.
func RandomTraffic(seed uint64, n, bs int) *sim.Trace {
	rng := rand.New(rand.NewPCG(seed, 7))
	fresh := uint64(1_000_000)
	next := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			fresh++
			out[i] = fresh
		}
		return out
	}
	var rs []sim.Request
	t := 0.0
	for range n {
		t += rng.Float64() * 0.3
		var blocks []uint64
		tokens := -1
		switch x := rng.IntN(10); {
		case x == 9 && len(rs) > 0:
			p := rs[rng.IntN(len(rs))]
			blocks, tokens = p.Blocks, p.InputTokens
		case x < 4 && len(rs) > 0:
			p := rs[rng.IntN(len(rs))]
			blocks = append(slices.Clone(p.Blocks[:p.InputTokens/bs]), next(1+rng.IntN(3))...)
		case x < 8:
			s := rng.IntN(4)
			for k := range 1 + s {
				blocks = append(blocks, uint64(1000*(s+1)+k))
			}
			blocks = append(blocks, next(1+rng.IntN(4))...)
		default:
			blocks = next(1 + rng.IntN(6))
		}
		if tokens < 0 {
			tokens = len(blocks)*bs - rng.IntN(bs)
			if rng.IntN(3) == 0 {
				tokens = len(blocks) * bs // a whole last block
			}
		}
		rs = append(rs, sim.Request{Arrival: t, Blocks: blocks, InputTokens: tokens, OutputTokens: rng.IntN(20), N: 1})
	}
	return &sim.Trace{Name: "random", Format: "test", BlockSize: bs, PrefixInfo: true, Requests: rs}
}

// RefFleet is a second model of the fleet for caches that never fill, written from the service
// model's description (sim.Model), not from sim's code: a replica admits requests in arrival
// order (a request is admitted once fewer than MaxRunning of those before it are unfinished); it
// prefills the admitted ones one at a time in that order; a request hits the run of its blocks
// from block 0 that requests before it on that replica computed (full blocks only), at most
// (tokens-1)/block size; its prefill lasts its uncached tokens times the prefill cost, its
// decode its output tokens times the decode cost. A router reading the engines sees a request's
// blocks once its prefill has ended.
type RefFleet struct {
	BS       int
	M        sim.Model
	Jobs     []RefJob
	free     []float64         // when each replica's prefill engine is next free
	admitted []float64         // when each replica last admitted a request
	finishes [][]float64       // finish times of the requests sent to each replica
	computed []map[uint64]bool // full blocks each replica has computed (or will have, FIFO)
}

// RefJob is one request RefFleet ran: where, when and its hit.
type RefJob struct {
	R                         *sim.Request
	Rep                       int
	Admit, Start, End, Finish float64
	Hit                       int
}

// NewRefFleet is a RefFleet of blocks of bs tokens under model m.
func NewRefFleet(bs int, m sim.Model) *RefFleet { return &RefFleet{BS: bs, M: m} }

// Full are r's full blocks.
func (e *RefFleet) Full(r *sim.Request) []uint64 {
	return r.Blocks[:min(len(r.Blocks), r.InputTokens/e.BS)]
}

func (e *RefFleet) grow(n int) {
	for len(e.free) < n {
		e.free = append(e.free, 0)
		e.admitted = append(e.admitted, 0)
		e.finishes = append(e.finishes, nil)
		e.computed = append(e.computed, map[uint64]bool{})
	}
}

// Send starts r on replica rep and returns its hit.
func (e *RefFleet) Send(r *sim.Request, rep int) int {
	e.grow(rep + 1)
	admit := max(r.Arrival, e.admitted[rep])
	if before := slices.Sorted(slices.Values(e.finishes[rep])); len(before) >= e.M.MaxRunning {
		// The slot of the (k-MaxRunning+1)-th request to finish among the k before it.
		admit = max(admit, before[len(before)-e.M.MaxRunning])
	}
	e.admitted[rep] = admit
	start := max(admit, e.free[rep])
	limit := 0
	if r.InputTokens > 0 {
		limit = min(len(r.Blocks), (r.InputTokens-1)/e.BS)
	}
	hit := 0
	for hit < limit && e.computed[rep][r.Blocks[hit]] {
		hit++
	}
	end := start + float64(r.InputTokens-hit*e.BS)*e.M.PrefillPerToken
	e.free[rep] = end
	for _, b := range e.Full(r) {
		e.computed[rep][b] = true
	}
	finish := end + float64(r.OutputTokens)*e.M.DecodePerToken
	e.finishes[rep] = append(e.finishes[rep], finish)
	e.Jobs = append(e.Jobs, RefJob{R: r, Rep: rep, Admit: admit, Start: start, End: end, Finish: finish, Hit: hit})
	return hit
}

// CachedRun is how many of blocks[:lim], from block 0, replica rep's engine holds at time t.
func (e *RefFleet) CachedRun(rep int, blocks []uint64, lim int, t float64) int {
	held := map[uint64]bool{}
	for _, j := range e.Jobs {
		if j.Rep == rep && j.End <= t {
			for _, b := range e.Full(j.R) {
				held[b] = true
			}
		}
	}
	k := 0
	for k < lim && held[blocks[k]] {
		k++
	}
	return k
}

// Replay runs a second model of a router (route picks a replica of n for r) over t with e and
// returns routes and hits.
func Replay(t *sim.Trace, c sim.Config, route func(r *sim.Request, n int) int, e *RefFleet) Outcome {
	var o Outcome
	for i := range t.Requests {
		r := &t.Requests[i]
		n := c.Replicas
		if c.AddReplicaAt >= 0 && r.Arrival >= c.AddReplicaAt {
			n++
		}
		rep := route(r, n)
		o.Routes = append(o.Routes, rep)
		o.Hits = append(o.Hits, e.Send(r, rep))
	}
	return o
}

// Relative names each route "first" when it is the first request's replica, else "other": the
// routes of a two-replica run whose first choice is random, told apart from where it went.
func Relative(routes []int) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = "other"
		if r == routes[0] {
			out[i] = "first"
		}
	}
	return out
}

// Scaled returns the trace with blocks of bs tokens instead of Block: routers that ignore
// anything shorter than their own blocks (llm-d's 64-token floor) need longer ones.
func Scaled(t *sim.Trace, bs int) *sim.Trace {
	c := &sim.Trace{Name: t.Name, Format: t.Format, BlockSize: bs, PrefixInfo: t.PrefixInfo, Requests: make([]sim.Request, len(t.Requests))}
	for i, r := range t.Requests {
		r.InputTokens = len(r.Blocks) * bs
		c.Requests[i] = r
	}
	return c
}

// CharReq is a request whose text is text (a completion), in blocks of Block characters (a
// character a token): equal text prefixes give equal blocks, so a hit is a shared prefix.
func CharReq(at float64, out int, text string) sim.Request {
	rs := []rune(text)
	var blocks []uint64
	h := uint64(14695981039346656037)
	for k := 0; k < len(rs); k += Block {
		for _, b := range []byte(string(rs[k:min(k+Block, len(rs))])) {
			h ^= uint64(b)
			h *= 1099511628211
		}
		h ^= 0xff // ends a block: "ab"+"c" and "a"+"bc" differ
		h *= 1099511628211
		blocks = append(blocks, h)
	}
	return sim.Request{Arrival: at, Blocks: blocks, InputTokens: len(rs), OutputTokens: out, N: 1, View: &sim.View{Text: text}}
}

// CharTrace is a trace of CharReq requests.
func CharTrace(rs ...sim.Request) *sim.Trace {
	return &sim.Trace{Name: "tiny-text", Format: "requests", BlockSize: Block, PrefixInfo: true, Requests: rs}
}

// RandomCharTrace is n CharReq requests with texts from text (given the texts so far), arriving
// 0 to 1 s apart, in flight 0 to 12 s.
func RandomCharTrace(rng *rand.Rand, n int, text func(rng *rand.Rand, earlier []string) string) *sim.Trace {
	var rs []sim.Request
	var texts []string
	at := 0.0
	for range n {
		at += float64(rng.IntN(3)) / 2
		t := text(rng, texts)
		texts = append(texts, t)
		rs = append(rs, CharReq(at, rng.IntN(13), t))
	}
	return CharTrace(rs...)
}

// Compare replays tr under the emulation info describes and under model, a second model of it
// written apart, and fails at the first request they route or hit differently.
func Compare(t testing.TB, tr *sim.Trace, c sim.Config, info sim.PolicyInfo, model sim.Policy, what string) {
	t.Helper()
	want, _ := Run(t, tr, c, Model("model", info.NeedsText, model))
	got, _ := Run(t, tr, c, info)
	for k := range want.Routes {
		if got.Routes[k] != want.Routes[k] || got.Hits[k] != want.Hits[k] {
			r := &tr.Requests[k]
			t.Fatalf("%s: request %d (%q at %g): %s routes to %d hitting %d, the second model to %d hitting %d",
				what, k, r.View.Text, r.Arrival, info.Name, got.Routes[k], got.Hits[k], want.Routes[k], want.Hits[k])
		}
	}
}

// SessionViews returns tr with what header-reading routers read on every request: a chat
// view, and an x-session-id header (one of eight sessions) on two requests in three.
func SessionViews(tr *sim.Trace, seed uint64) *sim.Trace {
	rng := rand.New(rand.NewPCG(seed, 0x76696577))
	out := &sim.Trace{Name: tr.Name, Format: "requests", BlockSize: tr.BlockSize, PrefixInfo: tr.PrefixInfo}
	for _, r := range tr.Requests {
		v := sim.StringChat("system", "user")
		if rng.IntN(3) > 0 {
			v.Headers = map[string]string{"x-session-id": fmt.Sprintf("s-%d", rng.IntN(8))}
		}
		r.View = v
		out.Requests = append(out.Requests, r)
	}
	return out
}

// Spread is RandomTraffic for routers that keep time windows: n requests with their arrivals
// stretched tenfold (up to 3 s apart, so a 60 s window both fills and empties), with
// SessionViews.
func Spread(seed uint64, n int) *sim.Trace {
	base := RandomTraffic(seed, n, Block)
	for i := range base.Requests {
		base.Requests[i].Arrival *= 10
	}
	return SessionViews(base, seed)
}
