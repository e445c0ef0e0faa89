package promql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// Generation is the family of metric names a replica's prefix-cache figures came from.
type Generation string

// The generations, newest first. The empty generation means no prefix-cache metric was found.
const (
	Current    Generation = "current"    // vllm:prefix_cache_* (vLLM 0.9.2 and later)
	Deprecated Generation = "deprecated" // vllm:gpu_prefix_cache_* counters (V1 up to 0.11)
	V0         Generation = "v0"         // vllm:*_prefix_cache_hit_rate gauges (V0 engine)
)

// quantity is what a metric measures, whatever its name.
type quantity int

const (
	qQueries quantity = iota
	qHits
	qExtQueries
	qExtHits
	qPreemptions
	qRequests
	qKVUsage
	qRunning
	qWaiting
	qV0GPUHitRate
	qV0CPUHitRate
)

// metricName is one exposition name for a quantity. The table below says only what hitrate
// reads under which name; the name's history (type, versions, replacement, unit changes) comes
// from the metric catalog, the one place kvcheck records vLLM's metric names.
type metricName struct {
	name     string
	q        quantity
	weighted bool // gauge averaged over engines rather than summed

	counter bool            // from the catalog's type
	gen     Generation      // from the catalog's life cycle and engines
	meta    *catalog.Metric // the catalog entry; nil only if the catalog lacks the name
}

// hitrateNames is the fixed set of names hitrate queries. Within a quantity the first name
// present on a replica wins, so current names come first.
var hitrateNames = []metricName{
	{name: "vllm:prefix_cache_queries_total", q: qQueries},
	{name: "vllm:gpu_prefix_cache_queries_total", q: qQueries},
	{name: "vllm:prefix_cache_hits_total", q: qHits},
	{name: "vllm:gpu_prefix_cache_hits_total", q: qHits},
	{name: "vllm:external_prefix_cache_queries_total", q: qExtQueries},
	{name: "vllm:external_prefix_cache_hits_total", q: qExtHits},
	{name: "vllm:num_preemptions_total", q: qPreemptions},
	{name: "vllm:request_success_total", q: qRequests},
	{name: "vllm:kv_cache_usage_perc", q: qKVUsage, weighted: true},
	{name: "vllm:gpu_cache_usage_perc", q: qKVUsage, weighted: true},
	{name: "vllm:num_requests_running", q: qRunning},
	{name: "vllm:num_requests_waiting", q: qWaiting},
	{name: "vllm:gpu_prefix_cache_hit_rate", q: qV0GPUHitRate, weighted: true},
	{name: "vllm:cpu_prefix_cache_hit_rate", q: qV0CPUHitRate, weighted: true},
}

// names is hitrateNames joined with the catalog, once.
var names = sync.OnceValue(func() []metricName {
	cat, _ := catalog.Load() // the embedded catalog parses; its own tests hold it to that
	out := make([]metricName, len(hitrateNames))
	for i, mn := range hitrateNames {
		mn.counter = strings.HasSuffix(mn.name, "_total")
		mn.gen = Current
		if cat != nil {
			if m, ok := cat.Lookup(mn.name); ok && m.Engine != nil {
				mn.meta = m.Engine
				mn.counter = m.Engine.Type == catalog.Counter
				mn.gen = generationOf(m.Engine)
			}
		}
		out[i] = mn
	}
	return out
})

// generationOf classes a catalog entry: a name vLLM retired is V0's when only the V0 engine
// published it, else a deprecated V1 name.
func generationOf(m *catalog.Metric) Generation {
	if m.Deprecated.IsZero() && m.Hidden.IsZero() && m.Removed.IsZero() {
		return Current
	}
	if len(m.Engines) == 1 && m.Engines[0] == "v0" {
		return V0
	}
	return Deprecated
}

// configInfo is the info metric carrying the cache settings as labels.
const configInfo = vllm.ConfigInfo

// versionLabels are labels that carry the vLLM version on a replica's series when the scrape
// configuration adds it (relabelled from the pod's app.kubernetes.io/version, say).
var versionLabels = []string{"vllm_version", "version"}

func lookupName(n string) (metricName, bool) {
	for _, m := range names() {
		if m.name == n {
			return m, true
		}
	}
	return metricName{}, false
}

