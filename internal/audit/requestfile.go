package audit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kvcheck/kvcheck/internal/litellmdb"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// OpenRequests opens a request log: the file, or stdin for "-"; name is what messages and
// reports call it. closeFn closes the file. A UTF-8 byte order mark at the start (PowerShell's
// Out-File and Notepad write one) is skipped, as RFC 8259 lets a JSON reader do: the first
// request is then read, not skipped as "not a JSON object". The log's format is told from its
// content (see Source); r reports what it lost through ReportOf once read.
func OpenRequests(path string, stdin io.Reader) (r io.Reader, name string, closeFn func(), err error) {
	src, err := OpenSource(context.Background(), path, stdin, SourceOptions{})
	if err != nil {
		return nil, "", nil, err
	}
	return src, src.Name, func() { _ = src.Close() }, nil
}

// OpenSource opens the request log at path: a file, "-" for stdin, or LiteLLM's database
// ("postgres://..." or "postgresql://...", read within opts.Window), and tells its format from
// its content.
func OpenSource(ctx context.Context, path string, stdin io.Reader, opts SourceOptions) (*Source, error) {
	if litellmdb.IsDSN(path) {
		db, err := litellmdb.Connect(ctx, path)
		if err != nil {
			return nil, err
		}
		src, err := DatabaseSource(ctx, db, opts)
		if err != nil {
			db.Close()
			return nil, err
		}
		closeRows := src.closer
		src.closer = func() { closeRows(); db.Close() }
		return src, nil
	}
	if path == "-" {
		r, err := skipBOM(stdin, "standard input")
		if err != nil {
			return nil, err
		}
		return detect(r, "standard input", opts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open request log: %w", err)
	}
	r, err := skipBOM(f, path)
	if err == nil {
		var src *Source
		if src, err = detect(r, path, opts); err == nil {
			src.closer = func() { _ = f.Close() } // read only: nothing to lose on close
			return src, nil
		}
	}
	_ = f.Close()
	return nil, err
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// skipBOM returns r without a leading UTF-8 byte order mark. UTF-16 text (PowerShell 5's
// default for Out-File and ">") is refused by name: every line of it would be skipped as not
// JSON.
func skipBOM(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReader(r)
	b, _ := br.Peek(len(utf8BOM))
	switch {
	case bytes.HasPrefix(b, utf8BOM):
		_, _ = br.Discard(len(utf8BOM)) // peeked: the bytes are buffered
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}), bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return nil, fmt.Errorf("request log %s: saved as UTF-16 text (PowerShell 5's Out-File or > writes it): save it as UTF-8 (Out-File -Encoding utf8)", name)
	}
	return br, nil
}

// Check returns a usage error for a window that cannot apply to the request log requests:
// --since, --until and --max-rows window a database only, and since must come before until.
func (o SourceOptions) Check(requests string) error {
	w := o.Window
	switch {
	case w.Given() && !litellmdb.IsDSN(requests):
		return usage.Errorf("--since, --until and --max-rows apply to --requests postgres://... (LiteLLM's database); a file is read whole")
	case w.MaxRows < 0:
		return usage.Errorf("--max-rows %d: want a positive number of rows (0: %d)", w.MaxRows, litellmdb.DefaultMaxRows)
	case !w.Since.IsZero() && !w.Until.IsZero() && !w.Since.Before(w.Until):
		return usage.Errorf("--since %s is not before --until %s", w.Since.UTC().Format(time.RFC3339), w.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// DatabaseSource opens one read of LiteLLM's database db within opts.Window, as OpenSource
// does for a database address; the read is closed with the source, the database is not.
// kvcheck assess reads the log three times through one db, so every read sees the same rows.
func DatabaseSource(ctx context.Context, db *litellmdb.DB, opts SourceOptions) (*Source, error) {
	w := opts.Window
	if w.MaxRow == 0 {
		w.MaxRow = opts.MaxLine
	}
	rows, err := db.Rows(ctx, w)
	if err != nil {
		return nil, err
	}
	src, err := detect(rows, rows.Name(), opts)
	if err != nil {
		_ = rows.Close()
		return nil, err
	}
	src.closer = func() { _ = rows.Close() }
	src.notes = rows.Notes
	return src, nil
}
