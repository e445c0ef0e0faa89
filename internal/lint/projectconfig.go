package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// ProjectConfigNames are the names of a repository's kvcheck config file, looked for in the
// working directory and then in each directory above it, as golangci-lint looks for
// .golangci.yml; the first directory holding one wins.
var ProjectConfigNames = []string{".kvcheck.yaml", ".kvcheck.yml"}

// maxProjectConfig bounds the config file read: a config is a few hundred bytes.
const maxProjectConfig = 1 << 20

// ProjectConfig is a repository's .kvcheck.yaml: the releases lint judges against, the files
// it reads and the findings it reports, written once for every run in the repository (CI,
// pre-commit, a person's) instead of as flags each time. Flags given on the command line win
// over it; its ignores add to .kvcheckignore's and to kvcheck:ignore comments.
//
//	version: 1
//	lint:
//	  targets: {vllm: "0.30", llm-d: "0.9"}
//	  fail-on: warning
//	  baseline: .kvcheck-baseline.json
//	  include: [dashboards/, deploy/]
//	  exclude: ["**/testdata/**"]
//	  ignore:
//	    - {code: metric-deprecated, paths: [legacy/], reason: the old fleet}
//	  severity: {metric-unknown: error, LL-01: info}
//
// Globs and the baseline are relative to the config's directory; see matchGlob.
type ProjectConfig struct {
	// Path is the file as found or given, Dir its directory (absolute).
	Path, Dir string
	// Targets are the releases per family (catalog family name to release), in the form
	// --target takes, with where each was written.
	Targets []configTarget
	// FailOn is lint's --fail-on from the file ("" when it sets none), FailOnAt where.
	FailOn, FailOnAt string
	// Baseline is the baseline file (joined to Dir), BaselineAt where it was written.
	Baseline, BaselineAt string
	Include, Exclude     []pathGlob
	// Ignore are the file's ignore rules, matched against paths relative to Dir.
	Ignore []IgnoreRule
	// Severity are the severity overrides by finding code or rule id, in file order.
	Severity []severityOverride
	// Warnings are what the file holds that this kvcheck does not read (unknown keys,
	// families and codes), each naming the file, line and key: reported, not refused.
	Warnings []string
}

type configTarget struct {
	Family  string
	Version catalog.Version
	At      string
}

type severityOverride struct {
	Code     string
	Severity finding.Severity
	At       string
}

// pathGlob is one include, exclude or ignore path of a config: a glob of slash-separated
// segments relative to the config's directory.
type pathGlob struct {
	Pattern string
	At      string
	segs    []string
}

