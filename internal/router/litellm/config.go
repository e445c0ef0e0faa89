package litellm

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// LiteLLM's configuration checks (config.Checker): the proxy's config.yaml, as a file of its
// own or under the litellm-helm chart's proxy_config, the proxy's pods, and its deployments
// against the routers of the run (config_settings.md and the router at main, 2026-10; ROUTERS.md
// section 1).

// FormatConfig is a LiteLLM proxy config.
const FormatConfig config.Format = "litellm-config"

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatConfig} }

// ConfigKinds implements config.DocumentChecker: a config is told by its keys.
func (Router) ConfigKinds() []string { return nil }

// proxyConfig returns the proxy config a document is or holds, and the proxy's pods when the
// document says (the litellm-helm chart's replicaCount; 0 for a config.yaml of its own).
func proxyConfig(root *yaml.Node) (cfg *yaml.Node, replicas int) {
	switch {
	case config.Get(root, "model_list") != nil || (config.Get(root, "router_settings") != nil && config.Get(root, "litellm_settings") != nil):
		return root, 0
	case config.Get(root, "proxy_config", "model_list") != nil:
		// The litellm-helm chart's values: the config under proxy_config, the pods' count in
		// replicaCount.
		n, ok := config.IntAt(root, "replicaCount")
		if !ok {
			n = 1
		}
		return config.Get(root, "proxy_config"), n
	}
	return nil, 0
}

// CheckDocument implements config.DocumentChecker: a proxy config.
func (Router) CheckDocument(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	cfg, replicas := proxyConfig(root)
	if cfg == nil {
		return "", config.Loader{}
	}
	checkLiteLLM(d, cfg, replicas)
	if config.Get(root, "proxy_config") != nil {
		return FormatConfig, config.LoaderHelm // the litellm-helm chart's values
	}
	return FormatConfig, config.LoaderPyYAML("LiteLLM")
}

// proxyPods is the replica count of a workload that runs the proxy's image.
type proxyPods int

// CheckContainer implements config.ContainerChecker: a workload running the proxy's image
// says how many pods keep pins (LL-04).
func (Router) CheckContainer(d *config.Doc, c *config.Container) {
	if !c.Compose && litellmImage(c.Image) {
		d.File().AddFact(proxyPods(c.Replicas))
	}
}

// gatewaysKey keeps the file's gateways, which each config of the file gives its retries.
type gatewaysKey struct{}

// CheckRun implements config.RunChecker: pins kept per pod (LL-04), and retries on both layers
// (LL-05).
func (Router) CheckRun(r *config.Run) {
	// Pins kept per pod: an affinity check without Redis on several proxy replicas (LL-04).
	pods := 0
	for _, n := range config.FactsOf[proxyPods](r) {
		pods = max(pods, int(n))
	}
	for _, p := range config.FactsOf[*litellmProxy](r) {
		n := max(p.replicas, pods)
		if n < 2 {
			continue
		}
		r.Add(p.file, "litellm/affinity-per-pod", p.at, "router_settings.optional_pre_call_checks",
			fmt.Sprintf("%s pins are kept in each proxy pod's own cache without redis_host or redis_url, and the proxy runs %d replicas: a conversation's next turn reaches a pod that never saw the pin", p.flag, n),
			"set router_settings.redis_host (or redis_url) to a Redis every proxy replica shares")
	}

	// Retries on both layers: a LiteLLM deployment whose api_base is a KV-aware router.
	for _, g := range config.FactsOf[*gatewayGroup](r) {
		if g.retriesSet && g.retries <= 1 {
			continue
		}
		x, ok := r.Index().Find(g.host)
		if !ok {
			continue
		}
		n := "unset (default 2)"
		if g.retriesSet {
			n = strconv.Itoa(g.retries)
		}
		r.Add(g.file, "litellm/retries-stacked", g.at, "model_list "+g.group,
			fmt.Sprintf("api_base %s is the %s router (%s) and num_retries is %s: each failure is retried by the proxy on top of the router's own failover", g.host, x.Kind, x.Where(), n),
			"set router_settings.num_retries: 1 (or 0)")
	}
}

