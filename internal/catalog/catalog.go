package catalog

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
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
	Until Version `yaml:"until"`
	Unit  string  `yaml:"unit"`
	Note  string  `yaml:"note"`
}

// Family is one publisher of metrics with its own release numbering: vLLM, the llm-d
// router's endpoint picker, the Gateway API Inference Extension's reference picker, ...
type Family struct {
	// Name is the key used in --target (vllm, llm-d, gaie, ...).
	Name string `yaml:"name"`
	// Display names the family in messages ("vLLM", "llm-d-router").
	Display string `yaml:"display"`
	// Newest is the newest release the catalog describes; the default target.
	Newest Version `yaml:"newest"`
	// Versions says what the version numbers are the releases of.
	Versions string `yaml:"versions"`
	// Prefixes are name prefixes only this family uses: a name with one of them that the
	// catalog does not know is reported as unknown rather than ignored.
	Prefixes []string `yaml:"prefixes"`
	// Ref is where the family's metric list was read.
	Ref string `yaml:"ref"`
}

// Metric is one metric family and its history.
type Metric struct {
	Name        string       `yaml:"name"`
	Family      string       `yaml:"family"`
	Type        Type         `yaml:"type"`
	Source      Source       `yaml:"source"`
	Engines     []string     `yaml:"engines"`
	Added       Version      `yaml:"added"`
	Deprecated  Version      `yaml:"deprecated"`
	Hidden      Version      `yaml:"hidden"`
	Removed     Version      `yaml:"removed"`
	Replacement string       `yaml:"replacement"`
	Rewrite     Rewrite      `yaml:"rewrite"`
	Expr        string       `yaml:"expr"`
	Labels      []string     `yaml:"labels"`
	Units       []UnitChange `yaml:"units"`
	Help        string       `yaml:"help"`
	Note        string       `yaml:"note"`
	// Refs are the sources the entry was read from: "owner/repo path@tag-or-commit", or a
	// URL (a pull request, a versioned documentation page).
	Refs []string `yaml:"refs"`
	// Unreleased marks a name that existed only on a development branch, in no release:
	// Removed is then the first release that has its replacement instead.
	Unreleased bool `yaml:"unreleased"`
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
	// Engine and Router are the families the name belongs to; either may be nil. For a
	// family other than vLLM, Engine is that family's metric (the publisher's own).
	Engine, Router *Metric
	// Family is the name of the family the name was found in (vllm when none).
	Family string
	// Also are the same name's entries in further families (the llm-d router's picker and
	// the Gateway API Inference Extension's share names), in the catalog's family order.
	Also []*Metric
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
	if m.Family != "" && m.Family != VLLM {
		switch m.Form {
		case Adapter:
			return strings.Replace(name, ":", "_", 1)
		case GMP:
			if parts := strings.Split(m.Written, "|"); len(parts) == 3 {
				inner := name
				if !strings.Contains(parts[1], ":") {
					inner = strings.Replace(name, ":", "_", 1)
				}
				return parts[0] + "|" + inner + "|" + parts[2]
			}
		}
		return name
	}
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
	// Newest is the newest vLLM release the catalog describes; the default vLLM target.
	Newest   Version
	Families []*Family
	Metrics  []*Metric

	engine, router map[string]*Metric   // vLLM: family name -> metric
	others         map[string][]*Metric // other families: name -> metrics, in family order
	family         map[string]*Family
}

// VLLM is the name of vLLM's family.
const VLLM = "vllm"

type file struct {
	Families []*Family `yaml:"families"`
	Metrics  []*Metric `yaml:"metrics"`
}

// Family returns the family of that name, or nil.
func (c *Catalog) Family(name string) *Family { return c.family[name] }

// FamilyOf returns the family a metric belongs to.
func (c *Catalog) FamilyOf(m *Metric) *Family { return c.family[m.Family] }

// refRE is the form of a source reference: a URL, or "owner/repo path@rev".
var refRE = regexp.MustCompile(`^(https://\S+|[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+ \S+@\S+)$`)

var loadOnce = sync.OnceValues(func() (*Catalog, error) { return Parse(data) })

// Load returns the embedded catalog, parsed once.
func Load() (*Catalog, error) { return loadOnce() }

