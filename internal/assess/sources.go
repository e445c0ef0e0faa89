package assess

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Sources are what one kvcheck assess run was given, before any of it is read. Every part is
// optional; Run reads them in order (the metrics first: they choose the audits' block size).
// The hooks (Connect, Trace, Ignore) are the command's readers shared with kvcheck audit,
// simulate and lint, which type their errors as usage errors; Run calls each where the run
// reads that source, so the first failing source is the one reported.
type Sources struct {
	// Metrics is the one metrics source, read as kvcheck hitrate reads it when Given.
	Metrics promql.Spec

	Templates []string

	// Requests is a request log path ("-" reads Stdin); BlockSize 0 takes the metrics' block
	// size, else audit.DefaultBlockSize.
	Requests  string
	Stdin     io.Reader
	BlockSize int
	// Connect, when set, sets up the --tokenize server for the request log with the block size
	// chosen so far as its fallback.
	Connect func(ctx context.Context, fallbackBlockSize int) (audit.Remote, error)

	// TapFrom are kvcheck tap recordings; HashSeed, when set, is the replicas' PYTHONHASHSEED.
	TapFrom  []string
	HashSeed *string

	// Trace, when set, gives the trace (a trace file, or the demo's built-in trace).
	Trace func() (*sim.Trace, error)

	// Configs are router and engine configuration files checked as kvcheck lint does, with the
	// rules Ignore (when set) loads from the repository's ignore file.
	Configs []string
	Ignore  func() ([]lint.IgnoreRule, error)
}

// Run reads the sources, gathers the evidence and decides, with the metrics source's warnings,
// its unreadable targets and the replays' progress on st.
func Run(ctx context.Context, st *report.Status, src Sources, o Options) (report.Result, error) {
	var in Inputs
	var err error
	blockSize := src.BlockSize
	if src.Metrics.Given() {
		rep, err := readMetrics(ctx, st, src.Metrics)
		if err != nil {
			return report.Result{}, err
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
			return report.Result{}, fmt.Errorf("templates: %w", err)
		}
		in.Templates, in.TemplateInputs = &tr, src.Templates
	}
	if src.Requests != "" {
		var remote *audit.Remote
		if src.Connect != nil {
			r, err := src.Connect(ctx, blockSize)
			if err != nil {
				return report.Result{}, err
			}
			remote = &r
		}
		rl, cleanup, err := OpenRequestLog(src.Requests, src.Stdin, blockSize, remote)
		if err != nil {
			return report.Result{}, err
		}
		defer cleanup()
		in.Requests = rl
	}
	if len(src.TapFrom) > 0 {
		opts := events.Options{MaxBlocks: events.DefaultMaxBlocks, HashSeed: src.HashSeed}
		r, err := events.ReportRecordings(ctx, src.TapFrom, "", opts)
		if err != nil {
			return report.Result{}, err
		}
		in.Tap, in.TapInputs, in.SeedKnown = r, src.TapFrom, src.HashSeed != nil
		if src.Requests == "" && src.Trace == nil {
			// The recordings are the traffic when nothing else is (a lower bound).
			if in.Recordings, err = sim.ReadRecordingFiles(ctx, src.TapFrom, sim.RecordingOptions{}); err != nil {
				return report.Result{}, err
			}
		}
	}
	if src.Trace != nil {
		if in.Trace, err = src.Trace(); err != nil {
			return report.Result{}, err
		}
	}
	if len(src.Configs) > 0 {
		if in.Config, err = checkConfig(ctx, src.Configs, src.Ignore); err != nil {
			return report.Result{}, err
		}
	}
	o.Progress = func(done, total int) { st.Progress("replaying %d/%d", done, total) }
	rec, rk, err := assessRanked(ctx, in, o)
	st.Done()
	if err != nil {
		return report.Result{}, err
	}
	return report.AssessRanked(rec, rk), nil
}

// checkConfig checks the router and engine configuration files as kvcheck lint does.
func checkConfig(ctx context.Context, paths []string, load func() ([]lint.IgnoreRule, error)) (*advise.Config, error) {
	cat, err := catalog.Load()
	if err != nil {
		return nil, err
	}
	var ignore []lint.IgnoreRule
	if load != nil {
		if ignore, err = load(); err != nil {
			return nil, err
		}
	}
	results, err := lint.New(cat, lint.Options{Ignore: ignore}).Paths(ctx, paths)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return advise.FromConfig(results, paths), nil
}

// readMetrics reads the one metrics source exactly as kvcheck hitrate does (num_gpu_blocks
// included, from every source). The server's warnings and unreadable targets go to st too.
// promql.Open's errors are returned as they are, so the caller can tell a spec that cannot
// work (promql.SpecError).
func readMetrics(ctx context.Context, st *report.Status, spec promql.Spec) (*promql.Report, error) {
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
