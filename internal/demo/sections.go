package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Env is what the sections share: the directory holding the input files (WriteFiles), the
// workload seed and the hitrate section's scrape window.
type Env struct {
	Dir    string
	Seed   uint64
	Window time.Duration
}

func (e Env) path(name string) string { return filepath.Join(e.Dir, name) }

// Section is one part of the walkthrough, set up: the heading and muted notes it prints first,
// the kvcheck command lines it runs in order, and what it started on loopback (Close stops it).
type Section struct {
	Heading  string
	Notes    []string
	Commands [][]string
	fleet    *fleet.Fleet
	// selfIntro is set for a command that prints its own heading and command line.
	selfIntro bool
}

// Close stops the section's emulated replicas, if it started any.
func (s *Section) Close() error {
	if s.fleet == nil {
		return nil
	}
	return s.fleet.Close()
}

// startFleet starts emulated replicas on loopback for a section.
func startFleet(o fleet.Options) (*fleet.Fleet, error) {
	f, err := fleet.New(o)
	if err != nil {
		return nil, err
	}
	if err := f.Start(); err != nil {
		return nil, err
	}
	return f, nil
}

// Hitrate scrapes four emulated replicas (HitrateFleet) over the scrape window.
func Hitrate(e Env) (*Section, error) {
	f, err := startFleet(hitrateFleetOptions(HitrateFleet(e.Seed)))
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, r := range f.Replicas() {
		notes = append(notes, fmt.Sprintf("  %s  %s  vLLM %s%s", r.Name(), r.URL(), r.Config().Version, hitrateNote(r.Name())))
	}
	notes = append(notes, fmt.Sprintf("Scrape window %s (30s by default outside the demo); the built-in workload runs about 300 requests/s per replica so the counters move within seconds.", e.Window))
	return &Section{
		Heading:  "Demo: kvcheck hitrate against 4 emulated vLLM replicas",
		Notes:    notes,
		Commands: [][]string{{"hitrate", "--scrape", strings.Join(f.Targets(), ","), "--window", e.Window.String()}},
		fleet:    f,
	}, nil
}

// Tap taps three emulated KV-event publishers for a few seconds: its one command line is
// kvcheck tap --demo, which runs StartPublishers.
func Tap(Env) (*Section, error) {
	return &Section{
		Heading: "Demo: kvcheck tap of three emulated KV-event publishers for 3s",
		Notes: []string{
			"  replica-a  vLLM 0.26 (map-era events), PYTHONHASHSEED=0, a replay socket, loses a batch now and then",
			"  replica-b  vLLM 0.23 (array-era events), PYTHONHASHSEED=0, data-parallel rank 1",
			"  replica-c  vLLM 0.26, no PYTHONHASHSEED, send high-water mark 1: bursts are dropped at the publisher",
		},
		Commands: [][]string{{"tap", "--demo", "--duration", "3s", "--tokens-per-sec", "20000"}},
	}, nil
}

// Audit audits the request log and prompt template with exact tokens from one emulated replica
// (AuditReplica), whose block size audit reads from the replica's /metrics; with 64-token blocks
// the "Today Date" line of its chat template falls in block zero.
func Audit(e Env) (*Section, error) {
	f, err := startFleet(fleet.Options{Replicas: []fleet.Config{AuditReplica(e.Seed)}})
	if err != nil {
		return nil, err
	}
	r := f.Replicas()[0]
	return &Section{
		Heading: "Demo: kvcheck audit of a request log and a prompt template, exact tokens from a replica",
		Notes: []string{
			fmt.Sprintf("  %s  %s  vLLM %s, block size %d, a Llama-3.1-style chat template that prints \"Today Date\"", r.Name(), r.URL(), r.Config().Version, r.Config().BlockSize),
			"  requests.jsonl    an agent whose system prompt starts with the current time, and three support sessions",
			"  agent_prompt.txt  the agent's system prompt template",
		},
		Commands: [][]string{{"audit", "--tokenize", r.URL(), "--requests", e.path("requests.jsonl"), e.path("agent_prompt.txt")}},
		fleet:    f,
	}, nil
}

