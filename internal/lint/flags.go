package lint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Flags are one kvcheck lint run as given on its command line.
type Flags struct {
	// Target is --target-version (vLLM's release), Targets --target (per family).
	Target, Targets string
	Fix, Diff       bool
	// Lookback is how far back the online check looks (with Prom's URL).
	Lookback model.Duration
	Prom     promql.Conn
	// IgnoreFile is the repository's ignore file; empty means .kvcheckignore when it exists.
	IgnoreFile string
	// MaxFileMiB bounds the size of one file read.
	MaxFileMiB int
	// Jobs is how many files are read and linted at once (--jobs); zero means one per CPU.
	Jobs int
	// ChangedSince lints only the files changed since the merge base of this revision and
	// HEAD (--changed-since).
	ChangedSince string
	// Baseline is the accepted findings' file (--baseline); WriteBaseline writes the run's
	// findings as one (--write-baseline), which then applies to the run.
	Baseline, WriteBaseline string
	// SrcRoot is the git work tree's top level and WorkDir the working directory: baseline
	// paths are relative to the first, and --changed-since asks git there.
	SrcRoot, WorkDir string
	// Config is the .kvcheck.yaml to read (--config); empty means the one found from WorkDir
	// upward, NoConfig none (--no-config).
	Config   string
	NoConfig bool
	// SkipUnknown treats the files named like files found in a directory (--skip-unknown):
	// one that holds nothing kvcheck checks, or is empty or binary, is skipped and counted,
	// and a run that checked nothing passes (pre-commit names every changed file).
	SkipUnknown bool
}

// Notes is where a lint run warns (a target newer than the catalog) and notes the files --fix
// rewrote (report.Status is one).
type Notes interface {
	Warn(format string, args ...any)
	Note(format string, args ...any)
}

// DefaultLookback is --lookback's default.
const DefaultLookback = model.Duration(7 * 24 * time.Hour)

// CheckFlags checks the flags (usage errors naming the flag at fault), loads the catalog and
// the ignore file, and lints paths as Check does.
func CheckFlags(ctx context.Context, n Notes, f Flags, paths []string) (Run, error) {
	if f.Fix && f.Diff {
		return Run{}, usage.Errorf("--fix and --diff: choose one (--diff shows what --fix would write)")
	}
	cat, err := catalog.Load()
	if err != nil {
		return Run{}, err
	}
	var cfg *ProjectConfig
	if f.NoConfig && f.Config != "" {
		return Run{}, usage.Errorf("--config and --no-config: choose one")
	}
	if !f.NoConfig {
		if cfg, err = LoadProjectConfig(f.Config, f.WorkDir, cat); err != nil {
			return Run{}, err
		}
	}
	if cfg != nil {
		for _, w := range cfg.Warnings {
			n.Warn("%s", w)
		}
		if f.Baseline == "" && f.WriteBaseline == "" {
			f.Baseline = cfg.Baseline
		}
	}
	targets, err := cat.ResolveTargets(f.Target, cfg.TargetSpec(f.Target, f.Targets, cat), n.Warn)
	if err != nil {
		return Run{}, err
	}
	var api Querier
	if f.Prom.URL != "" {
		if api, err = f.Prom.API(); err != nil {
			return Run{}, err
		}
		if f.Lookback <= 0 {
			return Run{}, usage.Errorf("--lookback must be positive")
		}
	}
	ignore, err := LoadIgnore(f.IgnoreFile)
	if err != nil {
		return Run{}, err
	}
	WarnUnknownCodes(ignore, n.Warn)
	if cfg != nil {
		ignore = append(ignore, cfg.Ignore...)
	}
	if f.MaxFileMiB <= 0 {
		return Run{}, usage.Errorf("--max-file-mib %d: give a positive number of MiB", f.MaxFileMiB)
	}
	if f.Jobs < 0 {
		return Run{}, usage.Errorf("--jobs %d: give how many files to lint at once (0 means one per CPU)", f.Jobs)
	}
	if f.ChangedSince != "" && f.WriteBaseline != "" {
		return Run{}, usage.Errorf("--write-baseline with --changed-since would accept only the changed files' findings: write the baseline from a run over every file")
	}
	var base *Baseline
	if f.Baseline != "" {
		if base, err = LoadBaseline(f.Baseline); err != nil {
			if cfg != nil && f.Baseline == cfg.Baseline {
				err = fmt.Errorf("%s: lint.baseline: %w", cfg.BaselineAt, err)
			}
			return Run{}, err
		}
	}
	var only map[string]bool
	if f.ChangedSince != "" {
		if only, err = ChangedSince(ctx, f.SrcRoot, f.ChangedSince); err != nil {
			return Run{}, err
		}
	}
	var leave func(string) (string, bool)
	if cfg != nil {
		leave = cfg.Leaves
	}
	// The lint's collector setting (collectLess), for this command's run only: a program
	// calling Check or Read keeps its own.
	defer collectLess()()
	run, err := Check(ctx, cat, RunOptions{
		Options: Options{Targets: targets, Rewrite: f.Fix || f.Diff, Ignore: ignore, MaxFileSize: int64(f.MaxFileMiB) << 20, Only: only, Jobs: f.Jobs, Leave: leave, SkipUnknown: f.SkipUnknown},
		Fix:     f.Fix, Online: api, Server: f.Prom.Shown(), Lookback: f.Lookback,
		QueryTimeout: f.Prom.QueryTimeout, Verbose: f.Prom.Verbose,
	}, paths, func(path string) { n.Note("rewrote %s", path) })
	if cfg != nil {
		run.Config = cfg.Path
		cfg.ApplySeverity(run.Files)
		run.FailOn, run.FailOnAt = cfg.FailOn, cfg.FailOnAt
	}
	if err != nil && run.Files == nil {
		return run, err
	}
	// err is now what --fix could not write: the run is still reported, then the error.
	for _, p := range run.RemovedTemps {
		n.Note("removed %s, left by a kvcheck lint --fix that was killed before renaming it into place (the file it was for is as it was)", p)
	}
	if only != nil {
		run.ChangedSince = f.ChangedSince
		n.Note("--changed-since %s: %d of the files given changed; %d left out", f.ChangedSince, len(run.Files), run.Unchanged)
	}
	if f.WriteBaseline != "" {
		base = NewBaseline(run.Files, f.SrcRoot, f.WorkDir)
		if werr := base.Write(f.WriteBaseline); werr != nil {
			return run, errors.Join(err, werr)
		}
		base.path = f.WriteBaseline
		accepted := 0
		for _, e := range base.Findings {
			accepted += e.Count
		}
		n.Note("wrote %s: %d accepted (findings of %d codes, files and metrics)", f.WriteBaseline, accepted, len(base.Findings))
	}
	if base != nil {
		base.Apply(run.Files, f.SrcRoot, f.WorkDir)
		run.Baseline = base.path
	}
	return run, err
}
