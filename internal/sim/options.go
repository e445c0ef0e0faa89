package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// DefaultKVTokens is each replica's prefix-cache capacity when neither --kv-blocks nor
// --kv-tokens is given: about what an 8B model leaves for KV on one 80 GB GPU.
const DefaultKVTokens = 1 << 20

// Options are one kvcheck simulate run as given on its command line: the trace source, the
// sweep (comma-separated lists, as given) and the model. Check turns them into a Source and a
// Sweep or a usage error; Run reads the trace and runs the sweep.
type Options struct {
	// Source is the trace source; its Remote is set by Run from Tokenize.
	Source   Source
	Tokenize audit.Tokenize

	// Replicas, KVBlocks and KVTokens are comma-separated lists; KVBlocks, when set, wins
	// over KVTokens (which is in tokens, turned into blocks of the trace's block size).
	Replicas, KVBlocks, KVTokens string
	// Policies is a comma-separated list of policy and emulation names, all or routers.
	Policies string
	// Emulations returns the router emulations Policies may name, with the settings each runs
	// with (internal/router builds them: as each product ships, with the default set the
	// command line chose), or a usage error naming the flag at fault; nil means none.
	Emulations func() ([]PolicyInfo, error)

	Prefill, Decode time.Duration
	MaxRunning      int
	Seed            uint64
	Siblings        int
	// AddReplicaAt is when one empty replica joins, when Changed("add-replica-at").
	AddReplicaAt time.Duration
	Params       Params

	// Routes, when not nil, is given every replay's routes (simulate --routes; Sweep.Routes).
	Routes RouteWriter

	// Changed reports whether a flag was given on the command line (cobra's Flags().Changed);
	// nil means none was.
	Changed func(flag string) bool
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	m := DefaultModel()
	return Options{
		Source: Source{Format: FormatAuto, MaxRefs: MaxBlockRefs, MaxTraceRequests: MaxRequests, OutputTokens: DefaultOutputTokens,
			RequestLog: RequestLogOptions{MaxLine: audit.DefaultMaxLine, Rate: DefaultRate}},
		Tokenize: audit.DefaultTokenize,
		Replicas: "2,4,8,16", KVTokens: strconv.Itoa(DefaultKVTokens), Policies: "all",
		Prefill:    time.Duration(m.PrefillPerToken * float64(time.Second)),
		Decode:     time.Duration(m.DecodePerToken * float64(time.Second)),
		MaxRunning: m.MaxRunning, Seed: 1, Siblings: 1, Params: DefaultParams(),
	}
}

func (o Options) changed(flag string) bool { return o.Changed != nil && o.Changed(flag) }

// Reporter is where a simulate run says what it is doing: progress while it reads a request
// log and while the sweep runs, and notes (report.Status is one).
type Reporter interface {
	Status
	Note(format string, args ...any)
}

