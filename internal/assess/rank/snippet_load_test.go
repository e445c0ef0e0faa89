package rank

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/router/aibrix"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/kthena"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/router/vllmrouter"
)

// A snippet loads when the product reads every key it sets, each with a value of the kind the
// product parses, and every flag it passes is one the product's argument parser defines.
// The models below are what each product reads, taken from its source (cited on each); a key
// outside a model is one the product does not read: pydantic ignores it (Ray's
// DeploymentSchema and LLMConfig's deployment_config are not closed), Helm's schema lets it
// through when no property forbids it, Go's JSON decoder drops it. Either way the snippet
// would load and not configure the router, which is worse than an error (issue 22, failure 8).

// kind is the kind of value a key takes.
type kind string

const (
	kStr  kind = "string"
	kInt  kind = "integer"
	kNum  kind = "number" // an integer is a number too
	kBool kind = "boolean"
	kMap  kind = "mapping"
	kList kind = "list"
)

// model is what a product reads of one YAML document: every key path it knows (a list's items
// written [], "" the document itself) with the kind it takes, the values it accepts where the
// source lists them, the paths under which it reads keys of its own (checked elsewhere, or
// free-form), and the flag lists it parses as a command line.
type model struct {
	source string
	paths  map[string]kind
	enums  map[string][]string
	open   []string
	argv   map[string]flagSet // a list of strings read as argv (a container's args, extraArgs)
}

// flagSet is what an argument parser defines: each flag with the kind of value it takes
// ("" for a switch) and its choices, where it lists them.
type flagSet struct {
	source string
	flags  map[string]flagSpec
}

type flagSpec struct {
	value   kind
	choices []string
}

// check walks doc against m and returns what does not load: a key m does not know, a value
// of the wrong kind, a value outside the choices, a flag the parser does not define.
func (m model) check(doc *yaml.Node) []string {
	var errs []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.DocumentNode {
			walk(n.Content[0], path)
			return
		}
		if slices.Contains(m.open, path) {
			return
		}
		want, known := m.paths[path]
		if !known {
			errs = append(errs, fmt.Sprintf("%s: not a key %s reads (line %d)", path, m.source, n.Line))
			return
		}
		if got := kindOf(n); !fits(got, want) {
			errs = append(errs, fmt.Sprintf("%s: a %s where %s reads a %s (line %d)", path, got, m.source, want, n.Line))
			return
		}
		if choices, ok := m.enums[path]; ok && !slices.Contains(choices, n.Value) {
			errs = append(errs, fmt.Sprintf("%s: %q is not one of %s's values %v (line %d)", path, n.Value, m.source, choices, n.Line))
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], join(path, n.Content[i].Value))
			}
		case yaml.SequenceNode:
			if fs, ok := m.argv[path]; ok {
				var argv []string
				for _, c := range n.Content {
					argv = append(argv, c.Value)
				}
				for _, e := range fs.check(argv) {
					errs = append(errs, fmt.Sprintf("%s: %s (line %d)", path, e, n.Line))
				}
				return
			}
			for _, c := range n.Content {
				walk(c, path+"[]")
			}
		}
	}
	walk(doc, "")
	return errs
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindOf is the kind of a YAML node as the YAML 1.2 core schema resolves it.
func kindOf(n *yaml.Node) kind {
	switch n.Kind {
	case yaml.MappingNode:
		return kMap
	case yaml.SequenceNode:
		return kList
	}
	switch n.ShortTag() {
	case "!!int":
		return kInt
	case "!!float":
		return kNum
	case "!!bool":
		return kBool
	}
	return kStr
}

func fits(got, want kind) bool {
	return got == want || (got == kInt && want == kNum)
}

// check parses argv as the parser would: each --flag and its value (the next word, or after
// "="), a switch alone; words not after a flag are positional and refused.
func (fs flagSet) check(argv []string) []string {
	var errs []string
	for i := 0; i < len(argv); i++ {
		name, val, inline := strings.Cut(argv[i], "=")
		spec, ok := fs.flags[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%q is not a flag %s defines", argv[i], fs.source))
			continue
		}
		if spec.value == "" {
			continue
		}
		if !inline {
			if i+1 >= len(argv) {
				errs = append(errs, fmt.Sprintf("%s without its value", name))
				break
			}
			i++
			val = argv[i]
		}
		if e := valueError(val, spec); e != "" {
			errs = append(errs, fmt.Sprintf("%s %q: %s (%s)", name, val, e, fs.source))
		}
	}
	return errs
}

