package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
)

// labelName is a Prometheus label name as PromQL's by clause accepts it.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// hitrateOptions are the flags of kvcheck hitrate.
type hitrateOptions struct {
	prom          promOptions
	scrape        []string
	targetsFile   string
	files         []string
	logs          []string
	window        time.Duration
	selector      string
	by            []string
	at            string
	scrapeTimeout time.Duration
	failOn        failOn
	// windowSet records whether --window was given, since each source has its own default.
	windowSet bool
	// progress receives progress lines (stderr, on a terminal only); warn, when set, receives
	// the server's warnings (hitrate reports them as findings instead; assess sets it).
	progress, warn func(string)
}

const hitrateLong = `Per replica: the prefix-cache hit rate in tokens (hits/queries over a window), query volume,
external-tier hit rate, preemptions per second and per 1k requests, KV usage, running and waiting
requests, block size and whether prefix caching is on; then a fleet row (token-weighted hit rate,
spread) and findings.

Exactly one source per run:
  --prometheus URL       Prometheus HTTP API (also Thanos, Mimir, Cortex, VictoriaMetrics): five
                         queries whatever the fleet size, run concurrently (default window 5m)
  --scrape URL...        scrape each replica's /metrics twice, --window apart (default 30s)
  --targets FILE         the same, targets one per line (# comments)
  --file A.prom [--file B.prom]  saved dumps: one gives lifetime totals, two give rates
  --log FILE...          vLLM engine log lines (V1 and V0 formats), the engine's own hit rate

`

func newHitrateCmd(s streams, g *globalOptions) *cobra.Command {
	o := &hitrateOptions{}
	cmd := &cobra.Command{
		Use:   "hitrate",
		Short: "Per-replica prefix-cache hit rate, preemptions and KV usage",
		Long:  hitrateLong + exitCodesHelp,
		Example: `  kvcheck hitrate --prometheus http://prometheus:9090 --selector 'namespace="prod"'
  kvcheck hitrate --scrape 10.0.0.7:8000,10.0.0.8:8000 --window 1m
  kvcheck hitrate --file before.prom --file after.prom --window 60s -o json
  kvcheck hitrate --log vllm.log`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.windowSet = cmd.Flags().Changed("window")
			o.progress = func(string) {}
			if report.IsTerminal(s.ErrOut) {
				o.progress = func(msg string) { fmt.Fprintf(s.ErrOut, "kvcheck: %s\n", msg) }
			}
			return runHitrate(cmd.Context(), s, g, o)
		},
	}
	fs := cmd.Flags()
	o.prom.bind(fs)
	fs.StringSliceVar(&o.scrape, "scrape", nil, "replica /metrics targets (host:port or URL), comma-separated or repeated")
	fs.StringVar(&o.targetsFile, "targets", "", "file listing scrape targets, one per line")
	fs.StringArrayVar(&o.files, "file", nil, "saved /metrics dump (give one, or two of the same replicas for rates)")
	fs.StringArrayVar(&o.logs, "log", nil, "vLLM server log file (repeatable)")
	fs.DurationVar(&o.window, "window", 0, "rate window (default 5m for --prometheus, 30s for --scrape; the time between two --file dumps without timestamps)")
	fs.StringVar(&o.selector, "selector", "", `extra label matchers for --prometheus, such as 'namespace="prod",job="vllm"'`)
	fs.StringSliceVar(&o.by, "by", nil, "replica labels (default: pod, else instance; engines summed; add engine to split them)")
	fs.StringVar(&o.at, "time", "", "evaluation time for --prometheus (RFC 3339 or Unix seconds; default now)")
	fs.DurationVar(&o.scrapeTimeout, "scrape-timeout", 10*time.Second, "timeout of each /metrics request with --scrape")
	fs.StringVar((*string)(&o.failOn), "fail-on", "", "exit 3 when a finding is at or above this severity (info, warning, error)")
	return cmd
}