// Lint lints the dashboard written for vLLM's old metric names, then shows the rewrite --fix
// would make.
func Lint(e Env) (*Section, error) {
	path := e.path("vllm-dashboard.json")
	return &Section{
		Heading:  "Demo: kvcheck lint of a dashboard written for older vLLM metric names",
		Notes:    []string{"  vllm-dashboard.json  a Grafana dashboard with KV usage, hit rate, latency and preemption panels"},
		Commands: [][]string{{"lint", path}, {"lint", "--diff", path}},
	}, nil
}

// Config lints a gateway, a router and an engine configuration in one run: the checks across the
// files find the engine publishing where the router does not listen.
func Config(e Env) (*Section, error) {
	return &Section{
		Heading: "Demo: kvcheck lint of a gateway, a router and an engine configuration",
		Notes: []string{
			"  gateway-litellm.yaml      LiteLLM in front of the llm-d inference gateway",
			"  router-llm-d-values.yaml  llm-d router chart values: precise prefix-cache routing on KV events",
			"  engine-vllm.yaml          two vLLM 0.26 replicas publishing KV events",
		},
		Commands: [][]string{{"lint", e.path("gateway-litellm.yaml"), e.path("router-llm-d-values.yaml"), e.path("engine-vllm.yaml")}},
	}, nil
}

// Simulate writes the synthetic multi-turn trace (MooncakeTrace) into the directory and replays
// it under round-robin, session affinity and llm-d's KV-aware scorer.
func Simulate(e Env) (*Section, error) {
	tr := MooncakeTrace(e.Seed)
	path := e.path("synthetic-trace.jsonl")
	if err := os.WriteFile(path, tr.Data, 0o644); err != nil {
		return nil, fmt.Errorf("write the synthetic trace: %w", err)
	}
	return &Section{
		Heading: "Demo: kvcheck simulate of a synthetic multi-turn trace under three routing policies",
		Notes: []string{fmt.Sprintf("  synthetic-trace.jsonl  %d requests: %d conversations of %d turns over %d shared system prompts, generated in process (seed %d)",
			tr.Requests, tr.Conversations, tr.Turns, tr.Prompts, e.Seed)},
		Commands: [][]string{{"simulate", "--trace", path, "--replicas", "4", "--kv-blocks", strconv.Itoa(KVBlocks),
			"--policies", "round-robin,session,kv-llmd"}},
	}, nil
}

// StartAssessFleet starts the assess section's fleet on loopback: AssessReplicas replicas
// serving tr as round-robin sends it (AssessFleet).
func StartAssessFleet(tr *sim.Trace) (*fleet.Fleet, error) {
	o, err := AssessFleet(tr, AssessReplicas)
	if err != nil {
		return nil, err
	}
	return startFleet(o)
}

// AssessSection ends the walkthrough with the recommendation: kvcheck assess --demo starts
// its own fleet (StartAssessFleet) and prints its heading and the command line it stands for
// (AssessIntro), since its trace is in process, not a file.
func AssessSection(Env) (*Section, error) {
	return &Section{Commands: [][]string{{"assess", "--demo"}}, selfIntro: true}, nil
}

// AssessIntro is the assess section's heading, its note on the chat trace tr (ChatTrace) and the
// command line it stands for, over the replicas at targets: the trace is in process, not a file.
func AssessIntro(targets []string, tr *sim.Trace) (heading, note, command string) {
	heading = fmt.Sprintf("Demo: kvcheck assess against %d emulated vLLM replicas and a built-in chat trace", len(targets))
	note = fmt.Sprintf("The trace: %d conversations (%d requests) with the assistants of %d tenants, each tenant's system prompt %d tokens; each turn repeats the conversation so far. The prompts (%d tokens) do not fit in one replica's KV cache. The replicas serve this trace behind production-stack's router, routingLogic roundrobin: today's routing in the replay (--today %s), so their metrics measure the traffic replayed and the ranking starts from production-stack. Each block stands for 64 characters of text, with the session id in x-session-id and metadata.session_id, so the routers that read text are ranked too.",
		ChatSessions, len(tr.Requests), ChatTenants, ChatSystemBlocks*ChatBlockSize, ChatTenants*ChatSystemBlocks*ChatBlockSize, AssessToday)
	command = fmt.Sprintf("assess --scrape %s --window 3s --today %s --trace <built-in chat trace>", strings.Join(targets, ","), AssessToday)
	return heading, note, command
}