// valueError says why val is not a value of spec ("" when it is), as argparse's type= and
// choices= would refuse it.
func valueError(val string, spec flagSpec) string {
	switch spec.value {
	case kInt:
		if _, err := strconv.Atoi(val); err != nil {
			return "not an integer"
		}
	case kNum:
		if _, err := strconv.ParseFloat(val, 64); err != nil {
			return "not a number"
		}
	}
	if len(spec.choices) > 0 && !slices.Contains(spec.choices, val) {
		return fmt.Sprintf("not one of %v", spec.choices)
	}
	return ""
}

// rayServe: the Serve config (ServeDeploySchema: applications; ServeApplicationSchema: name,
// route_prefix, import_path, args; eicherseiji/ray@170a22d:python/ray/serve/schema.py), the
// args build_openai_app validates (LLMServingArgs.llm_configs,
// ray-project/ray@2dcbf5e:python/ray/llm/_internal/serve/core/ingress/builder.py), each an
// LLMConfig (model_loading_config.{model_id, model_source}; deployment_config, whose
// description lists request_router_config among the deployment options;
// ray-project/ray@697db26:python/ray/llm/_internal/serve/core/configs/llm_config.py),
// RequestRouterConfig's fields (request_router_class, request_router_kwargs,
// python/ray/serve/config.py) and the kwargs PrefixCacheAffinityRouter.initialize_state takes
// (python/ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_aware_router.py:
// imbalanced_threshold float, match_rate_threshold float, do_eviction bool,
// eviction_threshold_chars int, eviction_target_chars int, eviction_interval_secs int).
var rayServe = func() model {
	llm := "applications[].args.llm_configs[]"
	rr := llm + ".deployment_config.request_router_config"
	return model{source: "Ray Serve (ServeDeploySchema, LLMServingArgs, LLMConfig, RequestRouterConfig)", paths: map[string]kind{
		"": kMap, "applications": kList, "applications[]": kMap,
		"applications[].name": kStr, "applications[].route_prefix": kStr, "applications[].import_path": kStr,
		"applications[].args": kMap, "applications[].args.llm_configs": kList, llm: kMap,
		llm + ".model_loading_config": kMap, llm + ".model_loading_config.model_id": kStr, llm + ".model_loading_config.model_source": kStr,
		llm + ".deployment_config": kMap, rr: kMap,
		rr + ".request_router_class": kStr, rr + ".request_router_kwargs": kMap,
		rr + ".request_router_kwargs.imbalanced_threshold":     kNum,
		rr + ".request_router_kwargs.match_rate_threshold":     kNum,
		rr + ".request_router_kwargs.do_eviction":              kBool,
		rr + ".request_router_kwargs.eviction_threshold_chars": kInt,
		rr + ".request_router_kwargs.eviction_target_chars":    kInt,
		rr + ".request_router_kwargs.eviction_interval_secs":   kInt,
	}, enums: map[string][]string{
		"applications[].import_path": {"ray.serve.llm:build_openai_app"},
		rr + ".request_router_class": {"ray.serve.llm.request_router.PrefixCacheAffinityRouter"},
	}}
}()

// liteLLM: the proxy's config.yaml (model_list entries' model_name and litellm_params; the
// router_settings keys and values of docs/my-website/docs/proxy/config_settings.md, index id
// 68543285128; routing_strategy's values; OptionalPreCallChecks, litellm/types/router.py
// @0044fbec; deployment_affinity_ttl_seconds an int in Router.__init__; ROUTERS.md section 1).
var liteLLM = model{source: "LiteLLM's proxy config", paths: map[string]kind{
	"": kMap, "model_list": kList, "model_list[]": kMap, "model_list[].model_name": kStr,
	"model_list[].litellm_params": kMap, "model_list[].litellm_params.model": kStr, "model_list[].litellm_params.api_base": kStr,
	"router_settings": kMap, "router_settings.routing_strategy": kStr, "router_settings.num_retries": kInt,
	"router_settings.optional_pre_call_checks": kList, "router_settings.optional_pre_call_checks[]": kStr,
	"router_settings.deployment_affinity_ttl_seconds": kInt, "router_settings.redis_host": kStr,
}, enums: map[string][]string{
	"router_settings.routing_strategy": {"simple-shuffle", "least-busy", "usage-based-routing", "latency-based-routing", "cost-based-routing", "usage-based-routing-v2"},
	"router_settings.optional_pre_call_checks[]": {"prompt_caching", "router_budget_limiting", "responses_api_deployment_check", "deployment_affinity",
		"session_affinity", "forward_client_headers_by_model_group", "enforce_model_rate_limits", "encrypted_content_affinity"},
}}

