package main

import (
	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
)

type auditOptions struct {
	run    audit.RunOptions
	FailOn finding.FailOn
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
that fills them), text or Markdown prompts (.txt, .md, .prompt) with {var}, {{ var }} or $var
placeholders, and YAML or JSON configurations that carry a chat template inline (production-stack's
chatTemplateConfigMap, a ConfigMap's chat_template.jinja, an inline --chat-template). A directory
is audited as one unit, so a prompt in one file and the code filling it in another are matched.
Chat templates are rendered offline under pairs of clocks, variables and conversations. Each
finding has a position (breaker: in block 0; early: before most of the static text or the
conversation; late: after it), a change frequency, a severity and a fix; each template gets a
verdict (breaker, early, late, clean, or unknown when the prompt a value fills is not among the
inputs), and a variable nothing settles is judged at its worst and at its best (--assume settles
it).

Requests (--requests): JSONL of OpenAI chat or completion bodies, one per line, or gateway exports
with the body under a key (detected); "-" reads standard input. Told apart by content, the logs
other tools keep are read too: LiteLLM's spend-log rows (exported, or read from its database with
--requests postgres://... and --since/--until/--max-rows), Langfuse exports of observations,
OpenTelemetry GenAI spans as OTLP JSON, and vLLM's own request log lines. The audit streams it and
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
  kvcheck audit --requests postgres://litellm:PASSWORD@db:5432/litellm --since 24h
  kvcheck audit chat_template.jinja --fail-on error`,
		RunE: g.command(func(cmd *cobra.Command, args []string) (report.Result, error) {
			r := &opts.run
			r.Templates, r.BlockSizeGiven, r.Stdin = args, cmd.Flags().Changed("block-size"), s.In
			if err := r.Check(); err != nil {
				return report.Result{}, err
			}
			res, err := audit.RunAudit(cmd.Context(), g.status, *r)
			if err != nil {
				return report.Result{}, err
			}
			return report.Audit(res), nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.run.Requests, "requests", "", `request log to audit: a file (JSONL, LiteLLM spend logs, a Langfuse export, OTLP JSON spans, vLLM's log), "-" for standard input, or LiteLLM's database (postgres://...)`)
	bindTokenize(f, &opts.run.Tokenize, "")
	bindRequestSource(f, &opts.run.Source)
	f.IntVar(&opts.run.BlockSize, "block-size", audit.DefaultBlockSize, "KV-cache block size in tokens (read from the server with --tokenize)")
	f.IntVar(&opts.run.MaxBlocks, "max-blocks", audit.DefaultMaxBlocks, "bound on indexed blocks and on session-block pairs (at most 27 bytes a block: 16 in the index, 11 in the pairs); past it reuse figures are lower bounds")
	f.IntVar(&opts.run.MaxLine, "max-line", audit.DefaultMaxLine, "longest accepted request line in bytes")
	f.StringArrayVar(&opts.run.Code, "code", nil, "directory of the code that fills the templates' variables (repeatable; the templates' own directory is always read)")
	f.StringArrayVar(&opts.run.Assume, "assume", nil, "settle a variable nothing else settles: NAME=fixed|daily|per-request|per-user (also per-session, hourly, per-minute, per-second, monthly; repeatable)")
	f.StringVar((*string)(&opts.FailOn), "fail-on", "", "exit 3 when a finding reaches this severity: error, warning or info (an unsettled variable counts at its worst case)")
	return cmd
}
