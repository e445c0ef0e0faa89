package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Rule is one router or engine configuration check: the stable code findings carry, the id of
// the rule in the router facts table (ROUTERS.md), and what it catches in which versions.
type Rule struct {
	Code     string // stable, for suppressions: system/what
	ID       string // the table's id (LL-02); empty for checks the table does not list
	System   string
	Severity finding.Severity
	Summary  string // what it catches, one sentence
	Versions string // the releases it holds for, as read in the cited source
	Source   string // where the behaviour was read
}

// Defeats says what an error of the rule makes useless, for kvcheck assess: DefeatsAny (prefix
// caching off, an engine that does not start), DefeatsKVRouter (the router's view of the
// caches), DefeatsSession (session affinity); empty when it defeats neither.
func (r Rule) Defeats() string { return defeats[r.Code] }

// What a config error defeats (Rule.Defeats).
const (
	DefeatsAny      = "any"
	DefeatsKVRouter = "kv-router"
	DefeatsSession  = "session"
)

// defeats is Rule.Defeats by code, kept apart from the table so the table stays readable.
var defeats = map[string]string{
	"vllm/prefix-caching-off":              DefeatsAny,
	"production-stack/prefix-caching-off":  DefeatsAny,
	"dynamo/prefix-caching-off":            DefeatsAny,
	"vllm/no-such-flag":                    DefeatsAny,
	"vllm/replay-port-collision":           DefeatsAny,
	"llm-d/estimate-tokenizer":             DefeatsKVRouter,
	"llm-d/scorer-approximate-producer":    DefeatsKVRouter,
	"llm-d/topic-filter":                   DefeatsKVRouter,
	"llm-d/socket-port":                    DefeatsKVRouter,
	"llm-d/engine-connects":                DefeatsKVRouter,
	"llm-d/experimental-plugin":            DefeatsKVRouter,
	"vllm/kv-events-disabled":              DefeatsKVRouter,
	"vllm/publisher-null":                  DefeatsKVRouter,
	"dynamo/kv-events-missing":             DefeatsKVRouter,
	"aibrix/kv-sync-incomplete":            DefeatsKVRouter,
	"production-stack/kvaware-controller":  DefeatsKVRouter,
	"production-stack/session-key-missing": DefeatsSession,
	"litellm/invalid-affinity-flag":        DefeatsSession,
}

