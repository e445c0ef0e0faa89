// Package aibrix is everything kvcheck knows about the AIBrix gateway's prefix-cache routing
// strategy: its environment as the manifests ship it (and the binary's own defaults, for a key
// an environment leaves out), its emulation (aibrix-prefix-cache), how a gateway's environment
// configures it, how kvcheck would tune it, what it needs and the environment to apply.
//
// Source: vllm-project/aibrix@e3e10f9 (2026-08-22), cited file:line here and in the
// emulation's doc comment (prefixcache.go). What was checked against the source:
//   - the text routed by (pkg/plugins/gateway/util.go:91-125, 250-267; gateway_req_body.go:
//     74-75): a chat's contents joined with spaces, list contents as their JSON, null as
//     "null"; a completion's prompt, which must be a string (a list is answered 400);
//   - the character tokenizer (pkg/utils/tokenizer/local_characters.go:22-28): the text's
//     bytes; blocks of AIBRIX_PREFIX_CACHE_BLOCK_SIZE bytes, whole blocks only, chained
//     (pkg/utils/prefixcacheindexer/hash.go:206-241);
//   - the table (hash.go:32-204; pkg/utils/lrustore/lru_store.go): one LRU of
//     AIBRIX_PREFIX_CACHE_BLOCK_NUMBER blocks shared by all pods, refreshed by writes only, and
//     blocks unwritten for 20 minutes dropped by a sweep every second;
//   - the route (pkg/plugins/gateway/algorithms/prefix_cache.go:365-473, 950-1025;
//     least_request.go:148-274; util.go:31-54): the imbalance gate, the match, the load bound,
//     the fallback, the write as the request is routed;
//   - the environment (prefix_cache.go:44-57, 240-256; hash.go:42-47) and the strategy's
//     precedence (pkg/plugins/gateway/util.go:739-775): a model's locked strategy, the
//     routing-strategy header, the profile's, then ROUTING_ALGORITHM.
//
// Left out: KV event sync (AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED, the remote tokenizer and
// the sync indexer: a router with it on gets no row), the tiktoken tokenizer, several gateway
// replicas (each counts and remembers alone: getRequestCounts' note, least_request.go:257-261),
// models (one model is assumed), the random hash seed (only block equality matters).
//
// Its configuration rules (config.go) check the gateway's environment: the character tokenizer
// left on, and KV event sync without the remote tokenizer, which the cache refuses to start
// (pkg/cache/cache_init.go:563) while the router turns its own remote tokenizer on
// (prefix_cache.go:252-256).
//
// Where ROUTERS.md says otherwise, the source wins: there is no "max > 2 x (mean + 1)" gate;
// the gate is max - min > the absolute count (8 in the binary, 16 in the shipped manifests),
// followed by the mean + k standard deviations bound on the chosen pod (k 1, or 2 shipped);
// the block size is 4 bytes in the binary and 128 in the manifests (the readme says 128
// tokens; with the character tokenizer they are bytes); the 200,000 blocks are one table for
// all pods, not per pod; KV sync needs, beyond the remote tokenizer, a gateway built with
// -tags=zmq (pkg/cache/kv_event_manager.go:1, 48-51).
package aibrix

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// display is the product's name in prose (ID, config.go, its id).
const display = "AIBrix"

// Settings are the AIBrix gateway's prefix-cache environment.
type Settings struct {
	// Strategy is the routing strategy (ROUTING_ALGORITHM, or the routing-strategy header):
	// prefix-cache, the one kvcheck emulates.
	Strategy string
	// Tokenizer is AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE (character).
	Tokenizer string
	// BlockSize is AIBRIX_PREFIX_CACHE_BLOCK_SIZE, in the tokenizer's tokens: bytes for the
	// character tokenizer.
	BlockSize int
	// BlockNumber is AIBRIX_PREFIX_CACHE_BLOCK_NUMBER: the blocks the table holds in all.
	BlockNumber int
	// ImbalanceAbs is AIBRIX_PREFIX_CACHE_POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT.
	ImbalanceAbs int
	// StdDevFactor is AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR.
	StdDevFactor int
	// EvictionMins and EvictionSecs are AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS (20) and
	// AIBRIX_PREFIX_CACHE_EVICTION_INTERVAL_SECONDS (1).
	EvictionMins, EvictionSecs float64
	// KVSync is AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED.
	KVSync bool
}

// Binary are the defaults of the gateway binary when its environment sets none
// (prefix_cache.go:44-57, hash.go:32-47).
func Binary() Settings {
	return Settings{Strategy: "prefix-cache", Tokenizer: "character", BlockSize: 4, BlockNumber: 200000, ImbalanceAbs: 8, StdDevFactor: 1, EvictionMins: 20, EvictionSecs: 1}
}

// Manifests are the defaults the shipped deployments set in the gateway's environment
// (config/gateway/gateway-plugin/gateway-plugin.yaml:99-106, config/overlays/release/
// gateway_plugins_patch.yaml:32-41, dist/chart/values.yaml:86-89).
func Manifests() Settings {
	s := Binary()
	s.BlockSize, s.ImbalanceAbs, s.StdDevFactor = 128, 16, 2
	return s
}

// Router is the AIBrix gateway: its routing (this file) and its configuration checks
// (Checker, config.go).
type Router struct{ Checker }

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: the gateway's KV event sync matches the engines' block
// hashes.
func (Router) Advice() product.Advice { return product.Advice{Exact: display + " event sync"} }