// Parse reads a catalog data file. Every entry must name its family and cite a source.
func Parse(b []byte) (*Catalog, error) {
	var f file
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("metric catalog: %w", err)
	}
	c := &Catalog{Families: f.Families, Metrics: f.Metrics, engine: map[string]*Metric{}, router: map[string]*Metric{},
		others: map[string][]*Metric{}, family: map[string]*Family{}}
	for i, fam := range f.Families {
		if fam.Name == "" || fam.Newest.IsZero() || fam.Ref == "" {
			return nil, fmt.Errorf("metric catalog: family %d: name, newest and ref are required", i)
		}
		if c.family[fam.Name] != nil {
			return nil, fmt.Errorf("metric catalog: family %s listed twice", fam.Name)
		}
		if fam.Display == "" {
			fam.Display = fam.Name
		}
		c.family[fam.Name] = fam
	}
	if v := c.family[VLLM]; v != nil {
		c.Newest = v.Newest
	}
	seen := map[string]bool{}
	for i, m := range f.Metrics {
		if m.Family == "" {
			m.Family = VLLM
		}
		if c.family[m.Family] == nil {
			return nil, fmt.Errorf("metric catalog: %s: unknown family %q", m.Name, m.Family)
		}
		if (m.Family == VLLM || m.Source == Router) && !strings.HasPrefix(m.Name, "vllm:") {
			return nil, fmt.Errorf("metric catalog: entry %d: name %q lacks the vllm: prefix", i, m.Name)
		}
		if !nameRE.MatchString(m.Name) {
			return nil, fmt.Errorf("metric catalog: entry %d: %q is not a metric name", i, m.Name)
		}
		if len(m.Refs) == 0 {
			return nil, fmt.Errorf("metric catalog: %s (%s): no source: every entry cites where it was read (refs)", m.Name, m.Family)
		}
		for _, r := range m.Refs {
			if !refRE.MatchString(r) {
				return nil, fmt.Errorf("metric catalog: %s (%s): source %q is neither a URL nor \"owner/repo path@rev\"", m.Name, m.Family, r)
			}
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
		if m.Unreleased && m.Removed.IsZero() {
			return nil, fmt.Errorf("metric catalog: %s: unreleased without the release that replaced it (removed)", m.Name)
		}
		if m.Labels == nil {
			m.Labels = []string{}
		}
		if m.Engines == nil {
			m.Engines = []string{}
		}
		if m.Source == "" && m.Family != VLLM {
			m.Source = Engine
		}
		if m.Source != Engine && m.Source != Router {
			return nil, fmt.Errorf("metric catalog: %s: unknown source %q", m.Name, m.Source)
		}
		key := string(m.Source) + "\x00" + m.Name
		if m.Source != Router {
			key = m.Family + "\x00" + key
		}
		if seen[key] {
			return nil, fmt.Errorf("metric catalog: %s listed twice for the %s", m.Name, m.Source)
		}
		seen[key] = true
		switch {
		case m.Source == Router:
			// production-stack's router publishes under vllm: names: looked up beside
			// vLLM's engine metrics, whatever family carries its version axis.
			c.router[m.Name] = m
		case m.Family != VLLM:
			c.others[m.Name] = append(c.others[m.Name], m)
		default:
			c.engine[m.Name] = m
		}
	}
	// A name several families publish is looked up in the order the families are listed.
	order := map[string]int{}
	for i, fam := range f.Families {
		order[fam.Name] = i
	}
	for _, ms := range c.others {
		slices.SortStableFunc(ms, func(a, b *Metric) int { return order[a.Family] - order[b.Family] })
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
	if om, ok := c.lookupOther(written); ok {
		return om, true
	}
	m.Name = name
	m.Family = VLLM
	if c.resolve(&m) {
		return m, true
	}
	if m.Form == Plain {
		return m, true // a vllm: name nobody publishes: the caller reports it as unknown
	}
	return Match{}, false
}

// lookupOther finds a name of a family other than vLLM, as written or in the adapter
// spelling (sglang_x for sglang:x). A name with a prefix only one family uses but that the
// catalog does not know is returned without a metric, so the caller can call it unknown.
func (c *Catalog) lookupOther(written string) (Match, bool) {
	if m, ok := c.resolveOther(written, Plain); ok {
		return m, true
	}
	for _, fam := range c.Families {
		for _, p := range fam.Prefixes {
			colon, ok := strings.CutSuffix(p, ":")
			if !ok || !strings.HasPrefix(written, colon+"_") {
				continue
			}
			if m, ok := c.resolveOther(p+strings.TrimPrefix(written, colon+"_"), Adapter); ok {
				m.Written = written
				return m, true
			}
		}
	}
	for _, fam := range c.Families {
		if fam.Name == VLLM {
			continue
		}
		for _, p := range fam.Prefixes {
			if strings.HasPrefix(written, p) {
				return Match{Written: written, Form: Plain, Name: written, Family: fam.Name}, true
			}
		}
	}
	return Match{}, false
}

// resolveOther looks n up among the other families' names, series suffixes understood.
func (c *Catalog) resolveOther(n string, form Form) (Match, bool) {
	m := Match{Written: n, Form: form, Name: n}
	add := func(ms []*Metric, suffix string, exposed bool, want ...Type) {
		for _, f := range ms {
			if !slices.Contains(want, f.Type) {
				continue
			}
			if m.Engine == nil {
				m.Engine, m.Suffix, m.Exposed, m.Family = f, suffix, exposed, f.Family
			} else if f != m.Engine {
				m.Also = append(m.Also, f)
			}
		}
	}
	add(c.others[n], "", true, Gauge, Info)
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total", "_created"} {
		if base, ok := strings.CutSuffix(n, suf); ok {
			if suf == "_total" || suf == "_created" {
				add(c.others[base], suf, true, Counter)
			} else {
				add(c.others[base], suf, true, Histogram)
			}
		}
	}
	if m.Engine == nil {
		add(c.others[n], "", false, Counter, Histogram)
	}
	return m, m.Engine != nil
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

// releaseRE reads a release as its writers print it: X.Y or X.Y.Z, then what a post release
// (.1, .post2), a release candidate or pre-release (rc1, a1, b1, .dev0) or a local build
// (+cu128) adds, none of which changes the metric names.
var releaseRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+|\.?post\d+)?(?:\.?(?:rc|a|b|dev)\d+)?(?:\+[0-9A-Za-z.]+)?$`)

// ParseRelease reads a release from a flag as `vllm --version`, an image tag or a pip pin
// writes it (0.10.1.1, 0.11.0+cu128, 0.11.0rc1, 0.5.6.post2): its X.Y.Z.
func ParseRelease(s string) (Version, error) {
	m := releaseRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("version %q: write it as X.Y or X.Y.Z (what vllm --version prints, such as 0.10.1.1 or 0.11.0+cu128, is read as its X.Y.Z)", strings.TrimSpace(s))
	}
	var n [3]int
	for i, p := range m[1:] {
		if p != "" {
			n[i], _ = strconv.Atoi(p) // digits, matched
		}
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

// Targets are the releases each family is judged against, by family name; a family not in
// the map is judged against its newest known release.
type Targets map[string]Version

// ParseTargets reads "vllm=0.30,llm-d=0.5": family names the catalog knows, each with a
// release X.Y or X.Y.Z.
func (c *Catalog) ParseTargets(spec string) (Targets, error) {
	t := Targets{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, ver, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: write FAMILY=VERSION, such as vllm=0.30 (families: %s)", part, c.familyNames())
		}
		name = strings.TrimSpace(name)
		if c.family[name] == nil {
			return nil, fmt.Errorf("%q: unknown family %q (families: %s)", part, name, c.familyNames())
		}
		if _, dup := t[name]; dup {
			return nil, fmt.Errorf("%q: family %s given twice", part, name)
		}
		v, err := ParseRelease(ver)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if v.IsZero() {
			return nil, fmt.Errorf("%s: 0.0.0 is no release", name)
		}
		t[name] = v
	}
	return t, nil
}

// Beyond says, one sentence per family, which targets are newer than the catalog's newest
// release of their family. Judging them goes on (what was gone by the newest known release
// stays gone), but renames after it are not known: a run says so rather than imply a full check.
func (c *Catalog) Beyond(t Targets) []string {
	var out []string
	for _, f := range c.Families {
		if v, ok := t[f.Name]; ok && f.Newest.Less(v) {
			out = append(out, fmt.Sprintf("target %s %s is newer than the metric catalog (%s %s): changes after %s are not known to this kvcheck",
				f.Display, v, f.Display, f.Newest, f.Newest))
		}
	}
	return out
}

// FamilyNames lists the families' keys, comma-separated, in the catalog's order: the names
// --target and --family take.
func (c *Catalog) FamilyNames() string { return c.familyNames() }

func (c *Catalog) familyNames() string {
	names := make([]string, 0, len(c.Families))
	for _, f := range c.Families {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// TargetOf returns the release a family is judged against: the one given, else the newest
// the catalog knows.
func (c *Catalog) TargetOf(t Targets, family string) Version {
	if v, ok := t[family]; ok {
		return v
	}
	if f := c.family[family]; f != nil {
		return f.Newest
	}
	return Version{}
}

// SeriesAt returns the series that stands for series (a name in the catalog's own
// spelling, suffix included) in release v of its family: the name itself when that release
// has it, else the name of the predecessor it replaced, when release v has that one. ok is
// false when release v has neither: a rewrite must then not be made, since it would write a
// name the release does not publish yet.
func (c *Catalog) SeriesAt(series string, v Version) (string, bool) {
	for range 4 { // a chain of renames is short; the bound keeps bad data from looping
		m, ok := c.Lookup(series)
		if !ok || m.Engine == nil {
			return "", false
		}
		e := m.Engine
		st, _ := e.StatusAt(v)
		if st != NotYet {
			return series, st != Removed
		}
		prev := c.predecessor(e)
		if prev == nil {
			return "", false
		}
		series = prev.Name + m.Suffix
		if prev.Type == Counter && m.Suffix == "" {
			series = prev.Name + "_total"
		}
	}
	return "", false
}

// Predecessor returns the metric of the same family whose rename points at m (the name m
// had before a release renamed it), or nil.
func (c *Catalog) Predecessor(m *Metric) *Metric { return c.predecessor(m) }

// predecessor returns the metric of the same family whose rename points at m.
func (c *Catalog) predecessor(m *Metric) *Metric {
	for _, p := range c.Metrics {
		if p.Family != m.Family || p.Source != m.Source || p.Rewrite != RewriteRename {
			continue
		}
		base := p.Replacement
		if m.Type == Counter {
			base = strings.TrimSuffix(base, "_total")
		}
		if base == m.Name {
			return p
		}
	}
	return nil
}
