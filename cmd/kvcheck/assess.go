package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// assessPolicies are the policies assess simulates: the baseline, the session-affinity family
// and the KV-aware routers a team can deploy (llm-d approximate and exact, Dynamo, a load-aware
// scorer), plus naive longest-prefix to show its hot spot.
var assessPolicies = []string{"round-robin", "least-loaded", "session", "chash-bounded", "approx-prefix", "kv-longest", "kv-llmd", "kv-dynamo", "kv-load"}

// defaultAssessReplicas is the simulated fleet size when neither --replicas nor a metrics
// source says it.
const defaultAssessReplicas = 8

// assessOptions are the flags of kvcheck assess.
type assessOptions struct {
	metrics promql.Spec

	templates []string

	requests  string
	tok       tokenizeFlags
	blockSize int

	tapFrom  []string
	hashSeed string
	seedSet  bool

	trace       string
	traceFormat string
	traceBlock  int
	// embedded, when set, is simulated instead of reading --trace (the demo's built-in trace).
	embedded *sim.Trace
	replicas int
	kvBlocks int

	th     advise.Thresholds
	failOn failOn
	// demo runs the assessment against an emulated fleet (what kvcheck demo shows).
	demo bool
}

const assessLong = `assess gathers whichever evidence you can give in one run and recommends one of: session
affinity, a KV-aware router, nothing, or fix this first, with the evidence for it and what to
measure next. Every input is optional; give at least one.

  metrics     --prometheus URL | --scrape URL... | --targets FILE | --file A.prom [--file B.prom] |
              --log FILE (one source, as kvcheck hitrate): prefix caching on, thrashing, replica
              count and KV size (num_gpu_blocks)
  templates   --templates PATH... (as kvcheck audit PATH...): block-zero breakers
  requests    --requests FILE [--tokenize URL] (as kvcheck audit --requests): shareable prefill,
              within- vs cross-session reuse
  KV events   --tap-from REC... [--hash-seed S] (as kvcheck tap --from): hash parity, duplicated
              prefill, lost batches
  trace       --trace FILE [--replicas N --kv-blocks N] (as kvcheck simulate): each policy's gain
              over round-robin; the fleet's shape defaults to what the metrics saw

Rules, in order: fix this first (prefix caching off, a per-call or per-user block-zero breaker,
a thrashing fleet, and for an exact router hashes that differ across replicas; all that apply);
nothing (one replica, little shareable prefill, or a simulated gain below --min-gain); session
affinity (reuse mostly within sessions, or session affinity getting most of the simulated gain);
a KV-aware router (cross-session reuse, a working set larger than one replica's KV cache, a
simulated KV-aware policy beating round-robin and session affinity with acceptable balance).

`

