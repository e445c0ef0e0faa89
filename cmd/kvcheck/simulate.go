package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

type simulateOptions struct {
	sim sim.Options
	// defaults are the default set each product's emulations run with, by product id
	// (--<id>-defaults, for the products that ship more than one).
	defaults map[string]*string
	plot     string
	routes   string
	failOn   finding.FailOn
}

func newSimulateCmd(s streams, g *globalOptions) *cobra.Command {
	o := &simulateOptions{sim: sim.DefaultOptions(), defaults: map[string]*string{}}
	so, src, rl := &o.sim, &o.sim.Source, &o.sim.Source.RequestLog
	cmd := &cobra.Command{
		Use:   "simulate (--trace FILE | --requests FILE | --recording FILE...)",
		Short: "Replay a request trace under routing policies and show what each would give",
		Long: `simulate replays a trace through a model of a vLLM fleet (R replicas, each with an LRU
prefix cache of C blocks, the N-1 rule, prefill and decode costs and a concurrency limit) under
every routing policy, and shows per policy the prefix-cache hit rate, the prefill saved against
round-robin, how evenly load spread, and a TTFT proxy. The trace's own ceiling (references to a
block seen before) bounds every policy.

Traces (give one source):
  --trace FILE      Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids of
                    512-token blocks) or CSV with lengths only (Azure LLM inference format: no
                    prefix information, the unique-prefix case).
  --requests FILE   request logs as kvcheck audit reads them (OpenAI bodies or gateway exports,
                    one per line), tokenized as audit does: estimated at 4 bytes a token, and
                    labelled so, or exact through --tokenize URL of a vLLM server. Arrivals from
                    the first request's time field (timestamp, start_time, created, ...), else
                    --rate; output lengths from max_tokens, else --output-tokens.
  --recording FILE  kvcheck tap recordings: the blocks each replica stored, as prefills to
                    replay. A lower bound: requests that hit fully store nothing and are unseen.
Comma-separated --replicas and --kv-blocks run a sweep, one simulation per core, with progress
and an ETA on stderr when it is a terminal.

Hot spot (a warning; never Best): ` + fmt.Sprintf(`load max/mean >= %.1f, above the evenest spread the
requests allow, with at least %.0f%% of the busiest replica's requests waiting in the model
(prefill engine busy, requests queued ahead, or every running slot taken).`, sim.HotSpotRatio, 100/sim.HotSpotRatio) + ` An imbalance that
makes no request wait (one long conversation on one replica at light load) is no hot spot,
only an idle-imbalance note; with made-up arrival times (--rate) the imbalance alone decides.

Memory: the trace is held in memory, about 12 bytes per block reference and 88 per request
(every source refuses more than --max-block-refs references, default 64 Mi, 768 MB held, and
more than --max-trace-requests requests, default 4 Mi, 352 MB held; reading up to a limit takes
more: 4 Mi requests of a request log peak at 2.3 GB resident; the error names the limit, what
reading took and its flag). Each simulation adds what the modelled
fleet holds, not what the trace names: 80 bytes per KV block per replica, for the prefix-aware
policies (kv-*) an index of at most 32 + 64 x ceil(replicas/64) bytes per KV block of the
fleet, approx-prefix 80 bytes per entry of its router-side index (--approx-tokens), 8 bytes per
request sent and about 100 per request waiting in a queue.

Routes (--routes FILE): one JSON object a line per request sent (each sibling its own) and
replay, in the tables' order, each replay's in arrival order: policy, variant, label, replicas,
kv_blocks, request (its place in the source, from 0), sibling, replica (from 0), prompt_tokens,
cached_tokens, and reason, the branch of its rule the router took (each policy's reasons are
listed with it below). Memory does not grow with the trace (16 bytes a request on a temporary
file, 64 KiB per replay running); the file is renamed into place once whole, so a failed run
leaves none. "-" writes to standard output only when every -o goes to a file.

Policies (--policies):
` + router.PolicyHelp() + `
` + exitCodesHelp,
		Example: `  kvcheck simulate --trace mooncake_conversation_trace.jsonl --replicas 8
  kvcheck simulate --requests gateway.jsonl --tokenize http://127.0.0.1:8000 --replicas 4
  kvcheck simulate --recording tap.rec --replicas 4
  kvcheck simulate --trace conv.jsonl --replicas 2,4,8,16 --kv-blocks 1024,8192 --plot sweep.svg
  kvcheck simulate --trace conv.jsonl --replicas 4 --add-replica-at 30m --policies round-robin,kv-longest,kv-load
  kvcheck simulate --requests gateway.jsonl --replicas 4 --policies routers --routes routes.jsonl`,
		Args: noArgs,
		RunE: g.command(func(cmd *cobra.Command, _ []string) (report.Result, error) {
			so.Changed, src.Stdin = cmd.Flags().Changed, s.In
			so.Emulations = o.emulations
			if err := rl.Source.Check(src.Requests); err != nil {
				return report.Result{}, err
			}
			routes, err := report.OpenRoutes(o.routes, g.outputs, o.plot, s.Out)
			if err != nil {
				return report.Result{}, err
			}
			if routes != nil {
				so.Routes = routes
			}
			rep, err := so.Run(cmd.Context(), g.status)
			err = routes.End(err)
			if err == nil && o.plot != "" {
				err = report.SimulationSVGFile(o.plot, rep)
			}
			if err != nil {
				return report.Result{}, err
			}
			return report.Simulation(rep), nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&src.Trace, "trace", "", "trace file: Mooncake JSONL or Azure-style CSV")
	f.StringVar(&src.Format, "format", "auto", "--trace format: auto (by extension), mooncake, azure")
	f.IntVar(&src.BlockSize, "block-size", 0, "tokens per block: default 512 for Mooncake (its hash_ids), 16 for CSV traces and request logs (read from the server with --tokenize)")
	f.StringVar(&src.Requests, "requests", "", `request log as kvcheck audit reads it: a file, "-" for standard input, or LiteLLM's database (postgres://...)`)
	f.StringSliceVar(&src.Recordings, "recording", nil, "kvcheck tap recording (repeatable; several are merged by receive time)")
	bindTokenize(f, &so.Tokenize, "--requests: ")
	bindRequestSource(f, &rl.Source)
	f.IntVar(&rl.MaxLine, "max-line", rl.MaxLine, "--requests: longest accepted request line in bytes")
	f.Float64Var(&rl.Rate, "rate", rl.Rate, "--requests: synthetic arrivals per second when the log has no time field")
	f.IntVar(&src.OutputTokens, "output-tokens", src.OutputTokens, "--requests, --recording: output length of requests without max_tokens (recordings have none)")
	f.IntVar(&rl.MaxRequests, "max-requests", 0, "--requests: simulate only the first N requests (0: all; more than --max-trace-requests needs that raised too)")
	f.IntVar(&src.MaxRefs, "max-block-refs", src.MaxRefs, "the most block references the trace, request log or recordings may expand to in memory (about 12 bytes each, plus 88 per request); a larger one is refused")
	f.IntVar(&src.MaxTraceRequests, "max-trace-requests", src.MaxTraceRequests, "the most requests the trace, request log or recordings may hold in memory (88 bytes each; reading them takes up to 565), and a simulation may send with siblings (--n); a larger one is refused")
	f.StringVar(&so.Replicas, "replicas", so.Replicas, "replica counts to simulate, comma-separated (1 to 1024)")
	f.StringVar(&so.KVBlocks, "kv-blocks", "", "prefix-cache blocks per replica in the trace's block size (512 tokens for Mooncake hash_ids, --block-size for --requests), comma-separated (default: --kv-tokens / block size); kvcheck assess --kv-blocks means the same")
	f.StringVar(&so.KVTokens, "kv-tokens", so.KVTokens, "prefix-cache tokens per replica, comma-separated; ignored with --kv-blocks")
	f.StringVar(&so.Policies, "policies", so.Policies, "policies and router emulations to simulate, comma-separated; all: every idealised policy; routers: every emulation")
	bindDefaults(f, o.defaults)
	f.DurationVar(&so.Prefill, "prefill-per-token", so.Prefill, "prefill time per uncached prompt token (prefill runs one request at a time per replica)")
	f.DurationVar(&so.Decode, "decode-per-token", so.Decode, "decode time per output token of one request (decodes run in parallel)")
	f.IntVar(&so.MaxRunning, "max-running", so.MaxRunning, "requests a replica serves at once; the rest queue")
	f.Uint64Var(&so.Seed, "seed", so.Seed, "seed of every random choice; equal seeds give equal results")
	f.IntVar(&so.Siblings, "n", so.Siblings, "send every request as n sibling requests at once (parallel sampling split by the client)")
	f.DurationVar(&so.AddReplicaAt, "add-replica-at", 0, "add one empty replica at this time into the trace (e.g. 30m) to see whether a policy starves it")
	f.Float64Var(&so.Params.Beta, "beta", so.Params.Beta, "kv-load: weight of load against match in match - beta*load")
	f.Float64Var(&so.Params.Epsilon, "epsilon", so.Params.Epsilon, "chash-bounded: load slack, no replica above ceil((1+epsilon)*average)")
	f.Float64Var(&so.Params.OverlapWeight, "overlap-weight", so.Params.OverlapWeight, "kv-cost, kv-decay: weight of prefill blocks against decode blocks")
	f.Float64Var(&so.Params.CreditDecay, "credit-decay", so.Params.CreditDecay, "kv-decay: overlap credit divided by 1+decay*queued requests")
	f.IntVar(&so.Params.ApproxTokens, "approx-tokens", 0, "approx-prefix: capacity of the router's own index in tokens per replica (default: the KV capacity)")
	f.StringVar(&o.plot, "plot", "", "also write an SVG chart of hit rate, load imbalance and TTFT p99 per policy across the sweep to this file")
	f.StringVar(&o.routes, "routes", "", routesHelp)
	f.StringVar((*string)(&o.failOn), "fail-on", "never", "exit 3 when a finding (hot-spot, starved-replica: warning) reaches this severity: error, warning, info or never")
	return cmd
}

// bindDefaults binds --<id>-defaults for every product that ships more than one default set,
// into defaults by product id.
func bindDefaults(f *pflag.FlagSet, defaults map[string]*string) {
	for _, d := range router.DefaultSets() {
		defaults[d.ID] = f.String(d.ID+"-defaults", d.Default, d.Help)
	}
}

// emulations are the router emulations --policies may name, each product's with the default
// set its --<id>-defaults chose.
func (o *simulateOptions) emulations() ([]sim.PolicyInfo, error) {
	chosen := map[string]string{}
	for id, v := range o.defaults {
		if _, err := router.Emulations(map[string]string{id: *v}); err != nil {
			return nil, usage.Errorf("--%s-defaults %v", id, err)
		}
		chosen[id] = *v
	}
	return router.Emulations(chosen)
}

// routesHelp is --routes' help, simulate's and assess's.
const routesHelp = `also write every request's route as JSON Lines to this file, one object per request sent and replay (policy, variant, label, replicas, kv_blocks, request, sibling, replica, prompt_tokens, cached_tokens, reason); "-" for standard output when every -o goes to a file`
