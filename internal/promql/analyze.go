package promql

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// Source names where the figures came from.
type Source string

// The sources hitrate reads.
const (
	SourcePrometheus Source = "prometheus"
	SourceScrape     Source = "scrape"
	SourceFile       Source = "file"
	SourceLog        Source = "log"
)

// Mode says what the per-replica figures cover.
type Mode string

// The modes.
const (
	ModeRate     Mode = "rate"     // increases over a window
	ModeLifetime Mode = "lifetime" // totals since each replica started (one dump)
	ModeLog      Mode = "log"      // the engine's own log-line figures
)

// Input is everything a source collected, ready for Analyze.
type Input struct {
	Source Source
	// Inputs name what was read: the Prometheus URL, targets, files.
	Inputs       []string
	Mode         Mode
	Window       float64 // seconds; 0 in lifetime mode
	Observations []Observation
	Routers      []string
	// Stacks are the router products whose own metric families the inputs hold.
	Stacks  []RouterStack
	Down    []Down
	Queries []QueryStat
	// Warnings are what the server said alongside a successful answer, such as a Thanos or
	// Mimir partial response.
	Warnings []ServerWarning
	// Gone are replicas that stopped inside the window: with two readings, in the first and
	// not the second; with Prometheus, series in the window but none at its end.
	Gone []string
}

// ServerWarning is one warning text a Prometheus-compatible server returned with its answer,
// and the queries it came with.
type ServerWarning struct {
	Warning string
	Queries []string
}

// Down is a target or input that could not be read.
type Down struct {
	Target string
	Error  string
}

// QueryStat records one PromQL query: how long it took and how many series it returned.
type QueryStat struct {
	Name    string
	Seconds float64
	Series  int
}

// Replica is the analysed figures of one replica.
type Replica struct {
	Replica string
	Model   string
	// Version is the vLLM version the source reported; VersionFrom says how ("server" for
	// GET /version, "label" for a version label on the series).
	Version     string
	VersionFrom string
	// VersionRange dates the replica by the metric names it exports (the catalog's releases),
	// such as ">=0.9.2 <0.11.0"; empty when the names do not tell.
	VersionRange string
	// HitRate is hits/queries over the window in tokens, or a self-reported rate (see
	// HitRateFrom), 0..1.
	HitRate *float64
	// HitRateFrom is "counters", "v0_gauge" or "log".
	HitRateFrom        string
	Queries            *float64
	QueriesPerSec      *float64
	ExternalHitRate    *float64
	CPUHitRate         *float64
	Preemptions        *float64
	PreemptionsPerSec  *float64
	PreemptionsPer1k   *float64
	PromptTokensPerSec *float64
	KVUsage            *float64
	Running            *float64
	Waiting            *float64
	BlockSize          *int
	PrefixCaching      *bool
	Generation         Generation
	// NumGPUBlocks is the KV cache's size in blocks from vllm:cache_config_info (nil when
	// unknown). kvcheck assess sizes its simulated fleet with it; hitrate does not show it.
	NumGPUBlocks *int
	// Requests is vllm:request_success_total over the window (lifetime totals in lifetime
	// mode; nil when not exported). kvcheck assess weighs a hit rate by the traffic behind it;
	// hitrate does not show it.
	Requests *float64
}

// Fleet sums the replicas up.
type Fleet struct {
	Replicas int
	// HitRate is token-weighted (total hits / total queries) when counters exist, else the plain
	// mean of the self-reported rates; HitRateWeighting says which.
	HitRate          *float64
	HitRateWeighting string
	MinHitRate       *float64
	MaxHitRate       *float64
	// HitRateCV is the coefficient of variation of the per-replica hit rates.
	HitRateCV         *float64
	Queries           *float64
	QueriesPerSec     *float64
	PreemptionsPerSec *float64
	Running           *float64
	Waiting           *float64
}