func newAssessCmd(s streams, g *globalOptions) *cobra.Command {
	o := &assessOptions{th: advise.DefaultThresholds()}
	cmd := &cobra.Command{
		Use:   "assess",
		Short: "Recommend session affinity, a KV-aware router, nothing, or what to fix first",
		Long:  assessLong + exitCodesHelp,
		Example: `  kvcheck assess --scrape 10.0.0.7:8000,10.0.0.8:8000 --templates prompts/ --requests gateway.jsonl
  kvcheck assess --trace mooncake_conversation_trace.jsonl --replicas 8
  kvcheck assess --file before.prom --file after.prom --window 60s --tap-from a.kvtap --hash-seed 0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.metrics.WindowSet = cmd.Flags().Changed("window")
			o.seedSet = cmd.Flags().Changed("hash-seed")
			if report.IsTerminal(s.ErrOut) {
				o.metrics.Progress = func(msg string) { fmt.Fprintf(s.ErrOut, "kvcheck: %s\n", msg) }
			}
			if o.demo {
				return runAssessDemo(cmd.Context(), s, g)
			}
			return runAssess(cmd.Context(), s, g, o)
		},
	}
	fs := cmd.Flags()
	bindMetrics(fs, &o.metrics)
	fs.StringSliceVar(&o.templates, "templates", nil, "chat templates, prompt modules or directories to audit (comma-separated or repeated)")
	fs.StringVar(&o.requests, "requests", "", `JSONL request log to audit ("-" for standard input)`)
	o.tok.bind(fs, "--requests: ")
	fs.IntVar(&o.blockSize, "block-size", 0, "KV block size in tokens for the audits (default: from the metrics, else 16)")
	fs.StringArrayVar(&o.tapFrom, "tap-from", nil, "kvcheck tap recording to analyse (repeatable)")
	fs.StringVar(&o.hashSeed, "hash-seed", "", "the replicas' PYTHONHASHSEED, to check hash reproducibility in --tap-from")
	fs.StringVar(&o.trace, "trace", "", "request trace to simulate: Mooncake JSONL or lengths-only CSV")
	fs.StringVar(&o.traceFormat, "trace-format", sim.FormatAuto, "--trace format: auto (by extension: .jsonl, .json, .ndjson Mooncake; .csv Azure), mooncake, azure")
	fs.IntVar(&o.traceBlock, "trace-block-size", 0, "tokens per block of --trace: default 512 for Mooncake (its hash_ids), 16 for CSV")
	fs.IntVar(&o.replicas, "replicas", 0, fmt.Sprintf("replicas to simulate (default: the metrics' replica count, else %d)", defaultAssessReplicas))
	fs.IntVar(&o.kvBlocks, "kv-blocks", 0, "KV-cache blocks per replica as vLLM counts them (num_gpu_blocks, of --block-size tokens); default: the metrics' num_gpu_blocks, else 1Mi tokens")
	fs.Float64Var(&o.th.MinGain, "min-gain", o.th.MinGain, "share of round-robin's prefill a simulated policy must save to be worth a router")
	fs.Float64Var(&o.th.MinShareable, "min-shareable", o.th.MinShareable, "share of prompt tokens (requests) or block references (trace ceiling) below which there is no reuse to route for")
	fs.StringVar((*string)(&o.failOn), "fail-on", "", "exit 3 when the verdict is fix-first and a fix reaches this severity (info, warning, error)")
	fs.BoolVar(&o.demo, "demo", false, "assess four emulated replicas on loopback and a built-in chat trace (what kvcheck demo shows)")
	_ = fs.MarkHidden("demo")
	return cmd
}

func runAssess(ctx context.Context, s streams, g *globalOptions, o *assessOptions) error {
	format, err := g.format(report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	if err := o.failOn.validate(); err != nil {
		return err
	}
	metricsGiven := o.metrics.Given()
	switch {
	case !metricsGiven && len(o.templates) == 0 && o.requests == "" && len(o.tapFrom) == 0 && o.trace == "" && o.embedded == nil:
		return usageErrorf("nothing to assess: give at least one of --scrape/--prometheus/--file/--log, --templates, --requests, --tap-from, --trace")
	case o.tok.URL != "" && o.requests == "":
		return usageErrorf("--tokenize applies to --requests")
	case o.seedSet && len(o.tapFrom) == 0:
		return usageErrorf("--hash-seed applies to --tap-from")
	case (o.replicas != 0 || o.kvBlocks != 0) && o.trace == "" && o.embedded == nil:
		return usageErrorf("--replicas and --kv-blocks shape the simulated fleet: give --trace")
	case o.replicas < 0 || o.replicas > sim.MaxReplicas:
		return usageErrorf("--replicas %d: want 1 to %d", o.replicas, sim.MaxReplicas)
	case o.kvBlocks < 0 || o.blockSize < 0 || o.traceBlock < 0:
		return usageErrorf("--kv-blocks, --block-size and --trace-block-size must be positive")
	case o.th.MinGain < 0 || o.th.MinGain >= 1 || o.th.MinShareable < 0 || o.th.MinShareable >= 1:
		return usageErrorf("--min-gain and --min-shareable are fractions from 0 to 1 (0.05 means 5%%)")
	}

	if err := o.tok.validate(); err != nil {
		return err
	}
	var in advise.Input
	if metricsGiven {
		if in.Metrics, err = assessMetrics(ctx, s, o.metrics); err != nil {
			return err
		}
	}
	blockSize := o.blockSize
	if blockSize == 0 {
		blockSize = audit.DefaultBlockSize
		if in.Metrics != nil {
			for _, r := range in.Metrics.Replicas {
				if r.BlockSize > 0 {
					blockSize = r.BlockSize
					break
				}
			}
		}
	}
	if len(o.templates) > 0 {
		tr, err := audit.AuditTemplates(o.templates, blockSize)
		if err != nil {
			return fmt.Errorf("templates: %w", err)
		}
		in.Templates = advise.FromTemplates(tr, o.templates)
	}
	if o.requests != "" {
		if in.Requests, err = assessRequests(ctx, s, o, blockSize); err != nil {
			return err
		}
	}
	if len(o.tapFrom) > 0 {
		opts := events.Options{MaxBlocks: events.DefaultMaxBlocks, Ordered: len(o.tapFrom) <= 1}
		if o.seedSet {
			seed := o.hashSeed
			opts.HashSeed = &seed
		}
		c := events.NewCollector(opts)
		dur, cut, err := c.AddRecordings(ctx, o.tapFrom, "")
		if err != nil {
			return err
		}
		r := c.Report(dur)
		r.Findings = append(r.Findings, cut...)
		in.Stream = advise.FromTap(r, o.tapFrom, o.seedSet)
	}
	if o.trace != "" || o.embedded != nil {
		if in.Simulation, err = assessSimulate(ctx, s, o, in.Metrics, blockSize); err != nil {
			return err
		}
	}
	rec := advise.Decide(in, o.th)
	if format == report.FormatJSON {
		err = report.AssessJSON(s.Out, rec)
	} else {
		err = g.text(s.Out).Assess(rec)
	}
	if err != nil {
		return err
	}
	if rec.Verdict != advise.FixFirst {
		return nil
	}
	return o.failOn.check(rec.Severities()...)
}

// assessMetrics reads the one metrics source exactly as kvcheck hitrate does (num_gpu_blocks
// included, from every source). The server's warnings and unreadable targets go to stderr too.
func assessMetrics(ctx context.Context, s streams, spec promql.Spec) (*advise.Metrics, error) {
	raw, err := openMetrics(ctx, spec)
	for _, w := range raw.Warnings {
		fmt.Fprintf(s.ErrOut, "kvcheck: warning: %s: query %s: %s\n", spec.Conn.Shown(), strings.Join(w.Queries, ", "), w.Warning)
	}
	if err != nil {
		return nil, err
	}
	rep := promql.Analyze(raw)
	for _, d := range rep.Down {
		fmt.Fprintf(s.ErrOut, "kvcheck: warning: could not read %s: %s; the assessment leaves it out\n", d.Target, d.Error)
	}
	return advise.FromHitrate(rep), nil
}

// assessRequests audits the request log as kvcheck audit --requests does.
func assessRequests(ctx context.Context, s streams, o *assessOptions, blockSize int) (*advise.Requests, error) {
	ropts := audit.RequestOptions{BlockSize: blockSize, MaxBlocks: audit.DefaultMaxBlocks, MaxLine: audit.DefaultMaxLine, Concurrency: o.tok.Concurrency}
	var cachingOff *finding.Finding
	if o.tok.URL != "" {
		remote, err := o.tok.connect(ctx, s, blockSize)
		if err != nil {
			return nil, err
		}
		ropts.BlockSize, ropts.Tokenizer = remote.BlockSize, remote.Server
		if cachingOff = remote.CachingOff; cachingOff != nil {
			cachingOff.Source = "requests"
		}
	}
	src := o.requests
	rd := s.In
	if src == "-" {
		src = "standard input"
	} else {
		f, err := os.Open(o.requests)
		if err != nil {
			return nil, fmt.Errorf("requests: %w", err)
		}
		defer func() { _ = f.Close() }() // read only: nothing to lose on close
		rd = f
	}
	sum, err := audit.AuditRequests(ctx, rd, ropts)
	if err != nil {
		return nil, fmt.Errorf("requests %s: %w", src, err)
	}
	r := advise.FromRequests(sum, src)
	if cachingOff != nil {
		r.Findings = append([]finding.Finding{*cachingOff}, r.Findings...)
	}
	return r, nil
}

// assessSimulate runs the trace through one fleet shaped by the flags, else by what the
// metrics saw, else by the defaults.
func assessSimulate(ctx context.Context, s streams, o *assessOptions, m *advise.Metrics, vllmBlock int) (*advise.Simulation, error) {
	tr := o.embedded
	if tr == nil {
		var err error
		if tr, err = readTrace(o.trace, o.traceFormat, "--trace-format", o.traceBlock, 0); err != nil {
			return nil, err
		}
	}
	kvTokens, seen := m.KVCapacity()
	replicas, replicasFrom := o.replicas, "--replicas"
	switch {
	case replicas > 0:
	// One replica in a dump or log the user picked is a sample, not the fleet's size.
	case seen > 1 || seen == 1 && !m.Sampled():
		replicas, replicasFrom = min(seen, sim.MaxReplicas), "the metrics' replica count"
	default:
		replicas, replicasFrom = defaultAssessReplicas, "default"
	}
	kvFrom := "--kv-blocks"
	switch {
	case o.kvBlocks > 0:
		kvTokens = int64(o.kvBlocks) * int64(vllmBlock)
	case kvTokens > 0:
		kvFrom = "num_gpu_blocks from the metrics"
	default:
		kvTokens, kvFrom = defaultKVTokens, "default"
	}
	kv := int(kvTokens / int64(tr.BlockSize))
	if kv < 1 {
		return nil, usageErrorf("the KV cache per replica (%d tokens) is less than one %d-token block of the trace: give --kv-blocks", kvTokens, tr.BlockSize)
	}
	m0, p0 := sim.DefaultModel(), sim.DefaultParams()
	sweep := sim.Sweep{Replicas: []int{replicas}, KVBlocks: []int{kv}, Policies: assessPolicies,
		Base: sim.Config{Model: m0, Seed: 1, AddReplicaAt: -1, Siblings: 1, Params: p0}}
	var progress func(done, total int)
	if report.IsTerminal(s.ErrOut) {
		progress = func(done, total int) {
			fmt.Fprintf(s.ErrOut, "\rsimulating %d/%d", done, total)
			if done == total {
				fmt.Fprint(s.ErrOut, "\r\033[K")
			}
		}
	}
	results, err := sim.Run(ctx, tr, sweep, progress)
	if err != nil {
		return nil, err
	}
	return advise.FromSimulation(sim.NewReport(tr, sim.Stats(tr), sweep, results), replicasFrom, kvFrom), nil
}
