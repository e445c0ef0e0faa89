// Package files walks the directories and reads the files a user names as inputs, so that no
// command skips one without saying so, reads one twice, or blocks on one past an interrupt.
//
// A walk follows symbolic links, to files and to directories alike, with loop detection;
// reads every file once, under the first name met, so a Kubernetes ConfigMap mount (its files
// are links through the hidden ..data directory) is read once, under its visible names; skips
// hidden directories and what is not a regular file (a named pipe, a device, a socket, a
// broken link), and hands every skip to the caller with its reason. A named pipe named on the
// command line is read (a process substitution is one), but cancellably; a device is refused.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kind is what an input path is.
type Kind int

// The kinds of path a walk meets.
const (
	Regular Kind = iota
	Pipe         // a named pipe (FIFO), or a pipe such as a process substitution's /dev/fd/N
	Device       // a character or block device (/dev/zero, a terminal)
	Socket
	Irregular // anything else that is not a file
)

// KindOf classifies a file mode.
func KindOf(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return Regular
	case m&fs.ModeNamedPipe != 0:
		return Pipe
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return Device
	case m&fs.ModeSocket != 0:
		return Socket
	}
	return Irregular
}

// String names the kind for a message.
func (k Kind) String() string {
	switch k {
	case Regular:
		return "a regular file"
	case Pipe:
		return "a named pipe"
	case Device:
		return "a device"
	case Socket:
		return "a socket"
	}
	return "not a regular file"
}

// Skip is a path a walk met and did not hand on, and why.
type Skip struct {
	Path string
	// What names the class of skip, plural, for a count: "hidden directories".
	What   string
	Reason string
	// Problem marks a skip that may hide what was meant to be checked (a broken link, a loop,
	// a pipe or a device in the tree), as opposed to a convention (a hidden directory, a
	// second name of a file already read).
	Problem bool
}

// The classes of skip that are conventions, not problems.
const (
	whatSameFile = "second names of files already read"
	whatSameDir  = "second names of directories already walked"
)

// Walker walks input paths. One Walker serves a whole run, so a file or directory reached
// twice (named twice, or through a link) is read once. The zero value is ready to use.
type Walker struct {
	dirs  map[fileID]string // directories walked, by identity, with the path first used
	files map[fileID]string // files handed on, likewise
}

// Visit is called with each file of a walk: its path as met (the visible name), its kind
// (Regular, or Pipe for a pipe named as the root), whether it was named as the root rather
// than found in a directory, and its size when the walk looked (0 for a pipe). An error ends
// the walk and is returned by Walk.
type Visit func(path string, kind Kind, named bool, size int64) error

// Walk hands on root, when it is a file, or every regular file under it, in lexical order;
// skip is called with every path met and not handed on. It fails when root does not exist or
// a directory cannot be read. It checks ctx before each file and returns its error.
func (w *Walker) Walk(ctx context.Context, root string, visit Visit, skip func(Skip)) error {
	if w.dirs == nil {
		w.dirs, w.files = map[fileID]string{}, map[fileID]string{}
	}
	st, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		k := KindOf(st.Mode())
		if k == Regular {
			if first, dup := w.seen(w.files, root, st); dup {
				skip(Skip{Path: root, What: whatSameFile, Reason: "the same file as " + first + ", already read"})
				return nil
			}
		}
		return visit(root, k, true, st.Size())
	}
	if first, dup := w.seen(w.dirs, root, st); dup {
		skip(Skip{Path: root, What: whatSameDir, Reason: "the same directory as " + first + ", already walked"})
		return nil
	}
	return w.walk(ctx, root, []fileID{idOf(root, st)}, visit, skip)
}

// seen records a file's identity under path and reports the path it was first met under, if
// it was.
func (w *Walker) seen(m map[fileID]string, path string, st fs.FileInfo) (string, bool) {
	id := idOf(path, st)
	if first, ok := m[id]; ok {
		return first, true
	}
	m[id] = path
	return "", false
}