// rules is the one table the config checks, the README and SARIF's rule list are made from.
var rules = []Rule{
	// LiteLLM (docs/my-website/docs/proxy/config_settings.md and the router read at main, 2026-10).
	{"litellm/no-affinity", "LL-01", "LiteLLM", finding.Warning,
		"a model group with several self-hosted vLLM deployments and no affinity pre-call check: simple-shuffle scatters a conversation's turns, so no replica sees its prefix again",
		"all releases (no prefix-aware strategy exists; main 2026-10)", "config_settings.md; router.py"},
	{"litellm/prompt-caching-last-turn", "LL-02", "LiteLLM", finding.Warning,
		"prompt_caching pins the prefix up to the last cache_control marker, and enable_anthropic_prompt_caching puts one on the last turn: the key changes every turn and the pin never hits",
		">= 1.94.0 (enable_anthropic_prompt_caching)", "router_utils/prompt_caching_cache.py; prompt-caching doc"},
	{"litellm/prompt-caching-only", "LL-03", "LiteLLM", finding.Info,
		"prompt_caching is the only affinity: it pins only requests that carry cache_control and have at least 1024 tokens, for 300 s",
		"main 2026-10 (TTL 300 s; open PR #40776 would allow 3600 s)", "utils.py is_prompt_caching_valid_prompt; prompt_caching_cache.py"},
	{"litellm/affinity-per-pod", "LL-04", "LiteLLM", finding.Warning,
		"session_affinity or deployment_affinity without redis_host/redis_url on several proxy replicas (the litellm-helm chart's replicaCount, or a LiteLLM Deployment in the same run): each pod keeps its own pins",
		"main 2026-10 (DualCache without Redis is in-memory)", "router_utils/pre_call_checks/deployment_affinity_check.py"},
	{"litellm/retries-stacked", "LL-05", "LiteLLM", finding.Warning,
		"an api_base that is a KV-aware router and num_retries unset (2) or above 1: the proxy's retries stack on the router's own failover",
		"all releases (Router default num_retries 2)", "config_settings.md; router.py Router.__init__"},
	{"litellm/invalid-affinity-flag", "LL-06", "LiteLLM", finding.Error,
		"an affinity flag LiteLLM does not know (prompt_prefix_affinity, a flag outside VALID_FLAGS in model_group_affinity_config): it is ignored, with a warning at most",
		"main 2026-10 (prompt_prefix_affinity only in closed PR #27613)", "deployment_affinity_check.py VALID_FLAGS; types/router.py"},
	{"litellm/unknown-pre-call-check", "", "LiteLLM", finding.Warning,
		"an optional_pre_call_checks entry LiteLLM does not know (session_afinity): the Router adds no check for it, so a misspelt affinity pins nothing",
		"OptionalPreCallChecks, types/router.py @0044fbec", "litellm/types/router.py; router.py add_optional_pre_call_checks"},
	{"litellm/unknown-key", "", "LiteLLM", finding.Info,
		"a top-level or router_settings key this kvcheck does not know (a newer LiteLLM key, or a typo too far from any known key to name)",
		"keys of config_settings.md, main 2026-10", "config_settings.md router_settings reference"},
	{"litellm/key-typo", "", "LiteLLM", finding.Warning,
		"a top-level or router_settings key one or two edits from a known key (optional_pre_call_check, router_setings): LiteLLM ignores it",
		"keys of config_settings.md, main 2026-10", "config_settings.md router_settings reference"},

	// llm-d router (llm-d/llm-d-router @ebab687, 2026-08-22).
	{"llm-d/estimate-tokenizer", "LD-01", "llm-d", finding.Error,
		"the precise prefix-cache producer without a token-producer on the vllm backend: the auto-created estimate tokenizer (about 4 bytes a token) silently degrades precise matching",
		"token-producer era (v0.9.0+; @ebab687)", "dataproducer/tokenizer/README.md; tokenizer.go"},
	{"llm-d/scorer-approximate-producer", "LD-02", "llm-d", finding.Error,
		"a prefix-cache-scorer without prefixMatchInfoProducerName next to the precise producer: the scorer reads the auto-spawned approximate producer instead",
		"split producer/scorer era (@ebab687)", "dataproducer/preciseprefixcache/README.md"},
	{"llm-d/topic-filter", "LD-03", "llm-d", finding.Error,
		"the subscriber's topicFilter (default kv@) is not a prefix of the engine's KV-event topic (default empty): ZMQ drops every event",
		"llm-d @ebab687 with any vLLM that publishes KV events", "pkg/kvevents/pool.go; zmq_subscriber.go"},
	{"llm-d/socket-port", "LD-04", "llm-d", finding.Error,
		"podDiscoveryConfig.socketPort (default 5557) differs from the port of the engine's KV-event endpoint: the router dials a port nobody publishes on",
		"llm-d @ebab687", "pkg/kvevents/pool.go; guide patch-vllm.yaml"},
	{"llm-d/engine-connects", "LD-05", "llm-d", finding.Error,
		"discoverPods dials every pod, but the engine's endpoint has no * or ::, so vLLM connects instead of binding and the router receives nothing",
		"llm-d @ebab687; vLLM kv_events.py @5ac2684", "vllm/distributed/kv_events.py; preciseprefixcache/extractor.go"},
	{"llm-d/approximate-active-active", "LD-06", "llm-d", finding.Warning,
		"the approximate producer (explicit or auto-created) on several active-active EPP replicas: each keeps its own prefix LRU and the hit rate drops",
		"llm-d chart @ebab687", "docs/operations.md; config/charts/README.md"},
	{"llm-d/approximate-block-size", "LD-07", "llm-d", finding.Info,
		"approximate producer blockSizeTokens below 64: raised to 64 at request time",
		"llm-d @ebab687", "dataproducer/approximateprefix/plugin.go"},
	{"llm-d/experimental-plugin", "LD-08", "llm-d", finding.Error,
		"an Alpha plugin without --allow-experimental-plugins among the EPP's flags: the EPP refuses to start",
		"llm-d with plugin stability levels (runner.go @024aa2d); types: burst-prefix-cache-producer, topology-*, multicluster-*", "framework/interface/plugin/registry.go; cmd/epp/runner/runner.go"},
	{"llm-d/no-replay", "LD-09", "llm-d", finding.Info,
		"the precise producer without replaySocketPort: after an EPP restart its index starts empty and fills only with new events",
		"llm-d @ebab687", "pkg/kvevents/pool.go"},
	{"llm-d/deprecated-plugin", "LD-10", "llm-d", finding.Warning,
		"a deprecated plugin type: tokenizer (removed in v0.11.0; use token-producer) or precise-prefix-cache-scorer (use the producer and prefix-cache-scorer)",
		"tokenizer deprecated v0.9.0, removed v0.11.0", "cmd/epp/runner/runner.go; plugin READMEs"},
	{"llm-d/block-size-differs", "", "llm-d", finding.Info,
		"the precise producer's tokenProcessorConfig.blockSize differs from the engine's --block-size: the producer README says they need not match, the June 2026 guide says they must",
		"llm-d @ebab687 README vs guide @7edda66", "preciseprefixcache/README.md; guide precise-prefix-cache-routing"},

	{"llm-d/unknown-key", "", "llm-d", finding.Info,
		"an EndpointPickerConfig top-level key, or a parameter of approx-prefix-cache-producer, precise-prefix-cache-producer, prefix-cache-scorer or token-producer (llm-d.ai API), this kvcheck does not know (the EPP decodes strictly: a key it does not know either stops it at start)",
		"llm-d.ai/v1alpha1 @ebab687", "apix/config/v1alpha1/endpointpickerconfig_types.go; the plugins' parameter structs; config/loader/configloader.go (serializer.EnableStrict, plugin.StrictDecoder)"},
	{"llm-d/key-typo", "", "llm-d", finding.Warning,
		"an EndpointPickerConfig key or plugin parameter one or two edits from a known one (blockSizeToken, speculativeIndexng): the EPP decodes strictly and refuses the config at start",
		"llm-d.ai/v1alpha1 @ebab687", "apix/config/v1alpha1/endpointpickerconfig_types.go; the plugins' parameter structs; config/loader/configloader.go (serializer.EnableStrict, plugin.StrictDecoder)"},
	{"llm-d/unknown-plugin", "", "llm-d", finding.Info,
		"a plugin type the llm-d router does not register in-tree (a newer or out-of-tree plugin, or a typo too far from any known type to name)",
		"@ebab687", "pkg/epp/framework/plugins *Type constants"},
	{"llm-d/plugin-typo", "", "llm-d", finding.Warning,
		"a plugin type one or two edits from a registered one (queue-scorrer, prefix-cache-scorrer): the EPP refuses to load the config",
		"@ebab687", "pkg/epp/framework/plugins *Type constants; config/loader/validation.go (\"is not registered\")"},

	// vLLM production-stack (vllm-project/production-stack @a6c01db, 2026-08-05).
	{"production-stack/prefix-caching-off", "PS-01", "production-stack", finding.Error,
		"a modelSpec with vllmConfig but without enablePrefixCaching: true: the chart renders --no-enable-prefix-caching, so nothing is reused and no events are published",
		"chart @a6c01db (template read again @010004e)", "helm/templates/deployment-vllm-multi.yaml"},
	{"production-stack/session-key-missing", "PS-02", "production-stack", finding.Error,
		"routingLogic session with an empty sessionKey (or a vllm_router command line's --routing-logic session without --session-key): the router raises ValueError at start",
		"router @a6c01db", "src/vllm_router/routers/routing_logic.py; templates/deployment-router.yaml"},
	{"production-stack/kvaware-chat", "PS-03", "production-stack", finding.Warning,
		"kvaware and loadaware tokenize only a request's prompt field: chat completions are matched on an empty string",
		"router @a6c01db", "src/vllm_router/routers/routing_logic.py"},
	{"production-stack/kvaware-controller", "PS-04", "production-stack", finding.Error,
		"kvaware or loadaware without LMCache enabled with its controller on routerSpec.lmcacheControllerPort: the router has no controller to ask",
		"chart @a6c01db", "tutorials/assets/values-17-kv-aware.yaml; templates"},
	{"production-stack/prefixaware-replicas", "PS-05", "production-stack", finding.Warning,
		"prefixaware on several router replicas (routerSpec.replicaCount, or the replicas of a workload whose command line starts vllm_router): each keeps its own in-memory trie, never evicted",
		"router @a6c01db", "prefix/hashtrie.py; routing_logic.py"},
	{"production-stack/prefix-min-match-length", "PS-06", "production-stack", finding.Info,
		"prefixMinMatchLength (or a command line's --prefix-min-match-length) not a multiple of 128: the trie matches 128-character chunks",
		"router @a6c01db", "prefix/hashtrie.py; parsers/parser.py"},
	{"production-stack/loadaware-schema", "PS-07", "production-stack", finding.Warning,
		"routingLogic loadaware on a chart whose schema enum lacks it: helm refuses the values",
		"chart @a6c01db (loadaware added to the router by PR #1035)", "helm/values.schema.json"},
	{"production-stack/unknown-routing-logic", "", "production-stack", finding.Warning,
		"routingLogic (or --routing-logic in routerSpec.extraArgs or on a vllm_router command line: a container's command/args, a compose service, a script) not one the router knows (roundrobin, session, prefixaware, kvaware, loadaware, disaggregated_prefill, disaggregated_prefill_orchestrated): the router refuses it at start and the chart's schema refuses the values, unless a newer release added it",
		"router and chart @a6c01db (loadaware from PR #1035)", "src/vllm_router/parsers/parser.py (--routing-logic choices); helm/values.schema.json"},
	{"production-stack/unknown-key", "", "production-stack", finding.Info,
		"a routerSpec, servingEngineSpec.modelSpec[] or modelSpec[].vllmConfig key the chart does not read (a newer chart's key, or a typo too far from any known key to name)",
		"chart @a6c01db", "helm/values.schema.json; helm/templates"},
	{"production-stack/key-typo", "", "production-stack", finding.Warning,
		"a routerSpec, modelSpec[] or vllmConfig key one or two edits from one the chart reads (routingLogik, sesionKey, enablePrefixcaching): the chart ignores it and renders its default",
		"chart @a6c01db", "helm/values.schema.json; helm/templates"},

	// NVIDIA Dynamo (components/src/dynamo, 2026).
	{"dynamo/kv-events-missing", "DY-01", "Dynamo", finding.Error,
		"a kv-mode frontend with a vLLM worker that has no --kv-events-config enabling events: the router falls back to load-only decisions",
		"releases whose dynamo.vllm no longer generates the events config (newest args.py; 1.x recipes pass it)", "components/src/dynamo/vllm/args.py; KV-routing doc"},
	{"dynamo/obsolete-flag", "DY-03", "Dynamo", finding.Warning,
		"an obsolete flag spelling (--kv-events, --no-kv-events, --kv-overlap-score-weight, --busy-threshold): renamed, and newer releases may refuse it",
		"router_args.py @028cab4, kv_router_args.py @021d616", "kv_router_args.py; utils.py obsolete_flag"},
	{"dynamo/approximate-mode", "DY-04", "Dynamo", finding.Info,
		"KV events off on a kv-mode frontend: the router predicts cache state from its own decisions with a 120 s TTL",
		"kv_router_args.py @021d616", "kv_router_args.py"},
	{"dynamo/replica-sync", "DY-05", "Dynamo", finding.Info,
		"several kv-mode frontends without --router-replica-sync: each tracks active blocks for its own requests only",
		"kv_router_args.py @021d616", "kv_router_args.py"},
	{"dynamo/unknown-router-mode", "", "Dynamo", finding.Warning,
		"a frontend --router-mode (or DYN_ROUTER_MODE) not one the frontend knows (round-robin, random, power-of-two, kv, direct, least-loaded, device-aware-weighted): argparse refuses it at start, unless a newer release added it",
		"router_args.py @028cab4", "components/src/dynamo/common/configuration/groups/router_args.py (--router-mode choices)"},
	{"dynamo/prefix-caching-off", "DY-06", "Dynamo", finding.Error,
		"an aggregated or prefill worker of a kv-mode frontend with --no-enable-prefix-caching: no events config is created and nothing is reused",
		"newest components/src/dynamo/vllm/args.py", "components/src/dynamo/vllm/args.py"},

	// SGLang model gateway (sgl-project/sglang: bindings/python/src/sglang_router/router_args.py
	// @05e589a and the Rust CLI main.rs; ROUTERS.md section 5).
	{"sglang/eviction-flag", "SG-02", "SGLang", finding.Info,
		"the other launcher's eviction flag (--eviction-interval given to the Python launcher, whose flag is --eviction-interval-secs, default 60 s; --eviction-interval-secs to the Rust sgl-model-gateway, whose flag is --eviction-interval, default 120 s), or Python and Rust cache_aware gateways in one run that evict at different intervals because one keeps its launcher's default",
		"router_args.py @05e589a; Rust CLI main.rs (2026)", "router_args.py; main.rs"},
	{"sglang/retries-stacked", "SG-03", "SGLang", finding.Info,
		"a gateway whose worker URLs name another router of the run, with retries not limited (retry_max_retries defaults to 5 in the Python launcher): its retries stack on that router's own failover",
		"router_args.py @05e589a", "router_args.py"},

	// Ray Serve LLM.
	{"ray/imbalanced-threshold", "RY-01", "Ray Serve", finding.Warning,
		"PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so affinity never yields to load",
		"ray master 2026 (older request_router/prefix_aware had 10)", "routing_policies/prefix_aware/prefix_aware_router.py"},
	{"ray/no-eviction", "RY-02", "Ray Serve", finding.Info,
		"PrefixCacheAffinityRouter with do_eviction false (the default): the character tree grows without bound",
		"ray master 2026", "routing_policies/prefix_aware/prefix_aware_router.py"},

	// vLLM engine (vllm @5ac2684, 2026-08-07).
	{"vllm/kv-events-disabled", "VL-01", "vLLM", finding.Error,
		"--kv-events-config without \"enable_kv_cache_events\": true: nothing is published",
		"all releases with --kv-events-config (default false)", "vllm/config/kv_events.py"},
	{"vllm/publisher-null", "VL-02", "vLLM", finding.Error,
		"vLLM 0.11.0 or older with publisher omitted: the publisher defaults to null and nothing is sent",
		"<= 0.11.0 (0.11.1 made zmq the default when enabled)", "docs.vllm.ai v0.10.2; SPEC 1.1"},
	{"vllm/prefix-caching-off", "VL-03", "vLLM", finding.Error,
		"--no-enable-prefix-caching behind a KV-aware router: no hits and (almost) no events",
		"all releases", "vllm/config/cache.py"},
	{"vllm/prefix-caching-disabled", "VL-03", "vLLM", finding.Warning,
		"--no-enable-prefix-caching with no KV-aware router in the run: the engine reuses no prefix, not even a system prompt its own earlier requests computed",
		"all releases", "vllm/config/cache.py"},
	{"vllm/replay-port-collision", "VL-04", "vLLM", finding.Error,
		"replay_endpoint's port is fewer than data-parallel-size ports from the endpoint's: rank r binds endpoint+r and replay+r, so two sockets want one port",
		"vllm @5ac2684", "vllm/distributed/kv_events.py"},
	{"vllm/hash-seed", "VL-05", "vLLM", finding.Warning,
		"replicas of one model publish KV events with PYTHONHASHSEED unset or different: NONE_HASH is random per process, so their block hashes differ",
		"vllm @5ac2684 (a fixed default from 0.29 is unverified)", "vllm/v1/core/kv_cache_utils.py"},
	{"vllm/hash-algo", "VL-05", "vLLM", finding.Warning,
		"replicas of one model with different --prefix-caching-hash-algo: the same prefix has different block hashes on each",
		"vllm @5ac2684", "vllm/config/cache.py"},
	{"vllm/no-such-flag", "VL-06", "vLLM", finding.Error,
		"--enable-kv-cache-events or --kv-events-publisher: vLLM has no such flags and refuses to start",
		"all releases (only --kv-events-config)", "vllm/engine/arg_utils.py; aibrix kv-event-sync.rst"},
	{"vllm/endpoint-connects", "VL-07", "vLLM", finding.Warning,
		"a KV-event endpoint without * or ::: vLLM connects to it, so the consumer must bind that address",
		"vllm @5ac2684", "vllm/distributed/kv_events.py"},
	{"vllm/replay-needs-0.26", "", "vLLM", finding.Warning,
		"a router that asks for replay in front of a vLLM image older than 0.26: replay is not served",
		"vLLM < 0.26", "SPEC (replay needs vLLM >= 0.26)"},
	{"vllm/newer-than-catalog", "", "vLLM", finding.Info,
		"a vllm/vllm-openai image tag naming a release newer than this kvcheck's metric catalog: metric names are checked against the release the run targets (the catalog's newest by default), and renames after it are not known",
		"vLLM newer than the catalog's newest release", "internal/catalog/metrics.yaml"},

	// AIBrix gateway-plugins (vllm-project/aibrix @e3e10f9).
	{"aibrix/kv-sync-incomplete", "AB-01", "AIBrix", finding.Error,
		"prefix-cache routing with KV event sync on but the remote tokenizer off or without its endpoint: sync does not start and routing falls back to the local hash table",
		"aibrix @e3e10f9", "pkg/constants/kv_event_sync.go; pkg/cache/kv_event_manager.go"},
	{"aibrix/character-tokenizer", "AB-02", "AIBrix", finding.Info,
		"prefix-cache routing with AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE unset: the character tokenizer, not engine tokens",
		"aibrix @e3e10f9", "pkg/plugins/gateway/algorithms/prefix_cache.go"},

	// Every configuration file read as YAML.
	{"yaml/duplicate-key", "", "YAML", finding.Warning,
		"a key written more than once in one mapping of a router or engine configuration: Helm and PyYAML (LiteLLM, Ray Serve) keep the last pair silently, kubectl apply (strict by default since 1.27), docker compose and the llm-d EPP refuse the file",
		"YAML 1.2 (keys are unique); Helm 3, kubectl >= 1.27, compose v2, llm-d @ebab687", "helm/helm#4107; kubectl apply --validate; compose-go (yaml.v3); apimachinery strict decoding (YAMLToJSONStrict)"},

	{"kubernetes/duplicate-env", "", "Kubernetes", finding.Warning,
		"an environment variable set twice in one env list (a container's env, a Dynamo component's envs; PYTHONHASHSEED, DYN_ROUTER_MODE, LMCACHE_*): the container gets the last, the API server warns it hides the earlier one, and kubectl apply's merge by name may drop one",
		"Kubernetes pod warnings (hides previous definition); the kubelet keeps the last", "pkg/api/pod/warnings.go; kubelet makeEnvironmentVariables"},

	{"cli/duplicate-flag", "", "command line", finding.Warning,
		"a flag given more than once on a vLLM server's or production-stack vllm_router's command line, or both spellings of one vLLM switch (--enable-prefix-caching and --no-enable-prefix-caching): argparse keeps the last silently (--middleware and vLLM's other append flags are left out)",
		"vLLM's FlexibleArgumentParser (logs \"Found duplicate keys\"); vllm_router @a6c01db", "Python argparse (store, BooleanOptionalAction); vllm/utils/argparse_utils.py; src/vllm_router/parsers/parser.py"},
	{"json/duplicate-key", "", "command line", finding.Warning,
		"a key written more than once in one object of a flag's JSON value (--kv-events-config, --kv-transfer-config): Python's json and vLLM's pydantic reader keep the last silently",
		"Python json, pydantic v2", "json.loads (dict keeps the last); vllm/engine/arg_utils.py parse_dataclass (TypeAdapter.validate_json)"},

	// Gateway API Inference Extension.
	{"gaie/fail-open", "GI-01", "GAIE", finding.Info,
		"endpointPickerRef.failureMode FailOpen: while the EPP is down the gateway picks any endpoint and prefix routing is bypassed silently",
		"inference.networking.k8s.io/v1 @84436a9", "api/v1/inferencepool_types.go"},
	{"gaie/deprecated-objective-api", "GI-02", "GAIE", finding.Warning,
		"an InferenceObjective in inference.networking.x-k8s.io: deprecated, llm-d.ai/v1alpha2 is the served version",
		"llm-d-router @ebab687", "pkg/epp/controller/inferenceobjective_reconciler.go"},
}

