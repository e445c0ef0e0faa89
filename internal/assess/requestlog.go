package assess

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/litellmdb"
)

// OpenRequestLog sets up the request log at path for the audit and the replays, which read it up
// to three times: "-" is stdin, spooled to a temporary file first, which cleanup (never nil)
// removes. With remote, the --tokenize server, tokens come from it in its block size, and its
// prefix-caching-off finding goes with the log's. The log's format is told from its content
// (audit.OpenSource); LiteLLM's database (a postgres:// address, read within so's window) is
// connected to once, and each read is a cursor in one read-only transaction, so the three reads
// see the same rows.
func OpenRequestLog(ctx context.Context, path string, stdin io.Reader, blockSize int, remote *audit.Remote, so audit.SourceOptions) (_ *RequestLog, cleanup func(), _ error) {
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
	if path == "-" {
		rl.Name = "standard input"
		tmp, err := os.CreateTemp("", "kvcheck-requests-*.jsonl")
		if err != nil {
			return nil, cleanup, fmt.Errorf("requests: spool standard input: %w", err)
		}
		cleanup = func() { _ = os.Remove(tmp.Name()) }
		_, err = io.Copy(tmp, stdin)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("requests: spool standard input to %s: %w", tmp.Name(), err)
		}
		path = tmp.Name()
	}
	rl.Open = func() (io.ReadCloser, error) { return audit.OpenSource(ctx, path, nil, so) }
	return rl, cleanup, nil
}
