package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
	"io"
)

// defaultKVTokens is each replica's prefix-cache capacity when neither --kv-blocks nor
// --kv-tokens is given: about what an 8B model leaves for KV on one 80 GB GPU.
const defaultKVTokens = 1 << 20

type simulateOptions struct {
	// stdin is what --requests - reads.
	stdin      io.Reader
	trace      string
	format     string
	blockSize  int
	requests   string
	recordings []string

	tok          tokenizeFlags
	maxLine      int
	rate         float64
	outputTokens int
	maxRequests  int
	maxRefs      int

	replicas string
	kvBlocks string
	kvTokens string
	policies string

	prefill    time.Duration
	decode     time.Duration
	maxRunning int
	seed       uint64
	siblings   int
	addAt      time.Duration

	beta, epsilon, overlapWeight, creditDecay float64
	approxTokens                              int

	plot   string
	failOn failOn
}

func newSimulateCmd(s streams, g *globalOptions) *cobra.Command {
	o := &simulateOptions{}
	m, pr := sim.DefaultModel(), sim.DefaultParams()
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

Memory: the trace is held in memory, about 12 bytes per block reference and 80 per request
(--trace refuses more than --max-block-refs references). Each simulation adds what the modelled
fleet holds, not what the trace names: 80 bytes per KV block per replica, for the prefix-aware
policies (kv-*) an index of at most 32 + 64 x ceil(replicas/64) bytes per KV block of the
fleet, approx-prefix 80 bytes per entry of its router-side index (--approx-tokens), 8 bytes per
request sent and about 100 per request waiting in a queue.

Policies (--policies):
` + policyHelp() + `
` + exitCodesHelp,
		Example: `  kvcheck simulate --trace mooncake_conversation_trace.jsonl --replicas 8
  kvcheck simulate --requests gateway.jsonl --tokenize http://127.0.0.1:8000 --replicas 4
  kvcheck simulate --recording tap.rec --replicas 4
  kvcheck simulate --trace conv.jsonl --replicas 2,4,8,16 --kv-blocks 1024,8192 --plot sweep.svg
  kvcheck simulate --trace conv.jsonl --replicas 4 --add-replica-at 30m --policies round-robin,kv-longest,kv-load`,
		Args: noArgs,
		RunE: g.command(func(cmd *cobra.Command, _ []string) (report.Result, error) {
			if !cmd.Flags().Changed("add-replica-at") {
				o.addAt = -1
			}
			o.stdin = s.In
			return runSimulate(cmd, g.status, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file: Mooncake JSONL or Azure-style CSV")
	f.StringVar(&o.format, "format", "auto", "--trace format: auto (by extension), mooncake, azure")
	f.IntVar(&o.blockSize, "block-size", 0, "tokens per block: default 512 for Mooncake (its hash_ids), 16 for CSV traces and request logs (read from the server with --tokenize)")
	f.StringVar(&o.requests, "requests", "", `request log as kvcheck audit reads it, one request per line ("-" for standard input)`)
	f.StringSliceVar(&o.recordings, "recording", nil, "kvcheck tap recording (repeatable; several are merged by receive time)")
	o.tok.bind(f, "--requests: ")
	f.IntVar(&o.maxLine, "max-line", audit.DefaultMaxLine, "--requests: longest accepted request line in bytes")
	f.Float64Var(&o.rate, "rate", sim.DefaultRate, "--requests: synthetic arrivals per second when the log has no time field")
	f.IntVar(&o.outputTokens, "output-tokens", sim.DefaultOutputTokens, "--requests, --recording: output length of requests without max_tokens (recordings have none)")
	f.IntVar(&o.maxRequests, "max-requests", 0, "--requests: simulate only the first N requests (0: all)")
	f.IntVar(&o.maxRefs, "max-block-refs", sim.MaxBlockRefs, "--trace: the most block references read into memory (about 12 bytes each, plus 80 per request); a larger trace is refused")
	f.StringVar(&o.replicas, "replicas", "2,4,8,16", "replica counts to simulate, comma-separated (1 to 1024)")
	f.StringVar(&o.kvBlocks, "kv-blocks", "", "prefix-cache blocks per replica in the trace's block size (512 tokens for Mooncake hash_ids, --block-size for --requests), comma-separated (default: --kv-tokens / block size); kvcheck assess --kv-blocks means the same")
	f.StringVar(&o.kvTokens, "kv-tokens", strconv.Itoa(defaultKVTokens), "prefix-cache tokens per replica, comma-separated; ignored with --kv-blocks")
	f.StringVar(&o.policies, "policies", "all", "policies to simulate, comma-separated, or all")
	f.DurationVar(&o.prefill, "prefill-per-token", time.Duration(m.PrefillPerToken*float64(time.Second)), "prefill time per uncached prompt token (prefill runs one request at a time per replica)")
	f.DurationVar(&o.decode, "decode-per-token", time.Duration(m.DecodePerToken*float64(time.Second)), "decode time per output token of one request (decodes run in parallel)")
	f.IntVar(&o.maxRunning, "max-running", m.MaxRunning, "requests a replica serves at once; the rest queue")
	f.Uint64Var(&o.seed, "seed", 1, "seed of every random choice; equal seeds give equal results")
	f.IntVar(&o.siblings, "n", 1, "send every request as n sibling requests at once (parallel sampling split by the client)")
	f.DurationVar(&o.addAt, "add-replica-at", 0, "add one empty replica at this time into the trace (e.g. 30m) to see whether a policy starves it")
	f.Float64Var(&o.beta, "beta", pr.Beta, "kv-load: weight of load against match in match - beta*load")
	f.Float64Var(&o.epsilon, "epsilon", pr.Epsilon, "chash-bounded: load slack, no replica above ceil((1+epsilon)*average)")
	f.Float64Var(&o.overlapWeight, "overlap-weight", pr.OverlapWeight, "kv-dynamo, kv-decay: weight of prefill blocks against decode blocks")
	f.Float64Var(&o.creditDecay, "credit-decay", pr.CreditDecay, "kv-decay: overlap credit divided by 1+decay*queued requests")
	f.IntVar(&o.approxTokens, "approx-tokens", 0, "approx-prefix: capacity of the router's own index in tokens per replica (default: the KV capacity)")
	f.StringVar(&o.plot, "plot", "", "also write an SVG chart of hit rate and load imbalance per policy across the sweep to this file")
	f.StringVar((*string)(&o.failOn), "fail-on", "never", "exit 3 when a finding (hot-spot, starved-replica: warning) reaches this severity: error, warning, info or never")
	return cmd
}

func runSimulate(cmd *cobra.Command, st *report.Status, o *simulateOptions) (report.Result, error) {
	if err := o.checkSource(cmd); err != nil {
		return report.Result{}, err
	}
	replicas, err := intList("--replicas", o.replicas, 1, sim.MaxReplicas)
	if err != nil {
		return report.Result{}, err
	}
	policies, err := sim.ParsePolicies(o.policies)
	if err != nil {
		return report.Result{}, usageErrorf("--policies: %v", err)
	}
	if o.blockSize < 0 {
		return report.Result{}, usageErrorf("--block-size %d: want a positive number of tokens", o.blockSize)
	}
	if o.siblings < 1 || o.siblings > 1024 {
		return report.Result{}, usageErrorf("--n %d: want 1 to 1024", o.siblings)
	}
	if o.maxRunning < 1 {
		return report.Result{}, usageErrorf("--max-running %d: want at least 1", o.maxRunning)
	}
	if o.prefill < 0 || o.decode < 0 {
		return report.Result{}, usageErrorf("--prefill-per-token and --decode-per-token must not be negative")
	}
	if o.beta < 0 || o.epsilon < 0 || o.overlapWeight < 0 || o.creditDecay < 0 || o.approxTokens < 0 {
		return report.Result{}, usageErrorf("--beta, --epsilon, --overlap-weight, --credit-decay and --approx-tokens must not be negative")
	}
	if cmd.Flags().Changed("add-replica-at") && o.addAt < 0 {
		return report.Result{}, usageErrorf("--add-replica-at %s: want a time into the trace, 0 or more", o.addAt)
	}
	if cmd.Flags().Changed("add-replica-at") && slices.Max(replicas) >= sim.MaxReplicas {
		return report.Result{}, usageErrorf("--add-replica-at needs --replicas below %d", sim.MaxReplicas)
	}
	tr, sourceFindings, err := o.load(cmd.Context(), st)
	if err != nil {
		return report.Result{}, err
	}
	if after, d := tr.AfterEnd(o.addAt); cmd.Flags().Changed("add-replica-at") && after {
		return report.Result{}, usageErrorf("--add-replica-at %s is after the trace's last request (at %s): no replica would be added; give a time up to %s", o.addAt, d, d)
	}
	kv, err := kvBlocks(o, tr.BlockSize)
	if err != nil {
		return report.Result{}, err
	}
	sweep := sim.Sweep{
		Replicas: replicas,
		KVBlocks: kv,
		Policies: policies,
		Base: sim.Config{
			Model: sim.Model{
				PrefillPerToken: o.prefill.Seconds(),
				DecodePerToken:  o.decode.Seconds(),
				MaxRunning:      o.maxRunning,
			},
			Seed:         o.seed,
			AddReplicaAt: o.addAt.Seconds(),
			Siblings:     o.siblings,
			Params: sim.Params{
				Beta: o.beta, Epsilon: o.epsilon, OverlapWeight: o.overlapWeight,
				CreditDecay: o.creditDecay, ApproxTokens: o.approxTokens,
			},
		},
	}
	if o.addAt < 0 {
		sweep.Base.AddReplicaAt = -1
	}
	sweep.Watch = func(p sim.Progress) {
		if p.SimulationsDone == p.Simulations {
			st.Done()
			return
		}
		st.Progress("%s", p)
	}
	rep, err := sim.RunReport(cmd.Context(), tr, sweep, sourceFindings)
	if err != nil {
		return report.Result{}, err
	}

	if o.plot != "" {
		if err := report.SimulationSVGFile(o.plot, rep); err != nil {
			return report.Result{}, err
		}
	}
	return report.Simulation(rep), nil
}

// checkSource checks that exactly one trace source is given and that source-specific flags
// match it.
func (o *simulateOptions) checkSource(cmd *cobra.Command) error {
	n := 0
	for _, given := range []bool{o.trace != "", o.requests != "", len(o.recordings) > 0} {
		if given {
			n++
		}
	}
	switch {
	case n == 0:
		return usageErrorf("--trace is required: a Mooncake JSONL or Azure-style CSV trace (or --requests with a request log, or --recording with kvcheck tap recordings)")
	case n > 1:
		return usageErrorf("give one of --trace, --requests and --recording")
	}
	only := map[string]bool{ // flag -> whether its source was given
		"format":         o.trace != "",
		"tokenize":       o.requests != "",
		"model":          o.requests != "",
		"concurrency":    o.requests != "",
		"timeout":        o.requests != "",
		"max-line":       o.requests != "",
		"rate":           o.requests != "",
		"max-requests":   o.requests != "",
		"max-block-refs": o.trace != "",
		"output-tokens":  o.trace == "",
		"block-size":     len(o.recordings) == 0,
	}
	for _, name := range []string{"format", "tokenize", "model", "concurrency", "timeout", "max-line", "rate", "max-requests", "max-block-refs", "output-tokens", "block-size"} {
		if cmd.Flags().Changed(name) && !only[name] {
			return usageErrorf("--%s does not apply to this trace source (see kvcheck simulate --help)", name)
		}
	}
	switch {
	case o.rate <= 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return usageErrorf("--rate %v: want a positive number of requests per second", o.rate)
	case o.outputTokens < 1 || o.outputTokens > 1<<20:
		return usageErrorf("--output-tokens %d: want 1 to %d", o.outputTokens, 1<<20)
	case o.maxLine < 1:
		return usageErrorf("--max-line %d: must be positive", o.maxLine)
	case o.maxRefs < 1:
		return usageErrorf("--max-block-refs %d: want a positive number of block references", o.maxRefs)
	case o.maxRequests < 0:
		return usageErrorf("--max-requests %d: want 0 (all) or more", o.maxRequests)
	case o.tok.URL != "" && cmd.Flags().Changed("block-size"):
		return usageErrorf("--block-size does not go with --tokenize: the block size is read from the server's /metrics")
	}
	return o.tok.validate()
}

// load reads the trace from whichever source was given (sim.Source.Load), connecting to the
// --tokenize server first.
func (o *simulateOptions) load(ctx context.Context, st *report.Status) (*sim.Trace, []finding.Finding, error) {
	src := sim.Source{
		Trace: o.trace, Format: o.format, BlockSize: o.blockSize, MaxRefs: o.maxRefs,
		Requests: o.requests, Stdin: o.stdin, Recordings: o.recordings, OutputTokens: o.outputTokens,
		RequestLog: sim.RequestLogOptions{Concurrency: o.tok.Concurrency, MaxLine: o.maxLine, Rate: o.rate, MaxRequests: o.maxRequests},
	}
	if o.requests != "" && o.tok.URL != "" {
		r, err := o.tok.connect(ctx, st, audit.DefaultBlockSize)
		if err != nil {
			return nil, nil, err
		}
		src.Remote = &r
	}
	tr, fs, err := src.Load(ctx, st)
	return tr, fs, formatUsage(err, "--format")
}

// readTrace reads a --trace file by sim's one detection rule; a format that rule cannot tell
// is a usage error that names the command's format flag.
func readTrace(path, format, formatFlag string, blockSize, maxRefs int) (*sim.Trace, error) {
	tr, err := sim.ReadTraceFileLimit(path, format, blockSize, maxRefs)
	return tr, formatUsage(err, formatFlag)
}

// formatUsage makes a trace format sim cannot tell (*sim.FormatError) a usage error that
// names the command's format flag; other errors pass unchanged.
func formatUsage(err error, formatFlag string) error {
	var fe *sim.FormatError
	switch {
	case !errors.As(err, &fe):
		return err
	case fe.Path == "":
		return usageErrorf("%s %q: use auto, mooncake or azure", formatFlag, fe.Format)
	}
	return usageErrorf("--trace %v: give %s mooncake or %s azure", err, formatFlag, formatFlag)
}

// kvBlocks resolves --kv-blocks, or --kv-tokens in the trace's block size.
func kvBlocks(o *simulateOptions, blockSize int) ([]int, error) {
	if o.kvBlocks != "" {
		return intList("--kv-blocks", o.kvBlocks, 1, 1<<30)
	}
	toks, err := intList("--kv-tokens", o.kvTokens, 1, 1<<40)
	if err != nil {
		return nil, err
	}
	out, err := sim.KVBlocks(toks, blockSize)
	var ce *sim.CapacityError
	if errors.As(err, &ce) {
		return nil, usageErrorf("--kv-tokens %d is less than one %d-token block", ce.Tokens, ce.BlockSize)
	}
	return out, err
}

func intList(flag, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < lo || n > hi {
			return nil, usageErrorf("%s %q: want comma-separated integers from %d to %d", flag, part, lo, hi)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, usageErrorf("%s: no values", flag)
	}
	return out, nil
}

// policyHelp lists the policies with their one-line descriptions.
func policyHelp() string {
	var b strings.Builder
	for _, p := range sim.Policies() {
		fmt.Fprintf(&b, "  %-14s %s\n", p.Name, p.About)
	}
	return b.String()
}
