// Package kthena is everything kvcheck knows about the Kthena router (volcano-sh/kthena): its
// scheduler's plugins with the weights and arguments its Helm chart ships, its emulation
// (kthena-router, with the prefix-cache plugin), how a kthena-router-config ConfigMap
// configures it, how kvcheck would tune it, what it needs and the ConfigMap to apply.
//
// Source: volcano-sh/kthena@3cc0572 (2026-08-21), cited file:line here and in the emulation's
// doc comment (scheduler.go). What was checked against the source:
//   - the configuration (charts/kthena/charts/networking/templates/kthena-router/component/
//     configmap.yaml; deployment.yaml:156-171; cmd/kthena-router/app/router.go:41;
//     pkg/kthena-router/scheduler/plugins/conf/conf.go): the ConfigMap kthena-router-config,
//     key routerConfiguration, mounted as /etc/config/routerConfiguration.yaml, holding
//     scheduler.pluginConfig[{name, args}] and scheduler.plugins.{Filter.enabled[name],
//     Score.enabled[{name, weight}]}; without the file the router exits
//     (router/router.go:161-164), so NewScheduler's built-in plugin set
//     (scheduler_impl.go:67-80) is never what a deployment runs;
//   - the chart's plugins: filter least-request (maxWaitingRequests 10); scores least-request,
//     gpu-usage, least-latency (TTFTTPOTWeightFactor 0.5) and prefix-cache (blockSizeToHash
//     64, maxBlocksToMatch 128, maxHashCacheSize 50,000, topKMatches 5), weight 1 each;
//   - how the weights combine (scheduler_impl.go:225-294): each plugin's 0-100 score times its
//     weight, summed, the highest first; a weight left out is 0 and a negative one becomes 0
//     (factory.go:116-121); a plugin name the registry does not know is skipped with a log
//     line (factory.go:100-104, 122-124); random beside other score plugins is dropped
//     (conf.go:131-149);
//   - each plugin's score, the metrics scrape and the prefix store: scheduler.go;
//   - the config rules (rules.go): a Score set without prefix-cache, a weight left out or not
//     above 0, a plugin name the registry does not know, random beside other plugins,
//     least-latency's factor outside 0-1 (the router exits), prefix-cache arguments the plugin
//     puts back at their defaults, each with the lines it follows.
//
// Left out: prefill/decode groups (PDGroup), LoRA affinity, the kvcache-aware plugin (Redis and
// a tokenizer), the fairness queue, rate limits, session stickiness, several router replicas
// (each keeps its own prefix store; only in-flight counts can be shared through Redis), the
// top-level "system" field of Anthropic-style bodies, and part types: a list's parts of types
// other than text, input_text and output_text are left out upstream, while kvcheck's request
// view keeps any part's text member (and a text part without one as empty) alike.
//
// ROUTERS.md's figures (xxhash over 64-byte chunks, maxBlocksToMatch 128, maxHashCacheSize
// 50,000, topKMatches 5, the four plugins at weight 1) agree with this source; it does not say
// that the chunks are bytes of a ChatML rendering of the messages (role tags included), that
// the last chunk may be partial, that maxHashCacheSize is per pod, or that a prompt's blocks are
// recorded only when its response has ended.
package kthena

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "kthena"
	display = "Kthena"
)

// Plugin is a score plugin enabled with its weight.
type Plugin struct {
	Name   string
	Weight int
}

// Settings are the Kthena router scheduler's plugins and their arguments.
type Settings struct {
	// Score are scheduler.plugins.Score.enabled, in the order listed.
	Score []Plugin
	// Filter are scheduler.plugins.Filter.enabled.
	Filter []string
	// MaxWaiting is least-request's maxWaitingRequests (10).
	MaxWaiting int
	// TTFTWeight is least-latency's TTFTTPOTWeightFactor (0.5).
	TTFTWeight float64
	// BlockSize, MaxBlocks, CacheSize and TopK are prefix-cache's blockSizeToHash (64 bytes),
	// maxBlocksToMatch (128), maxHashCacheSize (50,000 blocks a pod) and topKMatches (5).
	BlockSize, MaxBlocks, CacheSize, TopK int
	// ScrapeSecs is METRICS_SCRAPE_INTERVAL (1 s).
	ScrapeSecs float64
}

