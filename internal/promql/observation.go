package promql

import (
	"cmp"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// Observation is what one source saw of one replica over a window, before analysis. Counter
// fields hold the increase over the window, or lifetime totals when Window is 0. Nil means the
// replica does not export the quantity.
type Observation struct {
	Replica string
	Model   string
	// Version is the vLLM version when the source could learn it (GET /version, or a version
	// label on the series), else empty; VersionFrom says which ("server", "label").
	Version, VersionFrom string
	// VersionMin and VersionBefore date the replica by the metric names it exports (see
	// versionBounds); zero when the names do not tell.
	VersionMin, VersionBefore catalog.Version
	// Window is the length in seconds the increases cover; 0 for lifetime totals.
	Window float64

	Queries, Hits, ExtQueries, ExtHits, Preemptions, Requests *float64
	KVUsage, Running, Waiting                                 *float64
	// GaugeHitRate is a hit rate the replica reported itself, 0..1: the V0 gauge or a log line.
	GaugeHitRate *float64
	// GaugeExtHitRate is an external-tier hit rate from a log line, 0..1.
	GaugeExtHitRate *float64
	// CPUHitRate is V0's CPU-tier hit rate gauge or log field, 0..1.
	CPUHitRate *float64
	// PromptTokensPerSec comes from engine log lines only.
	PromptTokensPerSec *float64

	BlockSize     int
	PrefixCaching *bool
	// NumGPUBlocks is num_gpu_blocks from vllm:cache_config_info, the KV cache's size in
	// blocks; 0 when unknown (the --prometheus queries aggregate it away).
	NumGPUBlocks int
	// MambaBlockSize and MambaCacheMode come from vllm:cache_config_info for hybrid
	// (Mamba/linear-attention) models, or from the engine log's "Setting attention block
	// size" line (MambaBlockSize then the attention block size it sets); zero and empty
	// otherwise.
	MambaBlockSize int
	MambaCacheMode string
	Generation     Generation
	// QueriesName and HitsName are the counters the hit rate was computed from.
	QueriesName, HitsName string
	// Exported are the known metric names the replica exports.
	Exported []string
	// OldNames are deprecated or V0 names the replica exports, whether used or not.
	OldNames []string
	// Resets are the counters that went backwards inside the window.
	Resets []string
	// BadValues are series whose value was NaN or infinite and were left out.
	BadValues []string
	// New is a replica whose counters appear only in the second of two readings (dumps or
	// scrapes): it started between them, so it has no rate yet.
	New bool
}

// point is one series' contribution to an observation: for a counter its increase over the
// window (or its total), for a gauge its last value.
type point struct {
	name   string
	labels map[string]string
	value  float64
	resets float64
	// fresh marks a counter series with no earlier sample: the replica exports it, but it has
	// no increase yet.
	fresh bool
}

// grouping maps a series to its replica.
type grouping struct {
	// by are the replica labels the user chose; empty means detect (pod, else instance).
	by []string
	// fallback names the replica when the series carry no replica label (a scrape target or a
	// dump file).
	fallback string
}

func (g grouping) key(l map[string]string) string {
	if len(g.by) == 1 && g.by[0] == "engine" {
		// --by engine splits the detected replicas by engine rather than merging them.
		return grouping{fallback: g.fallback}.key(l) + "/" + l["engine"]
	}
	if len(g.by) > 0 {
		var parts []string
		for _, b := range g.by {
			if v := l[b]; v != "" {
				parts = append(parts, v)
			}
		}
		if len(parts) == 0 {
			// None of the --by labels: the series's own replica label names it, so replicas
			// without them stay apart rather than summed into one row.
			return cmp.Or(l["pod"], l["instance"], g.fallback)
		}
		// A scrape target or a dump file names the replica when the series do not.
		if g.fallback != "" && l["pod"] == "" && l["instance"] == "" {
			parts = append([]string{g.fallback}, parts...)
		}
		return strings.Join(parts, "/")
	}
	if v := l["pod"]; v != "" {
		return v
	}
	if v := l["instance"]; v != "" {
		return v
	}
	return g.fallback
}

// assembled is the result of grouping points into replicas.
type assembled struct {
	obs     []Observation
	routers []string
}

// assemble groups points by replica and picks, for each quantity, the newest metric name the
// replica exports. It keeps no point: a source may make each as it is asked for.
func assemble(points iter.Seq[point], g grouping, window float64) assembled {
	type acc struct {
		sum    float64
		n      int
		resets float64
	}
	type rep struct {
		obs     Observation
		vals    map[string]*acc
		models  []string
		seen    map[string]bool // every vllm: name, for dating the replica
		version string          // from a version label
		// fresh: a counter series with no earlier sample; counted: one with an increase.
		fresh, counted bool
	}
	reps := map[string]*rep{}
	var order []string
	routers := map[string]bool{}
	for p := range points {
		if s := p.labels["server"]; s != "" {
			routers[s] = true
			continue
		}
		k := g.key(p.labels)
		r := reps[k]
		if r == nil {
			r = &rep{obs: Observation{Replica: k, Window: window}, vals: map[string]*acc{}, seen: map[string]bool{}}
			reps[k] = r
			order = append(order, k)
		}
		if m := p.labels["model_name"]; m != "" && !slices.Contains(r.models, m) {
			r.models = append(r.models, m)
		}
		if r.version == "" {
			for _, l := range versionLabels {
				if _, ok := parseVersion(p.labels[l]); ok {
					r.version = p.labels[l]
					break
				}
			}
		}
		if p.name == configInfo {
			cc := vllm.CacheConfigOf(p.labels)
			if cc.BlockSize > 0 {
				r.obs.BlockSize = cc.BlockSize
			}
			if cc.PrefixCaching != nil {
				r.obs.PrefixCaching = cc.PrefixCaching
			}
			if cc.NumGPUBlocks > 0 {
				r.obs.NumGPUBlocks = cc.NumGPUBlocks
			}
			if cc.Hybrid() {
				r.obs.MambaBlockSize, r.obs.MambaCacheMode = cc.MambaBlockSize, cc.MambaCacheMode
			}
			continue
		}
		r.seen[p.name] = true
		mn, ok := lookupName(p.name)
		if !ok {
			continue
		}
		if math.IsNaN(p.value) || math.IsInf(p.value, 0) {
			r.obs.BadValues = append(r.obs.BadValues, p.name)
			continue
		}
		if p.fresh {
			// Exported, but without an increase: the name counts as seen, with no value.
			r.fresh = true
			if r.vals[p.name] == nil {
				r.vals[p.name] = &acc{}
			}
			continue
		}
		if mn.counter {
			r.counted = true
		}
		if mn.gen == V0 && p.value < 0 {
			// -1 is V0's "no data yet"; keep the name as seen but no value.
			if r.vals[p.name] == nil {
				r.vals[p.name] = &acc{}
			}
			continue
		}
		a := r.vals[p.name]
		if a == nil {
			a = &acc{}
			r.vals[p.name] = a
		}
		a.sum += p.value
		a.n++
		a.resets += p.resets
	}
	// vllm:cache_config_info carries no engine label on some versions (and no model_name), so
	// with --by ...,engine it lands in a row of its own, "instance" beside "instance/0": hand
	// its settings to the engine rows of that replica instead.
	order = slices.DeleteFunc(order, func(k string) bool {
		r := reps[k]
		if len(r.seen) > 0 || (r.obs.BlockSize == 0 && r.obs.PrefixCaching == nil) {
			return false
		}
		prefix := strings.TrimSuffix(k, "/") + "/"
		taken := false
		for _, k2 := range order {
			if k2 == k || !strings.HasPrefix(k2, prefix) || len(reps[k2].seen) == 0 {
				continue
			}
			o := &reps[k2].obs
			if o.BlockSize == 0 {
				o.BlockSize = r.obs.BlockSize
			}
			if o.PrefixCaching == nil {
				o.PrefixCaching = r.obs.PrefixCaching
			}
			if o.NumGPUBlocks == 0 {
				o.NumGPUBlocks = r.obs.NumGPUBlocks
			}
			if o.MambaBlockSize == 0 {
				o.MambaBlockSize, o.MambaCacheMode = r.obs.MambaBlockSize, r.obs.MambaCacheMode
			}
			taken = true
		}
		return taken
	})
	// One observation per replica, sized once: growing a slice of a large fleet's
	// observations by appending copied them over and over (a dump of 500,000 replicas: 1 GB).
	out := assembled{obs: make([]Observation, 0, len(order))}
	for _, k := range order {
		r := reps[k]
		delete(reps, k) // its maps are garbage once its observation is built
		o := &r.obs
		o.Model = strings.Join(r.models, ",")
		o.New = r.fresh && !r.counted
		chosen := map[quantity]metricName{}
		if r.version != "" {
			o.Version, o.VersionFrom = r.version, "label"
		}
		o.VersionMin, o.VersionBefore = versionBounds(slices.Sorted(maps.Keys(r.seen)))
		for _, mn := range names() {
			a, ok := r.vals[mn.name]
			if !ok {
				continue
			}
			o.Exported = append(o.Exported, mn.name)
			if mn.gen != Current && !slices.Contains(o.OldNames, mn.name) {
				o.OldNames = append(o.OldNames, mn.name)
			}
			if _, done := chosen[mn.q]; done {
				continue
			}
			if a.n == 0 {
				continue
			}
			chosen[mn.q] = mn
			v := a.sum
			if mn.weighted {
				v /= float64(a.n)
			}
			if a.resets > 0 {
				o.Resets = append(o.Resets, mn.name)
			}
			set := func(dst **float64) { *dst = &v }
			switch mn.q {
			case qQueries:
				set(&o.Queries)
				o.QueriesName = mn.name
			case qHits:
				set(&o.Hits)
				o.HitsName = mn.name
			case qExtQueries:
				set(&o.ExtQueries)
			case qExtHits:
				set(&o.ExtHits)
			case qPreemptions:
				set(&o.Preemptions)
			case qRequests:
				set(&o.Requests)
			case qKVUsage:
				set(&o.KVUsage)
			case qRunning:
				set(&o.Running)
			case qWaiting:
				set(&o.Waiting)
			case qV0GPUHitRate:
				set(&o.GaugeHitRate)
			case qV0CPUHitRate:
				set(&o.CPUHitRate)
			}
		}
		q, qok := chosen[qQueries]
		h, hok := chosen[qHits]
		if o.New {
			// No value was chosen, but the names it exports still say which generation.
			q, qok = exported(r.vals, qQueries)
			h, hok = exported(r.vals, qHits)
		}
		_, v0 := r.vals["vllm:gpu_prefix_cache_hit_rate"]
		switch {
		case qok || hok:
			o.Generation = Current
			if (qok && q.gen != Current) || (hok && h.gen != Current) {
				o.Generation = Deprecated
			}
		case v0:
			o.Generation = V0
		}
		out.obs = append(out.obs, *o)
	}
	slices.SortFunc(out.obs, func(a, b Observation) int { return strings.Compare(a.Replica, b.Replica) })
	for s := range routers {
		out.routers = append(out.routers, s)
	}
	slices.Sort(out.routers)
	return out
}

// exported returns the newest name of quantity q among the names a replica exports.
func exported[V any](vals map[string]V, q quantity) (metricName, bool) {
	for _, mn := range names() {
		if _, ok := vals[mn.name]; ok && mn.q == q {
			return mn, true
		}
	}
	return metricName{}, false
}

// carriesBy reports whether some series carries one of the --by labels (true without --by):
// rows named by a label that no series has would only repeat the replicas' own names, which
// hides that --by named the wrong label.
func carriesBy[T any](series []T, labels func(T) map[string]string, by []string) bool {
	if len(by) == 0 {
		return true
	}
	return slices.ContainsFunc(series, func(s T) bool {
		l := labels(s)
		return slices.ContainsFunc(by, func(b string) bool { return l[b] != "" })
	})
}
