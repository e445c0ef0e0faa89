package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// assessOptions are the flags of kvcheck assess.
type assessOptions struct {
	src  assess.Sources
	opts assess.Options
	// hashSeed is --hash-seed, set in src when given.
	hashSeed string
	// addAt is --add-replica-at, set in opts when given.
	addAt  time.Duration
	failOn finding.FailOn
	// demo runs the assessment against an emulated fleet (what kvcheck demo shows).
	demo bool
	// evidence is --evidence: decisive (the figures the reasons cite) or all.
	evidence string
	// routes is --routes: the file the ranking's routes go to.
	routes string
}

const assessLong = `assess answers one question: on this fleet, with this traffic, what does each routing
option save over what runs today? The answer is one of: session affinity, a KV-aware router,
nothing, fix this first (then what, once fixed), or cannot tell yet (the one measurement to
add), with the evidence for it and what to measure next. Every input is optional; give at
least one.

  metrics     --prometheus URL | --scrape URL... | --targets FILE | --file A.prom [--file B.prom] |
              --log FILE (one source, as kvcheck hitrate): prefix caching on, thrashing, the
              fleet's shape (replicas, num_gpu_blocks x block_size)
  templates   --templates PATH... (as kvcheck audit PATH...): block-zero breakers
  requests    --requests FILE [--tokenize URL] (as kvcheck audit --requests): the traffic, and
              where prompts diverge early
  KV events   --tap-from REC... [--hash-seed S] (as kvcheck tap --from): hash parity,
              duplicated prefill; the recordings are the traffic when nothing else is
  trace       --trace FILE (as kvcheck simulate --trace): the traffic
  config      --config FILE... (as kvcheck lint, router and engine rules): the router advice
              becomes the findings for your own files; an error that switches prefix caching off
              or defeats the recommended option (the exact router's tokenizer or events, the
              session key) is a fix-first
  fleet       --replicas N, --kv-tokens T (or --kv-blocks N): state the fleet; default what the
              metrics saw, else 8 replicas of 1Mi tokens, said to be assumed

The traffic (a request log, else a trace, else the recordings) is replayed on the fleet under
today's routing (--today, default round-robin), session affinity (only when the traffic carries
sessions: ids or conversations that continue each other) and the load-aware KV policies, with
kvcheck simulate's model. Gains are points of all the fleet's prompt tokens after the warm-up
(the first half of the requests), so cold misses a longer run amortises are no gain. The answer
is the cheapest option without a hot spot that saves min gain over today's routing and over the
cheaper option that itself pays (nothing < session affinity < a KV-aware router), else nothing;
the routers ranked below are options too, so a router the ranking puts first at min gain is
never "nothing". Fix this first: prefix caching off, a thrashing fleet, a
block-zero breaker that costs min gain (the traffic replayed with the divergence replaced by a
constant; that replay is also what "then" is judged on), and for a KV-aware router hashes that
differ across replicas. Cannot tell yet: nothing given can show reuse (metrics alone below 100%%
- min gain, a lengths-only trace, templates alone), or too little traffic after the warm-up.

Then every router emulation (production-stack, llm-d, Dynamo, SGLang, Ray, LiteLLM) is replayed
on the same traffic (once fixed, after a fix-first) as it ships, as the --config files configure
it and as kvcheck would tune it for this traffic, and ranked: rows with a hot spot or that
starve a replica added with --add-replica-at are not ranked; the rest by fewest requirements
missing (what each router needs against what the files show: met, missing, or unknown when the
files cannot show it), most prefill saved against today's routing in whole points, most
requirements met, the product you run (--today's product, else the router the --config files
set up, else the one whose metric families the metrics hold: llm-d's EPP, production-stack's
router, Dynamo's frontend, LiteLLM), the smaller change, the lower TTFT p99, the evener load.
The first agrees with the verdict (a session router for session affinity, a KV-aware one for a
KV-aware router), a router verdict always names one, and a row that concentrates requests is
never first while a balanced one saves about as much. The text shows the top three, why the
first wins and, with a router verdict, its configuration in its own format; -o json every row.

Thresholds (also in the JSON under "thresholds"):
` + "%s" + `
Ranking rules (also in the JSON under "ranking.rules"; the margins follow --min-gain):
` + "%s" + `
`

