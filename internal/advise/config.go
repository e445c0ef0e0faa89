package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// Config is what the router and engine configuration checks found in the user's files
// (kvcheck lint, through assess --config).
type Config struct {
	Inputs []string
	Files  int
	// Systems are the routers and engines the files configure, by their names in prose
	// (systemName).
	Systems []string
	// Findings are the config findings; Properties["defeats"] says what an error makes useless
	// (lint.DefeatsAny, DefeatsKVRouter, DefeatsSession) and Properties["rule"] its table id.
	Findings []finding.Finding
}

// cachingDisabled is lint's code for --no-enable-prefix-caching on an engine with no router in
// the files.
const cachingDisabled = "vllm/prefix-caching-disabled"

// FromConfig turns the lint results of the user's config files into assess's input: only the
// router and engine configuration findings count (metric names in the same files are lint's
// business, not the routing decision's).
func FromConfig(results []lint.FileResult, inputs []string) *Config {
	c := &Config{Inputs: inputs, Files: len(results), Systems: []string{}, Findings: []finding.Finding{}}
	addSystem := func(id string) {
		if s := systemName(id); s != "" && !slices.Contains(c.Systems, s) {
			c.Systems = append(c.Systems, s)
		}
	}
	// A router a file sets up counts though its product has no rules to tell its formats by
	// (the Kthena router's ConfigMap, a vLLM Router command line).
	for _, r := range lint.DeploymentOf(results).Routers {
		addSystem(r.Kind)
	}
	for _, r := range results {
		for _, f := range r.Formats {
			addSystem(lint.FormatSystem(f))
		}
		for _, x := range r.Findings {
			if x.Status != lint.StatusConfig && x.Code != lint.CodeYAMLBomb {
				continue
			}
			f := x.Finding
			f.Source = "config"
			f.Subject = fmt.Sprintf("%s:%d", x.File, x.Line)
			f.Properties = map[string]string{}
			if rule, ok := lint.LookupRule(x.Code); ok {
				if d := rule.Defeats; d != "" {
					f.Properties["defeats"] = d
				}
				if rule.ID != "" {
					f.Properties["rule"] = rule.ID
				}
			}
			if f.Code == cachingDisabled {
				// lint, a CI gate, grades an engine without a router in the files a warning (it
				// may be deliberate); assess asks whether routing pays, and an engine that caches
				// nothing answers it, as prefix caching off in the metrics does (an error there).
				f.Severity, f.Properties["defeats"] = finding.Error, lint.DefeatsAny
			}
			c.Findings = append(c.Findings, f)
		}
	}
	slices.Sort(c.Systems)
	return c
}

// configEvidence is the evidence line of the config checks.
func (d *decision) configEvidence() {
	c := d.in.Config
	if c == nil {
		return
	}
	errs, warns, infos := 0, 0, 0
	var rules []string
	for _, f := range c.Findings {
		switch f.Severity {
		case finding.Error:
			errs++
		case finding.Warning:
			warns++
		default:
			infos++
		}
		what := f.Code
		if r := f.Properties["rule"]; r != "" {
			what = r + " " + f.Code
		}
		if !slices.Contains(rules, what) {
			rules = append(rules, what)
		}
	}
	fig := fmt.Sprintf("%s, %s, %s in %s", count(errs, "error"), count(warns, "warning"), count(infos, "info"), count(c.Files, "file"))
	if len(rules) > 0 {
		fig += ": " + strings.Join(rules, ", ")
	}
	d.evidence("config.findings", "lint", shortList(c.Inputs), "router and engine configuration ("+orNone(strings.Join(c.Systems, ", "))+")", "%s", fig)
}

