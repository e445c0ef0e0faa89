package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// litellmRouterKeys are the router_settings keys of config_settings.md (main, 2026-10).
var litellmRouterKeys = []string{
	"alerting_config", "allowed_fails", "allowed_fails_policy", "assistants_config", "cache_kwargs",
	"cache_responses", "caching_groups", "client_ttl", "content_policy_fallbacks", "context_window_fallbacks",
	"cooldown_time", "debug_level", "default_fallbacks", "default_litellm_params", "default_max_parallel_requests",
	"default_priority", "deployment_affinity_ttl_seconds", "disable_cooldowns", "enable_health_check_routing",
	"enable_pre_call_checks", "enable_tag_filtering", "fallbacks", "guardrail_list",
	"health_check_ignore_transient_errors", "health_check_staleness_threshold", "ignore_invalid_deployments",
	"max_fallbacks", "model_group_affinity_config", "model_group_alias", "model_group_retry_policy", "model_list",
	"num_retries", "optional_pre_call_checks", "polling_interval", "provider_budget_config", "redis_db",
	"redis_host", "redis_password", "redis_port", "redis_url", "retry_after", "retry_policy",
	"router_general_settings", "routing_groups", "routing_strategy", "routing_strategy_args", "search_tools",
	"set_verbose", "stream_timeout", "tag_filtering_match_any", "timeout",
	"auto_router_capability_limit", "heuristic_v2_router_limit",
}

// litellmTopKeys are the top-level keys of a LiteLLM proxy config.yaml this kvcheck knows
// (docs/my-website/docs/proxy/configs.md and config_settings.md, main 2026-10).
var litellmTopKeys = []string{"model_list", "litellm_settings", "router_settings", "general_settings",
	"environment_variables", "include", "guardrails", "callback_settings", "credential_list", "mcp_servers",
	"mcp_aliases", "vector_store_registry", "search_tools", "prompts", "files_settings", "finetune_settings",
	"assistant_settings"}

// litellmAffinity are the pre-call checks that pin a conversation or caller to one deployment.
var litellmAffinity = []string{"session_affinity", "deployment_affinity", "prompt_caching",
	"responses_api_deployment_check", "encrypted_content_affinity"}

// LiteLLMPreCallChecks are the optional_pre_call_checks LiteLLM knows (OptionalPreCallChecks,
// types/router.py@0044fbec; ROUTERS.md section 1).
func LiteLLMPreCallChecks() []string {
	return []string{"prompt_caching", "router_budget_limiting", "responses_api_deployment_check", "deployment_affinity",
		"session_affinity", "forward_client_headers_by_model_group", "enforce_model_rate_limits", "encrypted_content_affinity"}
}

// litellmGroupFlags is VALID_FLAGS of deployment_affinity_check.py @00e1fe8.
var litellmGroupFlags = []string{"deployment_affinity", "responses_api_deployment_check", "session_affinity", "encrypted_content_affinity"}

// gatewayGroup is a LiteLLM deployment with an api_base, for the retry check across files.
type gatewayGroup struct {
	file       string
	at         pos
	group      string
	host       string
	retries    int
	retriesSet bool
	retriesAt  pos
}

// litellmProxy is a LiteLLM config whose pins live in the router's cache, for LL-04 across files.
type litellmProxy struct {
	file     string
	at       pos
	flag     string
	replicas int // from the litellm-helm values holding the config; 0 when not known
}

