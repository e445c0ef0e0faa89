package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/report"
	"io"
)

type auditOptions struct {
	Requests string
	// stdin is what --requests - reads.
	stdin     io.Reader
	tok       tokenizeFlags
	BlockSize int
	MaxBlocks int
	MaxLine   int
	FailOn    failOn
	templates []string
	blockSet  bool
}

func newAuditCmd(s streams, g *globalOptions) *cobra.Command {
	opts := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit [TEMPLATE|DIR...] [--requests FILE]",
		Short: "Find what breaks the prefix cache from block zero, in templates and in real requests",
		Long: `audit finds dynamic content (dates, clocks, ids, per-user values) early in prompts, where it
makes every later KV-cache block differ so that no router can share them.

Templates: Jinja chat templates (.jinja, .j2), tokenizer_config.json (chat_template, also the list
of named templates), Python prompt modules (.py: string constants, f-strings, .format and the code
that fills them) and text or Markdown prompts (.txt, .md, .prompt) with {var}, {{ var }} or $var
placeholders. A directory is audited as one unit, so a prompt in one file and the code filling it
in another are matched. Each finding has a position (breaker: in block 0; early: before most of
the static text or the conversation; late: after it), a change frequency, a severity and a fix;
each template gets a verdict (breaker, early, late, clean, or unknown when the prompt a value
fills is not among the inputs).

Requests (--requests): JSONL of OpenAI chat or completion bodies, one per line, or gateway exports
with the body under a key (detected); "-" reads standard input. The audit streams the file and
reports the shareable prefill for an unbounded shared cache, split into cross-session and
within-session reuse, the share of requests whose first block is unique, the shared-prefix
distribution, and where requests diverge and why.

Tokens are estimated from bytes (4 bytes a token) and marked estimated, unless --tokenize names a
vLLM server: then each distinct conversation goes to its POST /tokenize (the real chat template),
the block size comes from its /metrics, and the server's own template is probed by rendering one
conversation with two dates.

` + exitCodesHelp,
		Example: `  kvcheck audit templates/
  kvcheck audit --requests gateway.jsonl
  kvcheck audit --requests gateway.jsonl --tokenize http://127.0.0.1:8000 -o json
  kvcheck audit chat_template.jinja --fail-on error`,
		RunE: g.command(func(cmd *cobra.Command, args []string) (report.Result, error) {
			opts.templates = args
			opts.blockSet = cmd.Flags().Changed("block-size")
			opts.stdin = s.In
			return runAudit(cmd.Context(), g.status, opts)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Requests, "requests", "", `JSONL request log to audit ("-" for standard input)`)
	opts.tok.bind(f, "")
	f.IntVar(&opts.BlockSize, "block-size", audit.DefaultBlockSize, "KV-cache block size in tokens (read from the server with --tokenize)")
	f.IntVar(&opts.MaxBlocks, "max-blocks", audit.DefaultMaxBlocks, "bound on indexed blocks and on session-block pairs (about 50 bytes a block); past it reuse figures are lower bounds")
	f.IntVar(&opts.MaxLine, "max-line", audit.DefaultMaxLine, "longest accepted request line in bytes")
	f.StringVar((*string)(&opts.FailOn), "fail-on", "", "exit 3 when a finding reaches this severity: error, warning or info")
	return cmd
}

func runAudit(ctx context.Context, st *report.Status, opts *auditOptions) (report.Result, error) {
	switch {
	case len(opts.templates) == 0 && opts.Requests == "" && opts.tok.URL == "":
		return report.Result{}, usageErrorf("nothing to audit: give template files or directories, --requests FILE, or --tokenize URL")
	case opts.BlockSize <= 0:
		return report.Result{}, usageErrorf("--block-size %d: must be a positive number of tokens", opts.BlockSize)
	case opts.MaxBlocks <= 0:
		return report.Result{}, usageErrorf("--max-blocks %d: must be positive", opts.MaxBlocks)
	case opts.MaxLine <= 0:
		return report.Result{}, usageErrorf("--max-line %d: must be positive", opts.MaxLine)
	}
	if err := opts.tok.validate(); err != nil {
		return report.Result{}, err
	}

	var remote *audit.Remote
	if opts.tok.URL != "" {
		r, err := opts.tok.connect(ctx, st, opts.BlockSize)
		if err != nil {
			return report.Result{}, err
		}
		remote = &r
	}
	res, err := audit.RunAudit(ctx, st, audit.RunOptions{
		Templates: opts.templates, Requests: opts.Requests, Stdin: opts.stdin,
		BlockSize: opts.BlockSize, BlockSizeGiven: opts.blockSet, MaxBlocks: opts.MaxBlocks,
		MaxLine: opts.MaxLine, Concurrency: opts.tok.Concurrency, Remote: remote,
	})
	if err != nil {
		return report.Result{}, err
	}
	return report.Audit(res), nil
}