// ReadDocument implements config.DocumentReader: a proxy config's settings.
func (Router) ReadDocument(v *config.Values, root *yaml.Node) (mine, walk bool) {
	cfg, replicas := proxyConfig(root)
	if cfg == nil {
		return false, true
	}
	litellmValues(v, cfg, replicas)
	return true, true
}

// rules are LiteLLM's config rules (docs/my-website/docs/proxy/config_settings.md and the router read
// at main, 2026-10).
var rules = []config.Rule{
	{Code: "litellm/no-affinity", ID: "LL-01", System: display, Severity: finding.Warning,
		Summary:  "a model group with several self-hosted vLLM deployments and no affinity pre-call check: simple-shuffle scatters a conversation's turns, so no replica sees its prefix again",
		Versions: "all releases (no prefix-aware strategy exists; main 2026-10)", Source: "config_settings.md; router.py"},
	{Code: "litellm/prompt-caching-last-turn", ID: "LL-02", System: display, Severity: finding.Warning,
		Summary:  "prompt_caching pins the prefix up to the last cache_control marker, and enable_anthropic_prompt_caching puts one on the last turn: the key changes every turn and the pin never hits",
		Versions: ">= 1.94.0 (enable_anthropic_prompt_caching)", Source: "router_utils/prompt_caching_cache.py; prompt-caching doc"},
	{Code: "litellm/prompt-caching-only", ID: "LL-03", System: display, Severity: finding.Info,
		Summary:  "prompt_caching is the only affinity: it pins only requests that carry cache_control and have at least 1024 tokens, for 300 s",
		Versions: "main 2026-10 (TTL 300 s; open PR #40776 would allow 3600 s)", Source: "utils.py is_prompt_caching_valid_prompt; prompt_caching_cache.py"},
	{Code: "litellm/affinity-per-pod", ID: "LL-04", System: display, Severity: finding.Warning,
		Summary:  "session_affinity or deployment_affinity without redis_host/redis_url on several proxy replicas (the litellm-helm chart's replicaCount, or a LiteLLM Deployment in the same run): each pod keeps its own pins",
		Versions: "main 2026-10 (DualCache without Redis is in-memory)", Source: "router_utils/pre_call_checks/deployment_affinity_check.py"},
	{Code: "litellm/retries-stacked", ID: "LL-05", System: display, Severity: finding.Warning,
		Summary:  "an api_base that is a KV-aware router and num_retries unset (2) or above 1: the proxy's retries stack on the router's own failover",
		Versions: "all releases (Router default num_retries 2)", Source: "config_settings.md; router.py Router.__init__"},
	{Code: "litellm/invalid-affinity-flag", ID: "LL-06", System: display, Severity: finding.Error,
		Summary:  "an affinity flag LiteLLM does not know (prompt_prefix_affinity, a flag outside VALID_FLAGS in model_group_affinity_config): it is ignored, with a warning at most",
		Versions: "main 2026-10 (prompt_prefix_affinity only in closed PR #27613)", Source: "deployment_affinity_check.py VALID_FLAGS; types/router.py", Defeats: config.DefeatsSession},
	{Code: "litellm/unknown-pre-call-check", System: display, Severity: finding.Warning,
		Summary:  "an optional_pre_call_checks entry LiteLLM does not know (session_afinity): the Router adds no check for it, so a misspelt affinity pins nothing",
		Versions: "OptionalPreCallChecks, types/router.py @0044fbec", Source: "litellm/types/router.py; router.py add_optional_pre_call_checks"},
	{Code: "litellm/unknown-key", System: display, Severity: finding.Info,
		Summary:  "a top-level or router_settings key this kvcheck does not know (a newer LiteLLM key, or a typo too far from any known key to name)",
		Versions: "keys of config_settings.md, main 2026-10", Source: "config_settings.md router_settings reference"},
	{Code: "litellm/key-typo", System: display, Severity: finding.Warning,
		Summary:  "a top-level or router_settings key one or two edits from a known key (optional_pre_call_check, router_setings): LiteLLM ignores it",
		Versions: "keys of config_settings.md, main 2026-10", Source: "config_settings.md router_settings reference"},
}

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

