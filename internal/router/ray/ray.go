// Package ray is everything kvcheck knows about Ray Serve LLM's PrefixCacheAffinityRouter: its
// keyword arguments with the shipped defaults (ROUTERS.md §6), its emulation
// (ray-prefix-affinity, prefixaffinity.go, whose doc comment cites the upstream lines it
// follows; its character tree is internal/router/chartree), how a Serve config's request_router_kwargs configure it, how kvcheck
// would tune it, what it needs and the Serve config to apply.
package ray

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "ray"
	display = "Ray Serve"
)

// Settings are Ray Serve LLM PrefixCacheAffinityRouter's keyword arguments (ROUTERS.md §6).
type Settings struct {
	// ImbalancedThreshold is +Inf by default: the router never falls back for balance.
	ImbalancedThreshold                         float64
	MatchRateThreshold                          float64
	DoEviction                                  bool
	EvictionThresholdChars, EvictionTargetChars int
	EvictionIntervalSecs                        float64
}

// Shipped are the settings as Ray ships them.
func Shipped() Settings {
	return Settings{ImbalancedThreshold: math.Inf(1), MatchRateThreshold: 0.1, EvictionThresholdChars: 400_000, EvictionTargetChars: 360_000, EvictionIntervalSecs: 10}
}

// Router is Ray Serve LLM's prefix-aware request router.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: the imbalance threshold as shipped.
func (Router) Advice() product.Advice {
	return product.Advice{KVAware: []string{display + " PrefixCacheAffinityRouter: the imbalance threshold is infinite by default"}}
}

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	return []sim.PolicyInfo{prefixAffinity(ps.(Settings))}
}

// Configure implements product.Router. It reads request_router_kwargs: imbalanced_threshold,
// match_rate_threshold, do_eviction, eviction_threshold_chars, eviction_target_chars and
// eviction_interval_secs.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	rd.Float("imbalanced_threshold", &s.ImbalancedThreshold)
	rd.Float("match_rate_threshold", &s.MatchRateThreshold)
	rd.Bool("do_eviction", &s.DoEviction)
	rd.Int("eviction_threshold_chars", &s.EvictionThresholdChars)
	rd.Int("eviction_target_chars", &s.EvictionTargetChars)
	rd.Float("eviction_interval_secs", &s.EvictionIntervalSecs)
	return rd.Result([]string{"ray-prefix-affinity"}, s, "")
}

// TunedImbalance is the imbalance threshold kvcheck sets when one first block is shared by
// more than a replica's fair share: Ray's earlier default (ROUTERS.md §6), under which a
// replica more than 10 requests busier than the least loaded is left.
const TunedImbalance = 10

// Tune implements product.Router: a hot first block gets a finite imbalance threshold.
func (Router) Tune(_ string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if !math.IsInf(s.ImbalancedThreshold, 1) || tr.Replicas <= 0 || tr.HotPrefixShare <= 1/float64(tr.Replicas) {
		return s, nil
	}
	s.ImbalancedThreshold = TunedImbalance
	return s, []product.Change{{Setting: "imbalanced_threshold", Value: fmt.Sprint(TunedImbalance),
		Why: fmt.Sprintf("one first block opens %.0f%% of the requests, more than one replica's fair share (%.0f%%); an infinite threshold sends them all to one replica", 100*tr.HotPrefixShare, 100/float64(tr.Replicas))}}
}

// ReqApplication is the requirement of a Ray Serve LLM application.
const ReqApplication = "Ray Serve LLM application"

// Requirements implements product.Router.
func (Router) Requirements(_ string, _ product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	return []product.Requirement{product.System(ReqApplication, ID, "a Serve config with request_router_config", f)}
}

// Snippet implements product.Router: a Serve config whose application builds Ray Serve LLM's
// OpenAI app, with the request router in the model's LLMConfig. LLMConfig.deployment_config
// takes request_router_config among the deployment options
// (ray-project/ray@697db26:python/ray/llm/_internal/serve/core/configs/llm_config.py, the
// field's description) and build_openai_app reads its LLMConfigs from the application's
// args.llm_configs (LLMServingArgs, ray-project/ray@2dcbf5e:python/ray/llm/_internal/serve/core/ingress/builder.py).
// A deployments[] entry takes request_router_config directly (DeploymentSchema,
// eicherseiji/ray@170a22d:python/ray/serve/schema.py, a fork of ray-project/ray); nested
// under deployment_config there it is a key the schema does not have (issue 22, failure 8).
func (Router) Snippet(_ string, ps product.Settings) product.Snippet {
	y := ps.(Settings)
	num := product.Num
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Ray Serve LLM: the model's request router (serve deploy serve-config.yaml)")
	w("applications:")
	w("- name: llm")
	w("  route_prefix: /")
	w("  import_path: ray.serve.llm:build_openai_app")
	w("  args:")
	w("    llm_configs:")
	w("    - model_loading_config:")
	w("        model_id: model # edit: the name clients ask for")
	w("        model_source: your-org/your-model # edit")
	w("      deployment_config:")
	w("        request_router_config:")
	w("          request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter")
	w("          request_router_kwargs:")
	if !math.IsInf(y.ImbalancedThreshold, 1) {
		w("            imbalanced_threshold: %s", num(y.ImbalancedThreshold))
	}
	w("            match_rate_threshold: %s", num(y.MatchRateThreshold))
	w("            do_eviction: %t", y.DoEviction)
	if y.DoEviction {
		w("            eviction_threshold_chars: %d", y.EvictionThresholdChars)
		w("            eviction_target_chars: %d", y.EvictionTargetChars)
		w("            eviction_interval_secs: %s", num(y.EvictionIntervalSecs))
	}
	return product.Snippet{Product: ID, Format: "Ray Serve config YAML", File: "serve-config.yaml",
		Where: "the Serve config serve deploy reads: applications[].args.llm_configs[].deployment_config.request_router_config (the model's LLMConfig)",
		Text:  b.String()}
}
