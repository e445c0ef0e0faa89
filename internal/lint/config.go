package lint

import (
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// Router and engine configuration is checked by internal/router/config, with each router
// product's checks from the registry (router.Checkers): lint detects the files, hands the
// config linter their YAML documents or text, and reports its findings beside its own.

// StatusConfig marks a router or engine configuration finding.
const StatusConfig = config.StatusConfig

// CodeYAMLBomb is the code of the error on a file whose YAML aliases expand past the bound.
const CodeYAMLBomb = config.CodeYAMLBomb

// The generic configuration formats (each product names its own: llmd.FormatEPC, ...).
const (
	FormatCompose     = Format(config.FormatCompose)
	FormatWorkload    = Format(config.FormatWorkload)
	FormatPool        = Format(config.FormatPool)
	FormatObjective   = Format(config.FormatObjective)
	FormatShellScript = Format(config.FormatShellScript)
)

// Rule is one router or engine configuration check (config.Rule).
type Rule = config.Rule

// What a config error defeats (Rule.Defeats).
const (
	DefeatsAny      = config.DefeatsAny
	DefeatsKVRouter = config.DefeatsKVRouter
	DefeatsSession  = config.DefeatsSession
)

// configRules is the config linter of the package's rule functions: every product's checks.
var configRules = sync.OnceValue(func() *config.Linter { return config.New(config.Options{Checkers: router.Checkers()}) })

// Rules returns the config rules, each product's in the registry's order, then the generic
// ones.
func Rules() []Rule { return configRules().Rules() }

// LookupRule returns the config rule with a code.
func LookupRule(code string) (Rule, bool) { return configRules().LookupRule(code) }

// RulesMarkdown renders the rule table as the README lists it.
func RulesMarkdown() string { return config.RulesMarkdown(Rules()) }

// RuleAnchor is the README's anchor of a finding code's row (rule-litellm-no-affinity), which
// SARIF rules link to as their help.
func RuleAnchor(code string) string { return config.RuleAnchor(code) }

// FormatSystem returns the system a configuration format belongs to, by its rules' code prefix:
// a product's id (llm-d, litellm, ...), vllm for the files that start engines, gaie for the
// Gateway API Inference Extension's objects; "" for a format that is no configuration.
func FormatSystem(f Format) string {
	switch f {
	case FormatWorkload, FormatCompose, FormatShellScript:
		return "vllm"
	case FormatPool, FormatObjective:
		return "gaie"
	}
	for _, c := range router.Checkers() {
		for _, g := range c.ConfigFormats() {
			if Format(g) == f {
				if rs := c.ConfigRules(); len(rs) > 0 {
					system, _, _ := strings.Cut(rs[0].Code, "/")
					return system
				}
			}
		}
	}
	return ""
}

// What configuration files show of a deployment (config.Deployment).
type (
	Deployment  = config.Deployment
	Object      = config.Object
	EngineFacts = config.EngineFacts
	RouterFacts = config.RouterFacts
)

// DeploymentOf reads what the files of a lint run show, for kvcheck assess's router ranking.
func DeploymentOf(results []FileResult) Deployment {
	srcs := make([]config.Source, len(results))
	for i, r := range results {
		srcs[i] = config.Source{Path: r.Path, Facts: r.config}
		if !binary(r.Original) {
			srcs[i].Original = r.Original
		}
	}
	return configRules().DeploymentOf(srcs)
}

// newConfigLinter returns the config linter of a Linter's run.
func newConfigLinter(cat *catalog.Catalog, target catalog.Version, rewrite bool) *config.Linter {
	var newest catalog.Version
	if f := cat.Family(catalog.VLLM); f != nil {
		newest = f.Newest
	}
	return config.New(config.Options{Checkers: router.Checkers(), VLLMNewest: newest, VLLMTarget: target, Rewrite: rewrite})
}

// configFound is a config finding and the finding lint reports for it.
type configFound struct {
	from *config.Finding
	to   *Finding
}

// configFile returns the file's config checks, starting them on the file as it is checked now
// (a Helm template's actions masked).
func (fl *fileLint) configFile() *config.File {
	if fl.cfg == nil {
		fl.cfg = fl.l.cfg.NewFile(fl.path, fl.src, fl.lines.index())
		if fl.masks != nil {
			fl.cfg.Template(fl.orig, fl.masks)
		}
	}
	return fl.cfg
}

// configDocs runs the config checks over a file's YAML documents and returns each document's
// config format, or "" where it is none.
func (fl *fileLint) configDocs(docs []*yaml.Node) []config.Format {
	reparse := parseYAML
	if fl.fromJSON != nil {
		reparse = reparseJSON
	}
	out := fl.configFile().Documents(docs, reparse)
	fl.adoptConfig()
	return out
}

// reparseJSON reads a rewritten JSON config as the YAML document it also is, as run reads it.
func reparseJSON(src []byte) ([]*yaml.Node, error) {
	root, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	again := &fileLint{src: src, lines: newLineIndex(src)}
	return []*yaml.Node{again.yamlOf(root)}, nil
}

// configText checks a file that is not YAML: a shell script that starts an engine or a router,
// a Python Ray Serve application.
func (fl *fileLint) configText() Format {
	f := fl.configFile().Text()
	fl.adoptConfig()
	return Format(f)
}

// adoptConfig reports the config findings made since the last call.
func (fl *fileLint) adoptConfig() {
	all := fl.cfg.Findings()
	for _, cf := range all[len(fl.cfgFound):] {
		f := &Finding{Finding: cf.Finding, Location: cf.Location, Status: cf.Status, Since: cf.Since}
		fl.findings = append(fl.findings, f)
		fl.cfgFound = append(fl.cfgFound, configFound{cf, f})
	}
}

// fixConfig makes the config findings' rewrites when the metric fixes rewrote nothing.
func (fl *fileLint) fixConfig() {
	if fl.cfg == nil {
		return
	}
	fl.cfg.Fix(fl.fixed != nil)
	for _, p := range fl.cfgFound {
		p.to.Fixed = p.to.Fixed || p.from.Fixed
		p.to.cfgFix = p.from.Exact
		for _, e := range p.from.Rewrite {
			p.to.cfgEdits = append(p.to.cfgEdits, fileEdit{e.Start, e.End, e.Text})
		}
	}
	if b := fl.cfg.Fixed(); b != nil {
		fl.fixed = b
	}
}

// crossConfig runs the config checks across the files of one run; each finding goes to the
// file of the thing to change.
func (l *Linter) crossConfig(results []FileResult) {
	byPath := map[string]*FileResult{}
	facts := make([]*config.Facts, len(results))
	for i := range results {
		byPath[results[i].Path] = &results[i]
		facts[i] = results[i].config
	}
	l.cfg.Cross(facts, func(path string, cf *config.Finding) {
		if r := byPath[path]; r != nil {
			r.Findings = append(r.Findings, Finding{Finding: cf.Finding, Location: cf.Location, Status: cf.Status, Since: cf.Since})
		}
	})
}
