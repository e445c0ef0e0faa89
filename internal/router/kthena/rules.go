package kthena

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// The Kthena router's config rules, over the scheduler configuration of a kthena-router-config
// ConfigMap (volcano-sh/kthena@3cc0572, pkg/kthena-router/scheduler: conf/conf.go, factory.go,
// plugins/prefix_cache.go, plugins/least_latency.go, scheduler_impl.go).
const (
	codePrefixCacheOff = "kthena/prefix-cache-off"
	codeZeroWeight     = "kthena/zero-weight"
	codeUnknownPlugin  = "kthena/unknown-plugin"
	codeRandomDropped  = "kthena/random-dropped"
	codeLatencyRefused = "kthena/least-latency-refused"
	codeArgDefault     = "kthena/prefix-cache-arg-default"
)

// rules are the Kthena router's config rules.
var rules = []config.Rule{
	{Code: codePrefixCacheOff, System: display, Severity: finding.Warning,
		Summary:  "scheduler.plugins.Score.enabled without prefix-cache (or kvcache-aware): no plugin scores a pod by the prompt's prefix, so requests are placed by load alone",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/plugins/conf/conf.go:157-164; scheduler_impl.go:225-294"},
	{Code: codeZeroWeight, System: display, Severity: finding.Warning,
		Summary:  "a Score plugin with its weight left out, 0 or negative: the weight is read as an int that defaults to 0 (a negative one is set to 0), so the plugin is scored and counts for nothing",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/plugins/conf/conf.go:55-58; factory.go:114-121"},
	{Code: codeUnknownPlugin, System: display, Severity: finding.Warning,
		Summary:  "a Score or Filter plugin name the router's registry does not know (Score: gpu-usage, least-latency, least-request, random, prefix-cache, kvcache-aware; Filter: least-request, lora-affinity): it is skipped with a log line",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/factory.go:65-124"},
	{Code: codeRandomDropped, System: display, Severity: finding.Info,
		Summary:  "the random Score plugin beside other Score plugins: the router removes it with a warning",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/plugins/conf/conf.go:123-155"},
	{Code: codeLatencyRefused, System: display, Severity: finding.Error,
		Summary:  "least-latency's TTFTTPOTWeightFactor not a finite number from 0 to 1 (or arguments that do not parse): loading the scheduler fails and the router exits",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/plugins/least_latency.go:56-75; conf/conf.go:172-186; scheduler_impl.go:87-89", Defeats: config.DefeatsAny},
	{Code: codeArgDefault, System: display, Severity: finding.Warning,
		Summary:  "a prefix-cache argument (blockSizeToHash, maxBlocksToMatch, maxHashCacheSize, topKMatches) of 0 or below, or one that is not a whole number: the plugin runs with the default instead (64, 128, 50000, 5), and a value that does not parse puts every argument back at its default",
		Versions: "kthena @3cc0572", Source: "pkg/kthena-router/scheduler/plugins/prefix_cache.go:108-147"},
}

// prefixArgs are prefix-cache's arguments with their defaults (prefix_cache.go:90-95).
var prefixArgs = []struct {
	name string
	def  int
}{{"blockSizeToHash", 64}, {"maxBlocksToMatch", 128}, {"maxHashCacheSize", 50000}, {"topKMatches", 5}}

// checkConfig runs the rules on the scheduler configuration cfg held in the ConfigMap (d is the held
// document, whose positions are the file's when the configuration is a literal block).
func checkConfig(d *config.Doc, cfg *yaml.Node) {
	const loc = "kthena-router-config routerConfiguration"
	sched := config.Get(cfg, "scheduler")
	score := config.Get(sched, "plugins", "Score", "enabled")
	var names []string
	for _, e := range config.Seq(score) {
		name, _ := config.Str(e, "name")
		names = append(names, name)
		switch {
		case name == "":
			continue
		case !slices.Contains(ScorePlugins, name):
			unknownPlugin(d, config.Get(e, "name"), loc+" Score", name, ScorePlugins)
			continue
		}
		w := config.Get(e, "weight")
		weight, err := 0, error(nil)
		if w != nil {
			weight, err = strconv.Atoi(strings.TrimSpace(w.Value))
		}
		if err != nil || weight > 0 {
			continue // a weight that is no int fails the whole file's parse: not this rule's
		}
		at, what := config.Get(e, "name"), "has no weight"
		if w != nil {
			at, what = w, fmt.Sprintf("has weight %d", weight)
		}
		msg := fmt.Sprintf("Score plugin %s %s: the router reads a missing weight as 0 and a negative one as 0, so its score counts for nothing", name, what)
		if name == "prefix-cache" {
			msg += ": no request is placed by its prefix"
		}
		d.Add(codeZeroWeight, at, loc, msg, fmt.Sprintf("give %s a weight of 1 or more (the chart ships 1)", name))
	}
	if score != nil && !slices.Contains(names, "prefix-cache") && !slices.Contains(names, "kvcache-aware") {
		d.Add(codePrefixCacheOff, score, loc,
			fmt.Sprintf("Score.enabled lists %s and no prefix-cache: no plugin scores a pod by the prompt's prefix, so requests go by load alone and a conversation's turns land anywhere", strings.Join(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" }), ", ")),
			"add {name: prefix-cache, weight: 1} to scheduler.plugins.Score.enabled")
	}
	if slices.Contains(names, "random") && len(slices.Compact(slices.Sorted(slices.Values(names)))) > 1 {
		i := slices.Index(names, "random")
		d.Add(codeRandomDropped, config.Get(config.Seq(score)[i], "name"), loc,
			"the random Score plugin is listed beside other Score plugins: the router removes it (\"Random plugin will be removed as it should be used independently\")",
			"remove random from Score.enabled, or list it alone")
	}
	for _, e := range config.Seq(config.Get(sched, "plugins", "Filter", "enabled")) {
		if name, ok := config.Str(e); ok && !slices.Contains(FilterPlugins, name) {
			unknownPlugin(d, e, loc+" Filter", name, FilterPlugins)
		}
	}
	for _, pc := range config.Seq(config.Get(sched, "pluginConfig")) {
		name, _ := config.Str(pc, "name")
		args := config.Deref(config.Get(pc, "args"))
		if args == nil || args.Kind != yaml.MappingNode {
			continue
		}
		switch name {
		case "least-latency":
			checkLatency(d, args, loc)
		case "prefix-cache":
			checkPrefixArgs(d, args, loc)
		}
	}
}

// unknownPlugin reports a plugin name the registry does not know, with the nearest it does.
func unknownPlugin(d *config.Doc, at *yaml.Node, loc, name string, known []string) {
	msg := fmt.Sprintf("plugin %q is not one the router's registry knows (%s): it is skipped with the log line \"Failed to get plugin %s.\"", name, strings.Join(known, ", "), name)
	fix := "use one of " + strings.Join(known, ", ")
	if best := config.NearestName(name, known); best != "" {
		msg += "; did you mean " + best + "?"
		fix = "use " + best
	}
	d.Add(codeUnknownPlugin, at, loc, msg, fix)
}

// checkLatency is ValidateLeastLatencyArgs (least_latency.go:56-75): TTFTTPOTWeightFactor
// must be a finite number from 0 to 1.
func checkLatency(d *config.Doc, args *yaml.Node, loc string) {
	n := config.Get(args, "TTFTTPOTWeightFactor")
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	var v float64
	if err := n.Decode(&v); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= 1 {
		return
	}
	d.Add(codeLatencyRefused, n, loc,
		fmt.Sprintf("least-latency's TTFTTPOTWeightFactor %s is not a finite number from 0 to 1: loading the scheduler fails (\"invalid least-latency plugin configuration\") and the router exits", n.Value),
		"set TTFTTPOTWeightFactor between 0 and 1 (the chart ships 0.5)")
}

// checkPrefixArgs reports prefix-cache arguments the plugin replaces with its defaults
// (prefix_cache.go:125-147).
func checkPrefixArgs(d *config.Doc, args *yaml.Node, loc string) {
	for _, a := range prefixArgs {
		n := config.Get(args, a.name)
		if n == nil || n.Kind != yaml.ScalarNode {
			continue
		}
		var v int
		if err := n.Decode(&v); err != nil {
			d.Add(codeArgDefault, n, loc,
				fmt.Sprintf("prefix-cache's %s %q is not a whole number: the arguments fail to parse and the plugin runs with every default (blockSizeToHash 64, maxBlocksToMatch 128, maxHashCacheSize 50000, topKMatches 5)", a.name, n.Value),
				fmt.Sprintf("write %s as a whole number, such as %d", a.name, a.def))
			return
		}
		if v <= 0 {
			d.Add(codeArgDefault, n, loc,
				fmt.Sprintf("prefix-cache's %s %d is not above 0: the plugin runs with %d instead", a.name, v, a.def),
				fmt.Sprintf("set %s above 0 (%d by default)", a.name, a.def))
		}
	}
}
