package sim

import (
	"context"
	"io"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// ReadRequestFile reads the request log at path ("-": stdin) as ReadRequests does. With remote,
// the --tokenize server, the tokens come from it in its block size, the trace's notes say where
// that block size came from, and the server's prefix-caching-off finding is returned.
func ReadRequestFile(ctx context.Context, path string, stdin io.Reader, opts RequestLogOptions, remote *audit.Remote) (*Trace, []finding.Finding, error) {
	var fs []finding.Finding
	if remote != nil {
		opts.BlockSize, opts.Tokenizer = remote.BlockSize, remote.Server
		if remote.CachingOff != nil {
			fs = append(fs, *remote.CachingOff)
		}
	}
	so := opts.Source
	so.MaxLine = opts.MaxLine
	in, err := audit.OpenSource(ctx, path, stdin, so)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = in.Close() }()
	tr, err := ReadRequests(ctx, in, in.Name, opts)
	if err != nil {
		return nil, nil, err
	}
	if remote != nil {
		tr.Notes = append(tr.Notes, remote.BlockSizeNote())
	}
	return tr, fs, nil
}
