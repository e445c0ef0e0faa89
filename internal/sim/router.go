package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Emulations of the routers as they ship.
//
// Policies() are idealised families (round-robin, exact longest prefix, a Dynamo-style cost, ...).
// Emulations() are the shipped algorithms of named products with their defaults, one file each,
// named product-algorithm (prodstack-prefixaware, llmd-precise, dynamo-kv, sglang-cache-aware,
// ray-prefix-affinity, litellm-session-affinity, ...). Each PolicyInfo of an emulation says which
// product it is, which source it follows (../shared/SPEC.md §6 and ../shared/ROUTERS.md cite the
// upstream files) and whether it reads the request's text.
//
// An emulation reads its settings from Config.Routers: the product's settings as shipped by
// default (DefaultRouterSettings), or the values a user's configuration files set, or the values
// kvcheck would tune them to. The same emulation under different settings is the same policy
// name run with a different Config.
//
// Routers that read characters (production-stack prefixaware, SGLang cache_aware, Ray's prefix
// affinity) or request fields (headers, cache_control markers) need Request.View, which only
// sources holding the request bodies fill (request logs). On a trace of block hashes such an
// emulation cannot run: simulating it returns a *CannotRunError saying why, never a figure.

// View is what a router that reads the request itself, rather than the engine's blocks, sees of
// it. Sources that hold request bodies (request logs) fill it; traces and recordings leave
// Request.View nil.
type View struct {
	// Chat is true for a chat completion (messages), false for a completion (prompt).
	Chat bool
	// Text is a completion's prompt, or a chat's texts back to back, as Pieces describe them:
	// each message's string content or the texts of its content parts, and an assistant's
	// reasoning_content, with no separator and without the chat template. Each router builds
	// the text it reads from it (production-stack, SGLang and Ray join the texts each their own
	// way: prodStackPrompt, sglangText, rayText); the engine's text (media, tool calls, the
	// template) is not this.
	Text string
	// Pieces are, for a chat, the runs of Text in order; nil for a completion.
	Pieces []Piece
	// Headers are the request's HTTP headers as the log holds them, names in lower case (session
	// keys: production-stack's --session-key, LiteLLM's x-litellm-session-id and
	// x-<vendor>-session-id).
	Headers map[string]string
	// MetadataSession is the body's metadata.session_id, empty when absent (LiteLLM's
	// session_affinity reads it).
	MetadataSession string
	// Partition is the request's cache partition (audit.Request.Partition: cache_salt,
	// extra_key, lora_path), "" when it names none; smg's cache_aware keys its trees by it.
	Partition string
	// SessionParams is the body's session_params.session_id when a string, empty otherwise
	// (vLLM Router routes a chat completion on it).
	SessionParams string
	// PromptIDs is, for a completion whose prompt is token ids, how many (of the first prompt
	// of a batch); BatchLeft counts a batch's prompts after the first. Both are 0 for one text
	// prompt (routers that read the prompt see a placeholder, or refuse a list).
	PromptIDs, BatchLeft int
	// Roles are a chat's message roles, one per message; Lists the JSON, as the body holds
	// it, of each message whose content is a list, in order (AIBrix routes on it).
	Roles, Lists []string
	// CacheKey is a hash of the messages (and tools) up to and including the last message with
	// a cache_control marker, 0 when no message has one: the key LiteLLM's prompt_caching pins.
	// CacheTokens is the estimated token count of that prefix (LiteLLM needs at least 1,024).
	CacheKey    uint64
	CacheTokens int

	// Stored, when set, holds Text, which is "" then: a request log's texts past MemViewBytes
	// are kept in a temporary file, and a replay reads each back as it routes the request.
	Stored *StoredText
}

// StoredText is where a view's text was moved: size bytes at at of the log's text file.
type StoredText struct {
	file *textFile
	at   int64
	size int
}

// Piece is a run of a chat's View.Text: it ends at End (it starts where the one before ends)
// and Kind says what it is.
type Piece struct {
	End  int32
	Kind PieceKind
}

// PieceKind says what a run of a chat's text is. A message opens with one of the Message kinds;
// a list content's parts and an assistant's reasoning follow it.
type PieceKind uint8

// The kinds of a Piece.
const (
	// PieceString opens a message whose content is a string: the run is the string.
	PieceString PieceKind = iota
	// PieceList opens a message whose content is a list of parts (an empty run); its parts
	// that carry text follow.
	PieceList
	// PieceNull is a message whose content is null, PieceAbsent one without a content member
	// (empty runs).
	PieceNull
	PieceAbsent
	// PiecePartText is a part of type "text" ("" without a text member), PiecePartOther the
	// text member of a part of another type (input_text, a part without a type).
	PiecePartText
	PiecePartOther
	// PieceReasoning is an assistant message's reasoning_content.
	PieceReasoning
)

