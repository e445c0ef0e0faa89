package rank

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// SnippetFor writes the configuration of a row in its router's own format, with the settings
// that matter for the traffic (the row's: as shipped, the user's, or tuned) spelled out, and
// what the router needs from the engines where its format holds it (prefix caching on, KV
// events for the routers that read them, LMCache for production-stack's kvaware). Placeholders
// a user must fill (the model, the worker URLs) are marked "edit". nil for a router kvcheck
// does not know.
func SnippetFor(r Row) *Snippet {
	s := r.Settings
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	switch r.Product {
	case LLMD:
		precise := r.Policy == "llmd-precise"
		w("# llm-d router (EPP) configuration for %s: --config-file, or the router chart's router.epp.pluginsCustomConfig", r.Policy)
		w("apiVersion: llm-d.ai/v1alpha1")
		w("kind: EndpointPickerConfig")
		w("plugins:")
		if s.LLMD.Tokenizer == "vllm" || precise {
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
			if n := s.LLMD.PreciseBlockSizeTokens; n != sim.DefaultRouterSettings().LLMD.PreciseBlockSizeTokens {
				w("    tokenProcessorConfig:")
				w("      blockSizeTokens: %d", n)
			}
			w("    kvEventsConfig:")
			w("      podDiscoveryConfig:")
			w("        socketPort: 5557 # the engines' --kv-events-config endpoint port")
		} else {
			w("- type: approx-prefix-cache-producer")
			w("  parameters:")
			if !s.LLMD.AutoTune {
				// With autoTune on (the default) the engine's metrics replace the next two.
				w("    autoTune: false")
			}
			w("    blockSizeTokens: %d", max(s.LLMD.BlockSizeTokens, 64))
			w("    lruCapacityPerServer: %d", s.LLMD.LRUCapacityPerServer)
			if n := s.LLMD.MaxPrefixTokensToMatch; n != sim.DefaultRouterSettings().LLMD.MaxPrefixTokensToMatch {
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
		w("    weight: %s", num(s.LLMD.QueueWeight))
		w("  - pluginRef: kv-cache-utilization-scorer")
		w("    weight: %s", num(s.LLMD.KVUtilWeight))
		w("  - pluginRef: prefix-cache-scorer")
		w("    weight: %s", num(s.LLMD.PrefixWeight))
		w("  - pluginRef: max-score-picker")
		return &Snippet{Product: LLMD, Format: "llm-d EndpointPickerConfig YAML", File: "epp-config.yaml", Text: b.String()}
	case ProdStack:
		logic := strings.TrimPrefix(r.Policy, "prodstack-")
		w("# vLLM production-stack Helm values for routingLogic %s", logic)
		w("servingEngineSpec:")
		w("  modelSpec:")
		w("  - name: model # edit")
		lmcache := logic == "kvaware" || logic == "loadaware"
		if lmcache {
			w("    repository: lmcache/vllm-openai # LMCache's vLLM build, pinned")
			w("    tag: v0.3.5 # edit: the release you run")
		} else {
			w("    repository: vllm/vllm-openai")
			w("    tag: v0.11.0 # edit: the release you run")
		}
		w("    modelURL: your-org/your-model # edit")
		w("    replicaCount: 2 # edit")
		w("    vllmConfig:")
		w("      enablePrefixCaching: true # the chart renders --no-enable-prefix-caching unless this is true")
		if lmcache {
			w("    lmcacheConfig:")
			w("      enabled: true")
			w("      enableController: true")
			w("      controllerPort: 9000")
		}
		w("routerSpec:")
		w("  routingLogic: %s", logic)
		switch {
		case s.ProdStack.SessionKey != "":
			w("  sessionKey: %s", s.ProdStack.SessionKey)
		case logic == "session":
			w("  sessionKey: x-session-id # edit: the header your clients send; the router refuses to start without one")
		}
		if s.ProdStack.PrefixMinMatch > 0 {
			w("  prefixMinMatchLength: %d", s.ProdStack.PrefixMinMatch)
		}
		if lmcache {
			w("  lmcacheControllerPort: 9000")
		}
		var extra []string
		if logic == "kvaware" && s.ProdStack.KVAwareThreshold != sim.DefaultRouterSettings().ProdStack.KVAwareThreshold {
			extra = append(extra, "--kv-aware-threshold="+strconv.Itoa(s.ProdStack.KVAwareThreshold))
		}
		if logic == "loadaware" && s.ProdStack.LoadBeta != sim.DefaultRouterSettings().ProdStack.LoadBeta {
			extra = append(extra, "--loadaware-beta="+num(s.ProdStack.LoadBeta))
		}
		if len(extra) > 0 {
			w("  extraArgs: [%s]", quoted(extra))
		}
		return &Snippet{Product: ProdStack, Format: "production-stack Helm values", File: "values.yaml", Text: b.String()}
	case Dynamo:
		mode := "round-robin"
		args := []string{"--router-mode", mode}
		if r.Policy == "dynamo-kv" {
			mode = "kv"
			args = []string{"--router-mode", mode, "--router-kv-overlap-score-credit-decay", num(s.Dynamo.CreditDecay)}
			if !s.Dynamo.KVEvents {
				args = append(args, "--no-router-kv-events", "--router-ttl-secs", num(s.Dynamo.TTLSecs))
			}
			if d := sim.DefaultRouterSettings().Dynamo; s.Dynamo.OverlapWeight != d.OverlapWeight {
				args = append(args, "--router-prefill-load-scale", num(s.Dynamo.OverlapWeight))
			}
			if d := sim.DefaultRouterSettings().Dynamo; s.Dynamo.OverlapCredit != d.OverlapCredit {
				args = append(args, "--router-kv-overlap-score-credit", num(s.Dynamo.OverlapCredit))
			}
			if s.Dynamo.Temperature > 0 {
				args = append(args, "--router-temperature", num(s.Dynamo.Temperature))
			}
		}
		w("# NVIDIA Dynamo: the frontend's router flags (python -m dynamo.frontend %s)", strings.Join(args, " "))
		w("apiVersion: nvidia.com/v1alpha1")
		w("kind: DynamoGraphDeployment")
		w("metadata:")
		w("  name: model # edit")
		w("spec:")
		w("  services:")
		w("    Frontend:")
		w("      componentType: frontend")
		w("      replicas: 1")
		w("      extraPodSpec:")
		w("        mainContainer:")
		w("          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1 # edit: the release you run")
		w("          command: [python3, -m, dynamo.frontend]")
		w("          args: [%s]", quoted(args))
		w("    VllmWorker:")
		w("      componentType: worker")
		w("      replicas: 2 # edit")
		w("      extraPodSpec:")
		w("        mainContainer:")
		w("          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1 # edit")
		w("          command: [python3, -m, dynamo.vllm]")
		if mode == "kv" && s.Dynamo.KVEvents {
			w(`          args: [--model, your-org/your-model, --kv-events-config, '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:20080"}'] # edit: the model`)
		} else {
			w("          args: [--model, your-org/your-model] # edit: the model")
		}
		return &Snippet{Product: Dynamo, Format: "Dynamo DynamoGraphDeployment (frontend flags)", File: "dynamo.yaml", Text: b.String()}
	case SGLang:
		g := s.SGLang
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
		return &Snippet{Product: SGLang, Format: "SGLang model gateway command line", File: "launch-router.sh", Text: b.String()}
	case Ray:
		y := s.Ray
		w("# Ray Serve LLM: the deployment's request router")
		w("applications:")
		w("- name: llm")
		w("  route_prefix: /")
		w("  import_path: ray.serve.llm:build_openai_app # edit: your application")
		w("  deployments:")
		w("  - name: LLMServer")
		w("    deployment_config:")
		w("      request_router_config:")
		w("        request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter")
		w("        request_router_kwargs:")
		if !math.IsInf(y.ImbalancedThreshold, 1) {
			w("          imbalanced_threshold: %s", num(y.ImbalancedThreshold))
		}
		w("          match_rate_threshold: %s", num(y.MatchRateThreshold))
		w("          do_eviction: %t", y.DoEviction)
		if y.DoEviction {
			w("          eviction_threshold_chars: %d", y.EvictionThresholdChars)
			w("          eviction_target_chars: %d", y.EvictionTargetChars)
			w("          eviction_interval_secs: %s", num(y.EvictionIntervalSecs))
		}
		return &Snippet{Product: Ray, Format: "Ray Serve config YAML", File: "serve-config.yaml", Text: b.String()}
	case LiteLLM:
		l := s.LiteLLM
		w("# LiteLLM proxy config.yaml")
		w("model_list:")
		for i := range 2 {
			w("- model_name: model # edit")
			w("  litellm_params:")
			w("    model: hosted_vllm/your-org/your-model # edit")
			w("    api_base: http://vllm-%d:8000/v1 # edit: one per replica", i)
		}
		w("router_settings:")
		w("  routing_strategy: %s", l.RoutingStrategy)
		switch r.Policy {
		case "litellm-session-affinity":
			w("  optional_pre_call_checks: [session_affinity] # pins x-litellm-session-id, x-<vendor>-session-id (8+ characters) or metadata.session_id")
			w("  deployment_affinity_ttl_seconds: %s", num(l.AffinityTTLSecs))
		case "litellm-prompt-caching":
			w("  optional_pre_call_checks: [prompt_caching] # pins the messages up to the last cache_control marker, 1,024 tokens or more, for 300 s")
		}
		if l.Redis {
			w("  redis_host: os.environ/REDIS_HOST # pins shared by every proxy pod")
		}
		return &Snippet{Product: LiteLLM, Format: "LiteLLM config.yaml", File: "litellm-config.yaml", Text: b.String()}
	}
	return nil
}

// num writes a number as the formats want it: 2, 0.5, 1.5.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// quoted writes YAML flow-list items, quoting those YAML would read as numbers or booleans.
func quoted(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		if _, err := strconv.ParseFloat(s, 64); err == nil || s == "true" || s == "false" {
			s = `"` + s + `"`
		}
		out[i] = s
	}
	return strings.Join(out, ", ")
}