// eppConfig: llm-d's EndpointPickerConfig (llm-d/llm-d-router@ebab687:
// apix/config/v1alpha1/endpointpickerconfig_types.go: plugins[] {name, type, parameters},
// schedulingProfiles[] {name, plugins[] {pluginRef, weight}}, dataLayer.sources[] {pluginRef,
// extractors[] {pluginRef}}; the group llm-d.ai/v1alpha1, zz_generated.register.go) and the
// parameters of the plugins the snippets use, each a plugin's own JSON (checked by
// eppParameters below).
var eppConfig = model{source: "llm-d's EndpointPickerConfig", paths: map[string]kind{
	"": kMap, "apiVersion": kStr, "kind": kStr,
	"plugins": kList, "plugins[]": kMap, "plugins[].name": kStr, "plugins[].type": kStr,
	"schedulingProfiles": kList, "schedulingProfiles[]": kMap, "schedulingProfiles[].name": kStr,
	"schedulingProfiles[].plugins": kList, "schedulingProfiles[].plugins[]": kMap,
	"schedulingProfiles[].plugins[].pluginRef": kStr, "schedulingProfiles[].plugins[].weight": kNum,
	"dataLayer": kMap, "dataLayer.sources": kList, "dataLayer.sources[]": kMap, "dataLayer.sources[].pluginRef": kStr,
	"dataLayer.sources[].extractors": kList, "dataLayer.sources[].extractors[]": kMap, "dataLayer.sources[].extractors[].pluginRef": kStr,
}, enums: map[string][]string{
	"apiVersion": {"llm-d.ai/v1alpha1"}, "kind": {"EndpointPickerConfig"},
	// The plugin types registered under these names (each type's constant in its package).
	"plugins[].type": {"approx-prefix-cache-producer", "precise-prefix-cache-producer", "token-producer",
		"prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer", "max-score-picker"},
}, open: []string{"plugins[].parameters"}}

// eppParameters: each plugin's parameters as its factory decodes them (llm-d/llm-d-router
// @ebab687): approximateprefix's config (autoTune, blockSizeTokens, lruCapacityPerServer,
// maxPrefixTokensToMatch, ...), preciseprefixcache.PluginConfig (tokenProcessorConfig:
// kvblock.TokenProcessorConfig.blockSizeTokens; kvEventsConfig: kvevents.Config,
// pkg/kvevents/pool.go, podDiscoveryConfig.socketPort), the token producer's modelName and
// vllm.url (dataproducer/tokenizer), the prefix scorer's prefixMatchInfoProducerName
// (scorer/prefix).
var eppParameters = map[string]model{
	"approx-prefix-cache-producer": {source: "approx-prefix-cache-producer", paths: map[string]kind{
		"": kMap, "autoTune": kBool, "blockSizeTokens": kInt, "lruCapacityPerServer": kInt, "maxPrefixTokensToMatch": kInt, "maxPrefixBlocksToMatch": kInt}},
	"precise-prefix-cache-producer": {source: "precise-prefix-cache-producer", paths: map[string]kind{
		"": kMap, "tokenProcessorConfig": kMap, "tokenProcessorConfig.blockSizeTokens": kInt, "tokenProcessorConfig.hashSeed": kStr,
		"kvEventsConfig": kMap, "kvEventsConfig.podDiscoveryConfig": kMap, "kvEventsConfig.podDiscoveryConfig.socketPort": kInt,
		"kvEventsConfig.topicFilter": kStr, "speculativeIndexing": kBool}},
	"token-producer":      {source: "token-producer", paths: map[string]kind{"": kMap, "modelName": kStr, "vllm": kMap, "vllm.url": kStr}},
	"prefix-cache-scorer": {source: "prefix-cache-scorer", paths: map[string]kind{"": kMap, "prefixMatchInfoProducerName": kStr}},
}

// vllmRouter: production-stack's router flags (vllm-project/production-stack@a6c01db:
// src/vllm_router/parsers/parser.py), with loadaware and --loadaware-beta from PR #1035
// (ROUTERS.md section 3).
var vllmRouter = flagSet{source: "vllm_router's parser", flags: map[string]flagSpec{
	"--routing-logic": {value: kStr, choices: []string{"roundrobin", "session", "kvaware", "prefixaware", "loadaware",
		"disaggregated_prefill", "disaggregated_prefill_orchestrated"}},
	"--session-key": {value: kStr}, "--kv-aware-threshold": {value: kInt}, "--loadaware-beta": {value: kNum},
	"--prefix-min-match-length": {value: kInt}, "--lmcache-controller-port": {value: kInt},
}}

