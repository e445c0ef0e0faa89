package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// demoAssess runs kvcheck assess over the demo fleet's scrape targets (name=URL or host:port)
// and a built-in multi-turn chat trace, and renders the recommendation. The trace stands in for
// the request log a real user would give; the replica count and KV size come from the scrape.
func demoAssess(ctx context.Context, s streams, g *globalOptions, targets []string) (report.Result, error) {
	if len(targets) == 0 {
		return report.Result{}, fmt.Errorf("demo assess: no scrape targets")
	}
	st := report.NewStatus(s.ErrOut)
	o := &assessOptions{embedded: demoChatTrace(1), tok: defaultTokenize}
	o.th = advise.DefaultThresholds()
	o.metrics = promql.Spec{Scrape: targets, Window: 3 * time.Second, WindowSet: true, ScrapeTimeout: 5 * time.Second}
	if g.format != report.FormatJSON {
		t := g.text(s.Out)
		t.Heading(fmt.Sprintf("Demo: kvcheck assess against %d emulated vLLM replicas and a built-in chat trace", len(targets)))
		t.Muted("The trace: %d conversations (%d requests) with the assistants of %d tenants, each tenant's system prompt %d tokens; each turn repeats the conversation so far. The prompts (%d tokens) do not fit in one replica's KV cache.",
			demoSessions, len(o.embedded.Requests), demoTenants, demoSystemBlocks*demoBlockSize, demoTenants*demoSystemBlocks*demoBlockSize)
		t.Line("$ kvcheck assess --scrape %s --window 3s --trace <built-in chat trace>", strings.Join(targets, ","))
		t.Line("")
	}
	return runAssess(ctx, st, o)
}

// runAssessDemo starts four emulated replicas on loopback, as kvcheck demo does, and runs
// demoAssess against them.
func runAssessDemo(ctx context.Context, s streams, g *globalOptions) (report.Result, error) {
	f, err := fleet.New(fleet.Options{Replicas: fleet.Uniform(4, fleet.Config{Seed: 1, WarmupSteps: 2000}), Tick: 5 * time.Millisecond, StepsPerTick: 5})
	if err != nil {
		return report.Result{}, err
	}
	if err := f.Start(); err != nil {
		return report.Result{}, err
	}
	defer func() {
		if err := f.Close(); err != nil {
			report.NewStatus(s.ErrOut).Note("%v", err)
		}
	}()
	return demoAssess(ctx, s, g, f.Targets())
}

// The built-in chat trace's shape: conversations start over ten minutes with one of the
// tenants' assistants, each has a few turns a short think time apart, and every turn adds a user
// message and an answer to the prompt.
const (
	demoSessions     = 240
	demoTenants      = 32
	demoSystemBlocks = 64 // 1,024 tokens per tenant's system prompt
	demoTurnBlocks   = 6  // new blocks per turn (user message + previous answer)
	demoBlockSize    = 16
)

// demoChatTrace builds a deterministic multi-turn chat trace in 16-token blocks over the
// tenants' system prompts: 32 x 1,024 tokens of shared prefixes against the demo replicas'
// 16,384 tokens of KV each. Round-robin and session affinity spread every tenant over every
// replica, whose caches then cycle through all 32 prompts; a KV-aware router gives each replica
// its own tenants, which fit. That is where the answer is a KV-aware router.
func demoChatTrace(seed uint64) *sim.Trace {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var next uint64 = 1
	newBlock := func() uint64 { next++; return next }
	systems := make([][]uint64, demoTenants)
	for t := range systems {
		for range demoSystemBlocks {
			systems[t] = append(systems[t], newBlock())
		}
	}
	var reqs []sim.Request
	for sess := range demoSessions {
		at := rng.Float64() * 600
		blocks := slices.Clone(systems[rng.IntN(demoTenants)])
		turns := 1 + rng.IntN(3)
		for range turns {
			for range demoTurnBlocks - 2 + rng.IntN(5) {
				blocks = append(blocks, newBlock())
			}
			in := len(blocks)*demoBlockSize - rng.IntN(demoBlockSize)
			reqs = append(reqs, sim.Request{Arrival: at, Session: fmt.Sprintf("chat-%d", sess), Blocks: slices.Clone(blocks),
				InputTokens: in, OutputTokens: 64 + rng.IntN(128), N: 1})
			at += 10 + rng.Float64()*50
		}
	}
	slices.SortStableFunc(reqs, func(a, b sim.Request) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	return &sim.Trace{Name: "built-in chat trace", Format: "mooncake", BlockSize: demoBlockSize, PrefixInfo: true, Requests: reqs}
}
