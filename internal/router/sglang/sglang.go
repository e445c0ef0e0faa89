// Package sglang is everything kvcheck knows about the SGLang model gateway (smg, formerly
// sgl-model-gateway inside sglang): its cache_aware settings with the default sets it ships (the
// command line's and a policy hint's; ROUTERS.md §5 and its corrections), its emulation,
// sglang-cache-aware (smg.go, today's smg in each of its modes, and cacheaware.go, the older
// gateway inside sglang; their doc comments cite the upstream lines they follow; the character
// tree is internal/router/chartree), how a launch command's flags configure it, how kvcheck
// would tune it, what it needs and the command line to apply.
package sglang

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "sglang"
	display = "SGLang"
)

// Settings are the SGLang model gateway's cache_aware settings (ROUTERS.md §5). The CLI
// and a policy hint ship different defaults: CLIDefaults and HintDefaults.
type Settings struct {
	// Gateway is which gateway routes: SMG, today's (smg-project/smg, where the gateway
	// moved), or Fork, the sgl-model-gateway that shipped inside sglang (as the
	// modal-projects/sglang fork has it @8905cbd). "" is SMG.
	Gateway string
	// Connection is how smg reaches the workers, which picks cache_aware's mode:
	// HTTP (a character tree of the request text), GRPC (a tree of token pages)
	// or GRPCEvents (gRPC workers publishing KV events: overlap with what they hold).
	// "" is HTTP. The fork has the character tree only.
	Connection string
	// CacheIndex is smg's --cache-index: "tree" ("" too) or "hash" (a TTL'd map of request
	// heads at CacheBoundaries token positions; CacheTTLSecs, --cache-ttl-secs).
	CacheIndex      string
	CacheBoundaries []int
	CacheTTLSecs    float64
	// BlockSize is smg's --block-size: the token tree's page and the KV block of events.
	BlockSize           int
	CacheThreshold      float64
	BalanceAbsThreshold float64
	BalanceRelThreshold float64
	// EvictionIntervalSecs and MaxTreeSize (characters, or tokens in a token tree) bound the
	// router's radix tree: per replica in the fork, the whole tree in smg.
	EvictionIntervalSecs float64
	MaxTreeSize          int
	// smg's KV-pressure triggers (--balance-token-usage-threshold,
	// --overload-token-usage-threshold; 1 or more disables them), --overlap-decay and
	// --selection-temperature (0 disables them), and --load-monitor-interval, how often the
	// workers' loads are polled (seconds).
	BalanceTokenUsage, OverloadTokenUsage float64
	OverlapDecay, SelectionTemperature    float64
	LoadIntervalSecs                      float64
}

// The values of Settings.Gateway and Connection.
const (
	SMG        = "smg"
	Fork       = "fork"
	HTTP       = "http"
	GRPC       = "grpc"
	GRPCEvents = "grpc-events"
)

// CLIDefaults are cache_aware's defaults on smg's command line
// (smg-project/smg@f8daa88 model_gateway/src/main.rs:238-372, 518-520): cache threshold 0.3,
// balance 64 and 1.5, eviction every 120 s, a tree of 2^26, pages of 16 tokens, the KV
// triggers, decay and temperature off, the tree index, a 180 s hash TTL, loads every 10 s. The
// fork's CLI had the same thresholds (the Python launcher's eviction interval is 60 s).
func CLIDefaults() Settings {
	return Settings{Gateway: SMG, Connection: HTTP, CacheIndex: "tree", CacheTTLSecs: 180, BlockSize: 16,
		CacheThreshold: 0.3, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, EvictionIntervalSecs: 120, MaxTreeSize: 1 << 26,
		BalanceTokenUsage: 1, OverloadTokenUsage: 1, LoadIntervalSecs: 10}
}

// HintDefaults are CacheAwareConfig::default() (smg@f8daa88
// model_gateway/src/policies/mod.rs:178-200, and the fork's policies/mod.rs), which a worker
// registering with a cache_aware policy hint gets whatever the CLI said.
func HintDefaults() Settings {
	s := CLIDefaults()
	s.CacheThreshold, s.BalanceAbsThreshold, s.BalanceRelThreshold, s.EvictionIntervalSecs, s.MaxTreeSize = 0.5, 32, 1.1, 30, 10000
	return s
}