// prodStackValues: the chart's values (vllm-project/production-stack@a6c01db:
// helm/values.schema.json, routerSpec.routingLogic's enum without loadaware; and the keys its
// templates read that the schema does not list: modelSpec[].lmcacheConfig.enableController and
// controllerPort, templates/deployment-vllm-multi.yaml:356-374).
var prodStackValues = model{source: "production-stack's chart", paths: map[string]kind{
	"": kMap, "servingEngineSpec": kMap, "servingEngineSpec.modelSpec": kList, "servingEngineSpec.modelSpec[]": kMap,
	"servingEngineSpec.modelSpec[].name": kStr, "servingEngineSpec.modelSpec[].repository": kStr, "servingEngineSpec.modelSpec[].tag": kStr,
	"servingEngineSpec.modelSpec[].modelURL": kStr, "servingEngineSpec.modelSpec[].replicaCount": kInt,
	"servingEngineSpec.modelSpec[].vllmConfig": kMap, "servingEngineSpec.modelSpec[].vllmConfig.enablePrefixCaching": kBool,
	"servingEngineSpec.modelSpec[].lmcacheConfig": kMap, "servingEngineSpec.modelSpec[].lmcacheConfig.enabled": kBool,
	"servingEngineSpec.modelSpec[].lmcacheConfig.enableController": kBool, "servingEngineSpec.modelSpec[].lmcacheConfig.controllerPort": kInt,
	"routerSpec": kMap, "routerSpec.routingLogic": kStr, "routerSpec.sessionKey": kStr, "routerSpec.prefixMinMatchLength": kInt,
	"routerSpec.lmcacheControllerPort": kInt, "routerSpec.extraArgs": kList,
}, enums: map[string][]string{
	"routerSpec.routingLogic": {"roundrobin", "session", "prefixaware", "kvaware", "disaggregated_prefill", "disaggregated_prefill_orchestrated"},
}, argv: map[string]flagSet{"routerSpec.extraArgs": vllmRouter}}

// dynamoFrontend: python -m dynamo.frontend's router flags (ai-dynamo/dynamo@a9a4ef7:
// components/src/dynamo/common/configuration/groups/router_args.py, --router-mode's choices;
// the KV router's flags, kv_router_args.py@021d616, ROUTERS.md section 4).
var dynamoFrontend = flagSet{source: "dynamo.frontend's parser", flags: map[string]flagSpec{
	"--router-mode":                          {value: kStr, choices: []string{"round-robin", "random", "power-of-two", "kv", "token-dp-balance", "direct", "least-loaded", "device-aware-weighted"}},
	"--router-kv-overlap-score-credit-decay": {value: kNum}, "--router-kv-overlap-score-credit": {value: kNum},
	"--router-prefill-load-scale": {value: kNum}, "--router-temperature": {value: kNum},
	"--router-kv-events": {}, "--no-router-kv-events": {}, "--router-ttl-secs": {value: kNum},
}}

// dynamoVLLM: the worker's flags the snippet passes: vLLM's --model and --kv-events-config (a
// JSON KVEventsConfig, checked by kvEventsConfig).
var dynamoVLLM = flagSet{source: "dynamo.vllm's parser", flags: map[string]flagSpec{"--model": {value: kStr}, "--kv-events-config": {value: kStr}}}

// kvEventsConfig: vLLM's KVEventsConfig fields (vllm/config/kv_events.py; SPEC.md 1.1).
var kvEventsConfig = []string{"enable_kv_cache_events", "publisher", "endpoint", "replay_endpoint", "buffer_steps", "hwm", "max_queue_size", "topic"}

// dynamoGraph: a DynamoGraphDeployment's services, each a DynamoComponentDeploymentSharedSpec
// (ai-dynamo/dynamo@1d26d92:deploy/operator/api/v1alpha1/dynamocomponentdeployment_types.go:
// componentType, replicas, extraPodSpec with its mainContainer, a Kubernetes Container).
var dynamoGraph = func() model {
	paths := map[string]kind{"": kMap, "apiVersion": kStr, "kind": kStr, "metadata": kMap, "metadata.name": kStr, "spec": kMap, "spec.services": kMap}
	for _, svc := range []string{"Frontend", "VllmWorker"} {
		p := "spec.services." + svc
		for k, v := range map[string]kind{"": kMap, ".componentType": kStr, ".replicas": kInt, ".extraPodSpec": kMap, ".extraPodSpec.mainContainer": kMap,
			".extraPodSpec.mainContainer.image": kStr, ".extraPodSpec.mainContainer.command": kList, ".extraPodSpec.mainContainer.command[]": kStr,
			".extraPodSpec.mainContainer.args": kList} {
			paths[p+k] = v
		}
	}
	return model{source: "Dynamo's DynamoGraphDeployment", paths: paths, enums: map[string][]string{
		"apiVersion": {"nvidia.com/v1alpha1"}, "kind": {"DynamoGraphDeployment"},
		"spec.services.Frontend.componentType": {"frontend"}, "spec.services.VllmWorker.componentType": {"worker"},
	}, argv: map[string]flagSet{
		"spec.services.Frontend.extraPodSpec.mainContainer.args":   dynamoFrontend,
		"spec.services.VllmWorker.extraPodSpec.mainContainer.args": dynamoVLLM,
	}}
}()

