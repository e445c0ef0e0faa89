package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvcheck/kvcheck/internal/files"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// Skipped is a path a run met and did not check, and why: counted and listed, never a finding.
// Only what is a convention is skipped so: a hidden directory, a second name of a file already
// read, and, among the files found in a directory, binary content, an empty file and a file
// holding nothing kvcheck checks. What may hide something meant to be checked (a broken link,
// a loop, a pipe or a device in a tree), and anything named on the command line, is a finding.
type Skipped struct {
	Path string
	// What is the class, plural, for a count ("hidden directories"); Reason says it of this path.
	What, Reason string
}

// The classes of Skipped that lint itself decides (files has the others).
const (
	skipBinary  = "binary files"
	skipEmpty   = "empty files"
	skipNothing = "files holding nothing kvcheck checks"
	skipFixTemp = "temporary files of an interrupted --fix"
	skipConfig  = "files the kvcheck config leaves out"
)

// Input is what one run read: the files, each with its findings, and what was not checked.
type Input struct {
	Files   []FileResult
	Skipped []Skipped
}

// Paths lints files and directories and returns the files' results (Read without the list of
// what was skipped).
func (l *Linter) Paths(ctx context.Context, paths []string) ([]FileResult, error) {
	in, err := l.Read(ctx, paths)
	return in.Files, err
}

// Read lints files and directories, recursively. Every file is read and its format detected by
// content. Links are followed, to files and directories, with loop detection, and a file is
// read once however many names reach it (a Kubernetes ConfigMap mount: under its visible
// names); hidden directories are not entered unless named. A file named on the command line is
// always checked or a finding says why not (empty, binary, too large, a device, nothing kvcheck
// knows); one found in a directory is checked or counted in Skipped. A named pipe named on the
// command line is read, cancellably; one in a tree is a finding, never opened.
//
// Files are read and linted by Options.Jobs workers while one goroutine walks the paths; the
// results are taken in the walk's order, so the run's results do not depend on the number of
// workers. At most Jobs files are read at once, and the results of at most 4 x Jobs batches of
// files (walkBatch: 32 items or 1 MiB) wait for an earlier batch to finish. A file's text is kept in its result (Original) only when
// Options.Rewrite or Options.KeepText asks for it: otherwise the text of each file is
// dropped once it is linted, and the memory a run holds is the files in flight (each at most
// MaxFileSize, with its parse) plus what the results say (findings, names, config facts).
//
// A run that checked nothing (an empty directory, a tree of READMEs, a file of no known
// format) has an error finding saying so: a CI gate must not pass on nothing.
//
// When ctx ends it stops before the next file (or during a pipe's read) and returns what it has
// with ctx's error: the first file in the walk's order it did not finish carries a file-skipped
// error saying so, and no result after it is kept.
func (l *Linter) Read(ctx context.Context, paths []string) (Input, error) {
	var in Input
	checked := 0
	stopped := func(path string) (Input, error) {
		in.Files = append(in.Files, skippedFile(path, finding.Error,
			"not checked: lint was interrupted here, and the files after this one were not read either"))
		in.Files = l.Finish(ForgetRecorded(in.Files))
		return in, fmt.Errorf("lint interrupted at %s: %w", path, context.Cause(ctx))
	}
	q := l.walkAll(ctx, paths)
	defer q.close()
	for b := range q.order {
		if b.reads {
			<-b.done
		}
		for i := range b.items {
			it := &b.items[i]
			switch {
			case it.end:
				switch {
				case it.err != nil && ctx.Err() != nil:
					return stopped(it.path)
				case it.err != nil:
					return Input{}, fmt.Errorf("lint %s: %w", it.path, it.err)
				}
			case it.skipped != nil:
				in.Skipped = append(in.Skipped, *it.skipped)
			case it.file != nil:
				in.Files = append(in.Files, *it.file)
			default:
				o := it.out
				switch {
				case o.err != nil && ctx.Err() != nil:
					return stopped(it.path)
				case o.err != nil:
					return Input{}, fmt.Errorf("lint %s: %w", it.path, o.err)
				case o.ok:
					checked++
				case !it.named:
					in.Skipped = append(in.Skipped, skippedAs(o.r))
					continue
				}
				in.Files = append(in.Files, o.r)
			}
		}
	}
	// With --changed-since, a run whose changed files hold nothing to check checked all it was
	// asked to: the files it left out are said in the summary; so did one whose files the
	// config left out, or one told to skip what it does not know (--skip-unknown).
	if checked == 0 && len(paths) > 0 && l.Left == 0 && l.Excluded == 0 && !l.skipAll {
		in.Files = nothingChecked(in, paths)
	}
	in.Files = l.Finish(ForgetRecorded(in.Files))
	return in, nil
}

