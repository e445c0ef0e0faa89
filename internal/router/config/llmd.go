package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// subscriber is an llm-d precise producer's KV-event subscription, for the checks against the
// engines across files.
type subscriber struct {
	file         string
	at           pos
	topicFilter  string
	discoverPods bool
	socketPort   int
	replayPort   int    // 0 when unset
	blockSize    int    // tokenProcessorConfig.blockSizeTokens (or blockSize); 0 when unset
	blockSizeKey string // the key blockSize was read from
}

// eppFlags are the EPP's command-line flags and replica settings, when a file shows them.
type eppFlags struct {
	visible        bool // the file shows the EPP's flags (a Deployment's args, the chart's flags)
	experimental   bool // --allow-experimental-plugins
	replicas       int
	leaderElection *bool // --ha-enable-leader-election as set; nil when not set
}

// activeActive reports several EPP replicas that all serve (leader election off).
func (f eppFlags) activeActive() bool {
	return f.replicas > 1 && f.leaderElection != nil && !*f.leaderElection
}

// eppFlagsOf reads the router chart's values (router.epp.flags, router.epp.replicas) or an EPP
// Deployment's args in a document.
func eppFlagsOf(root *yaml.Node) eppFlags {
	var f eppFlags
	if epp := get(root, "router", "epp"); epp != nil {
		f.visible = true
		f.replicas = 1
		if n, ok := intAt(epp, "replicas"); ok {
			f.replicas = n
		}
		if fl := get(epp, "flags"); fl != nil {
			if v, ok := boolAt(fl, "allow-experimental-plugins"); ok && v {
				f.experimental = true
			}
			if v, ok := boolAt(fl, "ha-enable-leader-election"); ok {
				f.leaderElection = &v
			}
		}
		return f
	}
	// A Deployment whose container runs the EPP: its args carry the flags.
	var walk func(n *yaml.Node, replicas int, depth int)
	walk = func(n *yaml.Node, replicas int, depth int) {
		n = deref(n)
		if n == nil || depth > 32 || f.visible {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			if r, ok := intAt(n, "replicas"); ok {
				replicas = r
			}
			for _, c := range seq(get(n, "containers")) {
				args := append(listTokens(get(c, "command")), listTokens(get(c, "args"))...)
				epp := false
				for _, a := range args {
					if strings.HasPrefix(a.text, "--config-file") || strings.HasPrefix(a.text, "--config-text") || strings.HasPrefix(a.text, "--pool-name") || strings.HasPrefix(a.text, "-pool-name") {
						epp = true
					}
				}
				if !epp {
					continue
				}
				f.visible, f.replicas = true, replicas
				for i, a := range args {
					name, val, has := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
					if !has && i+1 < len(args) && (args[i+1].text == "true" || args[i+1].text == "false") {
						val, has = args[i+1].text, true
					}
					b := true
					if has {
						b, _ = strconv.ParseBool(val)
					}
					switch name {
					case "allow-experimental-plugins":
						f.experimental = b
					case "ha-enable-leader-election":
						f.leaderElection = &b
					}
				}
				return
			}
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], replicas, depth+1)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, replicas, depth+1)
			}
		}
	}
	walk(root, 1, 0)
	return f
}

// alphaPlugin reports the plugin types registered at the Alpha stability level whose type
// names this kvcheck has confirmed (cmd/epp/runner/runner.go registerInTreePlugins @024aa2d),
// which the EPP refuses without --allow-experimental-plugins ("has Alpha stability level, but
// command line flag --allow-experimental-plugins is not set", registry.go). Other Alpha types
// exist; an unknown type is not reported.
func alphaPlugin(t string) bool {
	switch t {
	case "burst-prefix-cache-producer", "topology-affinity-filter", "topology-affinity-scorer", "topology-extractor":
		return true
	}
	return strings.HasPrefix(t, "multicluster-")
}

// eppTopKeys are the fields of EndpointPickerConfig (apix/config/v1alpha1/
// endpointpickerconfig_types.go @ebab687) and its TypeMeta.
var eppTopKeys = []string{"apiVersion", "kind", "featureGates", "plugins", "schedulingProfiles", "dataLayer",
	"flowControl", "requestHandler", "saturationDetector", "parser"}