// sglangGateway: python -m sglang_router.launch_router's flags (modal-projects/sglang@8905cbd:
// sgl-model-gateway/bindings/python/src/sglang_router/router_args.py: --policy's
// _POLICY_CHOICES, --cache-threshold float, --balance-abs-threshold int,
// --balance-rel-threshold float, --eviction-interval-secs int, --max-tree-size int,
// --worker-urls nargs="*").
var sglangGateway = flagSet{source: "sglang_router.launch_router's parser", flags: map[string]flagSpec{
	"--policy":                 {value: kStr, choices: []string{"random", "round_robin", "cache_aware", "power_of_two", "bucket", "manual", "consistent_hashing", "prefix_hash"}},
	"--cache-threshold":        {value: kNum},
	"--balance-abs-threshold":  {value: kInt},
	"--balance-rel-threshold":  {value: kNum},
	"--eviction-interval-secs": {value: kInt},
	"--max-tree-size":          {value: kInt},
}}

// vllmRouterCLI: vLLM Router's command line (vllm-project/router@e667ebb:src/main.rs:96-160:
// --policy's value_parser, --cache-threshold f32, --balance-abs-threshold usize,
// --balance-rel-threshold f32, --eviction-interval u64, --max-tree-size usize, --host, --port
// u16, --worker-urls num_args 0..).
var vllmRouterCLI = flagSet{source: "vllm-router's command line", flags: map[string]flagSpec{
	"--host": {value: kStr}, "--port": {value: kInt},
	"--policy":                {value: kStr, choices: []string{"random", "round_robin", "cache_aware", "power_of_two", "consistent_hash", "rendezvous_hash"}},
	"--cache-threshold":       {value: kNum},
	"--balance-abs-threshold": {value: kInt},
	"--balance-rel-threshold": {value: kNum},
	"--eviction-interval":     {value: kInt},
	"--max-tree-size":         {value: kInt},
}}

// aibrixValues: the AIBrix Helm chart's gateway plugin environment (vllm-project/aibrix@e3e10f9:
// dist/chart/values.yaml, gatewayPlugin.container.envs, a mapping of names to strings rendered
// into the Deployment's env; the names the gateway reads, pkg/plugins/gateway/ENV_VARS.md and
// algorithms/prefix_cache.go:44-57, pkg/utils/prefixcacheindexer/hash.go:42-47; the strategies,
// the types.RoutingAlgorithm constants of pkg/plugins/gateway/algorithms).
var aibrixValues = func() model {
	paths := map[string]kind{"": kMap, "gatewayPlugin": kMap, "gatewayPlugin.container": kMap, "gatewayPlugin.container.envs": kMap}
	for _, k := range []string{"ROUTING_ALGORITHM", "AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE", "AIBRIX_PREFIX_CACHE_BLOCK_SIZE", "AIBRIX_PREFIX_CACHE_BLOCK_NUMBER",
		"AIBRIX_PREFIX_CACHE_POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT", "AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR", "AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS",
		"AIBRIX_PREFIX_CACHE_EVICTION_INTERVAL_SECONDS", "AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED", "AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER"} {
		paths["gatewayPlugin.container.envs."+k] = kStr
	}
	return model{source: "AIBrix's Helm values", paths: paths, enums: map[string][]string{
		"gatewayPlugin.container.envs.ROUTING_ALGORITHM": {"least-busy-time", "least-gpu-cache", "least-kv-cache", "least-latency", "least-request", "least-utilization", "pd", "power-of-two", "prefix-cache",
			"prefix-cache-preble", "random", "session-affinity", "slo", "slo-pack-load", "slo-least-load", "slo-least-load-pulling", "throughput", "vtc-basic"},
		"gatewayPlugin.container.envs.AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE": {"character", "tiktoken"},
	}}
}()