// walkItem is one step of a walk, in the walk's order: a file to read (read; out is then its
// outcome), a result or a skip decided without reading, or the end of one path's walk (end,
// with the walk's error and the path it was at).
type walkItem struct {
	path    string
	kind    files.Kind
	named   bool
	read    bool
	out     readOutcome
	file    *FileResult
	skipped *Skipped
	end     bool
	err     error
}

// walkBatch is consecutive items of a walk, handed on together so that a goroutine hands on
// one batch where it would hand on a file: its files to read (reads) are read and linted by
// one worker, one after another, and done is closed when all are. The workers and the taker
// then wake a few hundred times on a tree of 13,760 dashboards, not tens of thousands.
type walkBatch struct {
	items []walkItem
	size  int64 // the bytes of its files to read, as the walk saw them
	reads bool
	done  chan struct{}
}

// A batch is handed on when it holds batchFiles items (files to read, paths skipped) or its
// files reach batchBytes, and at the walk's end: a few milliseconds of a worker's time, and
// a batch with a large file closes there, so the workers share large files as they share many
// small ones.
const (
	batchFiles = 32
	batchBytes = 1 << 20
)

// readOutcome is what readInput returned for one file.
type readOutcome struct {
	r   FileResult
	ok  bool
	err error
}

// walkQueue is a walk in progress: order yields its batches in the walk's order and is closed
// when the walk has ended.
type walkQueue struct {
	order  chan *walkBatch
	stop   chan struct{} // closed when the items are no longer taken
	cancel context.CancelFunc
	wg     *sync.WaitGroup
}

// close ends the walk and the workers, whether or not every item was taken, and waits for
// them: no goroutine of a run outlives it, and a worker blocked on a pipe is released.
func (q walkQueue) close() {
	close(q.stop)
	q.cancel()
	for range q.order {
	}
	q.wg.Wait()
}

// walkAll walks paths in one goroutine and reads and lints the files it finds in l.jobs
// workers, in batches (walkBatch). The walk runs ahead of the workers by at most 4 x jobs
// batches, which it blocks on until they are taken: a run has at most jobs files read at once
// (one a worker), and the results of at most 4 x jobs x batchFiles files waiting for the
// taker. The walk ahead keeps a worker from waiting for the walk to be scheduled, and the
// batches from waking goroutines a file.
//
// The walk itself stops at ctx's end and hands on an end item saying so; until the items stop
// being taken (walkQueue.close) every item is handed on, so the taker always learns where the
// walk stopped.
func (l *Linter) walkAll(ctx context.Context, paths []string) walkQueue {
	jobs := max(l.jobs, 1)
	q := walkQueue{order: make(chan *walkBatch, 4*jobs), stop: make(chan struct{}), wg: &sync.WaitGroup{}}
	var rctx context.Context // the workers': ends with ctx, or when the taker stops
	rctx, q.cancel = context.WithCancel(ctx)
	order, work, wg := q.order, make(chan *walkBatch, cap(q.order)), q.wg
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf *[]byte // the worker's read buffer, when the files' text is not kept
			if !l.keepText {
				buf = new([]byte)
			}
			for b := range work {
				for i := range b.items {
					it := &b.items[i]
					switch {
					case !it.read:
					case rctx.Err() != nil:
						it.out.err = rctx.Err()
					default:
						it.out.r, it.out.ok, it.out.err = l.readInput(rctx, it.path, it.kind, it.named, buf)
					}
				}
				close(b.done)
			}
		}()
	}
	b := &walkBatch{}
	// flush hands the batch on, in order; false when the run ended.
	flush := func() bool {
		h := b
		b = &walkBatch{}
		if len(h.items) == 0 {
			return true
		}
		if h.reads {
			h.done = make(chan struct{})
		}
		select {
		case order <- h:
		case <-q.stop:
			return false
		}
		if !h.reads {
			return true
		}
		select {
		case work <- h:
			return true
		case <-q.stop:
			for i := range h.items {
				h.items[i].out.err = errStopped
			}
			close(h.done)
			return false
		}
	}
	// put adds an item to the batch, handing the batch on when it is full; false when the run
	// ended.
	//
	// A pipe named on the command line is a batch of its own: its read waits for its writer,
	// which may serve a pipe named after it first (one script rendering both), and another
	// worker must then be reading that one.
	put := func(it walkItem, size int64) bool {
		pipe := it.read && it.kind == files.Pipe
		if pipe && !flush() {
			return false
		}
		b.items = append(b.items, it)
		if it.read {
			b.reads = true
			b.size += size
		}
		if it.end || pipe || b.size >= batchBytes || len(b.items) >= batchFiles {
			return flush()
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		defer flush()
		var w files.Walker
		for _, p := range paths {
			if err := ctx.Err(); err != nil {
				put(walkItem{end: true, path: p, err: err}, 0)
				return
			}
			at := p // the path being read, for an error or an interruption
			err := w.Walk(ctx, p, func(path string, kind files.Kind, named bool, size int64) error {
				at = path
				if err := ctx.Err(); err != nil {
					return err
				}
				if !l.keep(path) {
					return nil // --changed-since left it out: counted in Left, said in the summary
				}
				if l.leave != nil {
					if why, left := l.leave(path); left {
						l.Excluded++
						if !put(walkItem{path: path, skipped: &Skipped{Path: path, What: skipConfig, Reason: why}}, 0) {
							return errStopped
						}
						return nil
					}
				}
				named = named && !l.skipAll
				it := walkItem{path: path, kind: kind, named: named}
				if !named && fixTemp(filepath.Base(path)) {
					it.skipped = &Skipped{Path: path, What: skipFixTemp,
						Reason: "a temporary file of kvcheck lint --fix, left by a run that was killed (or one running now); the next kvcheck lint --fix that walks this directory removes it"}
				} else {
					it.read = true
				}
				if !put(it, size) {
					return errStopped
				}
				return nil
			}, func(s files.Skip) {
				it := walkItem{path: s.Path}
				if s.Problem {
					r := skippedFile(s.Path, finding.Warning, "not checked: "+s.Reason)
					it.file = &r
				} else {
					it.skipped = &Skipped{Path: s.Path, What: s.What, Reason: s.Reason}
				}
				put(it, 0)
			})
			if err != nil {
				put(walkItem{end: true, path: at, err: err}, 0)
				return
			}
		}
	}()
	return q
}

