package lint

import (
	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// Router and engine configuration is checked by internal/router/config: lint detects the files
// and hands it their YAML documents, or their text, and reports what it finds beside the
// metric findings. These are its names as lint has always exported them.

// The router and engine configuration formats lint recognises by content.
const (
	FormatLiteLLM     = Format(config.FormatLiteLLM)
	FormatEPC         = Format(config.FormatEPC)
	FormatLLMDValues  = Format(config.FormatLLMDValues)
	FormatProdStack   = Format(config.FormatProdStack)
	FormatDynamo      = Format(config.FormatDynamo)
	FormatCompose     = Format(config.FormatCompose)
	FormatWorkload    = Format(config.FormatWorkload)
	FormatPool        = Format(config.FormatPool)
	FormatObjective   = Format(config.FormatObjective)
	FormatRayServe    = Format(config.FormatRayServe)
	FormatShellScript = Format(config.FormatShellScript)
	FormatSGLang      = Format(config.FormatSGLang)
)

// StatusConfig marks a router or engine configuration finding.
const StatusConfig = config.StatusConfig

// CodeYAMLBomb is the code of the error on a file whose YAML aliases expand past the bound.
const CodeYAMLBomb = config.CodeYAMLBomb

// Rule is one router or engine configuration check (config.Rule).
type Rule = config.Rule

// What a config error defeats (Rule.Defeats).
const (
	DefeatsAny      = config.DefeatsAny
	DefeatsKVRouter = config.DefeatsKVRouter
	DefeatsSession  = config.DefeatsSession
)

// Rules returns the config rules, in table order.
func Rules() []Rule { return config.Rules() }

// LookupRule returns the config rule with a code.
func LookupRule(code string) (Rule, bool) { return config.LookupRule(code) }

// RulesMarkdown renders the rule table as the README lists it.
func RulesMarkdown() string { return config.RulesMarkdown() }

// RuleAnchor is the README's anchor of a finding code's row (rule-litellm-no-affinity), which
// SARIF rules link to as their help.
func RuleAnchor(code string) string { return config.RuleAnchor(code) }

// What configuration files show of a deployment (config.Deployment).
type (
	Deployment  = config.Deployment
	Object      = config.Object
	EngineFacts = config.EngineFacts
	RouterFacts = config.RouterFacts
)

// The router kinds of RouterFacts, as the checks name them.
const (
	RouterLLMD      = config.RouterLLMD
	RouterProdStack = config.RouterProdStack
	RouterDynamo    = config.RouterDynamo
	RouterSGLang    = config.RouterSGLang
	RouterRay       = config.RouterRay
	RouterLiteLLM   = config.RouterLiteLLM
)

// ProdStackRoutingLogics are the routing logics production-stack's router knows.
func ProdStackRoutingLogics() []string { return config.ProdStackRoutingLogics() }

// LiteLLMPreCallChecks are the optional_pre_call_checks LiteLLM knows.
func LiteLLMPreCallChecks() []string { return config.LiteLLMPreCallChecks() }

// DynamoRouterModes are the --router-mode choices of Dynamo's frontend.
func DynamoRouterModes() []string { return config.DynamoRouterModes() }

// DeploymentOf reads what the files of a lint run show, for kvcheck assess's router ranking.
func DeploymentOf(results []FileResult) Deployment {
	srcs := make([]config.Source, len(results))
	for i, r := range results {
		srcs[i] = config.Source{Path: r.Path, Facts: r.config}
		if !binary(r.Original) {
			srcs[i].Original = r.Original
		}
	}
	return config.DeploymentOf(srcs)
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
		var newest catalog.Version
		if f := fl.l.cat.Family(catalog.VLLM); f != nil {
			newest = f.Newest
		}
		cl := config.New(config.Options{VLLMNewest: newest, VLLMTarget: fl.l.TargetOf(catalog.VLLM), Rewrite: fl.l.rewrite})
		fl.cfg = cl.NewFile(fl.path, fl.src, fl.lines.Index)
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
func crossConfig(results []FileResult) {
	byPath := map[string]*FileResult{}
	facts := make([]*config.Facts, len(results))
	for i := range results {
		byPath[results[i].Path] = &results[i]
		facts[i] = results[i].config
	}
	config.Cross(facts, func(path string, cf *config.Finding) {
		if r := byPath[path]; r != nil {
			r.Findings = append(r.Findings, Finding{Finding: cf.Finding, Location: cf.Location, Status: cf.Status, Since: cf.Since})
		}
	})
}
