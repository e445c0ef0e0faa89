package catalog

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed metrics.yaml
var data []byte

// Type is a metric's Prometheus type.
type Type string

// The metric types in the catalog.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	Info      Type = "info"
)

// Source says which program publishes a metric.
type Source string

// The publishers in the catalog.
const (
	Engine Source = "engine" // vLLM itself
	Router Source = "router" // vLLM production-stack's router
)

// Rewrite says how exactly a metric can be replaced.
type Rewrite string

// The kinds of rewrite.
const (
	RewriteNone   Rewrite = "none"   // no exact replacement: a person decides
	RewriteRename Rewrite = "rename" // replacing the name keeps the meaning
	RewriteExpr   Rewrite = "expr"   // Metric.Expr replaces an instant selector exactly
)

// UnitChange records that a metric counted something else before a version.
type UnitChange struct {
	Until Version `yaml:"until" json:"until"`
	Unit  string  `yaml:"unit" json:"unit"`
	Note  string  `yaml:"note" json:"note"`
}

// Metric is one metric family and its history.
type Metric struct {
	Name        string       `yaml:"name" json:"name"`
	Type        Type         `yaml:"type" json:"type"`
	Source      Source       `yaml:"source" json:"source"`
	Engines     []string     `yaml:"engines" json:"engines"`
	Added       Version      `yaml:"added" json:"added,omitzero"`
	Deprecated  Version      `yaml:"deprecated" json:"deprecated,omitzero"`
	Hidden      Version      `yaml:"hidden" json:"hidden,omitzero"`
	Removed     Version      `yaml:"removed" json:"removed,omitzero"`
	Replacement string       `yaml:"replacement" json:"replacement,omitempty"`
	Rewrite     Rewrite      `yaml:"rewrite" json:"rewrite,omitempty"`
	Expr        string       `yaml:"expr" json:"expr,omitempty"`
	Labels      []string     `yaml:"labels" json:"labels"`
	Units       []UnitChange `yaml:"units" json:"units,omitempty"`
	Help        string       `yaml:"help" json:"help"`
	Note        string       `yaml:"note" json:"note,omitempty"`
}

// Series returns the series names the metric is exposed as: counters with _total and
// _created, histograms with _bucket, _sum and _count, gauges as named.
func (m *Metric) Series() []string {
	switch m.Type {
	case Counter:
		return []string{m.Name + "_total", m.Name + "_created"}
	case Histogram:
		return []string{m.Name + "_bucket", m.Name + "_sum", m.Name + "_count"}
	}
	return []string{m.Name}
}

// Status is what has happened to a metric at a given version.
type Status string

// The statuses, from harmless to gone.
const (
	Current    Status = "current"
	NotYet     Status = "not-yet" // added after the version
	Deprecated Status = "deprecated"
	Hidden     Status = "hidden" // only with --show-hidden-metrics-for-version
	Removed    Status = "removed"
)

// StatusAt returns the metric's status in release v, and the version where that status began
// (zero for Current).
func (m *Metric) StatusAt(v Version) (Status, Version) {
	switch {
	case !m.Removed.IsZero() && !v.Less(m.Removed):
		return Removed, m.Removed
	case !m.Hidden.IsZero() && !v.Less(m.Hidden):
		return Hidden, m.Hidden
	case !m.Deprecated.IsZero() && !v.Less(m.Deprecated):
		return Deprecated, m.Deprecated
	case !m.Added.IsZero() && v.Less(m.Added):
		return NotYet, m.Added
	}
	return Current, Version{}
}

// Form says how a name was written relative to vLLM's own spelling.
type Form string

// The spellings kvcheck recognises (SPEC §3.4).
const (
	Plain   Form = "plain"   // vllm:name
	Adapter Form = "adapter" // vllm_name, as prometheus-adapter and OpenTelemetry rename it
	Ray     Form = "ray"     // ray_vllm_name, Ray Serve's re-export
	Bare    Form = "bare"    // name without any prefix, as AIBrix writes it
	GMP     Form = "gmp"     // prometheus.googleapis.com|NAME|TYPE, Google Managed Prometheus
)

// Match is the result of looking a written name up.
type Match struct {
	Written string // the name as written
	Form    Form
	// Name is the written name in vLLM's spelling (vllm:...), suffix included.
	Name string
	// Suffix is the series suffix written after the family name ("_total", "_bucket", ...).
	Suffix string
	// Exposed is false when the written name matches no exposed series of the family: a
	// counter without _total or a histogram without _bucket/_sum/_count.
	Exposed bool
	// Engine and Router are the families the name belongs to; either may be nil.
	Engine, Router *Metric
}