// errStopped ends a walk whose items are no longer taken.
var errStopped = errors.New("the run stopped taking files")

// readInput reads and lints one file and reports whether it was checked: read, and found to
// hold something kvcheck checks. A file not checked carries a finding saying why when named
// (r is then its result), and says why in r otherwise (skippedAs).
//
// With buf, the file is read into *buf's memory and its text is not kept (Original is nil):
// *buf is then left for the next file when nothing the result holds can point into it (a
// config's facts are not looked into, and a buffer over maxReused is let go).
func (l *Linter) readInput(ctx context.Context, path string, kind files.Kind, named bool, buf *[]byte) (FileResult, bool, error) {
	if kind != files.Regular && kind != files.Pipe {
		return skippedFile(path, finding.Error, "not checked: "+kind.String()+", not a file; kvcheck reads no devices or sockets"), false, nil
	}
	var reuse []byte
	if buf != nil {
		reuse, *buf = *buf, nil
	}
	var src []byte
	var err error
	if kind == files.Regular {
		src, err = files.ReadFound(path, l.max, reuse) // the walk's stat said so
	} else {
		src, err = files.ReadInto(ctx, path, l.max, reuse)
	}
	r, ok, err := l.lintRead(ctx, path, src, err)
	if buf != nil {
		r.Original = nil
		if r.config == nil && cap(src) <= maxReused {
			*buf = src[:0]
		}
	}
	return r, ok, err
}

// maxReused is the largest read buffer a worker keeps for the next file.
const maxReused = 4 << 20

