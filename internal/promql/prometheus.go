package promql

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// Querier is the part of the Prometheus HTTP API hitrate uses; promv1.API provides it.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
}

// Prometheus reads the figures from a Prometheus-compatible API with a fixed set of queries,
// whatever the number of replicas.
type Prometheus struct {
	API Querier
	// URL names the server in messages.
	URL string
	// Window is the rate window.
	Window time.Duration
	// Selector holds extra matchers such as `namespace="prod"`, without braces.
	Selector string
	// By are the replica labels; empty means detect (pod, else instance; engines summed).
	By []string
	// Timeout bounds each query.
	Timeout time.Duration
	// Time is the evaluation time; zero means now.
	Time time.Time
	// Verbose keeps the start of an answer that is not the API's JSON in errors (HideBody).
	Verbose bool
}

// tagLabel carries the metric name through aggregations, so one query returns several metrics.
const tagLabel = "kvcheck_metric"

// presentTag tags the series of the gauges query that say which prefix-cache counters have a
// sample at the evaluation time.
const presentTag = "present"

// NormalizeSelector checks a --selector value and returns it in canonical form.
func NormalizeSelector(sel string) (string, error) {
	sel = strings.TrimSpace(sel)
	sel = strings.TrimSuffix(strings.TrimPrefix(sel, "{"), "}")
	if sel == "" {
		return "", nil
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + sel + "}")
	if err != nil {
		return "", fmt.Errorf("selector %q: %w", sel, err)
	}
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			return "", fmt.Errorf("selector %q: do not match on the metric name; hitrate picks the names", sel)
		}
		parts = append(parts, m.String())
	}
	return strings.Join(parts, ","), nil
}

// query is one of the fixed PromQL queries.
type query struct {
	name string
	expr string
}

// groupLabels are the labels every engine query keeps: the replica labels, the engine and the
// model. Grouping by more than needed is harmless; the client folds them per --by.
func (p Prometheus) groupLabels() []string {
	g := slices.Clone(p.By)
	if len(g) == 0 || slices.Equal(g, []string{"engine"}) {
		g = []string{"pod", "instance"}
	}
	// pod and instance always: a series without the --by labels is still told apart by the
	// replica it comes from, not summed with every other such series into one row.
	for _, l := range []string{"pod", "instance", "engine", "model_name"} {
		if !slices.Contains(g, l) {
			g = append(g, l)
		}
	}
	return g
}

// Queries returns the fixed set of queries, all evaluated at once. Their number does not depend
// on the number of replicas.
func (p Prometheus) Queries() []query {
	by := strings.Join(p.groupLabels(), ", ")
	sel := `server=""` // the production-stack router's series carry a server label
	if p.Selector != "" {
		sel = p.Selector + "," + sel
	}
	w := model.Duration(p.Window).String()
	tagged := func(agg string, inner func(name string) string, keep func(metricName) bool) string {
		var parts []string
		for _, mn := range names() {
			if keep(mn) {
				parts = append(parts, fmt.Sprintf(`label_replace(%s by (%s) (%s), "%s", "%s", "", "")`, agg, by, inner(mn.name), tagLabel, mn.name))
			}
		}
		return strings.Join(parts, " or ")
	}
	counters := func(mn metricName) bool { return mn.counter }
	rate := func(n string) string { return fmt.Sprintf("rate(%s{%s}[%s])", n, sel, w) }
	resets := func(n string) string { return fmt.Sprintf("resets(%s{%s}[%s])", n, sel, w) }
	instant := func(n string) string { return fmt.Sprintf("%s{%s}", n, sel) }
	routerSel := `__name__=~"vllm:.+",server!=""`
	stackSel := stackMatcher()
	if p.Selector != "" {
		routerSel = p.Selector + "," + routerSel
		stackSel = p.Selector + "," + stackSel
	}
	// The prefix-cache counters at the end of the window, by name: a replica whose counters
	// have a rate over the window but no sample at its end stopped inside it, and one with a
	// sample but no rate started too late in it for one.
	var prefix []string
	for _, mn := range names() {
		if mn.q == qQueries || mn.q == qHits {
			prefix = append(prefix, mn.name)
		}
	}
	present := fmt.Sprintf(`label_replace(count by (%s, __name__) ({__name__=~"%s",%s}), "%s", "%s", "", "")`, by, strings.Join(prefix, "|"), sel, tagLabel, presentTag)
	return []query{
		{"counters", tagged("sum", rate, counters)},
		{"resets", tagged("sum", resets, counters)},
		{"gauges", tagged("avg", instant, func(mn metricName) bool { return !mn.counter && mn.weighted }) + " or " +
			tagged("sum", instant, func(mn metricName) bool { return !mn.counter && !mn.weighted }) + " or " + present},
		// The cache configuration's labels are kept whole (num_gpu_blocks too, the KV cache's
		// size assess simulates), so this is the one read of vllm:cache_config_info.
		{"config", fmt.Sprintf("max by (%s, block_size, enable_prefix_caching, num_gpu_blocks, mamba_block_size, mamba_cache_mode, %s) (%s{%s})", by, strings.Join(versionLabels, ", "), configInfo, sel)},
		{"routers", fmt.Sprintf("count by (server) ({%s})", routerSel)},
		// The routers' own metric families (routerFamilies), one series a family name: the
		// products the user runs, for assess's stack rule, as a dump shows them by name.
		{"stacks", fmt.Sprintf("count by (__name__) ({%s})", stackSel)},
	}
}

