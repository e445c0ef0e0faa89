package main

import (
	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/audit"
)

// bindTokenize registers the flags of every command that can tokenize through a vLLM server
// (audit, simulate, assess) into t; scope prefixes their help when they apply to one input
// only (such as "--requests: ").
func bindTokenize(fs *pflag.FlagSet, t *audit.Tokenize, scope string) {
	fs.StringVar(&t.URL, "tokenize", "", scope+"base URL of a vLLM server: exact tokens from its POST /tokenize, block size from its /metrics")
	fs.StringVar(&t.Model, "model", "", scope+"model name to send to /tokenize (default: each request's own)")
	fs.IntVar(&t.Concurrency, "concurrency", audit.DefaultTokenize.Concurrency, scope+"tokenize requests in flight with --tokenize")
	fs.DurationVar(&t.Timeout, "timeout", audit.DefaultTokenize.Timeout, scope+"timeout of each request to the --tokenize server")
}
