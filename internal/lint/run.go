package lint

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/promql"
)

// Run is one kvcheck lint run: the files checked and against what, what --fix wrote and what
// the online check asked.
type Run struct {
	Target string // the vLLM version findings are judged against
	// Targets are the releases of the families whose names the files use (vLLM's alone
	// when they use none), in the catalog's order: what the summary says it judged against.
	Targets []FamilyTarget
	Files   []FileResult
	// Skipped is what the run met and did not check (hidden directories, binary files found
	// by walking, ...), counted in the summary and listed in JSON.
	Skipped []Skipped
	// Fix says the fixes were written; findings marked Fixed are then resolved.
	Fix bool
	// RemovedTemps are the temporary files of killed --fix runs that this --fix removed.
	RemovedTemps []string
	// Prometheus is the server the online check asked, if any.
	Prometheus string
	Lookback   string
	// ChangedSince is --changed-since's revision; Unchanged counts the files it left out.
	ChangedSince string
	Unchanged    int
	// Baseline is the baseline file the findings were compared with; each finding's
	// Baseline then says new or unchanged.
	Baseline string
	// Config is the .kvcheck.yaml the run read ("" for none); FailOn is its lint.fail-on
	// ("" when it sets none), FailOnAt where, for the command to apply when --fail-on was
	// not given.
	Config, FailOn, FailOnAt string
	// Jobs is how many files the run linted at once: what the report may use to write.
	Jobs int
}

// RunOptions are what a lint run was asked beyond Options: write the rewrites (Fix, which
// needs Options.Rewrite), and ask Online (nil: no online check) about the names over Lookback,
// allowing QueryTimeout for each, naming the server as Server. Verbose keeps the start of an
// error answer's body in its error.
type RunOptions struct {
	Options
	Fix          bool
	Online       Querier
	Server       string
	Lookback     model.Duration
	QueryTimeout time.Duration
	Verbose      bool
}

// Check lints paths, asks the online check and writes the fixes (WriteAllFixed), calling wrote
// after each file it rewrote, after removing what killed --fix runs left (RemoveStaleTemps).
// Interrupted, it returns what was checked (the file it stopped at says so), asks nothing more
// of Prometheus and writes no file. When --fix could not rewrite a file it returns the run with
// the error: the run's files are then what to report.
func Check(ctx context.Context, cat *catalog.Catalog, o RunOptions, paths []string, wrote func(path string)) (Run, error) {
	o.Refs = o.Refs || o.Online != nil
	l := New(cat, o.Options)
	in, err := l.Read(ctx, paths)
	if err != nil && ctx.Err() == nil {
		return Run{}, err
	}
	results := in.Files
	api, fix := o.Online, o.Fix
	if err != nil {
		api, fix = nil, false
	}
	run := Run{Target: l.Target().String(), Targets: l.JudgedAgainst(results), Files: results, Skipped: in.Skipped, Fix: fix, Unchanged: l.Left, Jobs: l.jobs}
	if api != nil {
		if err := CheckOnline(ctx, api, results, o.Server, time.Duration(o.Lookback), o.QueryTimeout, time.Now()); err != nil {
			if !o.Verbose {
				err = promql.HideBody(err)
			}
			return Run{}, fmt.Errorf("--prometheus %s: %w", o.Server, err)
		}
		run.Prometheus, run.Lookback = o.Server, o.Lookback.String()
	}
	if fix {
		run.RemovedTemps = RemoveStaleTemps(run.Skipped)
		// A file --fix could not rewrite is reported with the rest: its findings say still to
		// fix, and the error says why.
		if err := WriteAllFixed(results, wrote); err != nil {
			return run, err
		}
	}
	return run, nil
}
