package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/report"
)

// tokenizeFlags are the flags of every command that can tokenize through a vLLM server
// (audit, simulate, assess): one struct, bound the same way everywhere.
type tokenizeFlags struct {
	URL         string
	Model       string
	Concurrency int
	Timeout     time.Duration
}

// defaultTokenize are the flags' defaults, for commands the demo builds without flags.
var defaultTokenize = tokenizeFlags{Concurrency: 8, Timeout: 30 * time.Second}

// bind registers the flags; scope prefixes their help when they apply to one input only
// (such as "--requests: ").
func (t *tokenizeFlags) bind(fs *pflag.FlagSet, scope string) {
	fs.StringVar(&t.URL, "tokenize", "", scope+"base URL of a vLLM server: exact tokens from its POST /tokenize, block size from its /metrics")
	fs.StringVar(&t.Model, "model", "", scope+"model name to send to /tokenize (default: each request's own)")
	fs.IntVar(&t.Concurrency, "concurrency", defaultTokenize.Concurrency, scope+"tokenize requests in flight with --tokenize")
	fs.DurationVar(&t.Timeout, "timeout", defaultTokenize.Timeout, scope+"timeout of each request to the --tokenize server")
}

// validate checks the values before any work is done.
func (t *tokenizeFlags) validate() error {
	switch {
	case t.Concurrency < 1 || t.Concurrency > 256:
		return usageErrorf("--concurrency %d: want 1 to 256", t.Concurrency)
	case t.Timeout <= 0:
		return usageErrorf("--timeout %s: must be positive", t.Timeout)
	case t.Model != "" && t.URL == "":
		return usageErrorf("--model needs --tokenize")
	}
	return nil
}

// connect sets up --tokenize (audit.Connect: block size and prefix-caching setting from the
// server's /metrics) and says on stderr when the server does not give its block size.
func (t *tokenizeFlags) connect(ctx context.Context, st *report.Status, fallback int) (audit.Remote, error) {
	r, err := audit.Connect(ctx, t.URL, t.Model, t.Timeout, fallback)
	if err == nil && r.Assumed {
		st.Note("%s/metrics has no vllm:cache_config_info; assuming block size %d", r.Server.Shown(), r.BlockSize)
	}
	return r, err
}