// FindProjectConfig looks for a config file in dir and each directory above it and returns
// the first one's path, or "" when there is none.
func FindProjectConfig(dir string) (string, error) {
	for {
		var found []string
		for _, n := range ProjectConfigNames {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				found = append(found, p)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 2:
			return "", usage.Errorf("%s and %s: two kvcheck configs in one directory; keep one (or give --config)", found[0], found[1])
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// LoadProjectConfig reads the config a lint run uses: name when given (--config), else the
// one FindProjectConfig finds from wd; nil when there is none. Paths it holds are made
// absolute from the file's directory.
func LoadProjectConfig(name, wd string, cat *catalog.Catalog) (*ProjectConfig, error) {
	explicit := name != ""
	if !explicit {
		var err error
		if name, err = FindProjectConfig(wd); err != nil || name == "" {
			return nil, err
		}
	}
	f, err := os.Open(name)
	if err != nil {
		if explicit && errors.Is(err, fs.ErrNotExist) {
			return nil, usage.Errorf("--config: %v", err)
		}
		return nil, fmt.Errorf("kvcheck config: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	src, err := io.ReadAll(io.LimitReader(f, maxProjectConfig+1))
	if err != nil {
		return nil, fmt.Errorf("kvcheck config %s: %w", name, err)
	}
	if len(src) > maxProjectConfig {
		return nil, usage.Errorf("%s: larger than %d KiB: a kvcheck config is a few lines of YAML", name, maxProjectConfig>>10)
	}
	shown := name
	if rel, err := filepath.Rel(wd, name); err == nil && wd != "" && filepath.IsAbs(name) {
		shown = rel
	}
	cfg, err := ParseProjectConfig(shown, src, cat)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("kvcheck config %s: %w", name, err)
	}
	cfg.Dir = filepath.Dir(abs)
	if cfg.Baseline != "" && !filepath.IsAbs(cfg.Baseline) {
		cfg.Baseline = filepath.Join(cfg.Dir, filepath.FromSlash(cfg.Baseline))
		if rel, err := filepath.Rel(wd, cfg.Baseline); err == nil && wd != "" {
			cfg.Baseline = rel
		}
	}
	for i := range cfg.Ignore {
		globs := cfg.Ignore[i].globs
		if len(globs) == 0 {
			continue
		}
		dir := cfg.Dir
		cfg.Ignore[i].within = func(file string) bool {
			rel, ok := relTo(dir, file)
			return ok && anyGlob(globs, rel) != nil
		}
	}
	return cfg, nil
}

// ParseProjectConfig reads a config's content; name is how errors and warnings name the file.
// A value of the wrong kind or a bad value of a key this kvcheck reads is an error naming the
// file, line and key; a key, family or code it does not know is a warning (Warnings), so a
// config written for a newer kvcheck still works with this one.
func ParseProjectConfig(name string, src []byte, cat *catalog.Catalog) (*ProjectConfig, error) {
	cfg := &ProjectConfig{Path: name}
	p := &configParser{name: name, cfg: cfg, cat: cat}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // an empty file configures nothing
		}
		return nil, usage.Errorf("%s: not YAML: %v", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, usage.Errorf("%s: more than one YAML document: a kvcheck config is one", name)
	}
	if err := p.top(&doc); err != nil {
		return nil, err
	}
	return cfg, nil
}

// configParser walks the config's YAML nodes, so every error and warning has its line.
type configParser struct {
	name string
	cfg  *ProjectConfig
	cat  *catalog.Catalog
}

func (p *configParser) at(n *yaml.Node) string { return fmt.Sprintf("%s:%d", p.name, n.Line) }

// errorf is an error at a node: file:line: key: what.
func (p *configParser) errorf(n *yaml.Node, key, format string, args ...any) error {
	return usage.Errorf("%s: %s: %s", p.at(n), key, fmt.Sprintf(format, args...))
}

func (p *configParser) warnf(n *yaml.Node, key, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: %s: %s", p.at(n), key, fmt.Sprintf(format, args...)))
}

// mapping returns a mapping node's keys and values in order; an alias is refused, so a config
// cannot expand past its size.
func (p *configParser) mapping(n *yaml.Node, key string) ([][2]*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return nil, p.errorf(n, key, "an alias (*name): write the value out, a kvcheck config reads no aliases")
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, key, "want a mapping of keys to values, got %s", yamlKind(n))
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(k, key, "a key that is not a string")
		}
		if seen[k.Value] {
			return nil, p.errorf(k, joinKey(key, k.Value), "given twice")
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, n.Content[i+1]})
	}
	return out, nil
}

// scalar returns a scalar's text as written (0.10 stays 0.10, not the float 0.1).
func (p *configParser) scalar(n *yaml.Node, key string) (string, error) {
	if n.Kind == yaml.AliasNode {
		return "", p.errorf(n, key, "an alias (*name): write the value out, a kvcheck config reads no aliases")
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n, key, "want a value, got %s", yamlKind(n))
	}
	return strings.TrimSpace(n.Value), nil
}

// strings reads one string or a list of them (include: dashboards/ or include: [a/, b/]).
func (p *configParser) strings(n *yaml.Node, key string) ([]*yaml.Node, error) {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, nil
	case n.Kind == yaml.ScalarNode:
		return []*yaml.Node{n}, nil
	case n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
				return nil, p.errorf(c, fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", yamlKind(c))
			}
		}
		return n.Content, nil
	case n.Kind == yaml.AliasNode:
		return nil, p.errorf(n, key, "an alias (*name): write the value out, a kvcheck config reads no aliases")
	}
	return nil, p.errorf(n, key, "want a string or a list of strings, got %s", yamlKind(n))
}