// lintRead lints a file read (src, or the error reading it).
func (l *Linter) lintRead(ctx context.Context, path string, src []byte, err error) (FileResult, bool, error) {
	switch {
	case ctx.Err() != nil:
		return FileResult{}, false, ctx.Err()
	case errors.Is(err, files.ErrTooLarge):
		return skippedFile(path, finding.Error, fmt.Sprintf("file is larger than %d MiB and was not checked: raise --max-file-mib if it really is one dashboard or config", l.max>>20)), false, nil
	case err != nil:
		return FileResult{}, false, err
	case binary(src):
		// Named, not found by walking: the user meant it to be checked, and "no findings"
		// would say it was.
		r := skippedFile(path, finding.Error, "binary content (a NUL byte in its first 8 KiB): not a dashboard, rule file or config, so nothing was checked")
		r.skip = skipBinary
		return r, false, nil
	case len(bytes.TrimSpace(src)) == 0:
		// An empty render or a truncated checkout: a gate that says "no findings" of it
		// would pass what it never saw.
		r := skippedFile(path, finding.Error, "the file is empty: nothing was checked (was it rendered or checked out?)")
		r.skip = skipEmpty
		return r, false, nil
	}
	r := l.File(path, src)
	if recognised(r) {
		return r, true, nil
	}
	msg := "nothing kvcheck checks: read as " + formatList(r.Formats) + ", it is no dashboard, rule file, autoscaler or router or engine config kvcheck knows, and names no metric kvcheck knows"
	if len(r.Formats) == 1 && r.Formats[0] == FormatExposition {
		msg = "a saved /metrics page: it queries nothing, so lint has nothing to check in it (kvcheck hitrate reads it)"
	}
	r.Findings = append(r.Findings, Finding{
		Finding: finding.Finding{Severity: finding.Warning, Code: CodeSkipped, Message: msg, Subject: path, File: path, Line: 1, Column: 1},
		Status:  StatusSkipped,
	})
	r.skip = skipNothing
	return r, false, nil
}

// recognised reports whether linting a file checked something: a query or a name, a format
// kvcheck knows, or a finding of its own.
func recognised(r FileResult) bool {
	if r.Queries > 0 || len(r.Findings) > 0 || r.config != nil {
		return true
	}
	for _, f := range r.Formats {
		switch f {
		case FormatJSON, FormatYAML, FormatText, FormatExposition:
		default:
			return true
		}
	}
	return false
}

// skippedAs is the Skipped entry of a file found in a directory and not checked.
func skippedAs(r FileResult) Skipped {
	s := Skipped{Path: r.Path, What: r.skip}
	if len(r.Findings) > 0 {
		s.Reason = r.Findings[len(r.Findings)-1].Message
	}
	return s
}

// nothingChecked marks a run that checked no file: the named files that held nothing kvcheck
// knows become errors, and when no finding says so already, the first path gets one.
func nothingChecked(in Input, paths []string) []FileResult {
	out := in.Files
	said := false
	for i := range out {
		for j := range out[i].Findings {
			f := &out[i].Findings[j]
			if f.Code == CodeSkipped && f.Severity == finding.Warning {
				f.Severity = finding.Error
			}
			if f.Severity == finding.Error {
				said = true
			}
		}
	}
	if said {
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nothing was checked: %s held no dashboard, rule file, autoscaler or router or engine config kvcheck knows", strings.Join(paths, ", "))
	if len(in.Skipped) == 0 {
		b.WriteString(", and no file at all")
	} else {
		// By class, with at most five paths in all: "(skipped: binary files: a.png;
		// hidden directories: .git)".
		var order []string
		byWhat := map[string][]string{}
		for _, s := range in.Skipped {
			if byWhat[s.What] == nil {
				order = append(order, s.What)
			}
			byWhat[s.What] = append(byWhat[s.What], s.Path)
		}
		shown := 0
		b.WriteString(" (skipped: ")
		for i, w := range order {
			if i > 0 {
				b.WriteString("; ")
			}
			ps := byWhat[w]
			k := min(len(ps), max(5-shown, 1))
			shown += k
			b.WriteString(w + ": " + strings.Join(ps[:k], ", "))
			if k < len(ps) {
				fmt.Fprintf(&b, " and %d more", len(ps)-k)
			}
		}
		b.WriteString(")")
	}
	b.WriteString("; a gate that passed here would pass on nothing")
	return append(out, skippedFile(paths[0], finding.Error, b.String()))
}

// skippedFile is the result of a file not checked, with one file-skipped finding.
func skippedFile(path string, sev finding.Severity, msg string) FileResult {
	return FileResult{Path: path, Formats: []Format{}, Findings: []Finding{{
		Finding: finding.Finding{Severity: sev, Code: CodeSkipped, Message: msg, Subject: path, File: path, Line: 1, Column: 1},
		Status:  StatusSkipped,
	}}}
}

func formatList(fs []Format) string {
	if len(fs) == 0 {
		return "text"
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		if len(parts) == 0 || parts[len(parts)-1] != string(f) {
			parts = append(parts, string(f))
		}
	}
	return strings.Join(parts, ", ")
}

// binary reports content with a NUL byte in its first 8 KiB, as git and grep decide.
func binary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0
}
