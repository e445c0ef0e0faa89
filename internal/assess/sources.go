package assess

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Sources are what one kvcheck assess run was given, before any of it is read. Every part is
// optional; Run reads them in order (the metrics first: they choose the audits' block size),
// so the first failing source is the one reported.
type Sources struct {
	// Metrics is the one metrics source, read as kvcheck hitrate reads it when Given.
	Metrics promql.Spec

	Templates []string

	// Requests is a request log path ("-" reads Stdin); BlockSize 0 takes the metrics' block
	// size, else audit.DefaultBlockSize.
	Requests string
	Stdin    io.Reader
	// MaxSpoolMiB bounds the copy of standard input kept to read it more than once
	// (DefaultMaxSpoolMiB when 0).
	MaxSpoolMiB int
	BlockSize   int
	// RequestSource windows a database request log (--since, --until, --max-rows).
	RequestSource audit.SourceOptions
	// Tokenize, when its URL is set, is the server the request log is tokenized through,
	// connected with the block size chosen so far as its fallback.
	Tokenize audit.Tokenize

	// TapFrom are kvcheck tap recordings; HashSeed, when set, is the replicas' PYTHONHASHSEED.
	TapFrom  []string
	HashSeed *string

	// Trace is a trace file read as kvcheck simulate --trace reads it, in TraceFormat with
	// TraceBlockSize (0: the format's own). Embedded, when set, is the trace instead (the
	// demo's built-in one).
	Trace          string
	TraceFormat    string
	TraceBlockSize int
	Embedded       *sim.Trace
	// MaxBlockRefs bounds the block references the traffic replayed (the request log, the
	// recordings or the trace) may expand to in memory, as kvcheck simulate's --max-block-refs
	// (0: sim.MaxBlockRefs); a larger one is refused with an error naming the limit and the flag.
	// MaxTraceRequests bounds its requests the same way, as kvcheck simulate's
	// --max-trace-requests (0: sim.MaxRequests).
	MaxBlockRefs, MaxTraceRequests int

	// Configs are router and engine configuration files checked as kvcheck lint does, with
	// the rules of IgnoreFile (empty: .kvcheckignore in the working directory, when present).
	Configs    []string
	IgnoreFile string
}

// Given reports whether any source is given.
func (src Sources) Given() bool {
	return src.Metrics.Given() || len(src.Templates) > 0 || src.Requests != "" || len(src.TapFrom) > 0 ||
		src.Trace != "" || src.Embedded != nil || len(src.Configs) > 0
}

// Check returns a usage error when the sources and options cannot make one assessment, before
// anything is read. replicasGiven says --replicas was given, so 0 is a bad value, not "from
// the metrics".
func Check(src Sources, o Options, replicasGiven bool) error {
	switch {
	case !src.Given():
		return usage.Errorf("nothing to assess: give at least one of --scrape/--prometheus/--file/--log, --templates, --requests, --tap-from, --trace, --config")
	case src.Tokenize.URL != "" && src.Requests == "":
		return usage.Errorf("--tokenize applies to --requests")
	case src.HashSeed != nil && len(src.TapFrom) == 0:
		return usage.Errorf("--hash-seed applies to --tap-from")
	case o.Replicas < 0 || o.Replicas > sim.MaxReplicas || (replicasGiven && o.Replicas == 0):
		return usage.Errorf("--replicas %d: want 1 to %d", o.Replicas, sim.MaxReplicas)
	case sim.CheckLimits(cmp.Or(src.MaxBlockRefs, sim.MaxBlockRefs), cmp.Or(src.MaxTraceRequests, sim.MaxRequests)) != nil:
		// 0 is the default here (Sources' zero value); the command refuses a typed 0 itself.
		return sim.CheckLimits(cmp.Or(src.MaxBlockRefs, sim.MaxBlockRefs), cmp.Or(src.MaxTraceRequests, sim.MaxRequests))
	case o.KVBlocks < 0 || o.KVTokens < 0 || src.BlockSize < 0 || src.TraceBlockSize < 0:
		return usage.Errorf("--kv-blocks, --kv-tokens, --block-size and --trace-block-size must be positive")
	case o.KVBlocks > 0 && o.KVTokens > 0:
		return usage.Errorf("give --kv-tokens or --kv-blocks, not both: they state the same figure")
	case o.AddReplica && o.AddReplicaAt < 0:
		return usage.Errorf("--add-replica-at %s: want a time into the traffic, 0 or more", time.Duration(o.AddReplicaAt*float64(time.Second)))
	case o.AddReplica && o.Replicas >= sim.MaxReplicas:
		return usage.Errorf("--add-replica-at needs --replicas below %d", sim.MaxReplicas)
	case o.Thresholds.MinGain <= 0 || o.Thresholds.MinGain >= 1:
		return usage.Errorf("--min-gain is a fraction of all prompt tokens above 0 and below 1 (0.05 means 5 points)")
	case o.Plot != "" && src.Requests == "" && src.Trace == "" && len(src.TapFrom) == 0:
		return usage.Errorf("--plot draws the router ranking, which replays traffic: give --requests, --trace or --tap-from")
	case o.Today != "" && !knownToday(o.Today):
		return usage.Errorf("--today %q: want an idealised policy (%s) or a router emulation as it ships, or as --config configures it (%s)",
			o.Today, strings.Join(sim.PolicyNames(), ", "), strings.Join(router.Names(), ", "))
	}
	if err := src.RequestSource.Check(src.Requests); err != nil {
		return err
	}
	return src.Tokenize.Check()
}

// Status is where a run says what it is doing: notes, warnings, progress (report.Status is
// one).
type Status interface {
	Note(format string, args ...any)
	Warn(format string, args ...any)
	Progress(format string, args ...any)
	Done()
}

