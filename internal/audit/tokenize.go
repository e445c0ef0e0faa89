package audit

import (
	"context"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// Tokenize is the --tokenize server of a command that can read exact tokens from vLLM (audit,
// simulate, assess): the one option set every such command binds and checks the same way.
type Tokenize struct {
	// URL is the server's base URL; empty estimates tokens.
	URL string
	// Model is sent to /tokenize; empty sends each request's own.
	Model       string
	Concurrency int
	Timeout     time.Duration
}

// DefaultTokenize are the flags' defaults, for commands run without flags (the demo).
var DefaultTokenize = Tokenize{Concurrency: 8, Timeout: 30 * time.Second}

// Check returns a usage error for values that cannot work, before any work is done.
func (t Tokenize) Check() error {
	switch {
	case t.Concurrency < 1 || t.Concurrency > 256:
		return usage.Errorf("--concurrency %d: want 1 to 256", t.Concurrency)
	case t.Timeout <= 0:
		return usage.Errorf("--timeout %s: must be positive", t.Timeout)
	case t.Model != "" && t.URL == "":
		return usage.Errorf("--model needs --tokenize")
	}
	return nil
}

// Noter is where Connect says that the server does not give its block size (report.Status is
// one).
type Noter interface {
	Note(format string, args ...any)
}

// Connect sets up the server (Connect: block size and prefix-caching setting from its
// /metrics) and notes on n when the server does not give its block size, so fallback is used.
func (t Tokenize) Connect(ctx context.Context, n Noter, fallback int) (Remote, error) {
	r, err := Connect(ctx, t.URL, t.Model, t.Timeout, fallback)
	if err == nil && r.Assumed {
		n.Note("%s/metrics has no vllm:cache_config_info; assuming block size %d", r.Server.Shown(), r.BlockSize)
	}
	return r, err
}