func (p *configParser) top(doc *yaml.Node) error {
	root := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	kvs, err := p.mapping(root, "the file")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "version":
			s, err := p.scalar(v, "version")
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			switch {
			case err != nil || n < 1:
				return p.errorf(v, "version", "%q: want 1, the version of the config's format", s)
			case n > 1:
				p.warnf(v, "version", "%d is newer than this kvcheck's config format (1): the keys it knows are read, the others reported", n)
			}
		case "lint":
			if err := p.lint(v); err != nil {
				return err
			}
		default:
			p.warnf(k, k.Value, "unknown key, ignored (this kvcheck reads version and lint)")
		}
	}
	return nil
}

// lintKeys are the keys of the lint section, for the warning about an unknown one.
const lintKeys = "targets, fail-on, baseline, include, exclude, ignore and severity"

func (p *configParser) lint(n *yaml.Node) error {
	kvs, err := p.mapping(n, "lint")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		key := "lint." + k.Value
		var err error
		switch k.Value {
		case "targets":
			err = p.targets(v, key)
		case "fail-on":
			var s string
			if s, err = p.scalar(v, key); err == nil {
				if verr := finding.FailOn(strings.ToLower(s)).Validate(); verr != nil {
					err = p.errorf(v, key, "%q: write error, warning, info or never", s)
				}
				p.cfg.FailOn, p.cfg.FailOnAt = strings.ToLower(s), p.at(v)
			}
		case "baseline":
			var s string
			if s, err = p.scalar(v, key); err == nil {
				if s == "" {
					err = p.errorf(v, key, "empty: name the file lint --write-baseline wrote")
				}
				p.cfg.Baseline, p.cfg.BaselineAt = s, p.at(v)
			}
		case "include":
			p.cfg.Include, err = p.globs(v, key)
		case "exclude":
			p.cfg.Exclude, err = p.globs(v, key)
		case "ignore":
			err = p.ignores(v, key)
		case "severity":
			err = p.severities(v, key)
		default:
			p.warnf(k, key, "unknown key, ignored (lint reads %s)", lintKeys)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scalars calls each with every key of a mapping of values (targets, severity), its full key
// and its value's text.
func (p *configParser) scalars(n *yaml.Node, key string, each func(k, v *yaml.Node, fk, s string) error) error {
	kvs, err := p.mapping(n, key)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		fk := joinKey(key, k.Value)
		s, err := p.scalar(v, fk)
		if err != nil {
			return err
		}
		if err := each(k, v, fk, s); err != nil {
			return err
		}
	}
	return nil
}

func (p *configParser) targets(n *yaml.Node, key string) error {
	return p.scalars(n, key, func(k, v *yaml.Node, fk, s string) error {
		if p.cat != nil && p.cat.Family(k.Value) == nil {
			p.warnf(k, fk, "a family this kvcheck does not know, ignored (families: %s)", p.cat.FamilyNames())
			return nil
		}
		ver, err := catalog.ParseRelease(s)
		if err == nil && ver.IsZero() {
			err = errors.New("0.0.0 is no release")
		}
		if err != nil {
			return p.errorf(v, fk, "%v", err)
		}
		p.cfg.Targets = append(p.cfg.Targets, configTarget{Family: k.Value, Version: ver, At: p.at(v)})
		return nil
	})
}

func (p *configParser) globs(n *yaml.Node, key string) ([]pathGlob, error) {
	items, err := p.strings(n, key)
	if err != nil {
		return nil, err
	}
	out := make([]pathGlob, 0, len(items))
	for i, it := range items {
		g, err := compileGlob(it.Value)
		if err != nil {
			k := key
			if n.Kind == yaml.SequenceNode {
				k = fmt.Sprintf("%s[%d]", key, i)
			}
			return nil, p.errorf(it, k, "%v", err)
		}
		g.At = p.at(it)
		out = append(out, g)
	}
	return out, nil
}

func (p *configParser) ignores(n *yaml.Node, key string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, key, "want a list of {code, paths, reason}, got %s", yamlKind(n))
	}
	for i, item := range n.Content {
		ik := fmt.Sprintf("%s[%d]", key, i)
		kvs, err := p.mapping(item, ik)
		if err != nil {
			return err
		}
		r := IgnoreRule{Source: p.at(item)}
		for _, kv := range kvs {
			k, v := kv[0], kv[1]
			fk := ik + "." + k.Value
			switch k.Value {
			case "code":
				if r.Code, err = p.scalar(v, fk); err == nil && r.Code == "" {
					err = p.errorf(v, fk, "empty: give a finding code (metric-deprecated) or rule id (LL-01)")
				}
				if err == nil && strings.ContainsAny(r.Code, " \t") {
					err = p.errorf(v, fk, "%q: one code an entry", r.Code)
				}
				if err == nil {
					p.checkCode(v, fk, r.Code)
				}
			case "paths", "path":
				r.globs, err = p.globs(v, fk)
			case "reason":
				r.Reason, err = p.scalar(v, fk)
			default:
				p.warnf(k, fk, "unknown key, ignored (an ignore reads code, paths and reason)")
			}
			if err != nil {
				return err
			}
		}
		if r.Code == "" {
			return p.errorf(item, ik, "no code: give the finding code (metric-deprecated) or rule id (LL-01) to ignore")
		}
		p.cfg.Ignore = append(p.cfg.Ignore, r)
	}
	return nil
}