// eppPluginTypes are the plugin type names the llm-d router registers: the *Type constants of
// pkg/epp/framework/plugins @ebab687 (ROUTERS.md section 2 names the prefix-cache ones).
var eppPluginTypes = []string{
	"active-request-scorer", "agent-identity", "always-disagg-multimodal-decider", "always-disagg-pd-decider",
	"anthropic-parser", "approx-prefix-cache-producer", "burst-prefix-cache-producer", "by-label",
	"by-label-selector", "concurrency-detector", "context-length-aware", "core-metrics-extractor",
	"data-parallel-profile-handler", "dcgm-data-source", "dcgm-extractor", "decode-filter",
	"destination-endpoint-served-verifier", "disagg-headers-handler", "disagg-profile-handler",
	"disaggregatedset-rollout-pod-extractor", "disaggregatedset-rollout-screener", "edf-ordering-policy",
	"encode-filter", "endpoint-attribute-filter", "endpoint-attribute-scorer", "endpoint-notification-source",
	"fcfs-ordering-policy", "file-discovery", "global-strict-fairness-policy", "header-based-testing-filter",
	"header-label-affinity-scorer", "header-profile-handler", "inflight-load-producer", "k8s-notification-source",
	"kv-cache-utilization-scorer", "label-selector-filter", "latency-scorer", "latency-slo-admitter",
	"load-aware-scorer", "local-syncer", "lora-affinity-scorer", "max-score-picker", "metrics-data-source",
	"mm-embeddings-cache-producer", "mm-embeddings-cache-scorer", "models-data-extractor", "models-data-source",
	"multicluster-approx-prefix-cache-producer", "multicluster-file-discovery",
	"multicluster-kv-cache-utilization-scorer", "multicluster-metrics-data-source",
	"multicluster-metrics-extractor", "multicluster-prefix-cache-scorer", "multicluster-queue-scorer",
	"multicluster-session-affinity-filter", "no-hit-lru-scorer", "openai-parser", "p2p-source-producer",
	"passthrough-parser", "pd-profile-handler", "precise-prefix-cache-producer", "precise-prefix-cache-scorer",
	"predicted-latency-producer", "prefill-filter", "prefill-header-handler", "prefix-based-pd-decider",
	"prefix-cache-affinity-filter", "prefix-cache-scorer", "priority-holdback-policy",
	"priority-then-time-eviction-order-policy", "probabilistic-admitter", "program-aware-fairness",
	"queue-scorer", "random-picker", "request-attribute-reporter", "round-robin-fairness-policy",
	"running-requests-size-scorer", "session-affinity-filter", "session-affinity-scorer", "session-id-producer",
	"sglanghttp-parser", "sheddable-eviction-filter", "single-profile-handler", "slo-deadline-ordering-policy",
	"slo-headroom-tier-filter", "soft-reflective-ceiling-policy", "static-usage-limit-policy",
	"token-load-scorer", "token-producer", "tokenizer", "topology-affinity-filter", "topology-affinity-scorer",
	"topology-extractor", "utilization-detector", "utilization-filter", "vertexai-parser", "vllmgrpc-parser",
	"vllmhttp-parser", "weighted-random-picker",
}

// eppParams are the parameters of the plugins whose parameter names ROUTERS.md gives, as the
// plugins decode them @ebab687 (approximateprefix/types.go, preciseprefixcache/producer.go
// PluginConfig, scorer/prefix/plugin.go, tokenizer/tokenizer.go tokenizerPluginConfig). The EPP
// decodes parameters strictly (plugin.StrictDecoder), so a misspelt one stops it at start.
var eppParams = map[string][]string{
	"approx-prefix-cache-producer":  {"autoTune", "blockSizeTokens", "blockSize", "maxPrefixBlocksToMatch", "maxPrefixTokensToMatch", "lruCapacityPerServer"},
	"precise-prefix-cache-producer": {"tokenProcessorConfig", "indexerConfig", "kvEventsConfig", "speculativeIndexing", "speculativeTTL"},
	"prefix-cache-scorer":           {"prefixMatchInfoProducerName", "matchLengthWeight", "matchLengthScaleTokens"},
	"token-producer":                {"udsTokenizerConfig", "vllm", "estimate", "modelName"},
	"tokenizer":                     {"udsTokenizerConfig", "vllm", "estimate", "modelName"},
}

// eppVLLMKeys are token-producer's parameters.vllm fields (tokenizer/vllm_http.go vllmConfig
// @ebab687).
var eppVLLMKeys = []string{"url", "timeout", "mmTimeout"}

// misspelt reports whether a mapping has a key one or two edits from key (and not key).
func misspelt(m *yaml.Node, key string) bool {
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k != key && nearestName(k, []string{key}) != "" {
			return true
		}
	}
	return false
}