// checkLiteLLM checks a LiteLLM proxy config; replicas is the proxy's pod count when the file
// says it (the litellm-helm chart's replicaCount), else 0.
func (d *ydoc) checkLiteLLM(root *yaml.Node, replicas int) {
	rs := get(root, "router_settings")
	ls := get(root, "litellm_settings")
	checks := map[string]*yaml.Node{}
	for _, c := range seq(get(rs, "optional_pre_call_checks")) {
		checks[c.Value] = c
	}
	_, redisHost := str(rs, "redis_host")
	_, redisURL := str(rs, "redis_url")
	if !redisHost && !redisURL {
		for _, a := range []string{"session_affinity", "deployment_affinity"} {
			if c, ok := checks[a]; ok {
				d.fl.facts().proxies = append(d.fl.facts().proxies, &litellmProxy{file: d.fl.path, at: d.pos(c), flag: a, replicas: replicas})
				break
			}
		}
	}
	for _, c := range seq(get(rs, "optional_pre_call_checks")) {
		if c.Value == "prompt_prefix_affinity" || slices.Contains(LiteLLMPreCallChecks(), c.Value) || d.fl.templateValue(c.Value) {
			continue // prompt_prefix_affinity is LL-06's
		}
		known := LiteLLMPreCallChecks()
		msg := fmt.Sprintf("%q is not a pre-call check LiteLLM knows (%s): the Router adds no check for it, so it does nothing", c.Value, strings.Join(known, ", "))
		hint := "remove it, or use one of " + strings.Join(known, ", ")
		if best := nearestName(c.Value, known); best != "" {
			msg += "; did you mean " + best + "?"
			hint = "set it to " + best
		}
		d.fl.addConfig("litellm/unknown-pre-call-check", d.pos(c), "router_settings.optional_pre_call_checks", msg, hint)
	}
	if c, ok := checks["prompt_prefix_affinity"]; ok {
		d.fl.addConfig("litellm/invalid-affinity-flag", d.pos(c), "router_settings.optional_pre_call_checks",
			"prompt_prefix_affinity is not a LiteLLM pre-call check (it lived only in closed PR #27613): no prefix affinity is applied",
			"use optional_pre_call_checks: [session_affinity] and send x-litellm-session-id")
	}
	groupCfg := get(rs, "model_group_affinity_config")
	if groupCfg != nil && groupCfg.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(groupCfg.Content); i += 2 {
			for _, f := range seq(groupCfg.Content[i+1]) {
				if !slices.Contains(litellmGroupFlags, f.Value) {
					d.fl.addConfig("litellm/invalid-affinity-flag", d.pos(f), "router_settings.model_group_affinity_config."+groupCfg.Content[i].Value,
						fmt.Sprintf("%q is not a valid model_group_affinity_config flag (valid: %s): LiteLLM ignores it with a warning", f.Value, strings.Join(litellmGroupFlags, ", ")),
						"use one of "+strings.Join(litellmGroupFlags, ", "))
				}
			}
		}
	}
	if pc, ok := checks["prompt_caching"]; ok {
		if on, _ := boolAt(ls, "enable_anthropic_prompt_caching"); on {
			d.fl.addConfig("litellm/prompt-caching-last-turn", d.pos(keyNode(ls, "enable_anthropic_prompt_caching")), "litellm_settings.enable_anthropic_prompt_caching",
				"prompt_caching pins the messages up to the last cache_control marker, and enable_anthropic_prompt_caching puts a marker on the last turn: the pin key changes every turn and never hits",
				"set litellm_settings.enable_anthropic_prompt_caching: false and mark the stable prefix (system prompt) with cache_control yourself")
		}
		others := 0
		for _, a := range litellmAffinity {
			if _, ok := checks[a]; ok && a != "prompt_caching" {
				others++
			}
		}
		if others == 0 {
			d.fl.addConfig("litellm/prompt-caching-only", d.pos(pc), "router_settings.optional_pre_call_checks",
				"prompt_caching is the only affinity: requests without a cache_control marker, or under 1024 tokens, are not pinned, and pins last 300 s",
				"add session_affinity to router_settings.optional_pre_call_checks and send x-litellm-session-id")
		}
	}
	// Groups of self-hosted deployments.
	type dep struct {
		n    *yaml.Node
		host string
	}
	groups := map[string][]dep{}
	var order []string
	for _, m := range seq(get(root, "model_list")) {
		name, _ := str(m, "model_name")
		model, _ := str(m, "litellm_params", "model")
		base, _ := str(m, "litellm_params", "api_base")
		self := strings.HasPrefix(model, "hosted_vllm/") || strings.HasPrefix(model, "vllm/") ||
			(strings.HasPrefix(model, "openai/") && base != "" && !strings.Contains(base, "api.openai.com"))
		if !self {
			continue
		}
		if _, ok := groups[name]; !ok {
			order = append(order, name)
		}
		groups[name] = append(groups[name], dep{m, urlHost(base)})
		if h := urlHost(base); h != "" {
			d.fl.facts().gateways = append(d.fl.facts().gateways, &gatewayGroup{file: d.fl.path, at: d.pos(keyNode(get(m, "litellm_params"), "api_base")), group: name, host: h})
		}
	}
	// Retries: router_settings overrides litellm_settings; the Router's default is 2.
	retries, set, at := 2, false, d.pos(keyNode(root, "router_settings"))
	if rs == nil {
		at = d.pos(keyNode(root, "model_list"))
	}
	for _, blk := range []*yaml.Node{ls, rs} {
		if n, ok := intAt(blk, "num_retries"); ok {
			retries, set, at = n, true, d.pos(keyNode(blk, "num_retries"))
		}
	}
	for _, g := range d.fl.facts().gateways {
		if g.file == d.fl.path {
			g.retries, g.retriesSet, g.retriesAt = retries, set, at
		}
	}
	for _, name := range order {
		deps := groups[name]
		if len(deps) < 2 {
			continue
		}
		flags := checks
		if gc := get(groupCfg, name); gc != nil {
			flags = map[string]*yaml.Node{}
			for _, f := range seq(gc) {
				flags[f.Value] = f
			}
		}
		pinned := false
		for _, a := range litellmAffinity {
			if _, ok := flags[a]; ok {
				pinned = true
			}
		}
		if !pinned {
			d.fl.addConfig("litellm/no-affinity", d.pos(get(deps[0].n, "model_name")), "model_list "+name,
				fmt.Sprintf("model group %q has %d self-hosted deployments and no affinity check: the router shuffles each request, so a conversation's turns land on replicas that do not hold its prefix", name, len(deps)),
				"set router_settings.optional_pre_call_checks: [session_affinity] and send x-litellm-session-id (or route through a prefix-aware router)")
		}
	}
	d.unknownKeys(rs, "router_settings", litellmRouterKeys, "litellm")
	d.unknownKeys(root, "", litellmTopKeys, "litellm")
}