var ruleByCode = func() map[string]*Rule {
	m := make(map[string]*Rule, len(rules))
	for i := range rules {
		if _, dup := m[rules[i].Code]; dup {
			panic("config: duplicate rule code " + rules[i].Code) // a programming error in the table above
		}
		m[rules[i].Code] = &rules[i]
	}
	return m
}()

// Rules returns the config rules, in table order.
func Rules() []Rule { return slices.Clone(rules) }

// LookupRule returns the config rule with a code.
func LookupRule(code string) (Rule, bool) {
	r, ok := ruleByCode[code]
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// RulesMarkdown renders the rule table as the README lists it.
func RulesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | id | system | severity | what it catches | holds for |\n|---|---|---|---|---|---|\n")
	for _, r := range rules {
		id := r.ID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s | %s | %s | %s |\n", RuleAnchor(r.Code), r.Code, id, r.System, r.Severity,
			strings.ReplaceAll(r.Summary, "|", "\\|"), strings.ReplaceAll(r.Versions, "|", "\\|"))
	}
	return b.String()
}

// RuleAnchor is the README's anchor of a finding code's row (rule-litellm-no-affinity), which
// SARIF rules link to as their help.
func RuleAnchor(code string) string {
	var b strings.Builder
	b.WriteString("rule-")
	for _, r := range strings.ToLower(code) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}