// filters reports whether the least-request filter is on.
func (s Settings) filters() bool { return slices.Contains(s.Filter, "least-request") }

// Shipped are the settings of the Helm chart's kthena-router-config.
func Shipped() Settings {
	return Settings{
		Score:      []Plugin{{"least-request", 1}, {"gpu-usage", 1}, {"least-latency", 1}, {"prefix-cache", 1}},
		Filter:     []string{"least-request"},
		MaxWaiting: 10, TTFTWeight: 0.5, BlockSize: 64, MaxBlocks: 128, CacheSize: 50000, TopK: 5, ScrapeSecs: 1,
	}
}

// ScorePlugins and FilterPlugins are the plugin names the router's registry knows
// (scheduler/factory.go:65-95); kvcheck emulates all of them but kvcache-aware.
var (
	ScorePlugins  = []string{"gpu-usage", "least-latency", "least-request", "random", "prefix-cache", "kvcache-aware"}
	FilterPlugins = []string{"least-request", "lora-affinity"}
)

// Router is the Kthena router: its routing (this file) and its part in lint (Checker,
// config.go).
type Router struct{ Checker }

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	return []sim.PolicyInfo{schedulerInfo(ps.(Settings))}
}

// The fact keys Configure reads (the ConfigMap's routerConfiguration, flattened): score is
// Score.enabled as "name:weight" items separated by commas (a weight left out is 0), filter
// Filter.enabled by commas, and each plugin argument as "<plugin>.<arg>".
const (
	FactScore      = "score"
	FactFilter     = "filter"
	FactMaxWaiting = "least-request.maxWaitingRequests"
	FactTTFTWeight = "least-latency.TTFTTPOTWeightFactor"
	FactBlockSize  = "prefix-cache.blockSizeToHash"
	FactMaxBlocks  = "prefix-cache.maxBlocksToMatch"
	FactCacheSize  = "prefix-cache.maxHashCacheSize"
	FactTopK       = "prefix-cache.topKMatches"
	FactScrape     = "METRICS_SCRAPE_INTERVAL"
)

// Configure implements product.Router. It reads the facts above as the router does: unknown
// plugins skipped, negative weights 0, random dropped beside other score plugins, a plugin
// argument of 0 or below (or unreadable) back at its default. A router with kvcache-aware
// scoring gets no row.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	if v, ok := f.Values[FactScore]; ok {
		s.Score = nil
		for _, item := range strings.Split(v, ",") {
			name, w, _ := strings.Cut(strings.TrimSpace(item), ":")
			if name == "" {
				continue
			}
			var weight int
			if w != "" {
				if _, err := fmt.Sscan(w, &weight); err != nil {
					rd.Refuse("Score weight of "+name, w, "a whole number", 0)
				}
			}
			if !slices.Contains(ScorePlugins, name) {
				rd.Notes = append(rd.Notes, fmt.Sprintf("score plugin %q in %s is not one the router knows: it skips it, and so does the row", name, rd.Where))
				continue
			}
			s.Score = append(s.Score, Plugin{name, max(weight, 0)})
		}
		if len(s.Score) > 1 {
			s.Score = slices.DeleteFunc(s.Score, func(p Plugin) bool { return p.Name == "random" })
		}
		rd.Note(FactScore, v)
	}
	if v, ok := f.Values[FactFilter]; ok {
		s.Filter = nil
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); slices.Contains(FilterPlugins, name) {
				s.Filter = append(s.Filter, name)
			}
		}
		rd.Note(FactFilter, v)
	}
	positive := func(key string, dst *int) {
		def := *dst
		rd.Int(key, dst)
		if *dst <= 0 {
			*dst = def
		}
	}
	positive(FactMaxWaiting, &s.MaxWaiting)
	rd.Float(FactTTFTWeight, &s.TTFTWeight)
	positive(FactBlockSize, &s.BlockSize)
	positive(FactMaxBlocks, &s.MaxBlocks)
	positive(FactCacheSize, &s.CacheSize)
	positive(FactTopK, &s.TopK)
	rd.Float(FactScrape, &s.ScrapeSecs)
	if slices.ContainsFunc(s.Score, func(p Plugin) bool { return p.Name == "kvcache-aware" && p.Weight > 0 }) {
		return rd.Result(nil, s, "the kvcache-aware score plugin (Redis and a tokenizer) is not emulated")
	}
	return rd.Result([]string{"kthena-router"}, s, "")
}