// Check returns the sweep the options ask for (everything but the KV capacities, which need
// the trace's block size), or a usage error naming the flag at fault, before any work is done.
func (o Options) Check() (Sweep, error) {
	if err := o.checkSource(); err != nil {
		return Sweep{}, err
	}
	replicas, err := IntList("--replicas", o.Replicas, 1, MaxReplicas)
	if err != nil {
		return Sweep{}, err
	}
	var emulations []PolicyInfo
	if o.Emulations != nil {
		if emulations, err = o.Emulations(); err != nil {
			return Sweep{}, err
		}
	}
	policies, err := ParsePolicies(o.Policies, emulations)
	addAt := o.changed("add-replica-at")
	switch {
	case err != nil:
		return Sweep{}, usage.Errorf("--policies: %v", err)
	case o.Source.BlockSize < 0:
		return Sweep{}, usage.Errorf("--block-size %d: want a positive number of tokens", o.Source.BlockSize)
	case o.Siblings < 1 || o.Siblings > 1024:
		return Sweep{}, usage.Errorf("--n %d: want 1 to 1024", o.Siblings)
	case o.MaxRunning < 1:
		return Sweep{}, usage.Errorf("--max-running %d: want at least 1", o.MaxRunning)
	case o.Prefill < 0 || o.Decode < 0:
		return Sweep{}, usage.Errorf("--prefill-per-token and --decode-per-token must not be negative")
	case o.Params.Beta < 0 || o.Params.Epsilon < 0 || o.Params.OverlapWeight < 0 || o.Params.CreditDecay < 0 || o.Params.ApproxTokens < 0:
		return Sweep{}, usage.Errorf("--beta, --epsilon, --overlap-weight, --credit-decay and --approx-tokens must not be negative")
	case addAt && o.AddReplicaAt < 0:
		return Sweep{}, usage.Errorf("--add-replica-at %s: want a time into the trace, 0 or more", o.AddReplicaAt)
	case addAt && slices.Max(replicas) >= MaxReplicas:
		return Sweep{}, usage.Errorf("--add-replica-at needs --replicas below %d", MaxReplicas)
	}
	s := Sweep{Replicas: replicas, Policies: policies, Emulations: emulations, Base: Config{
		Model:        Model{PrefillPerToken: o.Prefill.Seconds(), DecodePerToken: o.Decode.Seconds(), MaxRunning: o.MaxRunning},
		Seed:         o.Seed,
		AddReplicaAt: -1,
		Siblings:     o.Siblings,
		Params:       o.Params,
	}}
	if addAt {
		s.Base.AddReplicaAt = o.AddReplicaAt.Seconds()
	}
	return s, nil
}

// checkSource checks that exactly one trace source is given and that the flags of one source
// are not given with another.
func (o Options) checkSource() error {
	src := o.Source
	n := 0
	for _, given := range []bool{src.Trace != "", src.Requests != "", len(src.Recordings) > 0} {
		if given {
			n++
		}
	}
	switch {
	case n == 0:
		return usage.Errorf("--trace is required: a Mooncake JSONL or Azure-style CSV trace (or --requests with a request log, or --recording with kvcheck tap recordings)")
	case n > 1:
		return usage.Errorf("give one of --trace, --requests and --recording")
	}
	for _, f := range []struct {
		name  string
		given bool // whether the source the flag applies to was given
	}{
		{"format", src.Trace != ""}, {"tokenize", src.Requests != ""}, {"model", src.Requests != ""},
		{"concurrency", src.Requests != ""}, {"timeout", src.Requests != ""}, {"max-line", src.Requests != ""},
		{"rate", src.Requests != ""}, {"max-requests", src.Requests != ""},
		{"output-tokens", src.Trace == ""}, {"block-size", len(src.Recordings) == 0},
	} {
		if o.changed(f.name) && !f.given {
			return usage.Errorf("--%s does not apply to this trace source (see kvcheck simulate --help)", f.name)
		}
	}
	rl := src.RequestLog
	switch {
	case rl.Rate <= 0 || math.IsNaN(rl.Rate) || math.IsInf(rl.Rate, 0):
		return usage.Errorf("--rate %v: want a positive number of requests per second", rl.Rate)
	case src.OutputTokens < 1 || src.OutputTokens > 1<<20:
		return usage.Errorf("--output-tokens %d: want 1 to %d", src.OutputTokens, 1<<20)
	case rl.MaxLine < 1:
		return usage.Errorf("--max-line %d: must be positive", rl.MaxLine)
	case CheckLimits(src.MaxRefs, src.MaxTraceRequests) != nil:
		return CheckLimits(src.MaxRefs, src.MaxTraceRequests)
	case rl.MaxRequests < 0:
		return usage.Errorf("--max-requests %d: want 0 (all) or more", rl.MaxRequests)
	case o.Tokenize.URL != "" && o.changed("block-size"):
		return usage.Errorf("--block-size does not go with --tokenize: the block size is read from the server's /metrics")
	}
	return o.Tokenize.Check()
}