// Shipped implements product.Router: the environment the shipped manifests and Helm chart set,
// how AIBrix is installed. The binary's own defaults (Binary) are what a gateway's environment
// falls back to for a key it does not set (Configure).
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Manifests()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	return []sim.PolicyInfo{prefixCache(ps.(Settings))}
}

// The environment keys Configure reads.
const (
	EnvStrategy     = "ROUTING_ALGORITHM"
	EnvTokenizer    = "AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE"
	EnvBlockSize    = "AIBRIX_PREFIX_CACHE_BLOCK_SIZE"
	EnvBlockNumber  = "AIBRIX_PREFIX_CACHE_BLOCK_NUMBER"
	EnvImbalance    = "AIBRIX_PREFIX_CACHE_POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT"
	EnvStdDev       = "AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR"
	EnvEvictionMins = "AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS"
	EnvEvictionSecs = "AIBRIX_PREFIX_CACHE_EVICTION_INTERVAL_SECONDS"
	EnvKVSync       = "AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED"
)

// Configure implements product.Router. It reads a gateway's environment (the keys above, as
// the file sets them; a key the file does not set keeps the binary's default): a gateway whose
// strategy is prefix-cache gets a row, unless KV event sync is on; another strategy gets none.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Binary()
	rd := product.NewReader(f)
	strategy := product.Unquote(f.Values[EnvStrategy])
	rd.Str(EnvTokenizer, &s.Tokenizer)
	rd.Int(EnvBlockSize, &s.BlockSize)
	rd.Int(EnvBlockNumber, &s.BlockNumber)
	rd.Int(EnvImbalance, &s.ImbalanceAbs)
	rd.Int(EnvStdDev, &s.StdDevFactor)
	rd.Float(EnvEvictionMins, &s.EvictionMins)
	rd.Float(EnvEvictionSecs, &s.EvictionSecs)
	rd.Bool(EnvKVSync, &s.KVSync)
	var skip string
	switch {
	case strategy == "":
		skip = "no ROUTING_ALGORITHM: only requests sending a routing-strategy header are routed by a strategy; kvcheck emulates prefix-cache"
	case strategy != "prefix-cache":
		skip = fmt.Sprintf("routing strategy %q is not emulated (kvcheck emulates prefix-cache)", strategy)
	case s.KVSync:
		skip = "prefix-cache with KV event sync routes on the engines' events through a remote tokenizer, which kvcheck does not emulate"
	case s.Tokenizer != "character":
		skip = fmt.Sprintf("prefix-cache with the %s tokenizer is not emulated (kvcheck emulates the character tokenizer)", s.Tokenizer)
	default:
		return rd.Result([]string{"aibrix-prefix-cache"}, s, "")
	}
	return rd.Result(nil, s, skip)
}

// CharsPerToken is the characters (bytes, for the character tokenizer) a token stands for when
// kvcheck sizes the table against KV caches in tokens (the byte estimate's 4).
const CharsPerToken = 4

// Tune implements product.Router: the table holds as many blocks as the fleet's caches hold
// text, so that it neither forgets prefixes the engines still hold nor routes to ones they
// evicted long ago.
func (Router) Tune(_ string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if tr.Replicas <= 0 || tr.KVTokens <= 0 || s.BlockSize <= 0 {
		return s, nil
	}
	blocks := int(min(int64(tr.Replicas)*tr.KVTokens*CharsPerToken/int64(s.BlockSize), 1<<31-1))
	if blocks < 1 || blocks == s.BlockNumber {
		return s, nil
	}
	s.BlockNumber = blocks
	return s, []product.Change{{Setting: EnvBlockNumber, Value: fmt.Sprint(blocks),
		Why: fmt.Sprintf("one table for all pods, sized to what their caches hold: %d replicas x %d tokens x %d bytes a token / %d-byte blocks", tr.Replicas, tr.KVTokens, CharsPerToken, s.BlockSize)}}
}

// ReqGateway is the requirement of the AIBrix emulation. A completion whose prompt is a list,
// which the gateway answers 400, is no requirement: the emulation cannot run on such traffic
// and says so (check).
const ReqGateway = "AIBrix gateway with prefix-cache"

// Requirements implements product.Router.
func (Router) Requirements(_ string, _ product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	return []product.Requirement{
		product.System(ReqGateway, ID, "the gateway-plugins Deployment (or Helm values) with ROUTING_ALGORITHM=prefix-cache, or clients sending routing-strategy: prefix-cache", f),
		product.Kubernetes(f),
	}
}

// Snippet implements product.Router: the gateway's environment in the Helm chart's values.
func (Router) Snippet(_ string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# AIBrix Helm values (dist/chart): the gateway plugin's environment, gatewayPlugin.container.envs")
	w("# (in a kustomize install, the same names in the aibrix-gateway-plugins Deployment's env)")
	w("gatewayPlugin:")
	w("  container:")
	w("    envs:")
	w("      %s: %q", EnvStrategy, s.Strategy)
	w("      %s: %q", EnvTokenizer, s.Tokenizer)
	w("      %s: \"%d\"", EnvBlockSize, s.BlockSize)
	w("      %s: \"%d\"", EnvBlockNumber, s.BlockNumber)
	w("      %s: \"%d\"", EnvImbalance, s.ImbalanceAbs)
	w("      %s: \"%d\"", EnvStdDev, s.StdDevFactor)
	w("      %s: \"false\" # on, routing moves to the engines' KV events (not what kvcheck simulated)", EnvKVSync)
	return product.Snippet{Product: ID, Format: "AIBrix Helm values", File: "aibrix-values.yaml",
		Where: "the AIBrix Helm chart's values (dist/chart): gatewayPlugin.container.envs, the gateway plugin's environment", Text: b.String()}
}
