package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteAllFixed writes --fix's rewrite of every file that has one, in order, calling wrote
// after each; it stops at the first file that cannot be written.
func WriteAllFixed(results []FileResult, wrote func(path string)) error {
	for _, r := range results {
		if r.Fixed == nil {
			continue
		}
		if err := WriteFixed(r.Path, r.Fixed); err != nil {
			return err
		}
		wrote(r.Path)
	}
	return nil
}

// WriteFixed replaces a file's content with what --fix rewrote, keeping its permissions; the new content is written
// to a temporary file beside it and renamed over it, so a crash leaves one or the other.
func WriteFixed(name string, content []byte) error {
	// Write through a symbolic link to its target rather than replace the link.
	path, err := filepath.EvalSymlinks(name)
	if err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("fix %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), fixTempPrefix+"*")
	if err != nil {
		return fmt.Errorf("fix %s: %w", path, err)
	}
	// After the rename there is nothing left to remove; before it, a failure leaves the
	// temporary file, which this removes (its own error adds nothing to the one returned).
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(content); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("fix %s: %w", path, err)
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("fix %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("fix %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("fix %s: %w", path, err)
	}
	return nil
}

// fixTempPrefix starts the name of --fix's temporary files; lint never reads one it finds.
const fixTempPrefix = ".kvcheck-fix-"

// fixTemp reports whether a file name is one of --fix's temporary files.
func fixTemp(name string) bool { return strings.HasPrefix(name, fixTempPrefix) }