// Run reads the sources, gathers the evidence and decides, with the metrics source's warnings,
// its unreadable targets and the replays' progress on st. It returns the recommendation and,
// when there is traffic to replay, the router ranking (nil otherwise); rendering them, and the
// ranking's chart (Options.Plot), is the caller's.
func Run(ctx context.Context, st Status, src Sources, o Options) (advise.Recommendation, *rank.Ranking, error) {
	var in Inputs
	var err error
	blockSize := src.BlockSize
	if src.Metrics.Given() {
		rep, err := readMetrics(ctx, st, src.Metrics)
		if err != nil {
			return advise.Recommendation{}, nil, err
		}
		in.Metrics = rep
		for _, r := range rep.Replicas {
			if blockSize == 0 && r.BlockSize != nil && *r.BlockSize > 0 {
				blockSize = *r.BlockSize
			}
		}
	}
	if blockSize == 0 {
		blockSize = audit.DefaultBlockSize
	}
	if len(src.Templates) > 0 {
		tr, err := audit.AuditTemplates(src.Templates, blockSize)
		if err != nil {
			return advise.Recommendation{}, nil, fmt.Errorf("templates: %w", err)
		}
		in.Templates, in.TemplateInputs = &tr, src.Templates
	}
	if src.Requests != "" {
		var remote *audit.Remote
		if src.Tokenize.URL != "" {
			r, err := src.Tokenize.Connect(ctx, st, blockSize)
			if err != nil {
				return advise.Recommendation{}, nil, err
			}
			remote = &r
		}
		rl, cleanup, err := OpenRequestLog(ctx, src.Requests, src.Stdin, blockSize, remote, src.RequestSource, src.MaxSpoolMiB)
		if err != nil {
			return advise.Recommendation{}, nil, err
		}
		defer cleanup()
		rl.MaxBlockRefs, rl.MaxTraceRequests = src.MaxBlockRefs, src.MaxTraceRequests
		in.Requests = rl
	}
	if len(src.TapFrom) > 0 {
		opts := events.Options{MaxBlocks: events.DefaultMaxBlocks, HashSeed: src.HashSeed}
		r, err := events.ReportRecordings(ctx, src.TapFrom, "", opts)
		if err != nil {
			return advise.Recommendation{}, nil, err
		}
		in.Tap, in.TapInputs, in.SeedKnown = r, src.TapFrom, src.HashSeed != nil
		if src.Requests == "" && src.Trace == "" && src.Embedded == nil {
			// The recordings are the traffic when nothing else is (a lower bound).
			if in.Recordings, err = sim.ReadRecordingFiles(ctx, src.TapFrom, sim.RecordingOptions{MaxBlockRefs: src.MaxBlockRefs, MaxTraceRequests: src.MaxTraceRequests}); err != nil {
				return advise.Recommendation{}, nil, err
			}
		}
	}
	switch {
	case src.Embedded != nil:
		in.Trace = src.Embedded
	case src.Trace != "":
		in.Trace, err = sim.ReadTraceFileLimit(src.Trace, src.TraceFormat, src.TraceBlockSize, sim.Limits{BlockRefs: src.MaxBlockRefs, Requests: src.MaxTraceRequests})
		if err != nil {
			return advise.Recommendation{}, nil, sim.FormatUsage(err, "--trace-format")
		}
	}
	if len(src.Configs) > 0 {
		if in.Config, in.Files, err = checkConfig(ctx, st, src.Configs, src.IgnoreFile); err != nil {
			return advise.Recommendation{}, nil, err
		}
	}
	o.Progress = func(done, total int) { st.Progress("replaying %d/%d", done, total) }
	rec, rk, err := assessRanked(ctx, in, o, true)
	st.Done()
	return rec, rk, err
}

// checkConfig checks the router and engine configuration files as kvcheck lint does, and reads
// what they show of the deployment and its routers for the ranking.
func checkConfig(ctx context.Context, st Status, paths []string, ignoreFile string) (*advise.Config, *product.Files, error) {
	cat, err := catalog.Load()
	if err != nil {
		return nil, nil, err
	}
	ignore, err := lint.LoadIgnore(ignoreFile)
	if err != nil {
		return nil, nil, err
	}
	lint.WarnUnknownCodes(ignore, st.Warn)
	results, err := lint.New(cat, lint.Options{Ignore: ignore, KeepText: true}).Paths(ctx, paths)
	if err != nil {
		return nil, nil, fmt.Errorf("--config: %w", err)
	}
	return advise.FromConfig(results, paths), rank.FilesFrom(paths, lint.DeploymentOf(results)), nil
}

// readMetrics reads the one metrics source exactly as kvcheck hitrate does (num_gpu_blocks
// included, from every source). The server's warnings and unreadable targets go to st too.
// promql.Open's errors are returned as they are, so the caller can tell a spec that cannot
// work (promql.SpecError).
func readMetrics(ctx context.Context, st Status, spec promql.Spec) (*promql.Report, error) {
	raw, err := promql.Open(ctx, spec)
	for _, w := range raw.Warnings {
		st.Warn("%s: query %s: %s", spec.Conn.Shown(), strings.Join(w.Queries, ", "), w.Warning)
	}
	if err != nil {
		return nil, err
	}
	rep := promql.Analyze(raw)
	for _, d := range rep.Down {
		st.Warn("could not read %s: %s; the assessment leaves it out", d.Target, d.Error)
	}
	return &rep, nil
}

// knownToday reports whether name can stand for today's routing: an idealised policy or a
// router emulation.
func knownToday(name string) bool {
	name = sim.Canonical(name)
	return slices.Contains(sim.PolicyNames(), name) || slices.Contains(router.Names(), name)
}