// Run checks the options, reads the trace (connecting to the --tokenize server first), and
// runs the sweep with its progress on st.
func (o Options) Run(ctx context.Context, st Reporter) (Report, error) {
	sweep, err := o.Check()
	if err != nil {
		return Report{}, err
	}
	for _, p := range strings.Split(o.Policies, ",") {
		if now, ok := Aliases[strings.TrimSpace(p)]; ok {
			st.Note("--policies: %s is now named %s (the idealised cost; dynamo-kv is the emulation of Dynamo's KV router)", strings.TrimSpace(p), now)
		}
	}
	tr, sourceFindings, err := o.load(ctx, st)
	if err != nil {
		return Report{}, err
	}
	if after, d := tr.AfterEnd(o.AddReplicaAt); o.changed("add-replica-at") && after {
		return Report{}, usage.Errorf("--add-replica-at %s is after the trace's last request (at %s): no replica would be added; give a time up to %s", o.AddReplicaAt, d, d)
	}
	if sweep.KVBlocks, err = o.kvBlocks(tr.BlockSize); err != nil {
		return Report{}, err
	}
	sweep.Routes = o.Routes
	sweep.Watch = func(p Progress) {
		if p.SimulationsDone == p.Simulations {
			st.Done()
			return
		}
		st.Progress("%s", p)
	}
	return RunReport(ctx, tr, sweep, sourceFindings)
}

// load reads the trace from whichever source was given, connecting to the --tokenize server
// first; a format that cannot be told is a usage error naming --format.
func (o Options) load(ctx context.Context, st Reporter) (*Trace, []finding.Finding, error) {
	src := o.Source
	src.RequestLog.Concurrency = o.Tokenize.Concurrency
	if src.Requests != "" && o.Tokenize.URL != "" {
		r, err := o.Tokenize.Connect(ctx, st, audit.DefaultBlockSize)
		if err != nil {
			return nil, nil, err
		}
		src.Remote = &r
	}
	tr, fs, err := src.Load(ctx, st)
	return tr, fs, FormatUsage(err, "--format")
}

// kvBlocks resolves --kv-blocks, or --kv-tokens in the trace's block size.
func (o Options) kvBlocks(blockSize int) ([]int, error) {
	if o.KVBlocks != "" {
		return IntList("--kv-blocks", o.KVBlocks, 1, 1<<30)
	}
	toks, err := IntList("--kv-tokens", o.KVTokens, 1, 1<<40)
	if err != nil {
		return nil, err
	}
	out, err := KVBlocks(toks, blockSize)
	var ce *CapacityError
	if errors.As(err, &ce) {
		return nil, usage.Errorf("--kv-tokens %d is less than one %d-token block", ce.Tokens, ce.BlockSize)
	}
	return out, err
}

// IntList reads a flag's comma-separated integers from lo to hi, without repeats, in the order
// given; anything else is a usage error naming the flag.
func IntList(flag, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < lo || n > hi {
			return nil, usage.Errorf("%s %q: want comma-separated integers from %d to %d", flag, part, lo, hi)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, usage.Errorf("%s: no values", flag)
	}
	return out, nil
}

// FormatUsage makes a trace format TraceFormat cannot tell (*FormatError) a usage error that
// names the command's format flag (simulate's --format, assess's --trace-format); other
// errors pass unchanged.
func FormatUsage(err error, formatFlag string) error {
	var fe *FormatError
	switch {
	case !errors.As(err, &fe):
		return err
	case fe.Path == "":
		return usage.Errorf("%s %q: use auto, mooncake or azure", formatFlag, fe.Format)
	}
	return usage.Errorf("--trace %v: give %s mooncake or %s azure", err, formatFlag, formatFlag)
}

// CheckLimits checks --max-block-refs and --max-trace-requests as simulate and assess take
// them: both positive, the references within the simulator's 32-bit block ids.
func CheckLimits(blockRefs, traceRequests int) error {
	switch {
	case blockRefs < 1 || blockRefs > MaxBlockRefsLimit:
		return usage.Errorf("--max-block-refs %d: want a positive number of block references, at most %d (the simulator numbers blocks with 32-bit ids)", blockRefs, MaxBlockRefsLimit)
	case traceRequests < 1:
		return usage.Errorf("--max-trace-requests %d: want a positive number of requests", traceRequests)
	}
	return nil
}
