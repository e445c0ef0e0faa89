package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

// demoTapSection taps three emulated KV-event publishers for a few seconds (demoTap, which
// kvcheck tap --demo also runs).
func demoTapSection(ctx context.Context, d *demoSession) error {
	d.heading("Demo: kvcheck tap of three emulated KV-event publishers for 3s",
		"  replica-a  vLLM 0.26 (map-era events), PYTHONHASHSEED=0, a replay socket, loses a batch now and then",
		"  replica-b  vLLM 0.23 (array-era events), PYTHONHASHSEED=0, data-parallel rank 1",
		"  replica-c  vLLM 0.26, no PYTHONHASHSEED, send high-water mark 1: bursts are dropped at the publisher")
	// demoTap is what this command line runs.
	args := []string{"tap", "--demo", "--duration", "3s", "--tokens-per-sec", "20000"}
	return d.capture(args, func(s streams) error { return demoTap(ctx, s, d.g) })
}

// demoAudit audits the embedded request log and prompt template with exact tokens from one
// emulated replica, whose block size audit reads from the replica's /metrics; with 64-token
// blocks the "Today Date" line of its chat template falls in block zero.
func demoAudit(ctx context.Context, d *demoSession) error {
	f, err := fleet.New(fleet.Options{Replicas: []fleet.Config{demo.AuditReplica(d.o.seed)}})
	if err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	defer d.stop(f)
	r := f.Replicas()[0]
	d.heading("Demo: kvcheck audit of a request log and a prompt template, exact tokens from a replica",
		fmt.Sprintf("  %s  %s  vLLM %s, block size %d, a Llama-3.1-style chat template that prints \"Today Date\"", r.Name(), r.URL(), r.Config().Version, r.Config().BlockSize),
		"  requests.jsonl    an agent whose system prompt starts with the current time, and three support sessions",
		"  agent_prompt.txt  the agent's system prompt template")
	return d.exec(ctx, "audit", "--tokenize", r.URL(), "--requests", d.path("requests.jsonl"), d.path("agent_prompt.txt"))
}

// demoLint lints the embedded dashboard written for vLLM's old metric names, then shows the
// rewrite --fix would make.
func demoLint(ctx context.Context, d *demoSession) error {
	d.heading("Demo: kvcheck lint of a dashboard written for older vLLM metric names",
		"  vllm-dashboard.json  a Grafana dashboard with KV usage, hit rate, latency and preemption panels")
	path := d.path("vllm-dashboard.json")
	if err := d.exec(ctx, "lint", path); err != nil {
		return err
	}
	return d.exec(ctx, "lint", "--diff", path)
}

// demoConfig lints a gateway, a router and an engine configuration in one run: the checks
// across the files find the engine publishing where the router does not listen.
func demoConfig(ctx context.Context, d *demoSession) error {
	d.heading("Demo: kvcheck lint of a gateway, a router and an engine configuration",
		"  gateway-litellm.yaml      LiteLLM in front of the llm-d inference gateway",
		"  router-llm-d-values.yaml  llm-d router chart values: precise prefix-cache routing on KV events",
		"  engine-vllm.yaml          two vLLM 0.26 replicas publishing KV events")
	return d.exec(ctx, "lint", d.path("gateway-litellm.yaml"), d.path("router-llm-d-values.yaml"), d.path("engine-vllm.yaml"))
}

// demoSimulate writes a synthetic multi-turn trace and replays it under round-robin, session
// affinity and llm-d's KV-aware scorer.
func demoSimulate(ctx context.Context, d *demoSession) error {
	tr := demo.MooncakeTrace(d.o.seed)
	path := d.path("synthetic-trace.jsonl")
	if err := os.WriteFile(path, tr.Data, 0o644); err != nil {
		return fmt.Errorf("write the synthetic trace: %w", err)
	}
	d.heading("Demo: kvcheck simulate of a synthetic multi-turn trace under three routing policies",
		fmt.Sprintf("  synthetic-trace.jsonl  %d requests: %d conversations of %d turns over %d shared system prompts, generated in process (seed %d)",
			tr.Requests, tr.Conversations, tr.Turns, tr.Prompts, d.o.seed))
	return d.exec(ctx, "simulate", "--trace", path, "--replicas", "4", "--kv-blocks", strconv.Itoa(demo.KVBlocks),
		"--policies", "round-robin,session,kv-llmd")
}

// demoAssessSection ends the demo with the recommendation: assess scrapes four emulated
// replicas and simulates a built-in chat trace on a fleet of their shape. In text mode
// demoAssess prints its own heading and command line.
func demoAssessSection(ctx context.Context, d *demoSession) error {
	if d.json {
		return d.capture([]string{"assess", "--demo"}, func(s streams) error {
			res, err := runAssessDemo(ctx, s, d.g)
			return d.g.write(s.Out, res, err)
		})
	}
	if d.started {
		d.g.text(d.s.Out).Line("")
	}
	d.started = true
	res, err := runAssessDemo(ctx, d.s, d.g)
	err = d.g.write(d.s.Out, res, err)
	var fe findingsError
	if errors.As(err, &fe) {
		d.g.text(d.s.Out).Line("(exit 3: %v)", err)
		return nil
	}
	return err
}