// kthenaConfigMap: the ConfigMap the Kthena router mounts (volcano-sh/kthena@3cc0572:
// charts/kthena/charts/networking/templates/kthena-router/component/configmap.yaml, name
// kthena-router-config, key routerConfiguration; deployment.yaml:156-171 mounts it as
// /etc/config/routerConfiguration.yaml); kthenaRouterConfig: that key's YAML as the router
// reads it (pkg/kthena-router/scheduler/plugins/conf/conf.go: scheduler.pluginConfig[{name,
// args}], scheduler.plugins.{Filter,Score}.enabled), each plugin's args as its plugin reads
// them (least_request.go maxWaitingRequests, least_latency.go TTFTTPOTWeightFactor,
// prefix_cache.go blockSizeToHash, maxBlocksToMatch, maxHashCacheSize, topKMatches), and the
// plugin names the scheduler's registry knows (scheduler/factory.go:65-95).
var kthenaConfigMap = model{source: "a Kubernetes ConfigMap", paths: map[string]kind{
	"": kMap, "apiVersion": kStr, "kind": kStr, "metadata": kMap, "metadata.name": kStr, "metadata.namespace": kStr,
	"data": kMap, "data.routerConfiguration": kStr,
}, enums: map[string][]string{"apiVersion": {"v1"}, "kind": {"ConfigMap"}, "metadata.name": {"kthena-router-config"}}}

var kthenaRouterConfig = func() model {
	score := []string{"gpu-usage", "least-latency", "least-request", "random", "prefix-cache", "kvcache-aware"}
	filter := []string{"least-request", "lora-affinity"}
	return model{source: "the Kthena router's configuration", paths: map[string]kind{
		"": kMap, "scheduler": kMap, "scheduler.pluginConfig": kList, "scheduler.pluginConfig[]": kMap,
		"scheduler.pluginConfig[].name": kStr, "scheduler.pluginConfig[].args": kMap,
		"scheduler.pluginConfig[].args.maxWaitingRequests": kInt, "scheduler.pluginConfig[].args.TTFTTPOTWeightFactor": kNum,
		"scheduler.pluginConfig[].args.blockSizeToHash": kInt, "scheduler.pluginConfig[].args.maxBlocksToMatch": kInt,
		"scheduler.pluginConfig[].args.maxHashCacheSize": kInt, "scheduler.pluginConfig[].args.topKMatches": kInt,
		"scheduler.plugins": kMap, "scheduler.plugins.Filter": kMap, "scheduler.plugins.Filter.enabled": kList,
		"scheduler.plugins.Filter.enabled[]": kStr, "scheduler.plugins.Score": kMap, "scheduler.plugins.Score.enabled": kList,
		"scheduler.plugins.Score.enabled[]": kMap, "scheduler.plugins.Score.enabled[].name": kStr, "scheduler.plugins.Score.enabled[].weight": kInt,
	}, enums: map[string][]string{
		"scheduler.pluginConfig[].name": append(slices.Clone(score), filter...), "scheduler.plugins.Filter.enabled[]": filter,
		"scheduler.plugins.Score.enabled[].name": score,
	}}
}()

// kthenaLoads checks the ConfigMap, then the router configuration its key holds.
func kthenaLoads(doc *yaml.Node) []string {
	errs := kthenaConfigMap.check(doc)
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := doc.Decode(&cm); err != nil {
		return append(errs, err.Error())
	}
	text, ok := cm.Data["routerConfiguration"]
	if !ok {
		return append(errs, "no data.routerConfiguration: the router reads its configuration from that key")
	}
	var inner yaml.Node
	if err := yaml.Unmarshal([]byte(text), &inner); err != nil {
		return append(errs, "routerConfiguration is not YAML: "+err.Error())
	}
	return append(errs, kthenaRouterConfig.check(&inner)...)
}

// snippetLoads checks a product's snippet against its model and returns what does not load.
func snippetLoads(sn product.Snippet) []string {
	switch sn.Product {
	case SGLang:
		return launchCommand(sn.Text, "python -m sglang_router.launch_router", sglangGateway)
	case vllmrouter.ID:
		return launchCommand(sn.Text, "vllm-router", vllmRouterCLI)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(sn.Text), &doc); err != nil {
		return []string{"not YAML: " + err.Error()}
	}
	switch sn.Product {
	case Ray:
		return rayServe.check(&doc)
	case LiteLLM:
		return liteLLM.check(&doc)
	case ProdStack:
		return prodStackValues.check(&doc)
	case LLMD:
		return eppCheck(&doc)
	case aibrix.ID:
		return aibrixValues.check(&doc)
	case kthena.ID:
		return kthenaLoads(&doc)
	case Dynamo:
		errs := dynamoGraph.check(&doc)
		var whole struct {
			Spec struct {
				Services map[string]struct {
					ExtraPodSpec struct {
						MainContainer struct{ Args []string } `yaml:"mainContainer"`
					} `yaml:"extraPodSpec"`
				} `yaml:"services"`
			} `yaml:"spec"`
		}
		if err := doc.Decode(&whole); err != nil {
			return append(errs, err.Error())
		}
		args := whole.Spec.Services["VllmWorker"].ExtraPodSpec.MainContainer.Args
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--kv-events-config" {
				errs = append(errs, jsonKeys(args[i+1], kvEventsConfig, "vLLM's KVEventsConfig")...)
			}
		}
		return errs
	}
	return []string{"no model for " + sn.Product}
}