func (p *configParser) severities(n *yaml.Node, key string) error {
	return p.scalars(n, key, func(k, v *yaml.Node, fk, s string) error {
		sev, err := finding.ParseSeverity(s)
		if err != nil {
			return p.errorf(v, fk, "%q: write error, warning or info (to drop a finding, ignore it)", s)
		}
		p.checkCode(k, fk, k.Value)
		p.cfg.Severity = append(p.cfg.Severity, severityOverride{Code: k.Value, Severity: sev, At: p.at(v)})
		return nil
	})
}

// checkCode warns about a code no lint finding carries: a typo would otherwise do nothing.
func (p *configParser) checkCode(n *yaml.Node, key, code string) {
	if !knownCode(code) {
		p.warnf(n, key, "no lint finding has code %q (see the codes in the README's lint section), so this entry does nothing", code)
	}
}

// knownCode reports whether a lint finding can carry code, as its code or its rule's id.
func knownCode(code string) bool {
	switch strings.ToLower(code) {
	case CodeRemoved, CodeHidden, CodeDeprecated, CodeUnknown, CodeLabelDrift, CodeUnparsed, CodeSkipped,
		CodeAbsent, CodeStale, CodeCounterRaw, CodeRatioMismatch, CodeQuantile, CodeYAMLBomb:
		return true
	}
	for _, r := range Rules() {
		if strings.EqualFold(r.Code, code) || (r.ID != "" && strings.EqualFold(r.ID, code)) {
			return true
		}
	}
	return false
}

func joinKey(key, k string) string {
	if strings.ContainsAny(k, ". ") {
		return fmt.Sprintf("%s[%q]", key, k)
	}
	return key + "." + k
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

// compileGlob checks a glob: slash-separated segments, each a path.Match pattern, or "**" for
// any number of directories. A glob without a slash matches a name in any directory (*.md),
// one with a slash a path from the config's directory (a leading / anchors one without
// another slash there, /build); a trailing slash is dropped: every glob also matches what is
// under what it matches (vendor matches vendor/x/y.json).
func compileGlob(p string) (pathGlob, error) {
	g := pathGlob{Pattern: p}
	p = strings.TrimSpace(filepath.ToSlash(p))
	p = strings.TrimPrefix(p, "./")
	anchored := strings.HasPrefix(p, "/")
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return g, errors.New("an empty glob: name a file, a directory or a pattern such as dashboards/**/*.json")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch s {
		case "**":
			continue
		case "", ".", "..":
			return g, fmt.Errorf("%q: a glob is a path inside the config's directory, without empty, . or .. parts", g.Pattern)
		}
		if _, err := path.Match(s, ""); err != nil {
			return g, fmt.Errorf("%q: bad pattern %q: %v", g.Pattern, s, err)
		}
	}
	if len(segs) == 1 && !anchored && segs[0] != "**" {
		segs = []string{"**", segs[0]}
	}
	g.segs = segs
	return g, nil
}