func (w *Walker) walk(ctx context.Context, dir string, above []fileID, visit Visit, skip func(Skip)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(dir, e.Name())
		mode := e.Type()
		var st fs.FileInfo
		if mode&fs.ModeSymlink != 0 {
			st, err = os.Stat(path)
			if err != nil {
				to, _ := os.Readlink(path)
				skip(Skip{Path: path, Problem: true, What: "broken symbolic links", Reason: fmt.Sprintf("a symbolic link to %s, which %s: nothing there to check", to, brokenWhy(err))})
				continue
			}
			mode = st.Mode().Type()
		}
		if mode.IsDir() {
			if strings.HasPrefix(e.Name(), ".") {
				skip(Skip{Path: path, What: "hidden directories", Reason: "a hidden directory"})
				continue
			}
			if st == nil {
				if st, err = os.Stat(path); err != nil {
					return err
				}
			}
			id := idOf(path, st)
			if i := indexID(above, id); i >= 0 {
				skip(Skip{Path: path, Problem: true, What: "symbolic link loops", Reason: "a symbolic link loop: it leads back to " + ancestor(dir, len(above)-1-i) + ", which is being walked; not followed"})
				continue
			}
			if first, dup := w.seen(w.dirs, path, st); dup {
				skip(Skip{Path: path, What: whatSameDir, Reason: "the same directory as " + first + ", already walked"})
				continue
			}
			if err := w.walk(ctx, path, append(above[:len(above):len(above)], id), visit, skip); err != nil {
				return err
			}
			continue
		}
		if k := KindOf(mode); k != Regular {
			skip(Skip{Path: path, Problem: true, What: "pipes, devices and sockets", Reason: k.String() + ", not read when found in a directory (reading it could block); name it on the command line to read it"})
			continue
		}
		if st == nil {
			if st, err = e.Info(); err != nil {
				return err
			}
		}
		if first, dup := w.seen(w.files, path, st); dup {
			skip(Skip{Path: path, What: whatSameFile, Reason: "the same file as " + first + ", already read"})
			continue
		}
		if err := visit(path, Regular, false, st.Size()); err != nil {
			return err
		}
	}
	return nil
}

// brokenWhy says why a link's target cannot be read.
func brokenWhy(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be read (permission denied)"
	}
	return "cannot be read (" + err.Error() + ")"
}

// ancestor returns the directory up levels above dir.
func ancestor(dir string, up int) string {
	for range up {
		dir = filepath.Dir(dir)
	}
	return dir
}

func indexID(ids []fileID, id fileID) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// ErrTooLarge is returned by Read for a file longer than its limit.
var ErrTooLarge = errors.New("larger than the limit")

// Read reads a whole input file of at most limit bytes (ErrTooLarge past it). A regular file is
// read as it is; a pipe is opened and read cancellably: when ctx ends, Read returns ctx's
// error at once, whether or not a writer ever opened the pipe. A device or a socket is refused:
// it has no end, or is not data.
func Read(ctx context.Context, path string, limit int64) ([]byte, error) {
	return ReadInto(ctx, path, limit, nil)
}

// ReadInto is Read into buf's memory when it is large enough (a regular file), so that a
// caller reading many files one after another can use one buffer.
func ReadInto(ctx context.Context, path string, limit int64, buf []byte) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch k := KindOf(st.Mode()); k {
	case Regular:
		return readOpen(path, limit, buf)
	case Pipe:
		return readPipe(ctx, path, limit)
	default:
		return nil, fmt.Errorf("%s, not a file: refused (it is never read)", k)
	}
}

// ReadFound is ReadInto for a path a stat has just found to be a regular file (a walk's): it is
// opened without a second look first, and read if it still is a regular file; a pipe, a device
// or a socket put there since is refused, not read.
func ReadFound(path string, limit int64, buf []byte) ([]byte, error) {
	return readOpen(path, limit, buf)
}

func readLimited(r io.Reader, limit, hint int64, buf []byte) ([]byte, error) {
	if want := min(max(hint, 0), limit) + 512; int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	}
	for {
		if int64(len(buf)) > limit {
			return nil, ErrTooLarge
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), len(buf)+int(min(limit+1-int64(len(buf)), 1<<30)))])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(buf)) > limit {
				return nil, ErrTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// opened is the outcome of opening a pipe.
type opened struct {
	f   *os.File
	err error
}

// readPipe opens and reads a pipe, giving up when ctx ends. Opening a named pipe blocks until a
// writer opens it, and the open cannot be interrupted: it runs in its own goroutine, and on
// cancellation releaseOpen ends it. Reads go through the runtime's poller (a pipe is
// pollable), so a read deadline ends a blocked read.
func readPipe(ctx context.Context, path string, limit int64) ([]byte, error) {
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	var f *os.File
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, o.err
		}
		f = o.f
	case <-ctx.Done():
		releaseOpen(path, ch)
		return nil, context.Cause(ctx)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	defer func() { _ = f.Close() }() // read only
	b, err := readLimited(f, limit, 0, nil)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return b, err
}

// releaseOpen ends an open of a named pipe still waiting for a writer by being that writer for
// a moment (a non-blocking open of the write end succeeds only while a reader waits), and
// closes the file the open returns. When the open has not started yet, it stays blocked until
// a writer comes or the process ends: a run that was interrupted is ending.
func releaseOpen(path string, ch chan opened) {
	if w, err := os.OpenFile(path, os.O_WRONLY|nonBlock, 0); err == nil {
		_ = w.Close()
	}
	go func() {
		if o := <-ch; o.f != nil {
			_ = o.f.Close()
		}
	}()
}