// eppCheck checks an EndpointPickerConfig: the document, each plugin's parameters against its
// type's, and that every pluginRef names a plugin the config defines (a name, else its type;
// the data layer's endpoint-notification-source is the framework's own source).
func eppCheck(doc *yaml.Node) []string {
	errs := eppConfig.check(doc)
	var c struct {
		Plugins []struct {
			Name, Type string
			Parameters yaml.Node
		}
		SchedulingProfiles []struct {
			Plugins []struct {
				PluginRef string `yaml:"pluginRef"`
			}
		} `yaml:"schedulingProfiles"`
		DataLayer struct {
			Sources []struct {
				PluginRef  string `yaml:"pluginRef"`
				Extractors []struct {
					PluginRef string `yaml:"pluginRef"`
				}
			}
		} `yaml:"dataLayer"`
	}
	if err := doc.Decode(&c); err != nil {
		return append(errs, err.Error())
	}
	defined := map[string]bool{}
	for _, p := range c.Plugins {
		defined[cmpOr(p.Name, p.Type)] = true
		if p.Parameters.Kind == 0 {
			continue
		}
		m, ok := eppParameters[p.Type]
		if !ok {
			errs = append(errs, fmt.Sprintf("plugin %s: parameters, but no model of its type's", p.Type))
			continue
		}
		for _, e := range m.check(&p.Parameters) {
			errs = append(errs, "plugin "+p.Type+" parameters: "+e)
		}
	}
	var refs []string
	for _, sp := range c.SchedulingProfiles {
		for _, p := range sp.Plugins {
			refs = append(refs, p.PluginRef)
		}
	}
	for _, s := range c.DataLayer.Sources {
		for _, x := range s.Extractors {
			refs = append(refs, x.PluginRef)
		}
	}
	for _, r := range refs {
		if !defined[r] {
			errs = append(errs, fmt.Sprintf("pluginRef %s names no plugin of the config", r))
		}
	}
	return errs
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jsonKeys checks that s is a JSON object whose keys are all among known.
func jsonKeys(s string, known []string, what string) []string {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return []string{fmt.Sprintf("%q is not a JSON object: %v", s, err)}
	}
	var errs []string
	for k := range m {
		if !slices.Contains(known, k) {
			errs = append(errs, fmt.Sprintf("%s is not a field of %s", k, what))
		}
	}
	return errs
}

// launchCommand checks a launch script: one command (lines joined at a trailing backslash)
// starting launch, then flags of fs, --worker-urls taking the URLs after it.
func launchCommand(text, launch string, fs flagSet) []string {
	var cmd []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if cmd != nil {
			return []string{"more than one command: " + l}
		}
		cmd = strings.Fields(l)
	}
	if !strings.HasPrefix(strings.Join(cmd, " ")+" ", launch+" ") {
		return []string{fmt.Sprintf("the command is not %s: %q", launch, strings.Join(cmd, " "))}
	}
	var argv []string
	for rest := cmd[len(strings.Fields(launch)):]; len(rest) > 0; rest = rest[1:] {
		if rest[0] != "--worker-urls" {
			argv = append(argv, rest[0])
			continue
		}
		for len(rest) > 1 && !strings.HasPrefix(rest[1], "--") {
			rest = rest[1:]
		}
	}
	return fs.check(argv)
}

// whereKey is the key (or command) each product's snippet must say it goes into.
var whereKey = map[string]string{
	Ray: "request_router_config", LiteLLM: "router_settings", LLMD: "--config-file", ProdStack: "routerSpec",
	Dynamo: "mainContainer.args", SGLang: "sglang_router.launch_router", vllmrouter.ID: "vllm-router",
	aibrix.ID: "gatewayPlugin.container.envs", kthena.ID: "routerConfiguration",
}