// stackMatcher matches the names of the routers' own metric families (routerFamilies).
func stackMatcher() string {
	var prefixes []string
	for _, f := range routerFamilies() {
		prefixes = append(prefixes, f.prefix)
	}
	return `__name__=~"(` + strings.Join(prefixes, "|") + `).+"`
}

// Collect runs the queries concurrently and assembles the Input.
func (p Prometheus) Collect(ctx context.Context) (Input, error) {
	at := p.Time
	if at.IsZero() {
		at = time.Now()
	}
	qs := p.Queries()
	results := make([]model.Vector, len(qs))
	errs := make([]error, len(qs))
	stats := make([]QueryStat, len(qs))
	warnings := make([]promv1.Warnings, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() {
			qctx := ctx
			if p.Timeout > 0 {
				var cancel context.CancelFunc
				qctx, cancel = context.WithTimeout(ctx, p.Timeout)
				defer cancel()
			}
			start := time.Now()
			var opts []promv1.Option
			if p.Timeout > 0 {
				opts = append(opts, promv1.WithTimeout(p.Timeout))
			}
			v, warns, _, err := p.API.Query(qctx, q.expr, at, opts...)
			stats[i] = QueryStat{Name: q.name, Seconds: time.Since(start).Seconds()}
			if err != nil {
				errs[i] = p.queryError(q, err)
				return
			}
			warnings[i] = warns
			vec, ok := v.(model.Vector)
			if !ok {
				errs[i] = fmt.Errorf("%s: query %s: got a %s, want an instant vector", p.URL, q.name, v.Type())
				return
			}
			results[i] = vec
			stats[i].Series = len(vec)
		})
	}
	wg.Wait()
	// An unreachable server fails every query the same way: report the first failure once.
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 1 {
		return Input{}, failed[0]
	}
	if len(failed) > 1 {
		return Input{}, fmt.Errorf("%w (and %d more of the %d queries failed)", failed[0], len(failed)-1, len(qs))
	}
	byName := map[string]model.Vector{}
	for i, q := range qs {
		byName[q.name] = results[i]
	}
	results = nil
	// Each answer is let go as it is read into points, a sample at a time, so that an answer
	// and the points made of it are not held at once.
	take := func(name string) iter.Seq[*model.Sample] {
		vec := byName[name]
		delete(byName, name)
		return func(yield func(*model.Sample) bool) {
			for i, s := range vec {
				vec[i] = nil
				if !yield(s) {
					return
				}
			}
		}
	}
	in := Input{Source: SourcePrometheus, Inputs: []string{p.URL}, Mode: ModeRate, Window: p.Window.Seconds(), Queries: stats,
		Warnings: serverWarnings(qs, warnings)}
	resetsOf := map[answerKey]float64{}
	for s := range take("resets") {
		resetsOf[keyOf(string(s.Metric[tagLabel]), s.Metric)] = float64(s.Value)
	}
	g := grouping{by: p.By}
	live := map[string]bool{} // replicas with a prefix-cache counter at the window's end
	// carries says some series carries one of the --by labels (carriesBy, as the points go by).
	carries := len(p.By) == 0
	// The points go to assemble as they are made, so none is held after it is counted.
	points := func(yield func(point) bool) {
		emit := func(pt point) bool {
			carries = carries || slices.ContainsFunc(p.By, func(b string) bool { return pt.labels[b] != "" })
			return yield(pt)
		}
		rated := map[answerKey]bool{}
		for s := range take("counters") {
			name := string(s.Metric[tagLabel])
			// rate() is per second; the observation holds the increase over the window, which
			// is how Prometheus's increase() relates to rate().
			k := keyOf(name, s.Metric)
			rated[k] = true
			if !emit(point{name: name, labels: plain(s.Metric), value: float64(s.Value) * p.Window.Seconds(), resets: resetsOf[k]}) {
				return
			}
		}
		for s := range take("gauges") {
			if s.Metric[tagLabel] == presentTag {
				name := string(s.Metric[model.MetricNameLabel])
				m := s.Metric.Clone()
				delete(m, model.MetricNameLabel)
				live[g.key(plain(m))] = true
				if !rated[keyOf(name, m)] && !emit(point{name: name, labels: plain(m), fresh: true}) {
					return
				}
				continue
			}
			if !emit(point{name: string(s.Metric[tagLabel]), labels: plain(s.Metric), value: float64(s.Value)}) {
				return
			}
		}
		for s := range take("config") {
			if !emit(point{name: configInfo, labels: plain(s.Metric), value: float64(s.Value)}) {
				return
			}
		}
	}
	asm := assemble(points, g, p.Window.Seconds())
	in.Observations = asm.obs
	for _, o := range asm.obs {
		if (o.Queries != nil || o.Hits != nil) && !live[o.Replica] {
			in.Gone = append(in.Gone, cmp.Or(o.Replica, "(no replica label)"))
		}
	}
	for s := range take("routers") {
		in.Routers = append(in.Routers, string(s.Metric["server"]))
	}
	slices.Sort(in.Routers)
	var families []string
	for s := range take("stacks") {
		families = append(families, string(s.Metric[model.MetricNameLabel]))
	}
	// Named by the first family of each product in name order, as a dump's are by the first
	// seen: the same answer whatever order the server gives the series in.
	slices.Sort(families)
	for _, f := range families {
		in.Stacks = addStack(in.Stacks, routerStackOf(f), f)
	}
	if len(in.Observations) == 0 {
		hint := "is Prometheus scraping vLLM, and does --selector match?"
		if len(in.Routers) > 0 {
			hint = "only " + cmp.Or(serverLabelRouter().ID, "router") + " router series (label server) matched; the engines' own /metrics are not scraped"
		}
		sel := p.Selector
		if sel == "" {
			sel = "none"
		}
		return in, fmt.Errorf("%s: no vLLM engine series over the last %s (selector: %s): %s", p.URL, model.Duration(p.Window), sel, hint)
	}
	if !carries {
		// Every series would fold into one row that reads like a single replica.
		return in, fmt.Errorf("%s: --by %s: no vLLM series carries these labels; see the labels of vllm:prefix_cache_queries_total in Prometheus, or leave --by out (pod, else instance)", p.URL, strings.Join(p.By, ","))
	}
	for i := range in.Observations {
		if in.Observations[i].Replica == "" {
			in.Observations[i].Replica = "(no replica label)"
		}
	}
	return in, nil
}