// Report is the result of hitrate.
type Report struct {
	Source        Source
	Inputs        []string
	Mode          Mode
	WindowSeconds *float64
	Replicas      []Replica
	Fleet         Fleet
	Down          []Down
	RouterSeries  []string
	// Stacks are the router products the metrics show: their own families, and
	// production-stack's router for its vllm: series with a server label.
	Stacks   []RouterStack
	Findings []finding.Finding
	Queries  []QueryStat
}

// Thresholds of the findings. They are deliberately coarse: they flag what deserves a look.
const (
	// preemptionsPer1kWarn: above 1% of requests preempted, re-prefill after eviction is a
	// visible share of the "hits" on vLLM before 0.11.
	preemptionsPer1kWarn = 10.0
	// kvUsageWarn: a KV cache this full evicts cached prefixes and retries admissions.
	kvUsageWarn = 0.90
	// spreadWarn: a replica this far (absolute) from the fleet's median hit rate is hot or cold.
	spreadWarn = 0.15
)

// Incomplete is the error of a report that misses inputs that could not be read: its table
// shows what could be read, but the fleet figures cover only the rest, so the run is not a
// success. It is nil when every input was read.
func (r Report) Incomplete() error {
	if len(r.Down) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d inputs could not be read (see above): the fleet figures cover only the rest", len(r.Down), len(r.Down)+len(r.Replicas))
}

// Analyze turns observations into per-replica figures, a fleet row and findings.
func Analyze(in Input) Report {
	rep := Report{
		Source:       in.Source,
		Inputs:       nonNil(in.Inputs),
		Mode:         in.Mode,
		Replicas:     []Replica{},
		Down:         nonNil(in.Down),
		RouterSeries: nonNil(in.Routers),
		Stacks:       slices.Clone(in.Stacks),
		Findings:     []finding.Finding{},
		Queries:      in.Queries,
	}
	if len(in.Routers) > 0 {
		rep.Stacks = addStack(rep.Stacks, serverLabelRouter().ID, "vllm: series with a server label (the router's per-backend series)")
	}
	if in.Window > 0 {
		w := in.Window
		rep.WindowSeconds = &w
	}
	add := func(s finding.Severity, code, replica, format string, args ...any) {
		rep.Findings = append(rep.Findings, finding.Finding{Severity: s, Code: code, Subject: replica, Message: fmt.Sprintf(format, args...)})
	}
	obs := slices.Clone(in.Observations)
	slices.SortFunc(obs, func(a, b Observation) int { return cmp.Compare(a.Replica, b.Replica) })
	for _, o := range obs {
		r := replicaFigures(o)
		rep.Replicas = append(rep.Replicas, r)
		replicaFindings(o, r, in, add)
		if o.New {
			add(finding.Info, "replica-new", o.Replica, "%s, so it has no rate yet and adds nothing to the fleet's hit rate or volume; read again for its figures", newWhere(in))
		}
	}
	rep.Fleet = fleetFigures(rep.Replicas, obs)
	fleetFindings(rep, add)
	for _, d := range in.Down {
		add(finding.Error, "target-down", d.Target, "could not read %s: %s; the fleet row leaves it out", d.Target, d.Error)
	}
	for _, g := range in.Gone {
		add(finding.Warning, "replica-gone", g, "%s: it stopped, was scaled down or came back under another name; %s", goneWhere(in), goneLeftOut(in))
	}
	for _, w := range in.Warnings {
		add(finding.Warning, "server-warning", "", "%s answered with a warning (queries: %s): %s; the figures may miss series (a partial response leaves out what an unavailable store holds)", strings.Join(in.Inputs, ", "), strings.Join(w.Queries, ", "), w.Warning)
	}
	if len(in.Routers) > 0 {
		add(finding.Info, "router-series", "", "%s router series (label server: %s) re-export vllm: names; they were kept apart from the engine series", cmp.Or(serverLabelRouter().ID, "router"), strings.Join(in.Routers, ", "))
	}
	if in.Mode == ModeLifetime {
		add(finding.Info, "lifetime-totals", "", "one dump gives totals since each replica started, not a current rate: give two dumps, or use --scrape, for a window")
	}
	if in.Mode == ModeLog {
		add(finding.Info, "log-hit-rate", "", "the engine log's hit rate covers vLLM's recent-requests window, not the Prometheus counters; query volume is not in the log")
	}
	slices.SortStableFunc(rep.Findings, func(a, b finding.Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Code, b.Code))
	})
	return rep
}