// unknownKeys reports the keys of a mapping that are not in known: a warning naming the nearest
// key when one is one or two edits away, info otherwise. system is the code prefix
// (system/unknown-key, system/key-typo); a typo is renamed by --fix.
func (d *ydoc) unknownKeys(m *yaml.Node, where string, known []string, system string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if slices.Contains(known, k.Value) {
			continue
		}
		name := k.Value
		if where != "" {
			name = where + "." + k.Value
		}
		if best := nearestName(k.Value, known); best != "" {
			f := d.fl.addConfig(system+"/key-typo", d.pos(k), name,
				fmt.Sprintf("%s is not a key %s reads: did you mean %s?", name, system, best),
				fmt.Sprintf("rename %s to %s", k.Value, best))
			d.renameFix(f, k, best)
			continue
		}
		d.fl.addConfig(system+"/unknown-key", d.pos(k), name,
			fmt.Sprintf("%s is not a key this kvcheck knows (a newer %s key?)", name, system), "")
	}
}

// nearestName returns the name of known one or two edits from name, the first of the closest;
// "" when none is that close (two edits catch a dropped, doubled or swapped letter).
func nearestName(name string, known []string) string {
	best, dist := "", 3
	for _, c := range known {
		if x := editDistance(name, c, dist); x < dist {
			best, dist = c, x
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func urlHost(s string) string {
	if s == "" || strings.HasPrefix(s, "os.environ/") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// prodStackRouterKeys are the routerSpec keys of the production-stack chart: the properties
// of helm/values.schema.json and the .Values.routerSpec fields its templates read, @a6c01db.
var prodStackRouterKeys = []string{"affinity", "autoscaling", "containerPort", "containerSecurityContext",
	"enableRouter", "engineScrapeInterval", "env", "extraArgs", "extraPorts", "extraVolumeMounts", "extraVolumes",
	"hf_token", "imagePullPolicy", "imagePullSecrets", "ingress", "k8sServiceDiscoveryType", "labels",
	"livenessProbe", "lmcacheConfig", "lmcacheControllerHeartbeatPort", "lmcacheControllerPort",
	"lmcacheControllerReplyPort", "nodePort", "nodeSelectorTerms", "otel", "pdb", "podAnnotations",
	"prefixMinMatchLength", "priorityClassName", "readinessProbe", "replicaCount", "repository",
	"requestStatsWindow", "resources", "rootPath", "route", "routingLogic", "securityContext",
	"serviceAccountName", "serviceAnnotations", "serviceDiscovery", "serviceMonitor", "servicePort",
	"serviceType", "sessionKey", "startupProbe", "staticBackends", "staticModels", "strategy", "tag", "vllmApiKey"}

// prodStackModelKeys are the servingEngineSpec.modelSpec[] keys of the same chart: the schema's
// properties and the $modelSpec fields the templates read, @a6c01db.
var prodStackModelKeys = []string{"affinity", "annotations", "chatTemplate", "chatTemplateConfigMap", "enableLoRA",
	"enableTool", "enabled", "env", "envFromSecret", "extraVolumeMounts", "extraVolumes", "hf_token",
	"imagePullSecret", "initContainer", "keda", "labels", "limitCPU", "limitGPUCores", "limitGPUMem",
	"limitGPUMemPercentage", "limitMemory", "lmcacheConfig", "modelRevision", "modelURL", "name", "nodeName",
	"nodeSelectorTerms", "pdb", "podAnnotations", "podLabels", "priorityClassName", "pvcAccessMode",
	"pvcAnnotations", "pvcExistingClaimName", "pvcLabels", "pvcMatchLabels", "pvcStorage", "raySpec",
	"replicaCount", "repository", "requestCPU", "requestGPU", "requestGPUCores", "requestGPUMem",
	"requestGPUMemPercentage", "requestGPUType", "requestMemory", "resources", "runtimeClassName",
	"serviceAccountName", "serviceAnnotations", "shmSize", "storageClass", "tag", "tolerations",
	"tolerationsPolicy", "toolCallParser", "vllmConfig"}

// prodStackVLLMKeys are the modelSpec[].vllmConfig keys of the same chart: the schema's
// properties and the fields the templates read (deployment-vllm-multi.yaml and the Ray
// template, which adds pipelineParallelSize), @a6c01db.
var prodStackVLLMKeys = []string{"convert", "dtype", "enableChunkedPrefill", "enablePrefixCaching", "extraArgs",
	"gpuMemoryUtilization", "maxLoras", "maxModelLen", "maxNumSeqs", "pipelineParallelSize",
	"prometheusMultiprocDir", "runner", "tensorParallelSize", "v0", "v1"}

// checkProdStack checks production-stack Helm values.
func (d *ydoc) checkProdStack(root *yaml.Node) {
	fl := d.fl
	for i, ms := range seq(get(root, "servingEngineSpec", "modelSpec")) {
		name, _ := str(ms, "name")
		loc := fmt.Sprintf("servingEngineSpec.modelSpec[%d]", i)
		if name != "" {
			loc += " " + name
		}
		d.unknownKeys(ms, loc, prodStackModelKeys, "production-stack")
		vc := get(ms, "vllmConfig")
		d.unknownKeys(vc, loc+".vllmConfig", prodStackVLLMKeys, "production-stack")
		off := false
		var offAt pos
		// The chart's `with .vllmConfig` skips an empty map, and an --enable-prefix-caching in
		// extraArgs comes after the chart's --no-enable-prefix-caching, so it wins.
		reenabled := false
		for _, a := range seq(get(vc, "extraArgs")) {
			if strings.TrimSpace(a.Value) == "--enable-prefix-caching" {
				reenabled = true
			}
		}
		if vc != nil && vc.Kind == yaml.MappingNode && len(vc.Content) > 0 && !reenabled {
			on, set := boolAt(vc, "enablePrefixCaching")
			if !on {
				off = true
				if set {
					offAt = d.pos(get(vc, "enablePrefixCaching"))
					f := fl.addConfig("production-stack/prefix-caching-off", offAt, loc+".vllmConfig.enablePrefixCaching",
						"enablePrefixCaching is not true, so the chart renders --no-enable-prefix-caching: nothing is reused and no KV events are published",
						"set vllmConfig.enablePrefixCaching: true")
					d.replaceFix(f, get(vc, "enablePrefixCaching"), "true")
				} else {
					offAt = d.pos(keyNode(ms, "vllmConfig"))
					f := fl.addConfig("production-stack/prefix-caching-off", offAt, loc+".vllmConfig",
						"vllmConfig has no enablePrefixCaching, and the chart renders --no-enable-prefix-caching whenever it is not true: nothing is reused and no KV events are published",
						"add vllmConfig.enablePrefixCaching: true")
					// A misspelt enablePrefixCaching is renamed by its key-typo fix; adding the
					// key too would write it twice.
					if !misspelt(vc, "enablePrefixCaching") {
						d.insertFix(f, vc, "enablePrefixCaching", "true")
					}
				}
			}
		}
		repo, _ := str(ms, "repository")
		tag, _ := str(ms, "tag")
		model, _ := str(ms, "modelURL")
		replicas, ok := intAt(ms, "replicaCount")
		if !ok {
			replicas = 1
		}
		e := &engine{file: fl.path, at: d.pos(ms), name: loc, model: model, replicas: replicas, image: repo + ":" + tag,
			flags: map[string]token{}, env: readEnv(get(ms, "env")), prodStack: true}
		if e.env == nil {
			e.env = map[string]token{}
		}
		e.version, _ = vllmImageVersion(e.image)
		if off {
			e.flags["--no-enable-prefix-caching"] = token{at: offAt}
		}
		fl.facts().engines = append(fl.facts().engines, e)
	}
	rsNode := get(root, "routerSpec")
	d.unknownKeys(rsNode, "routerSpec", prodStackRouterKeys, "production-stack")
	logic, _ := str(rsNode, "routingLogic")
	at := d.pos(get(rsNode, "routingLogic"))
	switch logic {
	case "session":
		if k, _ := str(rsNode, "sessionKey"); strings.TrimSpace(k) == "" {
			fl.addConfig("production-stack/session-key-missing", at, "routerSpec.routingLogic",
				"routingLogic session without a sessionKey: the router raises \"SessionRouter must be initialized with a session_key\" at start",
				"set routerSpec.sessionKey to the header your clients send, such as x-user-id")
		}
	case "kvaware", "loadaware":
		fl.addConfig("production-stack/kvaware-chat", at, "routerSpec.routingLogic",
			fmt.Sprintf("%s tokenizes only the request's prompt field: /v1/chat/completions requests are matched on an empty string", logic),
			"for chat traffic use routingLogic: prefixaware or session (with sessionKey)")
		ctlPort, portSet := intAt(rsNode, "lmcacheControllerPort")
		good := false
		for _, ms := range seq(get(root, "servingEngineSpec", "modelSpec")) {
			en, _ := boolAt(ms, "lmcacheConfig", "enabled")
			ctl, _ := boolAt(ms, "lmcacheConfig", "enableController")
			p, pSet := intAt(ms, "lmcacheConfig", "controllerPort")
			if en && ctl && (!portSet || !pSet || p == ctlPort) {
				good = true
			}
		}
		if !good {
			fl.addConfig("production-stack/kvaware-controller", at, "routerSpec.routingLogic",
				fmt.Sprintf("%s asks the LMCache controller where prefixes are cached, but no modelSpec enables lmcacheConfig with enableController on routerSpec.lmcacheControllerPort", logic),
				"set lmcacheConfig.enabled: true, lmcacheConfig.enableController: true and lmcacheConfig.controllerPort equal to routerSpec.lmcacheControllerPort")
		}
		if logic == "loadaware" {
			fl.addConfig("production-stack/loadaware-schema", at, "routerSpec.routingLogic",
				"loadaware is not in the chart's values.schema.json enum at a6c01db: helm refuses these values",
				"use a chart release whose schema lists loadaware, or pass --routing-logic loadaware in routerSpec.extraArgs")
		}
	case "", "roundrobin", "disaggregated_prefill", "disaggregated_prefill_orchestrated":
	case "prefixaware":
		if n, ok := intAt(rsNode, "replicaCount"); ok && n > 1 {
			fl.addConfig("production-stack/prefixaware-replicas", d.pos(get(rsNode, "replicaCount")), "routerSpec.replicaCount",
				fmt.Sprintf("prefixaware on %d router replicas: each keeps its own in-memory trie (never evicted), so a conversation's turns spread over tries", n),
				"set routerSpec.replicaCount: 1, or put session affinity in front of the routers")
		}
	default:
		d.unknownRoutingLogic(get(rsNode, "routingLogic"), "routerSpec.routingLogic", logic)
	}
	// routerSpec.extraArgs are rendered after the chart's --routing-logic, and argparse keeps
	// the last: a logic given there is the one the router runs.
	args := seq(get(rsNode, "extraArgs"))
	for i, a := range args {
		name, val, has := strings.Cut(strings.TrimSpace(a.Value), "=")
		if name != "--routing-logic" {
			continue
		}
		at := a
		if !has && i+1 < len(args) {
			val, at = args[i+1].Value, args[i+1]
		}
		if !slices.Contains(ProdStackRoutingLogics(), val) {
			d.unknownRoutingLogic(at, "routerSpec.extraArgs", val)
		}
	}
	if n, ok := intAt(rsNode, "prefixMinMatchLength"); ok && n > 0 && n%128 != 0 {
		fl.addConfig("production-stack/prefix-min-match-length", d.pos(get(rsNode, "prefixMinMatchLength")), "routerSpec.prefixMinMatchLength",
			fmt.Sprintf("prefixMinMatchLength %d is not a multiple of 128: the trie matches whole 128-character chunks", n),
			fmt.Sprintf("set routerSpec.prefixMinMatchLength: %d", (n+127)/128*128))
	}
	if logic == "kvaware" || logic == "prefixaware" || logic == "loadaware" {
		fl.facts().routers = append(fl.facts().routers, kvRouter{file: fl.path, kind: "production-stack", at: at})
	}
}

// ProdStackRoutingLogics are the routing logics production-stack's router knows: the
// --routing-logic choices of src/vllm_router/parsers/parser.py @a6c01db (the chart's schema enum
// lists the same) and loadaware, added by PR #1035 (ROUTERS.md section 3).
func ProdStackRoutingLogics() []string {
	return []string{"roundrobin", "session", "prefixaware", "kvaware", "loadaware", "disaggregated_prefill", "disaggregated_prefill_orchestrated"}
}

// unknownRoutingLogic reports a production-stack routing logic the router does not know: at
// a6c01db argparse refuses it ("invalid choice") and the chart's schema refuses the values, so
// the router does not start; a newer release may have added it, so it is a warning naming the
// logics kvcheck knows (and the nearest, when one or two edits away), not an error.
func (d *ydoc) unknownRoutingLogic(n *yaml.Node, loc, logic string) {
	d.fl.unknownRoutingLogic(d.pos(n), loc, logic)
}

// unknownRoutingLogic reports an unknown routing logic written at at (ydoc.unknownRoutingLogic).
func (fl *File) unknownRoutingLogic(at pos, loc, logic string) {
	if fl.templateValue(logic) {
		return
	}
	known := ProdStackRoutingLogics()
	msg := fmt.Sprintf("routing logic %q is not one production-stack's router knows (%s): at a6c01db the router refuses it at start (invalid choice) and the chart's schema refuses the values; if a newer release added it, kvcheck does not know how it routes",
		logic, strings.Join(known, ", "))
	hint := "set it to one of " + strings.Join(known, ", ")
	if best := nearestName(logic, known); best != "" {
		msg += "; did you mean " + best + "?"
		hint = "set it to " + best
	}
	fl.addConfig("production-stack/unknown-routing-logic", at, loc, msg, hint)
}

// checkPool checks a GAIE InferencePool.
func (d *ydoc) checkPool(root *yaml.Node) {
	for _, ref := range []string{"endpointPickerRef", "extensionRef"} {
		if m, _ := str(root, "spec", ref, "failureMode"); m == "FailOpen" {
			d.fl.addConfig("gaie/fail-open", d.pos(get(root, "spec", ref, "failureMode")), "spec."+ref+".failureMode",
				"failureMode FailOpen: while the endpoint picker is down the gateway sends requests to any endpoint, and prefix routing is bypassed without an error",
				"set spec."+ref+".failureMode: FailClose if a picker outage should fail requests instead")
		}
	}
}

// failOpenValues finds a failureMode: FailOpen for the pool in Helm values (inferencePool.failureMode).
func (d *ydoc) failOpenValues(root *yaml.Node) {
	var walk func(n *yaml.Node, parent string, path string, depth int)
	walk = func(n *yaml.Node, parent, path string, depth int) {
		n = deref(n)
		if n == nil || n.Kind != yaml.MappingNode || depth > 32 {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v := deref(n.Content[i+1])
			if k == "failureMode" && v.Kind == yaml.ScalarNode && v.Value == "FailOpen" &&
				(parent == "inferencePool" || parent == "endpointPickerRef" || parent == "extensionRef") {
				d.fl.addConfig("gaie/fail-open", d.pos(v), path+k,
					"failureMode FailOpen: while the endpoint picker is down the gateway sends requests to any endpoint, and prefix routing is bypassed without an error",
					"set "+path+"failureMode: FailClose if a picker outage should fail requests instead")
			}
			walk(v, k, path+k+".", depth+1)
		}
	}
	walk(root, "", "", 0)
}

// checkObjective checks a GAIE InferenceObjective's API group.
func (d *ydoc) checkObjective(root *yaml.Node, api string) {
	if strings.HasPrefix(api, "inference.networking.x-k8s.io/") {
		d.fl.addConfig("gaie/deprecated-objective-api", d.pos(get(root, "apiVersion")), "apiVersion",
			fmt.Sprintf("InferenceObjective in %s: the llm-d router logs this group as deprecated", api),
			"set apiVersion: llm-d.ai/v1alpha2")
	}
}

// checkRay checks every Ray Serve request_router_config of a document.
func (d *ydoc) checkRay(root *yaml.Node) bool {
	found := false
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = deref(n)
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			if rc := get(n, "request_router_config"); rc != nil {
				if cls, _ := str(rc, "request_router_class"); strings.HasSuffix(cls, "PrefixCacheAffinityRouter") {
					found = true
					kw := get(rc, "request_router_kwargs")
					at := d.pos(get(rc, "request_router_class"))
					if t, ok := str(kw, "imbalanced_threshold"); !ok || strings.Contains(strings.ToLower(t), "inf") {
						d.fl.addConfig("ray/imbalanced-threshold", at, "request_router_config",
							"PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so a hot prefix's replica keeps every request however loaded it is",
							"set request_router_kwargs.imbalanced_threshold (the older default was 10)")
					}
					if ev, _ := boolAt(kw, "do_eviction"); !ev {
						d.fl.addConfig("ray/no-eviction", at, "request_router_config",
							"PrefixCacheAffinityRouter with do_eviction false (the default): its character tree grows without bound",
							"set request_router_kwargs.do_eviction: true")
					}
				}
			}
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], depth+1)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	return found
}

var (
	rayClassRE    = regexp.MustCompile(`["']?request_router_class["']?\s*[:=]\s*["']?[\w.]*PrefixCacheAffinityRouter`)
	rayImbalRE    = regexp.MustCompile(`["']?imbalanced_threshold["']?\s*[:=]`)
	rayEvictionRE = regexp.MustCompile(`["']?do_eviction["']?\s*[:=]\s*True`)
)

// checkRayText checks a Python Ray Serve application that names PrefixCacheAffinityRouter as
// its request router.
func (fl *File) checkRayText(src []byte) {
	loc := rayClassRE.FindIndex(src)
	if loc == nil {
		return
	}
	l, c := fl.lines.Pos(loc[0])
	at := pos{l, c}
	if !rayImbalRE.Match(src) {
		fl.addConfig("ray/imbalanced-threshold", at, "request_router_config",
			"PrefixCacheAffinityRouter without imbalanced_threshold: the default is infinity, so a hot prefix's replica keeps every request however loaded it is",
			"set request_router_kwargs imbalanced_threshold (the older default was 10)")
	}
	if !rayEvictionRE.Match(src) {
		fl.addConfig("ray/no-eviction", at, "request_router_config",
			"PrefixCacheAffinityRouter without do_eviction True: its character tree grows without bound",
			"set request_router_kwargs do_eviction True")
	}
}

// checkAIBrixEnv checks an AIBrix gateway's environment.
func (d *ydoc) checkAIBrixEnv(env map[string]token, at *yaml.Node) {
	algo, ok := env["ROUTING_ALGORITHM"]
	if !ok {
		algo, ok = env["AIBRIX_ROUTING_ALGORITHM"]
	}
	if !ok || shellDefault(algo.text) != "prefix-cache" {
		return
	}
	if _, ok := env["AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE"]; !ok {
		d.fl.addConfig("aibrix/character-tokenizer", algo.at, "env",
			"prefix-cache routing with AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE unset: prefixes are matched on characters, not the engine's tokens",
			"set AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE (tiktoken, or remote with the engine's tokenizer)")
	}
	if s, ok := env["AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED"]; ok && strings.EqualFold(shellDefault(s.text), "true") {
		remote := env["AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER"]
		_, ep := env["AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT"]
		if !strings.EqualFold(shellDefault(remote.text), "true") || !ep {
			d.fl.addConfig("aibrix/kv-sync-incomplete", s.at, "env",
				"KV event sync is on, but it needs AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER=true and AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT: sync does not start and routing falls back to the local hash table",
				"set AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER=true and AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT to the engine's address")
		}
	}
}
