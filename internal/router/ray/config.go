package ray

import (
	"bytes"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// Ray Serve LLM's configuration checks (config.Checker): a deployment's request_router_config
// naming PrefixCacheAffinityRouter, in a Serve config (or any YAML that holds one) or a Python
// application (prefix_aware_router.py; ROUTERS.md section 6).

// FormatServe is a Ray Serve LLM config or application.
const FormatServe config.Format = "ray-serve-llm-config"

// affinityRouter is the request router class the checks are about.
const affinityRouter = "PrefixCacheAffinityRouter"

// loader is what reads a Serve config.
var loader = config.LoaderPyYAML("Ray Serve")

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatServe} }

// ConfigKinds implements config.DocumentChecker: a Serve config has no kind.
func (Router) ConfigKinds() []string { return nil }

// CheckDocument implements config.DocumentChecker: a Serve config of no kind whose deployment
// config sets a request router (its routers are checked as nested ones).
func (Router) CheckDocument(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if k, _ := config.Str(root, "kind"); k != "" || config.Get(root, "deployment_config", "request_router_config") == nil {
		return "", config.Loader{}
	}
	return FormatServe, loader
}

// CheckNested implements config.NestedChecker: every request_router_config of any document.
func (Router) CheckNested(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if !checkRay(d, root) {
		return "", config.Loader{}
	}
	return FormatServe, loader
}

// CheckText implements config.TextChecker: a Python application that sets the router as its
// request_router_class or imports it from ray. A text that only names the class (a table of
// files, prose, a log) is no Ray configuration.
func (Router) CheckText(f *config.File) config.Format {
	src := f.Src()
	if !bytes.Contains(src, []byte(affinityRouter)) || (rayClassRE.FindIndex(src) == nil && !rayImportRE.Match(src)) {
		return ""
	}
	checkRayText(f, src)
	return FormatServe
}

// ReadNode implements config.NodeReader: a request_router_config's kwargs.
func (Router) ReadNode(v *config.Values, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	rc := config.Get(n, "request_router_config")
	if rc == nil {
		return
	}
	if cls, _ := config.Str(rc, "request_router_class"); !strings.HasSuffix(cls, affinityRouter) {
		return
	}
	rf := v.NewRouter(ID, rc.Line)
	if kw := config.Get(rc, "request_router_kwargs"); kw != nil && kw.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(kw.Content); i += 2 {
			if x := config.Deref(kw.Content[i+1]); x != nil && x.Kind == yaml.ScalarNode {
				rf.Values[kw.Content[i].Value] = x.Value
			}
		}
	}
	v.Add(rf)
}

// ReadText implements config.TextReader: a Python application's kwargs.
func (Router) ReadText(v *config.Values) {
	src := v.File().Src()
	loc := rayClassRE.FindIndex(src)
	if loc == nil {
		return
	}
	rf := v.NewRouter(ID, v.File().PosOf(loc[0]).Line)
	for _, m := range rayKwargRE.FindAllSubmatch(src, -1) {
		rf.Values[string(m[1])] = string(m[2])
	}
	v.Add(rf)
}

// rules are Ray Serve LLM's config rules.
var rules = []config.Rule{
	{Code: "ray/imbalanced-threshold", ID: "RY-01", System: display, Severity: finding.Warning,
		Summary:  "PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so affinity never yields to load",
		Versions: "ray master 2026 (older request_router/prefix_aware had 10)", Source: "routing_policies/prefix_aware/prefix_aware_router.py"},
	{Code: "ray/no-eviction", ID: "RY-02", System: display, Severity: finding.Info,
		Summary:  "PrefixCacheAffinityRouter with do_eviction false (the default): the character tree grows without bound",
		Versions: "ray master 2026", Source: "routing_policies/prefix_aware/prefix_aware_router.py"},
}

// checkRay checks every Ray Serve request_router_config of a document.
func checkRay(d *config.Doc, root *yaml.Node) bool {
	found := false
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = config.Deref(n)
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			if rc := config.Get(n, "request_router_config"); rc != nil {
				if cls, _ := config.Str(rc, "request_router_class"); strings.HasSuffix(cls, "PrefixCacheAffinityRouter") {
					found = true
					kw := config.Get(rc, "request_router_kwargs")
					at := d.Pos(config.Get(rc, "request_router_class"))
					if t, ok := config.Str(kw, "imbalanced_threshold"); !ok || strings.Contains(strings.ToLower(t), "inf") {
						d.File().Add("ray/imbalanced-threshold", at, "request_router_config",
							"PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so a hot prefix's replica keeps every request however loaded it is",
							"set request_router_kwargs.imbalanced_threshold (the older default was 10)")
					}
					if ev, _ := config.BoolAt(kw, "do_eviction"); !ev {
						d.File().Add("ray/no-eviction", at, "request_router_config",
							"PrefixCacheAffinityRouter with do_eviction false (the default): its character tree grows without bound",
							"set request_router_kwargs.do_eviction: true")
					}
				}
			}
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], depth+1)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	return found
}

var (
	// rayClassRE is Python setting the class: a quoted dict key ("request_router_class":) or a
	// keyword argument (request_router_class=), then the class: its name, or its import path
	// as a string. An unquoted key and a colon is YAML's form (a YAML file is checked as
	// YAML) or prose's.
	rayClassRE = regexp.MustCompile(`(?:["']request_router_class["']\s*:|\brequest_router_class\s*=)\s*["']?[\w.:]*PrefixCacheAffinityRouter\b`)
	// rayImportRE is a Python import of the class from ray, on one line or in parentheses.
	rayImportRE   = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+ray[\w.]*[ \t]+import[ \t]*(?:\([\w\s,]*|[\w \t,]*)\bPrefixCacheAffinityRouter\b`)
	rayImbalRE    = regexp.MustCompile(`["']?imbalanced_threshold["']?\s*[:=]`)
	rayEvictionRE = regexp.MustCompile(`["']?do_eviction["']?\s*[:=]\s*True`)
)

// checkRayText checks a Python Ray Serve application that names PrefixCacheAffinityRouter as
// its request router.
func checkRayText(fl *config.File, src []byte) {
	loc := rayClassRE.FindIndex(src)
	if loc == nil {
		return
	}
	at := fl.PosOf(loc[0])
	if !rayImbalRE.Match(src) {
		fl.Add("ray/imbalanced-threshold", at, "request_router_config",
			"PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so a hot prefix's replica keeps every request however loaded it is",
			"set request_router_kwargs imbalanced_threshold (the older default was 10)")
	}
	if !rayEvictionRE.Match(src) {
		fl.Add("ray/no-eviction", at, "request_router_config",
			"PrefixCacheAffinityRouter without do_eviction True: its character tree grows without bound",
			"set request_router_kwargs do_eviction True")
	}
}

// rayKwargRE reads a request_router_kwargs entry of a Python application.
var rayKwargRE = regexp.MustCompile(`["']?(imbalanced_threshold|match_rate_threshold|do_eviction|eviction_threshold_chars|eviction_target_chars|eviction_interval_secs)["']?\s*[:=]\s*([\w.]+(?:\(["']?inf["']?\))?)`)