// match reports whether a path relative to the config's directory (slash-separated), or one of
// the directories above it, matches the glob.
func (g pathGlob) match(rel string) bool {
	parts := strings.Split(rel, "/")
	for n := len(parts); n >= 1; n-- {
		if matchSegs(g.segs, parts[:n]) {
			return true
		}
	}
	return false
}

// matchSegs matches path segments against glob segments, "**" matching any number of them,
// in time proportional to their product (no backtracking blow-up on many "**").
func matchSegs(pat, parts []string) bool {
	// ok[j]: pat[i:] matches parts[j:], computed from the last glob segment back.
	ok := make([]bool, len(parts)+1)
	ok[len(parts)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		next := ok
		ok = make([]bool, len(parts)+1)
		if pat[i] == "**" {
			// ** matches parts[j:k] for any k >= j: ok[j] = next[j] || ok[j+1].
			ok[len(parts)] = next[len(parts)]
			for j := len(parts) - 1; j >= 0; j-- {
				ok[j] = next[j] || ok[j+1]
			}
			continue
		}
		for j := 0; j < len(parts); j++ {
			if next[j+1] {
				if m, _ := path.Match(pat[i], parts[j]); m {
					ok[j] = true
				}
			}
		}
	}
	return ok[0]
}

// anyGlob returns the first glob that matches rel, or nil.
func anyGlob(globs []pathGlob, rel string) *pathGlob {
	for i := range globs {
		if globs[i].match(rel) {
			return &globs[i]
		}
	}
	return nil
}

// relTo returns a file's path relative to dir, slash-separated, and whether it is inside dir.
func relTo(dir, file string) (string, bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// Leaves reports whether the config leaves a file out, and why: a file inside the config's
// directory that no include glob matches (when there are include globs), or that an exclude
// glob matches. A file outside the directory is never left out.
func (c *ProjectConfig) Leaves(file string) (string, bool) {
	if c == nil || len(c.Include) == 0 && len(c.Exclude) == 0 {
		return "", false
	}
	rel, ok := relTo(c.Dir, file)
	if !ok {
		return "", false
	}
	if g := anyGlob(c.Exclude, rel); g != nil {
		return fmt.Sprintf("excluded by %q (%s)", g.Pattern, g.At), true
	}
	if len(c.Include) > 0 && anyGlob(c.Include, rel) == nil {
		return fmt.Sprintf("no include glob of %s matches it", c.Path), true
	}
	return "", false
}

// TargetSpec returns the releases of the families the flags do not name, in --target's form,
// after the flags' own: a family given by --target (or vLLM's by --target-version) keeps the
// flag's release.
func (c *ProjectConfig) TargetSpec(flagVersion, flagSpec string, cat *catalog.Catalog) string {
	if c == nil || len(c.Targets) == 0 {
		return flagSpec
	}
	given := map[string]bool{}
	if flagVersion != "" {
		given[catalog.VLLM] = true
	}
	if t, err := cat.ParseTargets(flagSpec); err == nil {
		for f := range t {
			given[f] = true
		}
	}
	parts := []string{}
	if strings.TrimSpace(flagSpec) != "" {
		parts = append(parts, flagSpec)
	}
	for _, t := range c.Targets {
		if !given[t.Family] {
			parts = append(parts, t.Family+"="+t.Version.String())
		}
	}
	return strings.Join(parts, ",")
}

// ApplySeverity sets the severity of the findings an override names (by code or rule id); the
// last override of a code wins.
func (c *ProjectConfig) ApplySeverity(files []FileResult) {
	if c == nil || len(c.Severity) == 0 {
		return
	}
	for i := range files {
		for j := range files[i].Findings {
			f := &files[i].Findings[j]
			for _, o := range slices.Backward(c.Severity) {
				if codeMatches(o.Code, f) {
					f.Severity = o.Severity
					break
				}
			}
		}
	}
}
