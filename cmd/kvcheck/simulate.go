package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// defaultKVTokens is each replica's prefix-cache capacity when neither --kv-blocks nor
// --kv-tokens is given: about what an 8B model leaves for KV on one 80 GB GPU.
const defaultKVTokens = 1 << 20

type simulateOptions struct {
	trace     string
	format    string
	blockSize int
	requests  string
	recording string

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
		Use:   "simulate --trace FILE",
		Short: "Replay a request trace under routing policies and show what each would give",
		Long: `simulate replays a trace through a model of a vLLM fleet (R replicas, each with an LRU
prefix cache of C blocks, the N-1 rule, prefill and decode costs and a concurrency limit) under
every routing policy, and shows per policy the prefix-cache hit rate, the prefill saved against
round-robin, how evenly load spread, and a TTFT proxy. The trace's own ceiling (references to a
block seen before) bounds every policy.

Traces: Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids of 512-token
blocks) and CSV with lengths only (Azure LLM inference format: no prefix information, the
unique-prefix case). Comma-separated --replicas and --kv-blocks run a sweep.

Policies (--policies):
` + policyHelp() + `
` + exitCodesHelp,
		Example: `  kvcheck simulate --trace mooncake_conversation_trace.jsonl --replicas 8
  kvcheck simulate --trace conv.jsonl --replicas 2,4,8,16 --kv-blocks 1024,8192 --plot sweep.svg
  kvcheck simulate --trace conv.jsonl --replicas 4 --add-replica-at 30m --policies round-robin,kv-longest,kv-load`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("add-replica-at") {
				o.addAt = -1
			}
			return runSimulate(cmd, s, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file: Mooncake JSONL or Azure-style CSV (required)")
	f.StringVar(&o.format, "format", "auto", "trace format: auto (by extension), mooncake, azure")
	f.IntVar(&o.blockSize, "block-size", 0, "tokens per block: default 512 for Mooncake (its hash_ids), 16 for CSV traces")
	f.StringVar(&o.requests, "requests", "", "request log as read by kvcheck audit (not available yet)")
	f.StringVar(&o.recording, "recording", "", "kvcheck tap recording (not available yet)")
	f.StringVar(&o.replicas, "replicas", "2,4,8,16", "replica counts to simulate, comma-separated (1 to 64)")
	f.StringVar(&o.kvBlocks, "kv-blocks", "", "prefix-cache blocks per replica, comma-separated (default: --kv-tokens / block size)")
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

func runSimulate(cmd *cobra.Command, s streams, g *globalOptions, o *simulateOptions) error {
	format, err := g.format(report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	if err := o.failOn.validate(); err != nil {
		return err
	}
	switch {
	case o.requests != "":
		return usageErrorf("--requests: simulating request logs through kvcheck audit's tokenization is not available yet (planned next round); use --trace with a Mooncake JSONL or CSV trace")
	case o.recording != "":
		return usageErrorf("--recording: simulating kvcheck tap recordings is not available yet (planned next round); use --trace with a Mooncake JSONL or CSV trace")
	case o.trace == "":
		return usageErrorf("--trace is required: a Mooncake JSONL or Azure-style CSV trace")
	}
	replicas, err := intList("--replicas", o.replicas, 1, sim.MaxReplicas)
	if err != nil {
		return err
	}
	policies, err := policyList(o.policies)
	if err != nil {
		return err
	}
	if o.blockSize < 0 {
		return usageErrorf("--block-size %d: want a positive number of tokens", o.blockSize)
	}
	if o.siblings < 1 || o.siblings > 1024 {
		return usageErrorf("--n %d: want 1 to 1024", o.siblings)
	}
	if o.maxRunning < 1 {
		return usageErrorf("--max-running %d: want at least 1", o.maxRunning)
	}
	if o.prefill < 0 || o.decode < 0 {
		return usageErrorf("--prefill-per-token and --decode-per-token must not be negative")
	}
	if o.beta < 0 || o.epsilon < 0 || o.overlapWeight < 0 || o.creditDecay < 0 || o.approxTokens < 0 {
		return usageErrorf("--beta, --epsilon, --overlap-weight, --credit-decay and --approx-tokens must not be negative")
	}
	if cmd.Flags().Changed("add-replica-at") && o.addAt < 0 {
		return usageErrorf("--add-replica-at %s: want a time into the trace, 0 or more", o.addAt)
	}
	if cmd.Flags().Changed("add-replica-at") && slices.Max(replicas) >= sim.MaxReplicas {
		return usageErrorf("--add-replica-at needs --replicas below %d", sim.MaxReplicas)
	}
	kind := strings.ToLower(o.format)
	switch kind {
	case "auto", "mooncake", "azure":
	default:
		return usageErrorf("--format %q: use auto, mooncake or azure", o.format)
	}
	if kind == "auto" {
		switch strings.ToLower(filepath.Ext(o.trace)) {
		case ".jsonl", ".json", ".ndjson":
			kind = "mooncake"
		case ".csv":
			kind = "azure"
		default:
			return usageErrorf("--trace %s: cannot tell the format from the extension: give --format mooncake or --format azure", o.trace)
		}
	}

	tr, err := readTrace(o.trace, kind, o.blockSize)
	if err != nil {
		return err
	}
	kv, err := kvBlocks(o, tr.BlockSize)
	if err != nil {
		return err
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
	var progress func(done, total int)
	if report.IsTerminal(s.ErrOut) {
		progress = func(done, total int) {
			fmt.Fprintf(s.ErrOut, "\rsimulating %d/%d", done, total)
			if done == total {
				fmt.Fprint(s.ErrOut, "\r\033[K")
			}
		}
	}
	results, err := sim.Run(cmd.Context(), tr, sweep, progress)
	if err != nil {
		return err
	}
	rep := sim.NewReport(tr, sim.Stats(tr), sweep, results)

	if o.plot != "" {
		if err := writePlot(o.plot, rep); err != nil {
			return err
		}
	}
	switch format {
	case report.FormatJSON:
		err = report.SimulationJSON(s.Out, rep)
	default:
		err = g.text(s.Out).Simulation(rep)
	}
	if err != nil {
		return err
	}
	sevs := make([]finding.Severity, len(rep.Findings))
	for i, f := range rep.Findings {
		sevs[i] = f.Severity
	}
	return o.failOn.check(sevs...)
}

func readTrace(path, kind string, blockSize int) (*sim.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	switch kind {
	case "mooncake":
		if blockSize == 0 {
			blockSize = sim.MooncakeBlockSize
		}
		return sim.ReadMooncake(f, path, blockSize)
	default:
		if blockSize == 0 {
			blockSize = 16
		}
		return sim.ReadAzure(f, path, blockSize)
	}
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
	out := make([]int, len(toks))
	for i, t := range toks {
		if t < blockSize {
			return nil, usageErrorf("--kv-tokens %d is less than one %d-token block", t, blockSize)
		}
		out[i] = t / blockSize
	}
	return out, nil
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

func policyList(s string) ([]string, error) {
	all := sim.PolicyNames()
	if strings.TrimSpace(s) == "all" {
		return all, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(all, p) {
			return nil, usageErrorf("--policies: unknown policy %q: use all or some of %s", p, strings.Join(all, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, usageErrorf("--policies: no policy named")
	}
	// Results follow the documented policy order, whatever order the flag gave.
	slices.SortStableFunc(out, func(a, b string) int { return slices.Index(all, a) - slices.Index(all, b) })
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

func writePlot(path string, rep sim.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := report.SimulationSVG(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