// Router is the SGLang model gateway.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: the two gateways' default tree sizes.
func (Router) Advice() product.Advice {
	return product.Advice{KVAware: []string{display + " cache_aware: the Rust and Python gateways' default tree sizes differ by four orders of magnitude"}}
}

// Shipped implements product.Router: smg's command-line defaults first, then what a
// cache_aware policy hint applies, both over HTTP (smg's character tree); then, for simulate
// to choose, the CLI's defaults over gRPC (a tree of token pages) and over gRPC with the
// engines' KV events, and the older gateway that shipped inside sglang (the modal-projects/sglang
// fork @8905cbd) with either default set.
func (Router) Shipped() []product.Variant {
	cli, hint := CLIDefaults(), HintDefaults()
	with := func(s Settings, gateway, conn string) Settings {
		s.Gateway, s.Connection = gateway, conn
		return s
	}
	return []product.Variant{
		{Key: "cli", Label: "CLI defaults", About: "the gateway's command-line defaults",
			Help: "the gateway's command line: cache threshold 0.3, balance 64 and 1.5, 2^26-character trees", Settings: cli},
		{Key: "hint", Label: "policy-hint defaults", About: "the defaults a cache_aware policy hint applies",
			Help: "what a cache_aware policy hint applies: 0.5, 32, 1.1, 10,000 characters", Settings: hint},
		{Key: "grpc", Label: "CLI defaults, gRPC", About: "the command line's defaults, workers over gRPC",
			Help: "the command line's, workers over gRPC: a tree of 16-token pages", Settings: with(cli, SMG, GRPC), Alternative: true},
		{Key: "grpc-events", Label: "CLI defaults, gRPC with KV events", About: "the command line's defaults, workers over gRPC with KV events",
			Help: "the command line's, workers over gRPC publishing KV events: overlap with what they hold", Settings: with(cli, SMG, GRPCEvents), Alternative: true},
		{Key: "fork", Label: "older gateway, CLI defaults", About: "the older sgl-model-gateway inside sglang, command-line defaults",
			Help: "the older sgl-model-gateway inside sglang with its command line's: the replica that created the matched node", Settings: with(cli, Fork, HTTP), Alternative: true},
		{Key: "fork-hint", Label: "older gateway, policy-hint defaults", About: "the older sgl-model-gateway inside sglang, policy-hint defaults",
			Help: "the older gateway with a policy hint's", Settings: with(hint, Fork, HTTP), Alternative: true},
	}
}

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	return []sim.PolicyInfo{cacheAware(ps.(Settings))}
}

// Configure implements product.Router. It reads the gateway's flags as given (--policy,
// --cache-threshold, --balance-abs-threshold, --balance-rel-threshold,
// --eviction-interval-secs or --eviction-interval, --max-tree-size; smg's --block-size,
// --cache-index, --cache-boundaries, --cache-ttl-secs, the token-usage thresholds,
// --overlap-decay, --selection-temperature, --load-monitor-interval) and launcher (python or
// rust): the Python launcher's eviction interval defaults to 60 s, the Rust CLI's to 120 s.
// Worker URLs of grpc:// select the token tree.
func (Router) Configure(f product.Facts) []product.Configured {
	s := CLIDefaults()
	rd := product.NewReader(f)
	var policies []string
	var skip string
	if p := f.Values["--policy"]; p == "" || p == "cache_aware" {
		policies = []string{"sglang-cache-aware"}
	} else {
		skip = fmt.Sprintf("--policy %s is not emulated (kvcheck emulates cache_aware)", p)
	}
	if _, set := f.Values["--eviction-interval-secs"]; f.Values["launcher"] == "python" && !set {
		// The Python launcher's own default (router_args.py), not the Rust CLI's 120 s.
		s.EvictionIntervalSecs = 60
		rd.Changes = append(rd.Changes, product.Change{Setting: "--eviction-interval-secs", Value: "60", Why: "the Python launcher's default (" + rd.Where + ")"})
	}
	rd.Float("--cache-threshold", &s.CacheThreshold)
	rd.Float("--balance-abs-threshold", &s.BalanceAbsThreshold)
	rd.Float("--balance-rel-threshold", &s.BalanceRelThreshold)
	rd.Float("--eviction-interval-secs", &s.EvictionIntervalSecs)
	rd.Float("--eviction-interval", &s.EvictionIntervalSecs)
	rd.Int("--max-tree-size", &s.MaxTreeSize)
	// smg's flags (smg@f8daa88 model_gateway/src/main.rs:238-372, 518-520).
	rd.Int("--block-size", &s.BlockSize)
	rd.Str("--cache-index", &s.CacheIndex)
	rd.Float("--cache-ttl-secs", &s.CacheTTLSecs)
	rd.Float("--balance-token-usage-threshold", &s.BalanceTokenUsage)
	rd.Float("--overload-token-usage-threshold", &s.OverloadTokenUsage)
	rd.Float("--overlap-decay", &s.OverlapDecay)
	rd.Float("--selection-temperature", &s.SelectionTemperature)
	rd.Float("--load-monitor-interval", &s.LoadIntervalSecs)
	if v, ok := f.Values["--cache-boundaries"]; ok {
		for _, b := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(b))
			if err != nil {
				skip = fmt.Sprintf("--cache-boundaries %q: the gateway wants token positions, comma-separated", v)
				break
			}
			s.CacheBoundaries = append(s.CacheBoundaries, n)
		}
	}
	// Workers reached over gRPC put smg's cache_aware on token pages.
	if strings.Contains(f.Values["--worker-urls"], "grpc://") {
		s.Connection = GRPC
	}
	return rd.Result(policies, s, skip)
}

