package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/cli"
	"github.com/kvcheck/kvcheck/internal/litellmdb"
)

// bindRequestSource registers the flags that window a request log read from LiteLLM's
// database (audit, simulate, assess: --requests postgres://...) into o.
func bindRequestSource(fs *pflag.FlagSet, o *audit.SourceOptions) {
	fs.Var(&cli.Time{T: &o.Window.Since}, "since", `--requests postgres://...: read rows whose startTime is at or after this: an RFC 3339 time, a date (2006-01-02, UTC), or a duration before now ("24h")`)
	fs.Var(&cli.Time{T: &o.Window.Until}, "until", "--requests postgres://...: read rows whose startTime is before this (same forms as --since)")
	fs.IntVar(&o.Window.MaxRows, "max-rows", 0, fmt.Sprintf("--requests postgres://...: the most rows to read, in startTime order (0: %d)", litellmdb.DefaultMaxRows))
}