// litellmGroupFlags is VALID_FLAGS of deployment_affinity_check.py @00e1fe8.
var litellmGroupFlags = []string{"deployment_affinity", "responses_api_deployment_check", "session_affinity", "encrypted_content_affinity"}

// gatewayGroup is a LiteLLM deployment with an api_base, for the retry check across files.
type gatewayGroup struct {
	file       string
	at         config.Pos
	group      string
	host       string
	retries    int
	retriesSet bool
	retriesAt  config.Pos
}

// litellmProxy is a LiteLLM config whose pins live in the router's cache, for LL-04 across files.
type litellmProxy struct {
	file     string
	at       config.Pos
	flag     string
	replicas int // from the litellm-helm values holding the config; 0 when not known
}

// checkLiteLLM checks a LiteLLM proxy config; replicas is the proxy's pod count when the file
// says it (the litellm-helm chart's replicaCount), else 0.
func checkLiteLLM(d *config.Doc, root *yaml.Node, replicas int) {
	rs := config.Get(root, "router_settings")
	ls := config.Get(root, "litellm_settings")
	checks := map[string]*yaml.Node{}
	for _, c := range config.Seq(config.Get(rs, "optional_pre_call_checks")) {
		checks[c.Value] = c
	}
	_, redisHost := config.Str(rs, "redis_host")
	_, redisURL := config.Str(rs, "redis_url")
	if !redisHost && !redisURL {
		for _, a := range []string{"session_affinity", "deployment_affinity"} {
			if c, ok := checks[a]; ok {
				d.File().AddFact(&litellmProxy{file: d.File().Path(), at: d.Pos(c), flag: a, replicas: replicas})
				break
			}
		}
	}
	for _, c := range config.Seq(config.Get(rs, "optional_pre_call_checks")) {
		if c.Value == "prompt_prefix_affinity" || slices.Contains(PreCallChecks(), c.Value) || d.File().TemplateValue(c.Value) {
			continue // prompt_prefix_affinity is LL-06's
		}
		known := PreCallChecks()
		msg := fmt.Sprintf("%q is not a pre-call check LiteLLM knows (%s): the Router adds no check for it, so it does nothing", c.Value, strings.Join(known, ", "))
		hint := "remove it, or use one of " + strings.Join(known, ", ")
		if best := config.NearestName(c.Value, known); best != "" {
			msg += "; did you mean " + best + "?"
			hint = "set it to " + best
		}
		d.File().Add("litellm/unknown-pre-call-check", d.Pos(c), "router_settings.optional_pre_call_checks", msg, hint)
	}
	if c, ok := checks["prompt_prefix_affinity"]; ok {
		d.File().Add("litellm/invalid-affinity-flag", d.Pos(c), "router_settings.optional_pre_call_checks",
			"prompt_prefix_affinity is not a LiteLLM pre-call check (it lived only in closed PR #27613): no prefix affinity is applied",
			"use optional_pre_call_checks: [session_affinity] and send x-litellm-session-id")
	}
	groupCfg := config.Get(rs, "model_group_affinity_config")
	if groupCfg != nil && groupCfg.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(groupCfg.Content); i += 2 {
			for _, f := range config.Seq(groupCfg.Content[i+1]) {
				if !slices.Contains(litellmGroupFlags, f.Value) {
					d.File().Add("litellm/invalid-affinity-flag", d.Pos(f), "router_settings.model_group_affinity_config."+groupCfg.Content[i].Value,
						fmt.Sprintf("%q is not a valid model_group_affinity_config flag (valid: %s): LiteLLM ignores it with a warning", f.Value, strings.Join(litellmGroupFlags, ", ")),
						"use one of "+strings.Join(litellmGroupFlags, ", "))
				}
			}
		}
	}
	if pc, ok := checks["prompt_caching"]; ok {
		if on, _ := config.BoolAt(ls, "enable_anthropic_prompt_caching"); on {
			d.File().Add("litellm/prompt-caching-last-turn", d.Pos(config.KeyNode(ls, "enable_anthropic_prompt_caching")), "litellm_settings.enable_anthropic_prompt_caching",
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
			d.File().Add("litellm/prompt-caching-only", d.Pos(pc), "router_settings.optional_pre_call_checks",
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
	gws, _ := d.File().Kept(gatewaysKey{}).([]*gatewayGroup)
	var order []string
	for _, m := range config.Seq(config.Get(root, "model_list")) {
		name, _ := config.Str(m, "model_name")
		model, _ := config.Str(m, "litellm_params", "model")
		base, _ := config.Str(m, "litellm_params", "api_base")
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
			g := &gatewayGroup{file: d.File().Path(), at: d.Pos(config.KeyNode(config.Get(m, "litellm_params"), "api_base")), group: name, host: h}
			d.File().AddFact(g)
			gws = append(gws, g)
			d.File().Keep(gatewaysKey{}, gws)
		}
	}
	// Retries: router_settings overrides litellm_settings; the Router's default is 2.
	retries, set, at := 2, false, d.Pos(config.KeyNode(root, "router_settings"))
	if rs == nil {
		at = d.Pos(config.KeyNode(root, "model_list"))
	}
	for _, blk := range []*yaml.Node{ls, rs} {
		if n, ok := config.IntAt(blk, "num_retries"); ok {
			retries, set, at = n, true, d.Pos(config.KeyNode(blk, "num_retries"))
		}
	}
	// The file's gateways so far, from this config and any before it in the file, take its
	// retries.
	for _, g := range gws {
		g.retries, g.retriesSet, g.retriesAt = retries, set, at
	}
	for _, name := range order {
		deps := groups[name]
		if len(deps) < 2 {
			continue
		}
		flags := checks
		if gc := config.Get(groupCfg, name); gc != nil {
			flags = map[string]*yaml.Node{}
			for _, f := range config.Seq(gc) {
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
			d.File().Add("litellm/no-affinity", d.Pos(config.Get(deps[0].n, "model_name")), "model_list "+name,
				fmt.Sprintf("model group %q has %d self-hosted deployments and no affinity check: the router shuffles each request, so a conversation's turns land on replicas that do not hold its prefix", name, len(deps)),
				"set router_settings.optional_pre_call_checks: [session_affinity] and send x-litellm-session-id (or route through a prefix-aware router)")
		}
	}
	d.UnknownKeys(rs, "router_settings", litellmRouterKeys, ID)
	d.UnknownKeys(root, "", litellmTopKeys, ID)
}

// urlHost returns the host of an api_base URL; "" for none or an os.environ/ reference.
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

// litellmValues reads a LiteLLM proxy config; replicas is the proxy's pod count when the file
// says it, else 0.
func litellmValues(v *config.Values, root *yaml.Node, replicas int) {
	rf := v.NewRouter(ID, root.Line)
	defer v.Add(rf)
	rs := config.Get(root, "router_settings")
	for _, k := range []string{"routing_strategy", "deployment_affinity_ttl_seconds"} {
		if v, ok := config.Str(rs, k); ok {
			rf.Values[k] = v
		}
	}
	var checks []string
	for _, c := range config.Seq(config.Get(rs, "optional_pre_call_checks")) {
		checks = append(checks, c.Value)
	}
	if len(checks) > 0 {
		rf.Values["optional_pre_call_checks"] = strings.Join(checks, ",")
	}
	_, host := config.Str(rs, "redis_host")
	_, url := config.Str(rs, "redis_url")
	rf.Values["redis"] = "false"
	if host || url {
		rf.Values["redis"] = "true"
	}
	if replicas > 0 {
		rf.Values["replicas"] = strconv.Itoa(replicas)
	}
	if on, set := config.BoolAt(config.Get(root, "litellm_settings"), "enable_anthropic_prompt_caching"); set {
		rf.Values["enable_anthropic_prompt_caching"] = map[bool]string{true: "true", false: "false"}[on]
	}
}

// litellmImage reports the LiteLLM proxy's images (ghcr.io/berriai/litellm, litellm/litellm,
// their -database and -non_root variants).
func litellmImage(image string) bool {
	image = config.ShellDefault(image)
	repo, _, _ := strings.Cut(image, ":")
	last := repo[strings.LastIndexByte(repo, '/')+1:]
	return last == "litellm" || strings.HasPrefix(last, "litellm-")
}