// Metric returns the engine family when there is one, else the router's.
func (m Match) Metric() *Metric {
	if m.Engine != nil {
		return m.Engine
	}
	return m.Router
}

// Respell writes a vllm: series name (as found in a replacement) in the match's form, so a
// fix keeps the file's spelling: ray_vllm_x stays ray_vllm_..., a bare name stays bare.
func (m Match) Respell(name string) string {
	base := strings.TrimPrefix(name, "vllm:")
	switch m.Form {
	case Adapter:
		return "vllm_" + base
	case Ray:
		return "ray_vllm_" + base
	case Bare:
		return base
	case GMP:
		parts := strings.Split(m.Written, "|")
		if len(parts) == 3 {
			return parts[0] + "|" + respellPlainOrAdapter(parts[1], name) + "|" + parts[2]
		}
	}
	return name
}

// respellPlainOrAdapter keeps the adapter spelling inside a GMP name when it was used.
func respellPlainOrAdapter(written, name string) string {
	if strings.HasPrefix(written, "vllm_") {
		return "vllm_" + strings.TrimPrefix(name, "vllm:")
	}
	return name
}

// ReplacementSeries returns the series that replaces the matched one under a rename, in
// the written spelling: vllm:time_per_output_token_seconds_bucket becomes
// vllm:inter_token_latency_seconds_bucket. ok is false when the family has no rename.
func (m Match) ReplacementSeries() (string, bool) {
	e := m.Engine
	if e == nil || e.Rewrite != RewriteRename || e.Replacement == "" {
		return "", false
	}
	repl := e.Replacement
	switch e.Type {
	case Counter:
		repl = strings.TrimSuffix(repl, "_total")
		if m.Suffix == "" {
			return "", false // a counter queried without _total: there is nothing exact to rename
		}
		repl += m.Suffix
	case Histogram:
		if m.Suffix == "" {
			return "", false
		}
		repl += m.Suffix
	}
	return m.Respell(repl), true
}

// Catalog is the set of known metric families.
type Catalog struct {
	// Newest is the newest vLLM release the catalog describes; the default target.
	Newest  Version
	Metrics []*Metric

	engine, router map[string]*Metric // family name -> metric
}

type file struct {
	Newest  Version   `yaml:"newest"`
	Metrics []*Metric `yaml:"metrics"`
}

var loadOnce = sync.OnceValues(func() (*Catalog, error) { return Parse(data) })

// Load returns the embedded catalog, parsed once.
func Load() (*Catalog, error) { return loadOnce() }

// Parse reads a catalog data file.
func Parse(b []byte) (*Catalog, error) {
	var f file
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("metric catalog: %w", err)
	}
	c := &Catalog{Newest: f.Newest, Metrics: f.Metrics, engine: map[string]*Metric{}, router: map[string]*Metric{}}
	for i, m := range f.Metrics {
		if !strings.HasPrefix(m.Name, "vllm:") {
			return nil, fmt.Errorf("metric catalog: entry %d: name %q lacks the vllm: prefix", i, m.Name)
		}
		switch m.Type {
		case Counter, Gauge, Histogram, Info:
		default:
			return nil, fmt.Errorf("metric catalog: %s: unknown type %q", m.Name, m.Type)
		}
		if m.Rewrite == "" {
			m.Rewrite = RewriteNone
			if m.Replacement != "" && nameRE.MatchString(m.Replacement) {
				m.Rewrite = RewriteRename
			}
		}
		if m.Rewrite == RewriteExpr && m.Expr == "" {
			return nil, fmt.Errorf("metric catalog: %s: rewrite expr without expr", m.Name)
		}
		if m.Labels == nil {
			m.Labels = []string{}
		}
		if m.Engines == nil {
			m.Engines = []string{}
		}
		idx := c.engine
		if m.Source == Router {
			idx = c.router
		} else if m.Source != Engine {
			return nil, fmt.Errorf("metric catalog: %s: unknown source %q", m.Name, m.Source)
		}
		if _, dup := idx[m.Name]; dup {
			return nil, fmt.Errorf("metric catalog: %s listed twice for the %s", m.Name, m.Source)
		}
		idx[m.Name] = m
	}
	return c, nil
}

var nameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// Lookup finds a name as written in a dashboard, rule or autoscaler: vllm:x_total,
// vllm_x (prometheus-adapter), ray_vllm_x (Ray Serve), prometheus.googleapis.com|vllm:x|gauge
// (GMP) or a bare x (AIBrix). ok is false for names that are not vLLM's.
func (c *Catalog) Lookup(written string) (Match, bool) {
	m := Match{Written: written}
	name := written
	if rest, ok := strings.CutPrefix(written, "prometheus.googleapis.com|"); ok {
		inner, _, _ := strings.Cut(rest, "|")
		sub, ok := c.Lookup(inner)
		if !ok || sub.Form == Bare {
			return Match{}, false
		}
		sub.Written, sub.Form = written, GMP
		return sub, true
	}
	switch {
	case strings.HasPrefix(name, "vllm:"):
		m.Form = Plain
	case strings.HasPrefix(name, "ray_vllm_"):
		m.Form, name = Ray, "vllm:"+strings.TrimPrefix(name, "ray_vllm_")
	case strings.HasPrefix(name, "ray_vllm:"):
		m.Form, name = Ray, strings.TrimPrefix(name, "ray_")
	case strings.HasPrefix(name, "vllm_"):
		m.Form, name = Adapter, "vllm:"+strings.TrimPrefix(name, "vllm_")
	default:
		m.Form, name = Bare, "vllm:"+name
	}
	m.Name = name
	if c.resolve(&m) {
		return m, true
	}
	if m.Form == Plain {
		return m, true // a vllm: name nobody publishes: the caller reports it as unknown
	}
	return Match{}, false
}

// resolve fills in the families for m.Name; it reports whether any was found.
func (c *Catalog) resolve(m *Match) bool {
	n := m.Name
	// Gauges and info metrics are exposed under their own name; the router's gauges include
	// names ending in _total.
	for _, idx := range []map[string]*Metric{c.engine, c.router} {
		if f, ok := idx[n]; ok && (f.Type == Gauge || f.Type == Info) {
			m.set(f, "", true)
		}
	}
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total", "_created"} {
		base, ok := strings.CutSuffix(n, suf)
		if !ok {
			continue
		}
		for _, idx := range []map[string]*Metric{c.engine, c.router} {
			f, ok := idx[base]
			if !ok {
				continue
			}
			want := Histogram
			if suf == "_total" || suf == "_created" {
				want = Counter
			}
			if f.Type == want {
				m.set(f, suf, true)
			}
		}
	}
	if m.Engine != nil || m.Router != nil {
		return true
	}
	// A family name without its series suffix: a counter without _total or a histogram
	// without _bucket/_sum/_count matches nothing on a server.
	for _, idx := range []map[string]*Metric{c.engine, c.router} {
		if f, ok := idx[n]; ok {
			m.set(f, "", false)
		}
	}
	return m.Engine != nil || m.Router != nil
}

func (m *Match) set(f *Metric, suffix string, exposed bool) {
	if f.Source == Router {
		if m.Router != nil {
			return
		}
		m.Router = f
	} else {
		if m.Engine != nil {
			return
		}
		m.Engine = f
	}
	if m.Engine == f || m.Router == f {
		if m.Suffix == "" {
			m.Suffix = suffix
		}
		m.Exposed = m.Exposed || exposed
	}
}

// Names returns every series name the catalog knows, in vLLM's spelling, sorted: the set
// a __name__ regex is tested against.
func (c *Catalog) Names() []string {
	seen := map[string]bool{}
	for _, m := range c.Metrics {
		for _, s := range m.Series() {
			seen[s] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Version is a vLLM release number. The zero Version means unknown or never.
type Version struct{ Major, Minor, Patch int }

// ParseVersion reads "0.9", "0.9.2" or "v0.9.2"; "0.9" means 0.9.0.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q: write it as X.Y or X.Y.Z", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("version %q: write it as X.Y or X.Y.Z", s)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// IsZero reports whether the version is unset.
func (v Version) IsZero() bool { return v == Version{} }

// Less reports whether v is an older release than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// String returns "X.Y.Z", or "" for the zero version.
func (v Version) String() string {
	if v.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// UnmarshalYAML reads a version scalar; an empty value is the zero version.
func (v *Version) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "" {
		*v = Version{}
		return nil
	}
	p, err := ParseVersion(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*v = p
	return nil
}

// MarshalText writes the version as "X.Y.Z".
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }
