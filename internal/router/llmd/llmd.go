// Package llmd is everything kvcheck knows about the llm-d router (EPP): its
// EndpointPickerConfig settings with the shipped defaults (ROUTERS.md §2), its emulations
// (llmd-approx, the approximate prefix producer as shipped, approx.go; llmd-precise, the precise
// producer fed by the engines' KV events, precise.go; the scorers and picker they share,
// picker.go, whose doc comment cites the upstream lines they follow), how a file's values configure them, how kvcheck would tune
// them, what they need and the EndpointPickerConfig to apply.
package llmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "llm-d"
	display = "llm-d"
)

// Settings are the llm-d router's (EPP) settings (EndpointPickerConfig; ROUTERS.md §2).
type Settings struct {
	// Scorer weights: queue-scorer 2, kv-cache-utilization-scorer 2, prefix-cache-scorer 3.
	QueueWeight, KVUtilWeight, PrefixWeight float64
	// BlockSizeTokens is the approximate producer's block size (16, raised to 64 at request time).
	BlockSizeTokens int
	// LRUCapacityPerServer is the approximate producer's index capacity in blocks (31250).
	LRUCapacityPerServer int
	// MaxPrefixBlocksToMatch bounds a match (2048).
	MaxPrefixBlocksToMatch int
	// Tokenizer is the token-producer backend: "estimate" (the default, about 4 bytes per token,
	// not the engine's tokens) or "vllm" (the engine's own render endpoints).
	Tokenizer string
	// AutoTune is the approximate producer's autoTune (true): the block size and the LRU
	// capacity come from the engine's metrics (block size and number of GPU blocks) instead of
	// BlockSizeTokens and LRUCapacityPerServer (approximateprefix/types.go, plugin.go
	// GetBlockSize and makeserver, llm-d-router@ebab687).
	AutoTune bool
	// MaxPrefixTokensToMatch is the approximate producer's cap in tokens (131072); when set it
	// wins over MaxPrefixBlocksToMatch (plugin.go resolveMaxBlocks).
	MaxPrefixTokensToMatch int
	// PreciseBlockSizeTokens is the precise producer's tokenProcessorConfig.blockSizeTokens (16,
	// pkg/kvcache/kvblock/token_processor.go): its keys cover full blocks of this many tokens.
	PreciseBlockSizeTokens int
	// NoEngineEvents is not an EPP setting but the engines': true when they publish no KV
	// events (no --kv-events-config with enable_kv_cache_events true). The precise producer
	// builds its index only from those events (ROUTERS.md §2), so it stays empty and no pod
	// ever matches a prefix. false (the zero value) is the engines publishing.
	NoEngineEvents bool
}

// Shipped are the settings as llm-d ships them.
func Shipped() Settings {
	return Settings{QueueWeight: 2, KVUtilWeight: 2, PrefixWeight: 3, BlockSizeTokens: 16,
		LRUCapacityPerServer: 31250, MaxPrefixBlocksToMatch: 2048, Tokenizer: "estimate",
		AutoTune: true, MaxPrefixTokensToMatch: 131072, PreciseBlockSizeTokens: 16}
}

// Router is the llm-d router (EPP).
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: the exact prefix scorer's tokenizer, the approximate
// producer run active-active, and event replay's vLLM release (ROUTERS.md §2).
func (Router) Advice() product.Advice {
	return product.Advice{
		KVAware:  []string{display + ": configure the vllm tokenizer backend for the exact prefix scorer (the default estimate counts about 4 bytes a token and silently degrades it); do not run the approximate producer active-active; event replay needs vLLM 0.26 or later"},
		Exact:    display + " exact producer",
		LoadTerm: display + "'s queue and KV-utilisation scorers",
	}
}

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	s := ps.(Settings)
	return []sim.PolicyInfo{approx(s), precise(s)}
}

