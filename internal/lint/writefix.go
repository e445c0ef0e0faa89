package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FixRefused is a file --fix left as it is because rewriting it would lose something: an edit
// made since lint read it, its read-only mode, its owner, its other hard links. Why says which
// and what to do.
type FixRefused struct{ Path, Why string }

func (e *FixRefused) Error() string { return fmt.Sprintf("fix %s: not rewritten: %s", e.Path, e.Why) }

// WriteAllFixed writes --fix's rewrite of every file that has one, in order, calling wrote
// after each. A file it refuses (FixRefused) is left as it is and the others are still written;
// an error writing a file (a full disk) stops it there. A file not rewritten, refused or after
// the stop, has its rewrite and its findings' Fixed cleared, so the report shows them as still
// to fix. The refusals and the error are returned joined.
func WriteAllFixed(results []FileResult, wrote func(path string)) error {
	var errs []error
	stopped := false
	for i := range results {
		r := &results[i]
		if r.Fixed == nil {
			continue
		}
		err := error(nil)
		if !stopped {
			err = WriteFixed(r.Path, r.Original, r.Fixed)
		}
		var refused *FixRefused
		switch {
		case stopped:
		case err == nil:
			wrote(r.Path)
			continue
		case errors.As(err, &refused):
			errs = append(errs, err)
		default:
			errs = append(errs, err)
			stopped = true
		}
		r.Fixed = nil
		for j := range r.Findings {
			r.Findings[j].Fixed = false
		}
	}
	return errors.Join(errs...)
}

// WriteFixed replaces a file's content, which lint read as original, with what --fix rewrote.
// The rewrite goes to a temporary file beside it, written to the disk (fsync) and renamed over
// it, and the directory is written to the disk after, so a crash or SIGKILL leaves the old
// content or the new, whole. It writes through a symbolic link to its target and keeps the
// target's mode and owner (and group). It refuses (FixRefused), leaving the file as it is:
//   - a file whose content is no longer original (edited while lint ran), checked by reading
//     it again before the temporary file is written and by its size, modification time and
//     inode just before the rename;
//   - a read-only file (no write permission bit) or one this user may not write;
//   - a file with other hard links, which a rename would leave holding the old content;
//   - a file whose owner or group this user cannot give the rewrite (chown not permitted);
//   - anything but a regular file.
func WriteFixed(name string, original, content []byte) error {
	path, err := filepath.EvalSymlinks(name)
	if err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	refuse := func(format string, args ...any) error {
		return &FixRefused{Path: name, Why: fmt.Sprintf(format, args...)}
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("fix %s: %w", name, err)
	case !st.Mode().IsRegular():
		return refuse("not a regular file (%s)", st.Mode().Type())
	case st.Mode().Perm()&0o222 == 0:
		return refuse("the file is read-only (mode %04o): --fix does not override that; make it writable (chmod u+w) and run --fix again, or apply kvcheck lint --diff by hand", st.Mode().Perm())
	}
	if err := writable(path); err != nil {
		return refuse("this user may not write it (%v): run --fix as its owner, or apply kvcheck lint --diff by hand", err)
	}
	if n := links(st); n > 1 {
		others := "the other name"
		if n > 2 {
			others = fmt.Sprintf("the other %d names", n-1)
		}
		return refuse("the file has %d hard links: renaming a rewrite over this name would leave %s with the old content, and rewriting it in place is not safe against a crash; apply kvcheck lint --diff to it by hand (every name then sees the change), or give this name a copy of its own (cp FILE FILE.new && mv FILE.new FILE) and run --fix again", n, others)
	}
	if same, err := unchanged(path, st, original); err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	} else if !same {
		return refuse("the file changed since lint read it (edited while lint ran?): run kvcheck lint --fix again to rewrite what it holds now")
	}
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir)
	if err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	// After the rename there is nothing left to remove; before it, a failure leaves the
	// temporary file, which this removes (its own error adds nothing to the one returned).
	// Closing it releases the lock that tells a later --fix it is in use.
	renamed := false
	defer func() {
		if !renamed {
			_ = os.Remove(tmp.Name())
		}
		_ = tmp.Close()
	}()
	if _, err := tmp.Write(content); err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	if err := keepOwner(tmp, st); err != nil {
		return refuse("the file belongs to %s, and this user may not give a new file that owner (%v): run --fix as its owner or as root, or apply kvcheck lint --diff by hand", ownerOf(st), err)
	}
	// After the chown, which clears the set-user-ID and set-group-ID bits.
	if err := tmp.Chmod(st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	// The last look before the rename: an edit since the content was compared changes the
	// size, the modification time or (an editor's save by rename) the inode.
	now, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	if !os.SameFile(now, st) || now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
		return refuse("the file changed since lint read it (edited while lint ran?): run kvcheck lint --fix again to rewrite what it holds now")
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("fix %s: %w", name, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("fix %s: the rewrite is in place, but writing its directory to the disk failed: %w", name, err)
	}
	return nil
}

// unchanged reports whether the file at path, as st found it, still holds original: read
// again, up to one byte more than original.
func unchanged(path string, st fs.FileInfo, original []byte) (bool, error) {
	if st.Size() != int64(len(original)) {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }() // read only
	if fst, err := f.Stat(); err != nil || !os.SameFile(fst, st) {
		return false, err
	}
	now, err := io.ReadAll(io.LimitReader(f, int64(len(original))+1))
	if err != nil {
		return false, err
	}
	return bytes.Equal(now, original), nil
}

// createTemp creates --fix's temporary file in dir and locks it (on systems with flock) for as
// long as it is open, so that a later --fix tells a file of a running --fix from one left by a
// killed run. A RemoveStaleTemps between the create and the lock may remove it: it is then
// created again.
func createTemp(dir string) (*os.File, error) {
	for range 3 {
		tmp, err := os.CreateTemp(dir, fixTempPrefix+"*")
		if err != nil {
			return nil, err
		}
		if err := lockFile(tmp, true); err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			return nil, err
		}
		if st, err := os.Lstat(tmp.Name()); err == nil {
			if fst, err := tmp.Stat(); err == nil && os.SameFile(st, fst) {
				return tmp, nil
			}
		}
		_ = tmp.Close() // removed by a RemoveStaleTemps: try another name
	}
	return nil, errors.New("a temporary file beside it was removed as soon as it was made three times: is another kvcheck lint --fix cleaning this directory?")
}

// syncDir writes a directory's entries to the disk, so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// RemoveStaleTemps removes the temporary files of a --fix that did not finish (killed) among
// what a run skipped, and returns the ones it removed. Such a file holds a rewrite that was
// never renamed into place: the file it was for still holds what it held, so nothing is lost.
// One a running --fix holds (locked) is left alone, as is anything that is not a regular file.
func RemoveStaleTemps(skipped []Skipped) []string {
	var removed []string
	for _, s := range skipped {
		if s.What != skipFixTemp {
			continue
		}
		f, err := os.OpenFile(s.Path, os.O_RDONLY|noFollow, 0)
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err == nil && st.Mode().IsRegular() && lockFile(f, false) == nil {
			if now, err := os.Lstat(s.Path); err == nil && os.SameFile(now, st) && os.Remove(s.Path) == nil {
				removed = append(removed, s.Path)
			}
		}
		_ = f.Close() // read only; closing releases the lock
	}
	return removed
}

// fixTempPrefix starts the name of --fix's temporary files; lint never reads one it finds.
const fixTempPrefix = ".kvcheck-fix-"

// fixTemp reports whether a file name is one of --fix's temporary files.
func fixTemp(name string) bool { return strings.HasPrefix(name, fixTempPrefix) }