// TestSnippetsLoad: every snippet kvcheck can write (TestSnippetsPassTheLint's rows) loads in
// its product, by the model taken from the product's source, and says which file and key it
// goes into (issue 22 item 5). Ray's snippet nested request_router_config under
// deployment_config in a deployments[] entry, a key DeploymentSchema does not have (failure
// 8); production-stack's loadaware values set routingLogic: loadaware, which the chart's
// schema enum refuses (PS-07); both fail before.
func TestSnippetsLoad(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range snippetRows(t) {
		sn := SnippetFor(Row{Candidate: c})
		if sn == nil {
			continue
		}
		seen[sn.Product] = true
		for _, e := range snippetLoads(*sn) {
			t.Errorf("%s (%s) %s: %s\n%s", c.Policy, c.Variant, sn.File, e, sn.Text)
		}
		if k := whereKey[sn.Product]; sn.Where == "" || !strings.Contains(sn.Where, k) {
			t.Errorf("%s: the snippet says it goes into %q, which does not name %s", c.Policy, sn.Where, k)
		}
	}
	if len(seen) != 9 {
		t.Errorf("products checked: %v, want all nine", seen)
	}
}

// TestSnippetModelsRefuse: the models refuse what the products would not read, so
// TestSnippetsLoad can fail: Ray's old placement, a routingLogic outside the chart's enum, a
// flag or a choice the parser does not define, a value of the wrong kind, a pluginRef to no
// plugin, a KVEventsConfig field that does not exist.
func TestSnippetModelsRefuse(t *testing.T) {
	rayOld := "applications:\n- name: llm\n  import_path: ray.serve.llm:build_openai_app\n  deployments:\n  - name: LLMServer\n    deployment_config:\n      request_router_config:\n        request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n"
	rs := ray.Router{}.Snippet("ray-prefix-affinity", ray.Shipped())
	ps := prodstack.Router{}.Snippet("prodstack-prefixaware", prodstack.Shipped())
	ll := litellm.Router{}.Snippet("litellm-session-affinity", litellm.Shipped())
	dy := dynamo.Router{}.Snippet("dynamo-kv", dynamo.Shipped())
	cases := []struct {
		name string
		sn   product.Snippet
		want string
	}{
		{"ray's old placement", product.Snippet{Product: Ray, Text: rayOld}, "applications[].deployments: not a key"},
		{"ray kwargs typo", product.Snippet{Product: Ray, Text: strings.Replace(rs.Text, "match_rate_threshold", "match_threshold", 1)}, "match_threshold: not a key"},
		{"ray threshold as text", product.Snippet{Product: Ray, Text: strings.Replace(rs.Text, "do_eviction: false", "do_eviction: \"no\"", 1)}, "a string where"},
		{"loadaware in routingLogic", product.Snippet{Product: ProdStack, Text: strings.Replace(ps.Text, "routingLogic: prefixaware", "routingLogic: loadaware", 1)}, `"loadaware" is not one of`},
		{"router flag typo", product.Snippet{Product: ProdStack, Text: ps.Text + "  extraArgs: [--kv-aware-treshold=500]\n"}, "not a flag vllm_router's parser defines"},
		{"litellm check", product.Snippet{Product: LiteLLM, Text: strings.Replace(ll.Text, "[session_affinity]", "[prefix_affinity]", 1)}, `"prefix_affinity" is not one of`},
		{"litellm ttl as float", product.Snippet{Product: LiteLLM, Text: strings.Replace(ll.Text, "deployment_affinity_ttl_seconds: 3600", "deployment_affinity_ttl_seconds: 3600.5", 1)}, "a number where"},
		{"dynamo mode", product.Snippet{Product: Dynamo, Text: strings.Replace(dy.Text, "--router-mode, kv", "--router-mode, kv-aware", 1)}, "not one of"},
		{"dynamo events field", product.Snippet{Product: Dynamo, Text: strings.Replace(dy.Text, `"publisher":"zmq"`, `"publisher_type":"zmq"`, 1)}, "publisher_type is not a field"},
		{"sglang int flag", product.Snippet{Product: SGLang, Text: "python -m sglang_router.launch_router --policy cache_aware --balance-abs-threshold 64.5\n"}, "not an integer"},
		{"epp dangling ref", product.Snippet{Product: LLMD, Text: "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: default\n  plugins:\n  - pluginRef: prefix-cache-scorer\n"}, "names no plugin"},
		{"epp parameter typo", product.Snippet{Product: LLMD, Text: "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: approx-prefix-cache-producer\n  parameters:\n    blockSizeToken: 64\nschedulingProfiles: []\n"}, "blockSizeToken: not a key"},
	}
	for _, c := range cases {
		errs := snippetLoads(c.sn)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, c.want) }) {
			t.Errorf("%s: %q, want an error with %q", c.name, errs, c.want)
		}
	}
}
