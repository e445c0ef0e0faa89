package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// Output is one --output: a format and where it goes, standard output when Path is empty.
type Output struct {
	Format Format
	Path   string
}

// ParseOutputs reads the --output values of one run, each FORMAT or FORMAT=PATH ("-" is
// standard output), against the formats the command offers: -o text -o sarif=kvcheck.sarif
// -o github writes the text and the annotations to standard output, in that order, and the
// SARIF log to kvcheck.sarif. Two outputs to one file are a usage error; none means text.
func ParseOutputs(values []string, offered []Format) ([]Output, error) {
	if len(values) == 0 {
		values = []string{string(FormatText)}
	}
	var out []Output
	files := map[string]string{}
	for _, v := range values {
		name, path, hasPath := strings.Cut(v, "=")
		f, err := ParseFormat(name, offered)
		if err != nil {
			return nil, err
		}
		if hasPath && path == "" {
			return nil, usage.Errorf("--output %q: give a file after the = (or - for standard output)", v)
		}
		if path == "-" {
			path = ""
		}
		if path != "" {
			key := filepath.Clean(path)
			if prev, dup := files[key]; dup {
				return nil, usage.Errorf("--output %q and %q write to the same file: give each format its own", prev, v)
			}
			files[key] = v
		}
		out = append(out, Output{Format: f, Path: path})
	}
	return out, nil
}

// Primary is the format a command that writes only to standard output uses (a watch, the
// demo): the first output to standard output, else the first output.
func Primary(outs []Output) Format {
	for _, o := range outs {
		if o.Path == "" {
			return o.Format
		}
	}
	if len(outs) > 0 {
		return outs[0].Format
	}
	return FormatText
}

// WriteOutputs writes the result in every output: standard output's in order to stdout, each
// file's to that file, whole or not at all (written beside it and renamed over it). A failed
// output does not stop the others: a CI step keeps its log when the SARIF path is not
// writable, and the reverse. Text to a file is never coloured.
func WriteOutputs(stdout io.Writer, outs []Output, r Result, o Options) error {
	var errs []error
	for _, out := range outs {
		if out.Path == "" {
			if err := Write(stdout, out.Format, r, o); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		fo := o
		fo.Color = false
		if err := writeFile(out.Path, func(w io.Writer) error { return Write(w, out.Format, r, fo) }); err != nil {
			errs = append(errs, fmt.Errorf("--output %s=%s: %w", out.Format, out.Path, err))
		}
	}
	return errors.Join(errs...)
}

// writeFile writes a file whole: into a temporary file in its directory, then renamed over it,
// so a reader (an upload step, a watcher) never sees half a SARIF log.
func writeFile(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename; removes a failed write
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