// configBlockers passes the config findings on as fixes and returns the blockers: an error that
// defeats every option (prefix caching off, an engine that cannot start), or the option the
// evidence recommends (the KV-aware router's view of the caches, session affinity's key).
func (d *decision) configBlockers(route Verdict) []Reason {
	c := d.in.Config
	if c == nil {
		return nil
	}
	// Every finding of the user's own files is passed on, infos too: each is a rule about the
	// router they run (passOn keeps only warnings and errors of the other analyses).
	for _, f := range c.Findings {
		d.fix(f)
	}
	var any, kv, session []string
	for _, f := range c.Findings {
		if f.Severity != finding.Error {
			continue
		}
		what := f.Code + " (" + f.Subject + ")"
		switch f.Properties["defeats"] {
		case lint.DefeatsAny:
			any = append(any, what)
		case lint.DefeatsKVRouter:
			kv = append(kv, what)
		case lint.DefeatsSession:
			session = append(session, what)
		}
	}
	var out []Reason
	block := func(rule, text string) {
		out = append(out, Reason{Rule: rule, Verdict: FixFirst, Strength: High, Evidence: []string{"config.findings"}, Text: text})
	}
	if len(any) > 0 {
		block("config-defeats-caching", fmt.Sprintf("your configuration switches prefix caching off or keeps an engine from starting (%s): no router can produce hits there", shortList(any)))
	}
	if len(kv) > 0 && route == KVAwareRouter {
		block("config-defeats-kv-router", fmt.Sprintf("the evidence recommends a KV-aware router, and your configuration keeps it from seeing the caches (%s)", shortList(kv)))
	}
	if len(session) > 0 && route == SessionAffinity {
		block("config-defeats-session", fmt.Sprintf("the evidence recommends session affinity, and your configuration keeps it from pinning sessions (%s)", shortList(session)))
	}
	return out
}

// systemName is the name in prose of the system whose id is id (a config rule code's prefix,
// lint.FormatSystem, a router kind): a product's Name.Display, else the System of the config
// rules under id (vLLM for the engines, GAIE for the Gateway API Inference Extension, which
// are no router products); "" for an id of none.
func systemName(id string) string {
	if p, ok := router.Lookup(id); ok {
		return p.Name().Display
	}
	for _, r := range lint.Rules() {
		if sys, _, _ := strings.Cut(r.Code, "/"); sys == id {
			return r.System
		}
	}
	return ""
}

// productAdvice is every product's advice for route (product.Advisor), in the registry's
// order. A product the user's files configure gets, instead of its general traps, what the
// checks found in those files, every finding counted with its rule id (an info too: LL-03,
// LiteLLM's prompt caching as the only affinity, is advice about the user's own router), even
// when it has no trap to tell for route. When the files show a router the user runs, the
// other products' lines are left out: the advice names the user's product (the ranking names
// the alternatives).
func productAdvice(route Verdict, c *Config, products []product.Router) []string {
	configured := func(p product.Router) bool { return c != nil && slices.Contains(c.Systems, p.Name().Display) }
	runs := slices.ContainsFunc(products, configured)
	var out []string
	for _, p := range products {
		name := p.Name().Display
		if configured(p) {
			out = append(out, checkedLine(name, c))
			continue
		}
		a, ok := p.(product.Advisor)
		if runs || !ok {
			continue
		}
		switch route {
		case KVAwareRouter:
			out = append(out, a.Advice().KVAware...)
		case SessionAffinity:
			out = append(out, a.Advice().Session...)
		}
	}
	return out
}

// checkedLine is the advice line of a system whose configuration the user gave: what the
// checks found in it.
func checkedLine(name string, c *Config) string {
	var found []string
	for _, f := range c.Findings {
		sys, _, _ := strings.Cut(f.Code, "/")
		if systemName(sys) != name {
			continue
		}
		what := f.Code
		if r := f.Properties["rule"]; r != "" {
			what = r + " " + f.Code
		}
		found = append(found, what)
	}
	if len(found) == 0 {
		return name + ": your configuration was checked (kvcheck lint) and none of its router-trap rules fired"
	}
	return fmt.Sprintf("%s: your configuration was checked (kvcheck lint): %s listed under the fixes: %s", name, count(len(found), "finding"), strings.Join(found, ", "))
}