// opens reports whether a piece of kind k starts a message.
func (k PieceKind) opens() bool { return k <= PieceAbsent }

// StringChat is the view of a chat whose messages' contents are the strings given.
func StringChat(contents ...string) *View {
	v := &View{Chat: true, Pieces: make([]Piece, len(contents))}
	v.Text = strings.Join(contents, "")
	end := 0
	for i, c := range contents {
		end += len(c)
		v.Pieces[i] = Piece{End: int32(end), Kind: PieceString}
	}
	return v
}

// RouterSettings holds every emulated product's settings. DefaultRouterSettings gives them as
// each product ships; a user's configuration or kvcheck's tuning overrides some.
type RouterSettings struct {
	ProdStack ProdStackSettings
	SGLang    SGLangSettings
	Ray       RaySettings
	LiteLLM   LiteLLMSettings
}

// ProdStackSettings are vLLM production-stack router settings (vllm_router CLI, Helm routerSpec;
// ROUTERS.md §3).
type ProdStackSettings struct {
	// SessionKey is the header the session router reads (--session-key); empty makes the
	// session router refuse to start.
	SessionKey string
	// PrefixMinMatch is --prefix-min-match-length in characters (0).
	PrefixMinMatch int
	// KVAwareThreshold is --kv-aware-threshold in tokens (2000).
	KVAwareThreshold int
	// LoadBeta is --loadaware-beta (1.0).
	LoadBeta float64
}