func newAssessCmd(s streams, g *globalOptions) *cobra.Command {
	o := &assessOptions{opts: assess.Options{Thresholds: advise.DefaultThresholds()}}
	src, opts := &o.src, &o.opts
	cmd := &cobra.Command{
		Use:   "assess",
		Short: "Recommend session affinity, a KV-aware router, nothing, or what to fix first",
		Long:  fmt.Sprintf(assessLong, advise.DefaultThresholds().Describe(), rank.DefaultRules().Describe()) + exitCodesHelp,
		Example: `  kvcheck assess --scrape 10.0.0.7:8000,10.0.0.8:8000 --templates prompts/ --requests gateway.jsonl
  kvcheck assess --trace mooncake_conversation_trace.jsonl --replicas 8 --kv-tokens 1048576
  kvcheck assess --file replica.prom --requests gateway.jsonl --replicas 1
  kvcheck assess --file before.prom --file after.prom --window 60s --tap-from a.kvtap --hash-seed 0 -o json`,
		Args: noArgs,
		RunE: g.command(func(cmd *cobra.Command, _ []string) (report.Result, error) {
			if os.Getenv("GOGC") == "" {
				// assess holds a few large structures for most of its run (the audit's
				// prefix index, the trace, a router's tree) and allocates little besides:
				// at GOGC=50 the heap stays within 1.5x of them rather than 2x, at no CPU
				// cost measured (BENCHMARKS.md, assess on a 449 MB log). GOGC wins.
				debug.SetGCPercent(50)
			}
			switch o.evidence {
			case "decisive", "all":
				g.allEvidence = o.evidence == "all"
			default:
				return report.Result{}, usage.Errorf("--evidence %q: use decisive (the figures the reasons cite) or all (every figure, each reason in full, every router row)", o.evidence)
			}
			src.Metrics.WindowSet = cmd.Flags().Changed("window")
			src.Metrics.Progress = func(msg string) { g.status.Progress("%s", msg) }
			src.Stdin = s.In
			if cmd.Flags().Changed("hash-seed") {
				src.HashSeed = &o.hashSeed
			}
			opts.AddReplica, opts.AddReplicaAt = cmd.Flags().Changed("add-replica-at"), o.addAt.Seconds()
			if o.demo && o.routes != "" {
				return report.Result{}, usage.Errorf("--routes with --demo: the demo's assessment writes no routes; give the traffic (--requests or --trace) to write the ranking's routes")
			}
			if o.demo {
				var intro *report.Text
				if g.format != report.FormatJSON {
					intro = g.text(s.Out)
				}
				return demo.Assess(cmd.Context(), report.NewStatus(s.ErrOut), intro)
			}
			// The limit flags default to sim's limits, so a 0 was typed: refused, as simulate does.
			if err := sim.CheckLimits(src.MaxBlockRefs, src.MaxTraceRequests); err != nil {
				return report.Result{}, err
			}
			if err := assess.Check(*src, *opts, cmd.Flags().Changed("replicas")); err != nil {
				return report.Result{}, err
			}
			routes, err := report.OpenRoutes(o.routes, g.outputs, opts.Plot, s.Out)
			if err != nil {
				return report.Result{}, err
			}
			if routes != nil {
				opts.Routes = routes
			}
			rec, rk, err := assess.Run(cmd.Context(), g.status, *src, *opts)
			if err != nil {
				return report.Result{}, routes.End(err)
			}
			res := report.AssessRanked(rec, rk)
			if routes != nil && rk == nil {
				// The report is still written; the run fails for the routes it has none of.
				err = errors.New("--routes: no router ranking to write the routes of: the traffic given cannot be replayed for it (a lengths-only trace shows no reuse)")
			}
			if err == nil && opts.Plot != "" {
				if rk == nil {
					// The report is still written; the run fails for the chart it could not draw.
					err = fmt.Errorf("--plot %s: no router ranking to draw: the traffic given cannot be replayed for it (a lengths-only trace shows no reuse)", opts.Plot)
				} else {
					err = report.RankingSVGFile(opts.Plot, rk)
				}
			}
			return res, routes.End(err)
		}),
	}
	fs := cmd.Flags()
	bindMetrics(fs, &src.Metrics)
	fs.StringSliceVar(&src.Templates, "templates", nil, "chat templates, prompt modules or directories to audit (comma-separated or repeated)")
	fs.StringVar(&src.Requests, "requests", "", `request log to audit and replay: a file (JSONL, LiteLLM spend logs, a Langfuse export, OTLP JSON spans, vLLM's log), "-" for standard input, or LiteLLM's database (postgres://...)`)
	fs.IntVar(&src.MaxSpoolMiB, "max-spool-mib", assess.DefaultMaxSpoolMiB, "--requests -: the most of standard input kept in a temporary file (removed at once, so no exit leaves it), in MiB; assess reads the log three times")
	bindTokenize(fs, &src.Tokenize, "--requests: ")
	bindRequestSource(fs, &src.RequestSource)
	fs.IntVar(&src.BlockSize, "block-size", 0, "KV block size in tokens for the audits (default: from the metrics, else 16)")
	fs.StringArrayVar(&src.TapFrom, "tap-from", nil, "kvcheck tap recording to analyse (repeatable)")
	fs.StringVar(&o.hashSeed, "hash-seed", "", "the replicas' PYTHONHASHSEED, to check hash reproducibility in --tap-from")
	fs.StringVar(&src.Trace, "trace", "", "request trace to simulate: Mooncake JSONL or lengths-only CSV")
	fs.StringVar(&src.TraceFormat, "trace-format", sim.FormatAuto, "--trace format: auto (by extension: .jsonl, .json, .ndjson Mooncake; .csv Azure), mooncake, azure")
	fs.IntVar(&src.TraceBlockSize, "trace-block-size", 0, "tokens per block of --trace: default 512 for Mooncake (its hash_ids), 16 for CSV")
	fs.IntVar(&src.MaxBlockRefs, "max-block-refs", sim.MaxBlockRefs, "the most block references the replayed traffic (--requests, --tap-from or --trace) may expand to in memory (about 12 bytes each, plus 88 per request); a larger one is refused")
	fs.IntVar(&src.MaxTraceRequests, "max-trace-requests", sim.MaxRequests, "the most requests the replayed traffic (--requests, --tap-from or --trace) may hold in memory (88 bytes each; reading them takes up to 565); a larger one is refused")
	fs.IntVar(&opts.Replicas, "replicas", 0, fmt.Sprintf("the fleet's replica count (default: the metrics' count, else %d, assumed)", assess.AssumedReplicas))
	fs.Int64Var(&opts.KVTokens, "kv-tokens", 0, "each replica's KV cache in tokens (num_gpu_blocks x block_size; default: the metrics', else 1Mi tokens, assumed)")
	fs.IntVar(&opts.KVBlocks, "kv-blocks", 0, "each replica's KV cache in blocks of the traffic's block size, as kvcheck simulate --kv-blocks (512 tokens for a Mooncake trace, --block-size for a request log); --kv-tokens is the same figure in tokens")
	fs.StringVar(&opts.Today, "today", assess.DefaultToday, "the routing that runs today: a kvcheck simulate policy (round-robin, random, least-loaded, session, ...) or a router emulation (litellm-simple-shuffle, prodstack-roundrobin, dynamo-round-robin, ...), run as the --config files configure that router, else as shipped")
	fs.DurationVar(&o.addAt, "add-replica-at", 0, "in the router ranking, add one empty replica at this time into the traffic (e.g. 30m): which routers starve it")
	fs.Float64Var(&opts.Thresholds.MinGain, "min-gain", opts.Thresholds.MinGain, "points of all prompt tokens (as a fraction: 0.05 is 5 points) an option must save over today's routing and over the next cheaper option")
	fs.StringVar((*string)(&o.failOn), "fail-on", "", "exit 3 when the verdict is fix-first and a fix reaches this severity (info, warning, error)")
	fs.StringSliceVar(&src.Configs, "config", nil, "router and engine configuration files or directories to check, as kvcheck lint does (comma-separated or repeated)")
	fs.StringVar(&opts.Plot, "plot", "", "also write the router ranking as an SVG chart to this file: prefill saved against load max/mean, one point per router (needs traffic to replay)")
	fs.StringVar(&o.evidence, "evidence", "decisive", "text output: decisive (the answer, each reason's gist and the figures they cite) or all (every figure, each reason and finding in full, every router row and the ranking's rule)")
	fs.StringVar(&o.routes, "routes", "", routesHelp+"; assess writes the router ranking's replays: today's routing, then every row (variant shipped, configured, tuned)")
	fs.BoolVar(&o.demo, "demo", false, "assess four emulated replicas on loopback and a built-in chat trace (what kvcheck demo shows)")
	_ = fs.MarkHidden("demo")
	return cmd
}