// CharsPerToken is the characters a token stands for when kvcheck sizes a character tree
// against a KV cache in tokens (the byte estimate's 4).
const CharsPerToken = 4

// Tune implements product.Router: the tree is sized to what the fleet's caches hold.
func (Router) Tune(_ string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if tr.Replicas <= 0 || tr.KVTokens <= 0 {
		return s, nil
	}
	// smg bounds the whole tree, the older gateway each replica's part of it; a token tree
	// counts tokens, a character tree characters.
	replicas, perToken, unit := int64(tr.Replicas), int64(CharsPerToken), fmt.Sprintf(" x %d characters a token", CharsPerToken)
	if s.Gateway == Fork {
		replicas = 1
	}
	if s.Connection == GRPC || s.Connection == GRPCEvents {
		perToken, unit = 1, ""
	}
	size := int(min(replicas*tr.KVTokens*perToken, math.MaxInt32))
	if s.MaxTreeSize == size {
		return s, nil
	}
	s.MaxTreeSize = size
	what := fmt.Sprintf("%d replicas x %d tokens%s", tr.Replicas, tr.KVTokens, unit)
	if replicas == 1 {
		what = fmt.Sprintf("one replica's %d tokens%s (the older gateway bounds each replica's part)", tr.KVTokens, unit)
	}
	return s, []product.Change{{Setting: "--max-tree-size", Value: fmt.Sprint(size),
		Why: fmt.Sprintf("the tree remembers what the fleet can hold: %s; smaller forgets prefixes the engines still hold, larger routes to prefixes they evicted", what)}}
}

// ReqGateway is the requirement of an SGLang model gateway.
const ReqGateway = "SGLang model gateway"

// Requirements implements product.Router.
func (Router) Requirements(_ string, _ product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	return []product.Requirement{product.System(ReqGateway, ID, "python -m sglang_router.launch_router or sgl-model-gateway", f)}
}

// Snippet implements product.Router: the launch command with cache_aware's values given.
func (Router) Snippet(_ string, ps product.Settings) product.Snippet {
	g := ps.(Settings)
	num := product.Num
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# SGLang model gateway, cache_aware with these values given on the command line (workers")
	w("# registering with a cache_aware policy hint get CacheAwareConfig::default() instead)")
	w("python -m sglang_router.launch_router \\")
	w("  --worker-urls http://worker-0:8000 http://worker-1:8000 \\")
	w("  --policy cache_aware \\")
	w("  --cache-threshold %s \\", num(g.CacheThreshold))
	w("  --balance-abs-threshold %s \\", num(g.BalanceAbsThreshold))
	w("  --balance-rel-threshold %s \\", num(g.BalanceRelThreshold))
	w("  --eviction-interval-secs %s \\", num(g.EvictionIntervalSecs))
	w("  --max-tree-size %d", g.MaxTreeSize)
	return product.Snippet{Product: ID, Format: "SGLang model gateway command line", File: "launch-router.sh",
		Where: "the gateway's command line: the flags of python -m sglang_router.launch_router", Text: b.String()}
}