// serverWarnings folds the warnings of the queries into one per distinct text, naming the
// queries that got it. Thanos and Mimir answer a query that missed a store with status success
// and a "partial response" warning: the figures then miss series, so the warning must reach the
// report rather than be dropped.
func serverWarnings(qs []query, warnings []promv1.Warnings) []ServerWarning {
	var out []ServerWarning
	for i, ws := range warnings {
		for _, w := range ws {
			j := slices.IndexFunc(out, func(sw ServerWarning) bool { return sw.Warning == w })
			if j < 0 {
				out = append(out, ServerWarning{Warning: w})
				j = len(out) - 1
			}
			out[j].Queries = append(out[j].Queries, qs[i].name)
		}
	}
	return out
}

func plain(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != tagLabel {
			out[string(k)] = string(v)
		}
	}
	return out
}

// answerKey names a series across the queries: the metric's name and a hash of its labels but
// the tag and __name__ (model.SignatureWithoutLabels, 64-bit FNV-1a: two series of one answer
// share one with a chance of about n²/2^65, 10^-8 for a million series), so that an answer's
// series are not written out again as strings to be matched.
type answerKey struct {
	name string
	sig  uint64
}

var notIdentity = map[model.LabelName]struct{}{tagLabel: {}, model.MetricNameLabel: {}}

func keyOf(name string, m model.Metric) answerKey {
	return answerKey{name, model.SignatureWithoutLabels(m, notIdentity)}
}

func (p Prometheus) queryError(q query, err error) error {
	if !p.Verbose {
		err = HideBody(err)
	}
	var apiErr *promv1.Error
	hint := ""
	if errors.As(err, &apiErr) {
		switch {
		case strings.Contains(apiErr.Msg, "401") || strings.Contains(apiErr.Msg, "403"):
			hint = ": check --bearer-token-file, --basic-auth-user or --http-config-file"
		case apiErr.Type == promv1.ErrTimeout || apiErr.Type == promv1.ErrCanceled:
			hint = ": raise --query-timeout or shorten --window"
		case apiErr.Type == promv1.ErrBadData:
			hint = ": check --selector and --by"
		case strings.Contains(apiErr.Msg, "404"):
			hint = ": no Prometheus query API at this URL; give the base URL the API hangs off (with its path prefix, such as /prometheus for Mimir)"
		case apiErr.Type == promv1.ErrBadResponse:
			// A login page, a Grafana URL or a plain web server answers 200 with HTML.
			hint = ": the answer is not the Prometheus API's JSON; is this the Prometheus (or Thanos, Mimir) URL, not a UI or login page?"
		}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		hint = ": is the server running and the address right?"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		hint = ": no answer within --query-timeout " + p.Timeout.String()
	}
	return fmt.Errorf("%s: query %s: %w%s", p.URL, q.name, err, hint)
}

// finite reports whether v is a usable number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