// readings names the two readings a rate was taken between: two dumps by their paths, two
// scrape rounds as such.
func readings(in Input) (first, second string) {
	if in.Source == SourceFile && len(in.Inputs) == 2 {
		return in.Inputs[0], in.Inputs[1]
	}
	return "the first scrape", "the second scrape"
}

// newWhere says where a new replica's counters were seen.
func newWhere(in Input) string {
	if in.Source == SourcePrometheus {
		return "its prefix-cache counters have a sample at the end of the window but no rate over it: it started too late in the window for two samples"
	}
	first, second := readings(in)
	return "its prefix-cache counters are in " + second + " only, not in " + first + ": it started or joined between them"
}

// goneWhere says where a gone replica's series were last seen.
func goneWhere(in Input) string {
	if in.Source == SourcePrometheus {
		return "its prefix-cache counters stop inside the window (no sample at its end: older than Prometheus's lookback, or marked stale when its target went away)"
	}
	first, second := readings(in)
	return "in " + first + " but not in " + second
}

// goneLeftOut says what became of a gone replica's figures.
func goneLeftOut(in Input) string {
	if in.Source == SourcePrometheus {
		return "its row covers only the part of the window it was up"
	}
	return "it has no row, and the fleet row leaves it out"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func replicaFigures(o Observation) Replica {
	r := Replica{
		Replica: o.Replica, Model: o.Model, Version: o.Version, VersionFrom: o.VersionFrom,
		Queries: o.Queries, Preemptions: o.Preemptions, Requests: o.Requests, VersionRange: rangeText(o.VersionMin, o.VersionBefore),
		KVUsage: o.KVUsage, Running: o.Running, Waiting: o.Waiting,
		CPUHitRate: o.CPUHitRate, PromptTokensPerSec: o.PromptTokensPerSec,
		PrefixCaching: o.PrefixCaching, Generation: o.Generation,
	}
	if o.BlockSize > 0 {
		r.BlockSize = ptr(o.BlockSize)
	}
	if o.NumGPUBlocks > 0 {
		r.NumGPUBlocks = ptr(o.NumGPUBlocks)
	}
	switch {
	case o.Queries != nil && o.Hits != nil:
		r.HitRateFrom = "counters"
		if *o.Queries > 0 && !hitsAboveQueries(o) {
			r.HitRate = ptr(clamp01(*o.Hits / *o.Queries))
		}
	case o.GaugeHitRate != nil:
		r.HitRate = ptr(clamp01(*o.GaugeHitRate))
		r.HitRateFrom = "v0_gauge"
		if o.Generation == "" {
			r.HitRateFrom = "log"
		}
	}
	if o.ExtQueries != nil && o.ExtHits != nil && *o.ExtQueries > 0 {
		r.ExternalHitRate = ptr(clamp01(*o.ExtHits / *o.ExtQueries))
	} else if o.GaugeExtHitRate != nil {
		r.ExternalHitRate = ptr(clamp01(*o.GaugeExtHitRate))
	}
	if o.Window > 0 {
		per := func(v *float64) *float64 {
			if v == nil {
				return nil
			}
			return ptr(*v / o.Window)
		}
		r.QueriesPerSec = per(o.Queries)
		r.PreemptionsPerSec = per(o.Preemptions)
	}
	if o.Preemptions != nil && o.Requests != nil && *o.Requests > 0 {
		r.PreemptionsPer1k = ptr(*o.Preemptions / *o.Requests * 1000)
	}
	return r
}

// clamp01 keeps a ratio in range: counters scraped a moment apart can give hits a hair above
// queries.
func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// hitsAboveQueries reports hits clearly above queries (more than 1% over, beyond a hair of
// Prometheus's extrapolation): vLLM counts hits among the tokens it looked up, so the two
// counters then do not describe the same lookups, and their ratio is no hit rate.
func hitsAboveQueries(o Observation) bool {
	return o.Queries != nil && o.Hits != nil && *o.Hits > *o.Queries*1.01
}

func replicaFindings(o Observation, r Replica, in Input, add func(finding.Severity, string, string, string, ...any)) {
	name, mode := o.Replica, in.Mode
	if o.PrefixCaching != nil && !*o.PrefixCaching {
		// hitrate's findings carry their fix in the message.
		f := vllm.CachingOff(name)
		add(f.Severity, f.Code, name, "%s; %s", f.Message, f.Fix)
	} else if o.Queries != nil && *o.Queries == 0 {
		when := "in the window"
		if mode == ModeLifetime {
			when = "since it started"
		}
		add(finding.Warning, "no-queries", name, "no prefix-cache lookups %s: the replica is idle or prefix caching is off, so its hit rate is unknown", when)
	}
	if hitsAboveQueries(o) {
		add(finding.Warning, "bad-value", name, "%s (%s) is above %s (%s): vLLM counts hits among the tokens it looked up, so these counters do not describe the same lookups (series of several replicas or processes folded into one row by --by or a relabelling, or a dump edited by hand); the hit rate is left out, also of the fleet's",
			cmp.Or(o.HitsName, "the hits counter"), strconv.FormatFloat(*o.Hits, 'f', -1, 64), cmp.Or(o.QueriesName, "the queries counter"), strconv.FormatFloat(*o.Queries, 'f', -1, 64))
	}
	if o.Generation == "" && o.Queries == nil && o.Hits == nil && o.GaugeHitRate == nil && mode != ModeLog {
		add(finding.Warning, "no-prefix-metrics", name, "no prefix-cache metric found (neither vllm:prefix_cache_* nor the older names)")
	}
	if (o.Queries == nil) != (o.Hits == nil) && len(o.BadValues) == 0 {
		have, missing := o.QueriesName, "vllm:prefix_cache_hits_total"
		if o.Queries == nil {
			have, missing = o.HitsName, "vllm:prefix_cache_queries_total"
		}
		add(finding.Warning, "missing-counter", name, "%s is exported but not %s: the hit rate needs both; is the dump cut short, or a relabelling or a --selector dropping it?", bothNames(have), bothNames(missing))
	}
	hybridFinding(o, r, add)
	if o.Generation == V0 && o.Queries == nil {
		gauge, _ := lookupName("vllm:gpu_prefix_cache_hit_rate")
		add(finding.Warning, "v0-gauges-only", name, "only the V0 gauges vllm:gpu_prefix_cache_hit_rate/vllm:cpu_prefix_cache_hit_rate are exported (%s): a lifetime block hit rate with no query volume, so it cannot be weighted or windowed; upgrade to the V1 engine for token counters", gauge.life())
	}
	oldNameFindings(o, add)
	if len(o.Resets) > 0 {
		since := "its figures cover only the time since"
		if in.Source == SourcePrometheus {
			// rate() adds the counts from before the reset to those after it.
			since = "rate() counts across the restart, so its figures cover the whole window, but its cache started empty then"
		}
		add(finding.Warning, "counter-reset", name, "counter reset inside the window (%s): the replica restarted; %s", strings.Join(o.Resets, ", "), since)
	}
	if len(o.BadValues) > 0 {
		add(finding.Warning, "bad-value", name, "NaN or infinite values left out: %s", strings.Join(o.BadValues, ", "))
	}
	pressure := ""
	if r.PreemptionsPer1k != nil && *r.PreemptionsPer1k >= preemptionsPer1kWarn {
		pressure = fmt.Sprintf("%.0f preemptions per 1k requests", *r.PreemptionsPer1k)
	}
	if o.KVUsage != nil && *o.KVUsage >= kvUsageWarn {
		if pressure != "" {
			pressure += " and "
		}
		pressure += fmt.Sprintf("KV cache %.0f%% full", *o.KVUsage*100)
	}
	if pressure != "" {
		add(finding.Warning, "kv-pressure", name, "%s: the hit rate may count re-prefill after eviction rather than reuse; %s", pressure, pressureVersionNote(o))
	}
}

// oldNameFindings reports the deprecated and V0 names a replica exports, one finding per life
// cycle, with the versions, replacements and unit changes the metric catalog records. When the
// replica's version is known, the finding says what the names are at that version.
func oldNameFindings(o Observation, add func(finding.Severity, string, string, string, ...any)) {
	type group struct {
		sev   finding.Severity
		names []metricName
		pairs []string
		notes []string            // unit notes, in order of appearance
		about map[string][]string // unit note -> the names it applies to
	}
	v, _ := parseVersion(o.Version)
	groups := map[string]*group{}
	var lives []string
	for _, n := range o.OldNames {
		mn, _ := lookupName(n)
		if mn.gen == V0 && o.Generation == V0 {
			continue // v0-gauges-only says it
		}
		life := mn.life()
		g := groups[life]
		if g == nil {
			// Info when the replica also exports the replacement: only dashboards and alerts on
			// the old name break at the upgrade.
			g = &group{sev: finding.Info, about: map[string][]string{}}
			groups[life] = g
			lives = append(lives, life)
		}
		repl, exact := mn.instead()
		if !exact || !slices.Contains(o.Exported, repl) {
			g.sev = finding.Warning
		}
		g.names = append(g.names, mn)
		if repl != "" {
			g.pairs = append(g.pairs, n+" (use "+repl+")")
		} else {
			g.pairs = append(g.pairs, n+" (no replacement)")
		}
		for _, note := range mn.unitNotes(v) {
			if g.about[note] == nil {
				g.notes = append(g.notes, note)
			}
			g.about[note] = append(g.about[note], strings.TrimPrefix(n, "vllm:"))
		}
	}
	for _, life := range lives {
		g := groups[life]
		msg := fmt.Sprintf("exports old metric names, %s: %s", life, strings.Join(g.pairs, ", "))
		if !v.IsZero() && g.names[0].meta != nil {
			msg += "; " + statusAt(o.Version, v, g.names[0].meta)
		}
		for _, note := range g.notes {
			msg += "; " + strings.Join(g.about[note], " and ") + " " + note
		}
		add(g.sev, "old-metric-name", o.Replica, "%s", msg)
	}
}

// statusAt says what an old name is at the replica's version.
func statusAt(raw string, v catalog.Version, m *catalog.Metric) string {
	st, _ := m.StatusAt(v)
	switch st {
	case catalog.Deprecated:
		next := "the next releases"
		if !m.Hidden.IsZero() {
			next = m.Hidden.String()
		}
		return fmt.Sprintf("this replica runs vLLM %s, where they are deprecated: dashboards and alerts on them go blank from %s", raw, next)
	case catalog.Hidden:
		return fmt.Sprintf("this replica runs vLLM %s, where they are hidden: it must run with --show-hidden-metrics-for-version, and they are gone in %s", raw, m.Removed)
	case catalog.Removed:
		return fmt.Sprintf("this replica reports vLLM %s, where they are removed: it is not the stock release", raw)
	}
	gone := m.Removed
	if !m.Hidden.IsZero() {
		gone = m.Hidden
	}
	return fmt.Sprintf("this replica runs vLLM %s, before their deprecation: upgrading it to %s or later blanks dashboards and alerts on them", raw, gone)
}

// sinceFix is the first release that keeps a preempted request's recomputed tokens out of
// the hit counters (vLLM PR #25787, merged 2025-09-26).
var sinceFix = catalog.Version{Major: 0, Minor: 11}

// pressureVersionNote says how the replica's version counts lookups under pressure (SPEC §3.2):
// by the version it reports, else by the version range its metric names allow, else both ways.
func pressureVersionNote(o Observation) string {
	const before = "before vLLM 0.11 (PR #25787) the tokens a preempted request recomputed were counted as hits"
	const after = "since vLLM 0.11 preempted lookups are excluded, but a waiting request retried under KV pressure can still be counted again (issue #43736)"
	if v, ok := parseVersion(o.Version); ok {
		if v.Less(sinceFix) {
			return "this replica runs vLLM " + o.Version + ": " + before
		}
		return "this replica runs vLLM " + o.Version + ": " + after
	}
	if !o.VersionBefore.IsZero() && !sinceFix.Less(o.VersionBefore) {
		return "its metric names date it before vLLM " + o.VersionBefore.String() + ": " + before
	}
	if !o.VersionMin.IsZero() && !o.VersionMin.Less(sinceFix) {
		return "its metric names date it at vLLM " + o.VersionMin.String() + " or later: " + after
	}
	return before + "; " + after
}

func fleetFigures(rs []Replica, obs []Observation) Fleet {
	f := Fleet{Replicas: len(rs)}
	var hits, queries, rateQueries, preempt, running, waiting float64
	var haveCounters, havePreempt, haveRunning, haveWaiting bool
	var window float64
	var rates []float64
	for i, r := range rs {
		o := obs[i]
		if o.Queries != nil && o.Hits != nil {
			haveCounters = true
			queries += *o.Queries
			if !hitsAboveQueries(o) { // its queries are volume, but its hits no rate
				hits += *o.Hits
				rateQueries += *o.Queries
			}
		}
		if o.Preemptions != nil {
			havePreempt = true
			preempt += *o.Preemptions
		}
		if r.Running != nil {
			haveRunning = true
			running += *r.Running
		}
		if r.Waiting != nil {
			haveWaiting = true
			waiting += *r.Waiting
		}
		window = max(window, o.Window)
		if r.HitRate != nil {
			rates = append(rates, *r.HitRate)
		}
	}
	if haveCounters {
		f.HitRateWeighting = "tokens"
		f.Queries = ptr(queries)
		if rateQueries > 0 {
			f.HitRate = ptr(clamp01(hits / rateQueries))
		}
		if window > 0 {
			// Replicas share the window, so the fleet rate is the sum of the replicas' rates.
			var qps float64
			for _, r := range rs {
				if r.QueriesPerSec != nil {
					qps += *r.QueriesPerSec
				}
			}
			f.QueriesPerSec = ptr(qps)
		}
	} else if len(rates) > 0 {
		f.HitRateWeighting = "unweighted"
		var s float64
		for _, v := range rates {
			s += v
		}
		f.HitRate = ptr(s / float64(len(rates)))
	}
	if havePreempt && window > 0 {
		var pps float64
		for _, r := range rs {
			if r.PreemptionsPerSec != nil {
				pps += *r.PreemptionsPerSec
			}
		}
		f.PreemptionsPerSec = ptr(pps)
	}
	if haveRunning {
		f.Running = ptr(running)
	}
	if haveWaiting {
		f.Waiting = ptr(waiting)
	}
	if len(rates) > 0 {
		f.MinHitRate = ptr(slices.Min(rates))
		f.MaxHitRate = ptr(slices.Max(rates))
		var mean, ss float64
		for _, v := range rates {
			mean += v
		}
		mean /= float64(len(rates))
		for _, v := range rates {
			ss += (v - mean) * (v - mean)
		}
		if mean > 0 {
			f.HitRateCV = ptr(math.Sqrt(ss/float64(len(rates))) / mean)
		}
	}
	return f
}

func fleetFindings(rep Report, add func(finding.Severity, string, string, string, ...any)) {
	// One replica read while others are down is a fleet with a down target (target-down says
	// so), not a fleet of one.
	if len(rep.Replicas) == 1 && len(rep.Down) == 0 {
		add(finding.Info, "single-replica", rep.Replicas[0].Replica, "only one replica: a router has nothing to choose between; prefix-aware routing starts to matter from two replicas up")
	}
	var rates []float64
	for _, r := range rep.Replicas {
		if r.HitRate != nil {
			rates = append(rates, *r.HitRate)
		}
	}
	if len(rates) < 3 {
		return
	}
	median := medianOf(rates)
	for _, r := range rep.Replicas {
		if r.HitRate == nil {
			continue
		}
		d := *r.HitRate - median
		switch {
		case d <= -spreadWarn:
			add(finding.Warning, "replica-cold", r.Replica, "hit rate %.1f%% against a fleet median of %.1f%%: this replica sees less reuse (unique traffic, a fresh or restarted replica, or routing that sends shared prefixes elsewhere)", *r.HitRate*100, median*100)
		case d >= spreadWarn:
			add(finding.Warning, "replica-hot", r.Replica, "hit rate %.1f%% against a fleet median of %.1f%%: shared prefixes concentrate here; check its load and queue", *r.HitRate*100, median*100)
		}
	}
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bothNames writes a counter with the other name a vLLM release gave it, so a reader of either
// generation recognises it: "vllm:prefix_cache_hits_total (vllm:gpu_prefix_cache_hits_total
// before vLLM 0.9.2)", "vllm:gpu_prefix_cache_hits_total (renamed
// vllm:prefix_cache_hits_total in vLLM 0.9.2)".
func bothNames(series string) string {
	cat, err := catalog.Load()
	if err != nil {
		return series
	}
	m, ok := cat.Lookup(series)
	if !ok || m.Engine == nil {
		return series
	}
	e := m.Engine
	if e.Rewrite == catalog.RewriteRename && e.Replacement != "" && !e.Deprecated.IsZero() {
		if r, ok := m.ReplacementSeries(); ok {
			return fmt.Sprintf("%s (renamed %s in vLLM %s)", series, r, e.Deprecated)
		}
	}
	if p := cat.Predecessor(e); p != nil && !p.Deprecated.IsZero() {
		old := p.Name + m.Suffix
		return fmt.Sprintf("%s (%s before vLLM %s)", series, old, p.Deprecated)
	}
	return series
}

// hybridFinding explains a hybrid (Mamba/linear-attention) model's prefix caching: vLLM raises
// the attention block to cover a Mamba state page (hundreds to thousands of tokens) and caches
// only whole blocks, so a shared prefix shorter than one block never hits, and hits come in
// multiples of it (vLLM issues #40696, #48401). With a near-zero hit rate it is a warning: the
// likely cause of "0% with caching on".
func hybridFinding(o Observation, r Replica, add func(finding.Severity, string, string, string, ...any)) {
	if o.MambaBlockSize <= 0 || (o.PrefixCaching != nil && !*o.PrefixCaching) {
		return
	}
	unit := max(o.BlockSize, o.MambaBlockSize)
	msg := fmt.Sprintf("a hybrid (Mamba/linear-attention) model: prefix caching keeps whole blocks of %d tokens, so a shared prefix shorter than %d tokens never hits and hits come in multiples of %d", unit, unit, unit)
	switch o.MambaCacheMode {
	case "align":
		msg += "; mamba_cache_mode align keeps the Mamba state only at block boundaries, and with speculative decoding (MTP, EAGLE) the last matched block is dropped, so a prefix needs about " + strconv.Itoa(2*unit) + " tokens to gain"
	case "none":
		msg += "; mamba_cache_mode none: the Mamba layers are not cached at all, so nothing hits"
	}
	if o.BlockSize > 0 && o.BlockSize < o.MambaBlockSize {
		msg += fmt.Sprintf("; cache_config_info says block_size %d, which some releases leave at its default for hybrid models (vLLM issue #42966): the engine log's \"Setting attention block size to N tokens\" line has the real one", o.BlockSize)
	}
	sev := finding.Info
	if r.HitRate != nil && *r.HitRate < 0.05 {
		sev = finding.Warning
		msg = fmt.Sprintf("hit rate %.1f%% with caching on, as expected when shared prefixes are shorter than a block: %s", *r.HitRate*100, msg)
	}
	add(sev, "hybrid-model", o.Replica, "%s", msg)
}
