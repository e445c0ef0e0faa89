package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// Config is what the router and engine configuration checks found in the user's files
// (kvcheck lint, through assess --config).
type Config struct {
	Inputs []string
	Files  int
	// Systems are the routers and engines the files configure (llm-d, LiteLLM, Dynamo, ...).
	Systems []string
	// Findings are the config findings; Properties["defeats"] says what an error makes useless
	// (lint.DefeatsAny, DefeatsKVRouter, DefeatsSession) and Properties["rule"] its table id.
	Findings []finding.Finding
}

// systemOf maps a config rule's code prefix to the system advice() names.
var systemOf = map[string]string{
	"litellm": "LiteLLM", "llm-d": "llm-d", "production-stack": "vLLM production-stack", "dynamo": "Dynamo",
	"ray": "Ray Serve", "sglang": "SGLang", "vllm": "vLLM", "aibrix": "AIBrix", "gaie": "GAIE",
}

// cachingDisabled is lint's code for --no-enable-prefix-caching on an engine with no router in
// the files.
const cachingDisabled = "vllm/prefix-caching-disabled"

// FromConfig turns the lint results of the user's config files into assess's input: only the
// router and engine configuration findings count (metric names in the same files are lint's
// business, not the routing decision's).
func FromConfig(results []lint.FileResult, inputs []string) *Config {
	c := &Config{Inputs: inputs, Files: len(results), Systems: []string{}, Findings: []finding.Finding{}}
	for _, r := range results {
		for _, f := range r.Formats {
			if s, ok := systemOf[lint.FormatSystem(f)]; ok && !slices.Contains(c.Systems, s) {
				c.Systems = append(c.Systems, s)
			}
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

// configAdvice replaces the generic advice about a system whose configuration the user gave
// with what the checks found in it, every finding counted with its rule id (an info too: LL-03,
// LiteLLM's prompt caching as the only affinity, is advice about the user's own router), and,
// when the files show the router the user runs, leaves out the lines about other routers:
// the advice names the user's product (the ranking names the alternatives).
func configAdvice(lines []string, c *Config) []string {
	if c == nil {
		return lines
	}
	found := map[string][]string{}
	for _, f := range c.Findings {
		sys, _, _ := strings.Cut(f.Code, "/")
		what := f.Code
		if r := f.Properties["rule"]; r != "" {
			what = r + " " + f.Code
		}
		found[systemOf[sys]] = append(found[systemOf[sys]], what)
	}
	runs := slices.ContainsFunc(c.Systems, func(s string) bool { return slices.Contains(routerSystems, s) })
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		sys := lineSystem(l)
		switch {
		case sys == "":
			out = append(out, l)
		case slices.Contains(c.Systems, sys):
			if fs := found[sys]; len(fs) > 0 {
				out = append(out, fmt.Sprintf("%s: your configuration was checked (kvcheck lint): %s listed under the fixes: %s", sys, count(len(fs), "finding"), strings.Join(fs, ", ")))
			} else {
				out = append(out, fmt.Sprintf("%s: your configuration was checked (kvcheck lint) and none of its router-trap rules fired", sys))
			}
		case !runs || !slices.Contains(routerSystems, sys):
			out = append(out, l)
		}
	}
	return out
}

// routerSystems are the systems of systemOf that route requests: the files show the one the user
// runs.
var routerSystems = []string{"LiteLLM", "llm-d", "vLLM production-stack", "Dynamo", "Ray Serve", "SGLang", "AIBrix"}

// lineSystem is the system an advice line is about (its first words, systemOf's name), "" for a
// line about none in particular.
func lineSystem(l string) string {
	best := ""
	for _, s := range systemOf {
		if (strings.HasPrefix(l, s+":") || strings.HasPrefix(l, s+" ")) && len(s) > len(best) {
			best = s
		}
	}
	return best
}