// SGLangSettings are the SGLang model gateway's cache_aware settings (ROUTERS.md §5). The CLI
// and a policy hint ship different defaults: SGLangCLIDefaults and SGLangHintDefaults.
type SGLangSettings struct {
	// Gateway is which gateway routes: SGLangSMG, today's (smg-project/smg, where the gateway
	// moved), or SGLangFork, the sgl-model-gateway that shipped inside sglang (as the
	// modal-projects/sglang fork has it @8905cbd). "" is SGLangSMG.
	Gateway string
	// Connection is how smg reaches the workers, which picks cache_aware's mode:
	// SGLangHTTP (a character tree of the request text), SGLangGRPC (a tree of token pages)
	// or SGLangGRPCEvents (gRPC workers publishing KV events: overlap with what they hold).
	// "" is SGLangHTTP. The fork has the character tree only.
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

// The values of SGLangSettings.Gateway and Connection.
const (
	SGLangSMG        = "smg"
	SGLangFork       = "fork"
	SGLangHTTP       = "http"
	SGLangGRPC       = "grpc"
	SGLangGRPCEvents = "grpc-events"
)

// SGLangCLIDefaults are cache_aware's defaults on smg's command line
// (smg-project/smg@f8daa88 model_gateway/src/main.rs:238-372, 518-520): cache threshold 0.3,
// balance 64 and 1.5, eviction every 120 s, a tree of 2^26, pages of 16 tokens, the KV
// triggers, decay and temperature off, the tree index, a 180 s hash TTL, loads every 10 s. The
// fork's CLI had the same thresholds (the Python launcher's eviction interval is 60 s).
func SGLangCLIDefaults() SGLangSettings {
	return SGLangSettings{Gateway: SGLangSMG, Connection: SGLangHTTP, CacheIndex: "tree", CacheTTLSecs: 180, BlockSize: 16,
		CacheThreshold: 0.3, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, EvictionIntervalSecs: 120, MaxTreeSize: 1 << 26,
		BalanceTokenUsage: 1, OverloadTokenUsage: 1, LoadIntervalSecs: 10}
}

// SGLangHintDefaults are CacheAwareConfig::default() (smg@f8daa88
// model_gateway/src/policies/mod.rs:178-200, and the fork's policies/mod.rs), which a worker
// registering with a cache_aware policy hint gets whatever the CLI said.
func SGLangHintDefaults() SGLangSettings {
	s := SGLangCLIDefaults()
	s.CacheThreshold, s.BalanceAbsThreshold, s.BalanceRelThreshold, s.EvictionIntervalSecs, s.MaxTreeSize = 0.5, 32, 1.1, 30, 10000
	return s
}

// RaySettings are Ray Serve LLM PrefixCacheAffinityRouter's keyword arguments (ROUTERS.md §6).
type RaySettings struct {
	// ImbalancedThreshold is +Inf by default: the router never falls back for balance.
	ImbalancedThreshold                         float64
	MatchRateThreshold                          float64
	DoEviction                                  bool
	EvictionThresholdChars, EvictionTargetChars int
	EvictionIntervalSecs                        float64
}

// LiteLLMSettings are LiteLLM proxy router_settings (ROUTERS.md §1).
type LiteLLMSettings struct {
	// RoutingStrategy is router_settings.routing_strategy (simple-shuffle).
	RoutingStrategy string
	// PreCallChecks is optional_pre_call_checks (none).
	PreCallChecks []string
	// AffinityTTLSecs is deployment_affinity_ttl_seconds (3600), the session pin's lifetime.
	AffinityTTLSecs float64
	// PromptCacheTTLSecs is prompt_caching's pin lifetime (300, hard-coded).
	PromptCacheTTLSecs float64
	// Redis is true when a Redis is configured: pins are then shared by every proxy pod;
	// without it each pod keeps its own.
	Redis bool
	// ProxyPods is the number of LiteLLM proxy pods the requests are spread over (1).
	ProxyPods int
}

// DefaultRouterSettings returns every product's settings as it ships.
func DefaultRouterSettings() RouterSettings {
	return RouterSettings{
		ProdStack: ProdStackSettings{KVAwareThreshold: 2000, LoadBeta: 1.0},
		SGLang:    SGLangCLIDefaults(),
		Ray:       RaySettings{ImbalancedThreshold: math.Inf(1), MatchRateThreshold: 0.1, EvictionThresholdChars: 400_000, EvictionTargetChars: 360_000, EvictionIntervalSecs: 10},
		LiteLLM:   LiteLLMSettings{RoutingStrategy: "simple-shuffle", AffinityTTLSecs: 3600, PromptCacheTTLSecs: 300, ProxyPods: 1},
	}
}

// CannotRunError says why an emulation cannot run on a trace (a character-based router on a
// trace of block hashes).
type CannotRunError struct {
	Policy, Trace, Reason string
}

func (e *CannotRunError) Error() string {
	return fmt.Sprintf("%s cannot run on %s: %s", e.Policy, e.Trace, e.Reason)
}

// legacyEmulations lists the emulations not yet moved to their product's package
// (internal/router/<product>), which reach them through Emulation.
func legacyEmulations() []PolicyInfo {
	return []PolicyInfo{
		prodStackRoundRobinInfo,
		prodStackSessionInfo,
		prodStackPrefixAwareInfo,
		prodStackKVAwareInfo,
		prodStackLoadAwareInfo,
		sglangInfo,
		rayInfo,
	}
}

// Emulation returns the emulation named that has not yet moved to its product's package, run
// with the settings r; ok is false for a name it does not hold.
func Emulation(name string, r RouterSettings) (PolicyInfo, bool) {
	for _, e := range legacyEmulations() {
		if e.Name != name {
			continue
		}
		check, newPolicy := e.check, e.newPolicy
		if check != nil {
			e.check = func(c Config, t *Trace) error {
				c.routers = &r
				return check(c, t)
			}
		}
		e.newPolicy = func(c Config, blockSize int) policy {
			c.routers = &r
			return newPolicy(c, blockSize)
		}
		return e, true
	}
	return PolicyInfo{}, false
}

// settings returns the configuration's router settings: as shipped when none were set.
func (c Config) settings() RouterSettings {
	if c.routers == nil {
		return DefaultRouterSettings()
	}
	return *c.routers
}

// needsView reports whether an emulation can run on t: one that reads the request's text needs
// every request's View.
func needsView(info PolicyInfo, t *Trace) error {
	if !info.NeedsText {
		return nil
	}
	for i := range t.Requests {
		if t.Requests[i].View == nil {
			if t.noView != "" {
				return &CannotRunError{Policy: info.Name, Trace: t.Name, Reason: "it routes on the request's text and headers, and " + t.noView}
			}
			return &CannotRunError{Policy: info.Name, Trace: t.Name, Reason: fmt.Sprintf("it routes on the request's text and headers, and this %s trace holds only block hashes; give the request log (--requests) instead", t.Format)}
		}
	}
	return nil
}

// names returns the names of infos, in order.
func names(infos []PolicyInfo) []string {
	out := make([]string, len(infos))
	for i, e := range infos {
		out[i] = e.Name
	}
	return out
}

// everyName is every name a simulation takes, in the order results are shown: the idealised
// policies, then the emulations (then those not yet moved that emulations does not hold).
func everyName(emulations []PolicyInfo) []string {
	out := append(PolicyNames(), names(emulations)...)
	for _, e := range legacyEmulations() {
		if !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}

// lookupPolicy finds a policy or an emulation not yet moved by name.
func lookupPolicy(name string) (PolicyInfo, bool) { return lookupIn(name, nil) }

// lookupIn finds a policy or an emulation by name: among the idealised policies, the
// emulations given, and those not yet moved to their product's package (run with
// Config.routers).
func lookupIn(name string, emulations []PolicyInfo) (PolicyInfo, bool) {
	for _, l := range [][]PolicyInfo{Policies(), emulations, legacyEmulations()} {
		for _, p := range l {
			if p.Name == name {
				return p, true
			}
		}
	}
	return PolicyInfo{}, false
}