// checkEPCNames reports the top-level keys, plugin types and (for the llm-d.ai API, whose
// plugins' parameters kvcheck has read) parameter names an EndpointPickerConfig does not
// know: info, or a warning naming the nearest known name.
func (d *ydoc) checkEPCNames(root *yaml.Node, plugins []eppPlugin, current bool) {
	d.unknownKeys(root, "", eppTopKeys, "llm-d")
	refs := map[string]bool{}
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = deref(n)
		if n == nil || depth > 16 {
			return
		}
		if n.Kind == yaml.MappingNode {
			if r, ok := str(n, "pluginRef"); ok {
				refs[r] = true
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(get(root, "schedulingProfiles"), 0)
	walk(get(root, "dataLayer"), 0)
	for _, p := range plugins {
		tn := get(p.node, "type")
		if p.typ != "" && !slices.Contains(eppPluginTypes, p.typ) {
			if best := nearestName(p.typ, eppPluginTypes); best != "" {
				// The name defaults to the type, and pluginRef entries name it: a plugin named
				// by its misspelt type that entries refer to keeps that name, so the type alone
				// is no longer one rewrite.
				hint := "set type: " + best
				pinned := get(p.node, "name") == nil && refs[p.typ]
				if pinned {
					hint += " and name: " + p.typ + " (the pluginRef entries name it), or rename those entries too"
				}
				f := d.fl.addConfig("llm-d/plugin-typo", d.pos(tn), "plugins "+p.name,
					fmt.Sprintf("plugin type %s is not one the llm-d router registers: did you mean %s?", p.typ, best), hint)
				if !pinned {
					d.replaceFix(f, tn, best)
				}
			} else {
				d.fl.addConfig("llm-d/unknown-plugin", d.pos(tn), "plugins "+p.name,
					fmt.Sprintf("plugin type %s is not one this kvcheck knows (a newer or out-of-tree llm-d plugin?)", p.typ), "")
			}
		}
		known, ok := eppParams[p.typ]
		if !ok || !current {
			continue
		}
		where := "plugins " + p.name + ".parameters"
		d.unknownKeys(p.params, where, known, "llm-d")
		if p.typ == "token-producer" || p.typ == "tokenizer" {
			d.unknownKeys(get(p.params, "vllm"), where+".vllm", eppVLLMKeys, "llm-d")
		}
	}
}

type eppPlugin struct {
	node   *yaml.Node
	typ    string
	name   string
	params *yaml.Node
}

// checkEPC checks an EndpointPickerConfig. flags are the EPP's flags when the same file shows
// them.
func (d *ydoc) checkEPC(root *yaml.Node, flags eppFlags) {
	fl := d.fl
	if !flags.visible {
		flags = fl.epp
	}
	api, _ := str(root, "apiVersion")
	current := strings.HasPrefix(api, "llm-d.ai/")
	var plugins []eppPlugin
	for _, p := range seq(get(root, "plugins")) {
		t, _ := str(p, "type")
		n, ok := str(p, "name")
		if !ok {
			n = t
		}
		plugins = append(plugins, eppPlugin{node: p, typ: t, name: n, params: get(p, "parameters")})
	}
	d.checkEPCNames(root, plugins, current)
	var precise, approx []eppPlugin
	realTokenizer := false
	for _, p := range plugins {
		switch p.typ {
		case "precise-prefix-cache-producer":
			precise = append(precise, p)
		case "approx-prefix-cache-producer":
			approx = append(approx, p)
		case "token-producer", "tokenizer":
			if get(p.params, "vllm") != nil || get(p.params, "modelName") != nil || get(p.params, "udsTokenizerConfig") != nil {
				realTokenizer = true
			}
		}
		at := d.pos(get(p.node, "type"))
		switch p.typ {
		case "tokenizer":
			fl.addConfig("llm-d/deprecated-plugin", at, "plugins "+p.name,
				"plugin type tokenizer is deprecated since v0.9.0 and removed in v0.11.0", "set type: token-producer")
		case "precise-prefix-cache-scorer":
			fl.addConfig("llm-d/deprecated-plugin", at, "plugins "+p.name,
				"precise-prefix-cache-scorer is deprecated: it wraps precise-prefix-cache-producer and prefix-cache-scorer",
				"replace it with type: precise-prefix-cache-producer and a prefix-cache-scorer with prefixMatchInfoProducerName: precise-prefix-cache-producer")
		}
		if alphaPlugin(p.typ) && flags.visible && !flags.experimental {
			fl.addConfig("llm-d/experimental-plugin", at, "plugins "+p.name,
				fmt.Sprintf("%s is an Alpha plugin and the EPP's flags lack --allow-experimental-plugins: the EPP refuses to start", p.typ),
				"add --allow-experimental-plugins=true to the EPP's flags (router.epp.flags.allow-experimental-plugins: true)")
		}
		if p.typ == "approx-prefix-cache-producer" {
			if n, ok := intAt(p.params, "blockSizeTokens"); ok && n < 64 {
				fl.addConfig("llm-d/approximate-block-size", d.pos(get(p.params, "blockSizeTokens")), "plugins "+p.name+".parameters.blockSizeTokens",
					fmt.Sprintf("blockSizeTokens %d is raised to 64 at request time (minBlockSizeTokens)", n),
					"set parameters.blockSizeTokens: 64")
			}
		}
	}
	usesApprox := len(approx) > 0
	for _, p := range plugins {
		if p.typ != "prefix-cache-scorer" {
			continue
		}
		ref, ok := str(p.params, "prefixMatchInfoProducerName")
		switch {
		case !ok && len(precise) > 0:
			f := fl.addConfig("llm-d/scorer-approximate-producer", d.pos(get(p.node, "type")), "plugins "+p.name,
				fmt.Sprintf("prefix-cache-scorer %q names no prefixMatchInfoProducerName, so it reads the auto-spawned approximate producer, not %s", p.name, precise[0].name),
				"set parameters.prefixMatchInfoProducerName: "+precise[0].name)
			// A misspelt prefixMatchInfoProducerName is renamed by its key-typo fix; adding
			// the key too would write it twice.
			if len(precise) == 1 && !misspelt(p.params, "prefixMatchInfoProducerName") {
				d.insertFix(f, p.node, "parameters.prefixMatchInfoProducerName", precise[0].name)
			}
			usesApprox = true
		case !ok:
			usesApprox = true
		default:
			for _, a := range approx {
				if a.name == ref {
					usesApprox = true
				}
			}
		}
	}
	if len(plugins) == 0 && current {
		usesApprox = true // no config at all: the default profile scores prefixes approximately
	}
	if usesApprox && flags.activeActive() {
		fl.addConfig("llm-d/approximate-active-active", d.pos(get(root, "kind")), "EndpointPickerConfig",
			fmt.Sprintf("the approximate prefix producer on %d active-active EPP replicas: each keeps its own prefix LRU, so the hit rate drops", flags.replicas),
			"set router.epp.replicas: 1, keep leader election on (active-passive), or use precise-prefix-cache-producer")
	}
	for _, p := range precise {
		at := d.pos(get(p.node, "type"))
		if !realTokenizer {
			fl.addConfig("llm-d/estimate-tokenizer", at, "plugins "+p.name,
				"precise-prefix-cache-producer with no token-producer on the vllm backend: the auto-created estimate tokenizer (about 4 bytes a token) produces ids that are not the engine's, and precise matching silently degrades",
				"add a plugin type: token-producer with parameters.modelName: <served model> and parameters.vllm.url: <a vLLM render endpoint>")
		}
	}
	// Subscribers: the precise producer (and the deprecated precise scorer, which wraps it).
	for _, p := range plugins {
		if p.typ != "precise-prefix-cache-producer" && p.typ != "precise-prefix-cache-scorer" {
			continue
		}
		kv := get(p.params, "kvEventsConfig")
		s := &subscriber{file: fl.path, at: d.pos(get(p.node, "type"))}
		if current {
			s.topicFilter, s.discoverPods, s.socketPort = "kv@", true, 5557
		}
		if v, ok := str(kv, "topicFilter"); ok {
			s.topicFilter = v
		}
		if v, ok := boolAt(kv, "discoverPods"); ok {
			s.discoverPods = v
		}
		if n, ok := intAt(kv, "podDiscoveryConfig", "socketPort"); ok {
			s.socketPort = n
		}
		if n, ok := intAt(kv, "podDiscoveryConfig", "replaySocketPort"); ok {
			s.replayPort = n
		} else if n, ok := intAt(kv, "replaySocketPort"); ok {
			s.replayPort = n
		}
		// blockSizeTokens is the current name; the deprecated blockSize counts only when it is
		// 0 or absent (kvblock/token_processor.go NewChunkedTokenDatabase).
		if n, ok := intAt(p.params, "tokenProcessorConfig", "blockSizeTokens"); ok && n != 0 {
			s.blockSize, s.blockSizeKey = n, "tokenProcessorConfig.blockSizeTokens"
		} else if n, ok := intAt(p.params, "tokenProcessorConfig", "blockSize"); ok {
			s.blockSize, s.blockSizeKey = n, "tokenProcessorConfig.blockSize"
		}
		if s.replayPort == 0 && p.typ == "precise-prefix-cache-producer" {
			fl.addConfig("llm-d/no-replay", s.at, "plugins "+p.name,
				"no replaySocketPort: after an EPP restart the index starts empty and fills only from new events",
				"set parameters.kvEventsConfig.podDiscoveryConfig.replaySocketPort and a matching replay_endpoint in the engines' --kv-events-config (vLLM 0.26+)")
		}
		fl.facts().subscribers = append(fl.facts().subscribers, s)
	}
	fl.facts().routers = append(fl.facts().routers, kvRouter{file: fl.path, kind: "llm-d", at: d.pos(get(root, "kind")), events: len(precise) > 0})
}