// life describes an old name's life cycle from the catalog: "deprecated in vLLM 0.9.2, hidden
// in 0.11.0, removed in 0.12.0", prefixed with "V0 engine only: " for V0's names.
func (mn metricName) life() string {
	m := mn.meta
	if m == nil {
		return "an older vLLM name"
	}
	var parts []string
	first := "vLLM "
	for _, s := range []struct {
		what string
		v    catalog.Version
	}{{"deprecated", m.Deprecated}, {"hidden", m.Hidden}, {"removed", m.Removed}} {
		if s.v.IsZero() {
			continue
		}
		parts = append(parts, s.what+" in "+first+s.v.String())
		first = ""
	}
	out := strings.Join(parts, ", ")
	if mn.gen == V0 {
		out = "V0 engine only: " + out
	}
	return out
}

// instead is what to use in place of an old name: the exact series for a rename, otherwise the
// catalog's replacement text.
func (mn metricName) instead() (string, bool) {
	m := mn.meta
	if m == nil {
		return "", false
	}
	if m.Rewrite == catalog.RewriteRename {
		cat, _ := catalog.Load()
		if cat != nil {
			if match, ok := cat.Lookup(mn.name); ok {
				if s, ok := match.ReplacementSeries(); ok {
					return s, true
				}
			}
		}
	}
	return m.Replacement, false
}

// unitNotes says what the name counted in older releases, judged at version v when known:
// nothing when v is past every change, a plain statement when v is before one, the catalog's
// note when v is unknown. The notes have no subject; the caller names the metrics.
func (mn metricName) unitNotes(v catalog.Version) []string {
	if mn.meta == nil {
		return nil
	}
	var out []string
	for _, u := range mn.meta.Units {
		switch {
		case v.IsZero():
			out = append(out, u.Note)
		case v.Less(u.Until):
			out = append(out, fmt.Sprintf("count %s at vLLM %s, not tokens: the queried volume is in %s", u.Unit, v, u.Unit))
		}
	}
	return out
}

// versionRE reads the release at the start of a version string: "0.10.1", "v0.11.0rc1",
// "0.10.1.1+cu126".
var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// parseVersion reads the leading X.Y[.Z] of a vLLM version string.
func parseVersion(s string) (catalog.Version, bool) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return catalog.Version{}, false
	}
	var n [3]int
	for i, p := range m[1:] {
		if p == "" {
			continue
		}
		x, err := strconv.Atoi(p)
		if err != nil {
			return catalog.Version{}, false
		}
		n[i] = x
	}
	v := catalog.Version{Major: n[0], Minor: n[1], Patch: n[2]}
	return v, !v.IsZero()
}

// versionBounds dates a replica by the metric names it exports, from the catalog: no earlier
// than the newest name's first release, and before the first release that hides or removes
// one of them. Absent names prove nothing (a selector or relabelling may drop them), so only
// present ones count. Either bound may be zero (unknown).
func versionBounds(exported []string) (from, before catalog.Version) {
	cat, _ := catalog.Load()
	if cat == nil {
		return
	}
	for _, n := range exported {
		m, ok := cat.Lookup(n)
		if !ok || m.Engine == nil || !m.Exposed {
			continue
		}
		e := m.Engine
		if !e.Added.IsZero() && from.Less(e.Added) {
			from = e.Added
		}
		end := e.Hidden
		if end.IsZero() {
			end = e.Removed
		}
		if !end.IsZero() && (before.IsZero() || end.Less(before)) {
			before = end
		}
	}
	if !from.IsZero() && !before.IsZero() && !from.Less(before) {
		return catalog.Version{}, catalog.Version{} // contradictory names: claim nothing
	}
	return from, before
}

// rangeText writes version bounds for people and JSON: ">=0.9.2 <0.11.0", ">=0.16.0", "<0.8.3".
func rangeText(from, before catalog.Version) string {
	var parts []string
	if !from.IsZero() {
		parts = append(parts, ">="+from.String())
	}
	if !before.IsZero() {
		parts = append(parts, "<"+before.String())
	}
	return strings.Join(parts, " ")
}
