package assess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/litellmdb"
)

// DefaultMaxSpoolMiB bounds the copy of standard input assess keeps (--max-spool-mib): 4 GiB,
// the prompt text of the largest request log a replay holds (sim.MaxBlockRefs, 64 Mi block
// references of 16 tokens at the estimate's 4 bytes a token).
const DefaultMaxSpoolMiB = 4096

// OpenRequestLog sets up the request log at path for the audit and the replays, which read it up
// to three times (the audit, the replay, the replay once fixed, which needs the audit's
// findings first). With remote, the --tokenize server, tokens come from it in its block size,
// and its prefix-caching-off finding goes with the log's. The log's format is told from its
// content (audit.OpenSource); LiteLLM's database (a postgres:// address, read within so's
// window) is connected to once, and each read is a cursor in one read-only transaction, so the
// three reads see the same rows. A file is read in place. "-" is standard input, copied once into a
// temporary file of at most maxSpoolMiB (DefaultMaxSpoolMiB when 0); past that the copy stops
// with an error naming the bound. The file is removed as soon as it is open, so that no exit
// (an error, Ctrl-C, SIGTERM, even SIGKILL) leaves it behind: the passes read it through the
// open descriptor, which cleanup (never nil) closes. The copy ends with ctx.
func OpenRequestLog(ctx context.Context, path string, stdin io.Reader, blockSize int, remote *audit.Remote, so audit.SourceOptions, maxSpoolMiB int) (_ *RequestLog, cleanup func(), _ error) {
	rl := &RequestLog{Name: path, BlockSize: blockSize}
	cleanup = func() {}
	if remote != nil {
		rl.BlockSize, rl.Tokenizer = remote.BlockSize, remote.Server
		if f := remote.CachingOff; f != nil {
			off := *f
			off.Source = "requests"
			rl.Findings = append(rl.Findings, off)
		}
	}
	if litellmdb.IsDSN(path) {
		db, err := litellmdb.Connect(ctx, path)
		if err != nil {
			return nil, cleanup, fmt.Errorf("requests: %w", err)
		}
		rl.Name = litellmdb.Table + " at " + db.Shown()
		rl.Open = func() (io.ReadCloser, error) { return audit.DatabaseSource(ctx, db, so) }
		return rl, db.Close, nil
	}
	if path != "-" {
		rl.Open = func() (io.ReadCloser, error) { return audit.OpenSource(ctx, path, nil, so) }
		return rl, cleanup, nil
	}
	rl.Name = "standard input"
	if maxSpoolMiB <= 0 {
		maxSpoolMiB = DefaultMaxSpoolMiB
	}
	f, size, left, err := spool(ctx, stdin, int64(maxSpoolMiB)<<20)
	if err != nil {
		return nil, cleanup, err
	}
	cleanup = func() {
		_ = f.Close()
		if left != "" {
			_ = os.Remove(left)
		}
	}
	rl.Open = func() (io.ReadCloser, error) {
		return audit.OpenSource(ctx, "-", io.NewSectionReader(f, 0, size), so)
	}
	return rl, cleanup, nil
}

// spool copies r into an unlinked temporary file of at most max bytes and returns it open,
// with the size copied. left is the file's name where an open file cannot be removed
// (Windows), for the caller to remove once it is closed; "" elsewhere.
func spool(ctx context.Context, r io.Reader, max int64) (f *os.File, size int64, left string, _ error) {
	f, err := os.CreateTemp("", "kvcheck-requests-*.jsonl")
	if err != nil {
		return nil, 0, "", fmt.Errorf("requests: spool standard input (assess reads it more than once): %w", err)
	}
	if os.Remove(f.Name()) != nil {
		left = f.Name()
	}
	fail := func(err error) (*os.File, int64, string, error) {
		_ = f.Close()
		if left != "" {
			_ = os.Remove(left)
		}
		return nil, 0, "", err
	}
	var n int64
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("requests: spool standard input: %w", context.Cause(ctx)))
		}
		k, rerr := r.Read(buf)
		if n+int64(k) > max {
			return fail(fmt.Errorf("requests: standard input is larger than %d MiB (--max-spool-mib), the copy assess keeps to read it three times (the audit, the replay, the replay once fixed): give the log as a file, which is read in place, or raise --max-spool-mib", max>>20))
		}
		if _, err := f.Write(buf[:k]); err != nil {
			return fail(fmt.Errorf("requests: spool standard input to %s: %w", os.TempDir(), err))
		}
		n += int64(k)
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("requests: read standard input: %w", rerr))
		}
	}
	return f, n, left, nil
}