// Configure implements product.Router. It reads producer (precise or approx: precise only
// when a prefix-cache-scorer names the precise producer), tokenizer (vllm, uds for the
// deprecated udsTokenizerConfig, or estimate), schedulingProfiles, the scorers' weights by
// plugin type (queue-scorer, kv-cache-utilization-scorer, prefix-cache-scorer), the approximate
// producer's autoTune, blockSizeTokens, lruCapacityPerServer, maxPrefixBlocksToMatch and
// maxPrefixTokensToMatch, and the precise producer's tokenProcessorConfig.blockSizeTokens and
// tokenProcessorConfig.blockSize.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	where := rd.Where
	policies := []string{"llmd-approx"}
	if f.Values["producer"] == "precise" {
		policies = []string{"llmd-precise"}
	}
	if ps := strings.Split(f.Values["schedulingProfiles"], ","); len(ps) > 1 {
		rd.Notes = append(rd.Notes, fmt.Sprintf("%s has %d scheduling profiles (%s): simulated with the first one's scorer weights (%s); the profile handler may run another for some requests",
			where, len(ps), strings.Join(ps, ", "), ps[0]))
	}
	rd.Float("queue-scorer", &s.QueueWeight)
	rd.Float("kv-cache-utilization-scorer", &s.KVUtilWeight)
	rd.Float("prefix-cache-scorer", &s.PrefixWeight)
	if f.Values["tokenizer"] == "uds" {
		// The deprecated udsTokenizerConfig backend tokenizes with the model's own tokenizer
		// (llm-d-kv-cache's UDS tokenizer service: HuggingFace tokenizer and chat template in
		// a sidecar): engine tokens, as the vllm backend's; it was simulated as the estimate,
		// whose keys never match, while the lint (LD-01) counted it as real.
		s.Tokenizer = "vllm"
		rd.Changes = append(rd.Changes, product.Change{Setting: "token-producer", Value: "udsTokenizerConfig",
			Why: "set in " + where + ": the model's own tokenizer in a sidecar (deprecated backend), simulated with the engine's tokens as the vllm backend"})
	} else {
		rd.Str("tokenizer", &s.Tokenizer)
	}
	rd.Bool("autoTune", &s.AutoTune)
	rd.Int("blockSizeTokens", &s.BlockSizeTokens)
	rd.Int("lruCapacityPerServer", &s.LRUCapacityPerServer)
	rd.Int("maxPrefixBlocksToMatch", &s.MaxPrefixBlocksToMatch)
	rd.Int("maxPrefixTokensToMatch", &s.MaxPrefixTokensToMatch)
	preciseBlockSize(rd, &s.PreciseBlockSizeTokens)
	return rd.Result(policies, s, "")
}

// preciseBlockSize reads the precise producer's tokenProcessorConfig block size as
// NewChunkedTokenDatabase resolves it (kvblock/token_processor.go): blockSizeTokens when above
// 0, else the deprecated blockSize when set, else the default 16. A value the producer refuses
// (below 0) is kept, for llmd-precise to say it cannot run.
//
// A value that is not a whole number is said on the row and treated as absent: the producer
// refuses such a config, and the row runs the value it would otherwise use.
func preciseBlockSize(rd *product.Reader, dst *int) {
	for _, k := range []string{"tokenProcessorConfig.blockSizeTokens", "tokenProcessorConfig.blockSize"} {
		v, set := rd.Values[k]
		if !set {
			continue
		}
		n, err := strconv.Atoi(product.Unquote(v))
		if err != nil {
			rd.Refuse(k, v, "a whole number", *dst)
			continue
		}
		if n != 0 {
			rd.Int(k, dst)
			return
		}
	}
}

// Tune implements product.Router: the precise producer gets the vllm tokenizer backend, whose
// tokens are the engine's.
func (Router) Tune(policy string, ps product.Settings, _ product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if policy != "llmd-precise" || s.Tokenizer == "vllm" {
		return s, nil
	}
	s.Tokenizer = "vllm"
	return s, []product.Change{{Setting: "token-producer", Value: "vllm",
		Why: "the estimate tokenizer's keys never match the engine's blocks, so the precise producer finds no prefix"}}
}

// ReqGatewayPool is the requirement of a Gateway API InferencePool.
const ReqGatewayPool = "Gateway API + InferencePool"

// eppAdds is what the InferencePool requirement adds to a stack without llm-d: the router is a
// component of its own, the endpoint picker the pool names, behind a gateway.
const eppAdds = "a new component (llm-d's endpoint picker, the EPP, behind a Gateway API InferencePool)"

// Requirements implements product.Router.
func (Router) Requirements(policy string, _ product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	out := []product.Requirement{product.Kubernetes(f)}
	var pool product.Requirement
	switch {
	case f == nil:
		pool = product.Requirement{Name: ReqGatewayPool, Status: product.Unknown, Detail: "no --config files given", Adds: eppAdds}
	case f.Kinds["InferencePool"] != "" && (f.Kinds["Gateway"] != "" || f.Kinds["HTTPRoute"] != ""):
		pool = product.Requirement{Name: ReqGatewayPool, Status: product.Met, Detail: "InferencePool in " + f.Kinds["InferencePool"], Adds: eppAdds}
	case f.Kinds["InferencePool"] != "":
		pool = product.Requirement{Name: ReqGatewayPool, Status: product.Unknown, Detail: "InferencePool in " + f.Kinds["InferencePool"] + ", no Gateway or HTTPRoute in the files given", Adds: eppAdds}
	default:
		pool = product.Requirement{Name: ReqGatewayPool, Status: product.Unknown, Detail: "no InferencePool in the files given", Adds: eppAdds}
	}
	out = append(out, pool)
	if policy == "llmd-precise" {
		out = append(out, product.KVEvents(f))
	}
	return out
}

// WithoutEvents implements product.EventReader: the precise producer builds its index only
// from the engines' KV events (ROUTERS.md §2), so without them no pod matches a prefix.
func (Router) WithoutEvents(policy string, ps product.Settings) (product.Settings, string, bool) {
	s := ps.(Settings)
	if policy != "llmd-precise" {
		return s, "", false
	}
	s.NoEngineEvents = true
	return s, "llm-d's precise producer builds its index only from them: no pod matches a prefix", true
}

// Snippet implements product.Router: an EndpointPickerConfig.
func (Router) Snippet(policy string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	precise := policy == "llmd-precise"
	w("# llm-d router (EPP) configuration for %s: --config-file, or the router chart's router.epp.pluginsCustomConfig", policy)
	w("apiVersion: llm-d.ai/v1alpha1")
	w("kind: EndpointPickerConfig")
	w("plugins:")
	if s.Tokenizer == "vllm" || precise {
		// The precise producer needs the engine's tokens: the estimate's never match.
		w("- type: token-producer")
		w("  parameters:")
		w("    modelName: your-org/your-model # edit: the model the engines serve")
		w("    vllm:")
		w("      url: http://localhost:8000 # edit: an engine's render endpoint (plain HTTP)")
	}
	if precise {
		w("- type: precise-prefix-cache-producer")
		w("  parameters:")
		if n := s.PreciseBlockSizeTokens; n != Shipped().PreciseBlockSizeTokens {
			w("    tokenProcessorConfig:")
			w("      blockSizeTokens: %d", n)
		}
		w("    kvEventsConfig:")
		w("      podDiscoveryConfig:")
		w("        socketPort: 5557 # the engines' --kv-events-config endpoint port")
	} else {
		w("- type: approx-prefix-cache-producer")
		w("  parameters:")
		if !s.AutoTune {
			// With autoTune on (the default) the engine's metrics replace the next two.
			w("    autoTune: false")
		}
		w("    blockSizeTokens: %d", max(s.BlockSizeTokens, 64))
		w("    lruCapacityPerServer: %d", s.LRUCapacityPerServer)
		if n := s.MaxPrefixTokensToMatch; n != Shipped().MaxPrefixTokensToMatch {
			w("    maxPrefixTokensToMatch: %d", n)
		}
	}
	w("- type: prefix-cache-scorer")
	if precise {
		w("  parameters:")
		w("    prefixMatchInfoProducerName: precise-prefix-cache-producer")
	}
	w("- type: queue-scorer")
	w("- type: kv-cache-utilization-scorer")
	w("- type: max-score-picker")
	if precise {
		w("dataLayer:")
		w("  sources:")
		w("  - pluginRef: endpoint-notification-source")
		w("    extractors:")
		w("    - pluginRef: precise-prefix-cache-producer")
	}
	w("schedulingProfiles:")
	w("- name: default")
	w("  plugins:")
	w("  - pluginRef: queue-scorer")
	w("    weight: %s", product.Num(s.QueueWeight))
	w("  - pluginRef: kv-cache-utilization-scorer")
	w("    weight: %s", product.Num(s.KVUtilWeight))
	w("  - pluginRef: prefix-cache-scorer")
	w("    weight: %s", product.Num(s.PrefixWeight))
	w("  - pluginRef: max-score-picker")
	return product.Snippet{Product: ID, Format: "llm-d EndpointPickerConfig YAML", File: "epp-config.yaml",
		Where: "the EPP's --config-file (an EndpointPickerConfig), or the llm-d router chart's router.epp.pluginsCustomConfig", Text: b.String()}
}

// Metrics are the EPP's own metric families: llm_d_* and, before v0.9.0, the Gateway API
// Inference Extension's inference_* families it published (the catalog's llm-d and gaie
// families; llm-d/llm-d-router pkg/epp/metrics/metrics.go@v0.9.0).
func (Router) Metrics() product.Metrics {
	return product.Metrics{Families: []string{"llm_d_epp_", "llm_d_router_epp_", "llm_d_inference_scheduler_",
		"inference_extension_", "inference_objective_", "inference_pool_"}}
}