func runHitrate(ctx context.Context, s streams, g *globalOptions, o *hitrateOptions) error {
	format, err := g.format(report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	if err := o.failOn.validate(); err != nil {
		return err
	}
	in, err := collectHitrate(ctx, o)
	if err != nil {
		return err
	}
	rep := promql.Analyze(in)
	if format == report.FormatJSON {
		err = report.HitrateJSON(s.Out, rep)
	} else {
		err = report.Hitrate(g.text(s.Out), rep)
	}
	if err != nil {
		return err
	}
	if len(rep.Down) > 0 {
		// The table shows what could be read, but the fleet row misses replicas: not a success.
		return fmt.Errorf("%d of %d inputs could not be read (see above): the fleet figures cover only the rest", len(rep.Down), len(rep.Down)+len(rep.Replicas))
	}
	return o.failOn.check(rep.Severities()...)
}

// collectHitrate checks that exactly one source was given and reads it.
func collectHitrate(ctx context.Context, o *hitrateOptions) (promql.Input, error) {
	var given []string
	if o.prom.URL != "" {
		given = append(given, "--prometheus")
	}
	if len(o.scrape) > 0 || o.targetsFile != "" {
		given = append(given, "--scrape/--targets")
	}
	if len(o.files) > 0 {
		given = append(given, "--file")
	}
	if len(o.logs) > 0 {
		given = append(given, "--log")
	}
	if len(given) != 1 {
		if len(given) == 0 {
			return promql.Input{}, usageErrorf("give one source: --prometheus, --scrape (or --targets), --file or --log")
		}
		return promql.Input{}, usageErrorf("give exactly one source, not %s", strings.Join(given, " and "))
	}
	if o.window < 0 || (o.windowSet && o.window == 0) {
		// A zero window would turn every counter's increase into 0: idle replicas everywhere.
		return promql.Input{}, usageErrorf("--window %s: must be positive", o.window)
	}
	if len(o.by) > 0 && given[0] == "--log" {
		return promql.Input{}, usageErrorf("--by applies to metrics, not to --log")
	}
	for _, l := range o.by {
		if !labelName.MatchString(l) {
			return promql.Input{}, usageErrorf("--by %q: not a label name (letters, digits and _, such as pod or namespace)", l)
		}
	}
	if given[0] != "--prometheus" {
		if o.selector != "" {
			return promql.Input{}, usageErrorf("--selector applies to --prometheus only")
		}
		if o.at != "" {
			return promql.Input{}, usageErrorf("--time applies to --prometheus only")
		}
	}
	switch given[0] {
	case "--prometheus":
		return collectPrometheus(ctx, o)
	case "--scrape/--targets":
		return collectScrape(ctx, o)
	case "--file":
		if len(o.files) > 2 {
			return promql.Input{}, usageErrorf("--file given %d times: give one dump (lifetime totals) or two of the same replicas (rates)", len(o.files))
		}
		in, err := promql.FromDumps(o.files, o.window, o.by)
		if errors.Is(err, promql.ErrNeedWindow) {
			return in, usageErrorf("%s and %s: %v", o.files[0], o.files[1], err)
		}
		return in, err
	default:
		return promql.FromLogs(o.logs)
	}
}

func collectPrometheus(ctx context.Context, o *hitrateOptions) (promql.Input, error) {
	api, err := o.prom.api()
	if err != nil {
		return promql.Input{}, err
	}
	sel, err := promql.NormalizeSelector(o.selector)
	if err != nil {
		return promql.Input{}, usageErrorf("--selector: %v", err)
	}
	window := o.window
	if !o.windowSet {
		window = 5 * time.Minute
	}
	at, err := parseTime(o.at)
	if err != nil {
		return promql.Input{}, err
	}
	p := promql.Prometheus{
		API: api, URL: o.prom.shownURL(), Window: window, Selector: sel, By: o.by,
		Timeout: o.prom.QueryTimeout, Time: at, Verbose: o.prom.Verbose,
	}
	in, err := p.Collect(ctx)
	if o.warn != nil {
		for _, w := range in.Warnings {
			o.warn(fmt.Sprintf("%s: query %s: %s", o.prom.shownURL(), strings.Join(w.Queries, ", "), w.Warning))
		}
	}
	return in, err
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.UnixMilli(int64(f * 1000)), nil
	}
	return time.Time{}, usageErrorf("--time %q: give RFC 3339 (2026-11-30T10:00:00Z) or Unix seconds", s)
}

func collectScrape(ctx context.Context, o *hitrateOptions) (promql.Input, error) {
	raw := o.scrape
	if o.targetsFile != "" {
		lines, err := readTargetsFile(o.targetsFile)
		if err != nil {
			return promql.Input{}, err
		}
		raw = append(raw, lines...)
	}
	targets, err := promql.Targets(raw)
	if err != nil {
		return promql.Input{}, usageErrorf("--scrape: %v", err)
	}
	if len(targets) == 0 {
		return promql.Input{}, usageErrorf("--targets %s: no targets in the file", o.targetsFile)
	}
	hc, err := o.prom.httpClient()
	if err != nil {
		return promql.Input{}, err
	}
	window := o.window
	if !o.windowSet {
		window = 30 * time.Second
	}
	sc := promql.Scraper{Client: hc, Timeout: o.scrapeTimeout, By: o.by, Verbose: o.prom.Verbose}
	return sc.Collect(ctx, targets, window, o.progress)
}

func readTargetsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--targets: %w", err)
	}
	defer func() { _ = f.Close() }() // opened for reading: a close error loses nothing
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		out = append(out, strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--targets %s: %w", path, err)
	}
	return out, nil
}
