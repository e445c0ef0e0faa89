package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kvcheck/kvcheck/internal/secret"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Routes writes every request's route (simulate --routes, assess --routes) as JSON Lines, one
// object per request sent (each sibling of an n > 1 request its own) and replay:
//
//	{"policy":"kv-llmd","variant":"","label":"","replicas":4,"kv_blocks":65536,"request":0,"sibling":0,"replica":2,"prompt_tokens":1200,"cached_tokens":1184,"reason":"prefix-match"}
//
// The replays come in the order the caller gives them (a sweep's results, a ranking's rows)
// and each one's routes in the order the requests were sent. A file is written beside its
// path and renamed over it by Commit, so a run that fails or is interrupted leaves no half
// file; "-" writes to standard output as the routes come. Memory: the write buffer (64 KiB)
// and one line, whatever the number of requests.
type Routes struct {
	path string // "" for standard output
	tmp  *os.File
	w    *bufio.Writer
	line []byte
}

// CheckRoutes checks a --routes path against the command's --output values before any work
// is done: "-" only when no output goes to standard output (the routes would mix with the
// report), and no file one of them, or another file of the run (--plot), writes too.
func CheckRoutes(path string, outs []Output, others ...string) error {
	if path == "" {
		return nil
	}
	if path == "-" {
		for _, o := range outs {
			if o.Path == "" {
				return usage.Errorf("--routes -: standard output carries the %s report; send the report to a file (-o %s=FILE) or the routes to one (--routes FILE)", o.Format, o.Format)
			}
		}
		return nil
	}
	for _, o := range outs {
		others = append(others, o.Path)
	}
	for _, p := range others {
		if p != "" && filepath.Clean(p) == filepath.Clean(path) {
			return usage.Errorf("--routes %s: another output of the run writes that file; give the routes their own", path)
		}
	}
	return nil
}

// CreateRoutes starts the routes' output: path "-" is stdout, anything else a file created
// whole by Commit (its directory must be writable now, before the replays run).
func CreateRoutes(path string, stdout io.Writer) (*Routes, error) {
	if path == "-" {
		return &Routes{w: bufio.NewWriterSize(stdout, 64<<10)}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("--routes %s: %w", path, err)
	}
	return &Routes{path: path, tmp: tmp, w: bufio.NewWriterSize(tmp, 64<<10)}, nil
}

// WriteRun writes one replay's routes.
func (r *Routes) WriteRun(run sim.RouteRun) error {
	head := []byte(`{"policy":`)
	head = appendJSONString(head, run.Policy)
	head = append(head, `,"variant":`...)
	head = appendJSONString(head, run.Variant)
	head = append(head, `,"label":`...)
	head = appendJSONString(head, secret.Mask(run.Label))
	head = append(head, `,"replicas":`...)
	head = strconv.AppendInt(head, int64(run.Replicas), 10)
	head = append(head, `,"kv_blocks":`...)
	head = strconv.AppendInt(head, int64(run.KVBlocks), 10)
	reasons := map[string][]byte{}
	err := run.Each(func(rt sim.Route) error {
		reason, ok := reasons[rt.Reason]
		if !ok {
			reason = appendJSONString(nil, rt.Reason)
			reasons[rt.Reason] = reason
		}
		l := append(r.line[:0], head...)
		l = append(l, `,"request":`...)
		l = strconv.AppendInt(l, int64(rt.Request), 10)
		l = append(l, `,"sibling":`...)
		l = strconv.AppendInt(l, int64(rt.Sibling), 10)
		l = append(l, `,"replica":`...)
		l = strconv.AppendInt(l, int64(rt.Replica), 10)
		l = append(l, `,"prompt_tokens":`...)
		l = strconv.AppendInt(l, int64(rt.PromptTokens), 10)
		l = append(l, `,"cached_tokens":`...)
		l = strconv.AppendInt(l, int64(rt.CachedTokens), 10)
		l = append(l, `,"reason":`...)
		l = append(l, reason...)
		l = append(l, "}\n"...)
		r.line = l
		_, err := r.w.Write(l)
		return err
	})
	if err != nil {
		return r.fail(err)
	}
	return nil
}

// fail names the output in a write error.
func (r *Routes) fail(err error) error {
	if r.path == "" {
		return fmt.Errorf("--routes -: %w", err)
	}
	return fmt.Errorf("--routes %s: %w", r.path, err)
}

// OpenRoutes checks --routes path against the run's outputs and --plot (CheckRoutes) and
// starts it (CreateRoutes); nil, nil when path is "" (no --routes).
func OpenRoutes(path string, outs []Output, plot string, stdout io.Writer) (*Routes, error) {
	if err := CheckRoutes(path, outs, plot); err != nil || path == "" {
		return nil, err
	}
	return CreateRoutes(path, stdout)
}

// End ends the output as the run ended: committed when err is nil, dropped otherwise (err is
// returned then). A nil Routes (no --routes) passes err on.
func (r *Routes) End(err error) error {
	switch {
	case r == nil:
		return err
	case err != nil:
		r.Abort()
		return err
	}
	return r.Commit()
}

// Commit ends the output: flushed to standard output, or the file renamed into place.
func (r *Routes) Commit() error {
	if err := r.w.Flush(); err != nil {
		r.Abort()
		return r.fail(err)
	}
	if r.tmp == nil {
		return nil
	}
	err := r.tmp.Chmod(0o644)
	if cerr := r.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.tmp.Name(), r.path)
	}
	if err != nil {
		_ = os.Remove(r.tmp.Name())
		return r.fail(err)
	}
	r.tmp = nil
	return nil
}

// Abort drops a file's output (what went to standard output stays written); a no-op after
// Commit.
func (r *Routes) Abort() {
	if r.tmp != nil {
		_ = r.tmp.Close()
		_ = os.Remove(r.tmp.Name())
		r.tmp = nil
	}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
