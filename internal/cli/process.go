package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// StartCPUProfile starts profiling the process's CPU into path (the hidden --cpuprofile) and
// returns what stops it and closes the file.
func StartCPUProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usage.Errorf("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // nothing written yet
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		return nil
	}, nil
}

// StartMemProfile watches the live heap (as of the last collection, polled every 100 ms) for
// the hidden --memprofile and, each time it passes its largest so far by more than 1/16, writes
// the heap profile into path anew, so the file ends holding the profile nearest the command's
// peak, which a profile taken at exit, once the analyses have let go, would not show. It
// returns what stops the watch (writing a last profile if the heap grew since) and closes the
// file.
func StartMemProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usage.Errorf("--memprofile: %v", err)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	write := func() error {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live <= peak+peak/16 {
			return nil
		}
		peak = live
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		return pprof.Lookup("heap").WriteTo(f, 0)
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- write()
				return
			case <-tick.C:
				if err := write(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	return func() error {
		close(stop)
		err := <-done
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--memprofile %s: %w", path, err)
		}
		return nil
	}, nil
}

// SourceRoot is the top level of the git work tree the working directory is in (the nearest
// directory upward holding .git, a directory or a worktree's file), which SARIF paths are
// relative to, and the working directory; the working directory itself outside a work tree.
// It looks for .git instead of running git, which a container image may not have.
func SourceRoot() (root, wd string) {
	wd, err := os.Getwd()
	if err != nil {
		return "", ""
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir, wd
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd, wd
		}
		dir = parent
	}
}

// Build is what this binary knows about its own build: the release build's linker values
// (version, commit, date; empty in a build from a checkout), else Go's build information (the
// module version, the VCS revision and its time), and the catalog's newest releases (the
// catalog is embedded, so it fails to load only on a broken build).
func Build(version, commit, date string) report.Build {
	b := report.Build{Version: version, Commit: commit, BuildDate: date,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.GoVersion = bi.GoVersion
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version // go install github.com/kvcheck/kvcheck/cmd/kvcheck@v0.3.0
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				b.CommitTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if cat, err := catalog.Load(); err == nil {
		for _, f := range cat.Families {
			b.Catalog = append(b.Catalog, report.CatalogRelease{Family: f.Name, Display: f.Display, Newest: f.Newest.String()})
		}
	}
	return b
}