// Tune implements product.Router: prefix-cache's per-pod store holds what the pod's KV cache
// holds, in blocks of blockSizeToHash bytes (4 bytes a token), so that it neither forgets
// prefixes the engine still has nor scores ones it evicted long ago.
func (Router) Tune(_ string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if tr.KVTokens <= 0 || s.BlockSize <= 0 || !slices.ContainsFunc(s.Score, func(p Plugin) bool { return p.Name == "prefix-cache" }) {
		return s, nil
	}
	size := int(min(tr.KVTokens*CharsPerToken/int64(s.BlockSize), 1<<31-1))
	if size < 1 || size == s.CacheSize {
		return s, nil
	}
	s.CacheSize = size
	return s, []product.Change{{Setting: "prefix-cache maxHashCacheSize", Value: fmt.Sprint(size),
		Why: fmt.Sprintf("each pod's store sized to its KV cache: %d tokens x %d bytes a token / %d-byte blocks", tr.KVTokens, CharsPerToken, s.BlockSize)}}
}

// CharsPerToken is the bytes a token stands for when kvcheck sizes the store against a KV cache
// in tokens (the byte estimate's 4).
const CharsPerToken = 4

// ReqRouter is the requirement of the Kthena emulation. A completion whose prompt is a list
// (token ids or a batch), which the router answers 404, is no requirement: the emulation cannot
// run on such traffic and says so (check, scheduler.go), and a requirement the traffic merely
// does not break would count as met in the ranking.
const ReqRouter = "Kthena router with its ConfigMap"

// Requirements implements product.Router.
func (Router) Requirements(_ string, _ product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	return []product.Requirement{
		product.System(ReqRouter, ID, "the kthena-router-config ConfigMap (routerConfiguration)", f),
		product.Kubernetes(f),
	}
}

// Snippet implements product.Router: the kthena-router-config ConfigMap.
func (Router) Snippet(_ string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Kthena router: the scheduler's plugins, in the ConfigMap the router mounts")
	w("# (/etc/config/routerConfiguration.yaml); the Helm chart renders it from")
	w("# charts/kthena/charts/networking/templates/kthena-router/component/configmap.yaml")
	w("apiVersion: v1")
	w("kind: ConfigMap")
	w("metadata:")
	w("  name: kthena-router-config")
	w("  namespace: kthena-system # edit: the router's namespace")
	w("data:")
	w("  routerConfiguration: |-")
	w("    scheduler:")
	w("      pluginConfig:")
	w("      - name: least-request")
	w("        args:")
	w("          maxWaitingRequests: %d", s.MaxWaiting)
	w("      - name: least-latency")
	w("        args:")
	w("          TTFTTPOTWeightFactor: %s", product.Num(s.TTFTWeight))
	w("      - name: prefix-cache")
	w("        args:")
	w("          blockSizeToHash: %d", s.BlockSize)
	w("          maxBlocksToMatch: %d", s.MaxBlocks)
	w("          maxHashCacheSize: %d", s.CacheSize)
	w("          topKMatches: %d", s.TopK)
	w("      plugins:")
	w("        Filter:")
	w("          enabled:")
	for _, f := range s.Filter {
		w("            - %s", f)
	}
	w("        Score:")
	w("          enabled:")
	for _, p := range s.Score {
		w("            - name: %s", p.Name)
		w("              weight: %d # a weight left out is 0: the plugin then counts for nothing", p.Weight)
	}
	return product.Snippet{Product: ID, Format: "Kubernetes ConfigMap", File: "kthena-router-config.yaml",
		Where: "the kthena-router-config ConfigMap, key routerConfiguration, which the router reads as /etc/config/routerConfiguration.yaml (volcano-sh/kthena@3cc0572: charts/kthena/charts/networking/templates/kthena-router/component/configmap.yaml; deployment.yaml:156-171)", Text: b.String()}
}
