package llmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// llm-d's configuration checks (config.Checker): EndpointPickerConfigs, as documents of their
// own or held in a string (a ConfigMap's data, the router chart's pluginsCustomConfig), the
// EPP's flags beside them, and the precise producer's KV-event subscription against the
// engines of the run (llm-d/llm-d-router @ebab687; ROUTERS.md section 2).

// The formats of llm-d's files.
const (
	FormatEPC    config.Format = "llm-d-endpoint-picker-config"
	FormatValues config.Format = "llm-d-router-values"
)

// The precise prefix-cache plugin types. The deprecated precise-prefix-cache-scorer composes a
// precise-prefix-cache-producer and a prefix-cache-scorer reading it: beside a
// precise-prefix-cache-producer of the config it is only a prefix-cache-scorer bound to that
// producer (its parameters ignored); otherwise it runs a producer of its own, configured by its
// parameters, which tokenizes the prompt itself when indexerConfig.tokenizersPoolConfig is set
// (llm-d/llm-d-router scheduling/scorer/preciseprefixcache: precise_prefix_cache.go PluginFactory,
// findExistingPreciseProducer; legacy_producer.go @20111f1a).
const (
	preciseProducer  = "precise-prefix-cache-producer"
	deprecatedScorer = "precise-prefix-cache-scorer"
)

// loaderEPP is what reads an EndpointPickerConfig: the EPP, strictly (serializer.EnableStrict,
// which runs YAMLToJSONStrict to catch the duplicates plain conversion drops).
var loaderEPP = config.Loader{Text: "the llm-d EPP decodes its config strictly and refuses it at start; a loader that accepts it keeps the last pair (%s)", Own: true}

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatEPC, FormatValues} }

// ConfigKinds implements config.DocumentChecker.
func (Router) ConfigKinds() []string { return []string{"EndpointPickerConfig"} }

// CheckDocument implements config.DocumentChecker: an EndpointPickerConfig.
func (Router) CheckDocument(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if k, _ := config.Str(root, "kind"); k != "EndpointPickerConfig" {
		return "", config.Loader{}
	}
	checkEPC(d, root, eppFlags{})
	return FormatEPC, loaderEPP
}

// CheckNested implements config.NestedChecker: the EndpointPickerConfigs held in the strings
// of a document no whole-document check took.
func (Router) CheckNested(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if d.Recognised() || !embeddedEPCs(d, root) {
		return "", config.Loader{}
	}
	return FormatValues, config.LoaderHelm
}

// fileFlagsKey keeps the EPP's flags a file shows (BeginFile).
type fileFlagsKey struct{}

// BeginFile implements config.FileChecker: the EPP's flags, from the first document of the
// file that shows them, for the EndpointPickerConfigs of every document.
func (Router) BeginFile(f *config.File, docs []*yaml.Node) {
	var flags eppFlags
	for _, d := range docs {
		if len(d.Content) > 0 {
			if x := eppFlagsOf(d.Content[0]); x.visible && !flags.visible {
				flags = x
			}
		}
	}
	f.Keep(fileFlagsKey{}, flags)
}

// fileFlags returns the EPP's flags the file shows (BeginFile).
func fileFlags(f *config.File) eppFlags {
	flags, _ := f.Kept(fileFlagsKey{}).(eppFlags)
	return flags
}

// CheckRun implements config.RunChecker: every KV-event publishing engine of the run against
// the precise producers that dial every pod.
func (Router) CheckRun(r *config.Run) {
	var podSubs []*subscriber
	for _, s := range config.FactsOf[*subscriber](r) {
		if s.discoverPods {
			podSubs = append(podSubs, s)
		}
	}
	where := func(file string, at config.Pos) string { return fmt.Sprintf("%s:%d", file, at.Line) }
	for _, p := range podChecks(r.Engines(), podSubs, where) {
		if p.count > 1 {
			p.msg += fmt.Sprintf(" (and %d more like it in this run)", p.count-1)
		}
		r.Add(p.file, p.code, p.at, p.loc, p.msg, p.hint)
	}
}

// ReadDocument implements config.DocumentReader: an EndpointPickerConfig's settings.
func (Router) ReadDocument(v *config.Values, root *yaml.Node) (mine, walk bool) {
	if k, _ := config.Str(root, "kind"); k != "EndpointPickerConfig" {
		return false, true
	}
	epcValues(v, root, root.Line)
	return true, true
}

// ReadNode implements config.NodeReader: the EndpointPickerConfigs a string holds.
func (Router) ReadNode(v *config.Values, n *yaml.Node) {
	if n.Kind != yaml.ScalarNode {
		return
	}
	for _, r := range heldEPCs(n) {
		epcValues(v, r, n.Line)
	}
}

// rules are llm-d's config rules.
var rules = []config.Rule{
	{Code: "llm-d/estimate-tokenizer", ID: "LD-01", System: display, Severity: finding.Error,
		Summary:  "the precise prefix-cache producer (or the deprecated precise-prefix-cache-scorer, which runs one, without indexerConfig.tokenizersPoolConfig) without a token-producer on the vllm backend: the auto-created estimate tokenizer (about 4 bytes a token) silently degrades precise matching",
		Versions: "token-producer era (v0.9.0+; @ebab687)", Source: "dataproducer/tokenizer/README.md; tokenizer.go", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/scorer-approximate-producer", ID: "LD-02", System: display, Severity: finding.Error,
		Summary:  "a prefix-cache-scorer without prefixMatchInfoProducerName next to the precise producer (or the deprecated precise-prefix-cache-scorer, which runs one): the scorer reads the auto-spawned approximate producer instead",
		Versions: "split producer/scorer era (@ebab687)", Source: "dataproducer/preciseprefixcache/README.md", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/topic-filter", ID: "LD-03", System: display, Severity: finding.Error,
		Summary:  "the subscriber's topicFilter (default kv@) is not a prefix of the engine's KV-event topic (default empty): ZMQ drops every event",
		Versions: "llm-d @ebab687 with any vLLM that publishes KV events", Source: "pkg/kvevents/pool.go; zmq_subscriber.go", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/socket-port", ID: "LD-04", System: display, Severity: finding.Error,
		Summary:  "podDiscoveryConfig.socketPort (default 5557) differs from the port of the engine's KV-event endpoint: the router dials a port nobody publishes on",
		Versions: "llm-d @ebab687", Source: "pkg/kvevents/pool.go; guide patch-vllm.yaml", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/engine-connects", ID: "LD-05", System: display, Severity: finding.Error,
		Summary:  "discoverPods dials every pod, but the engine's endpoint has no * or ::, so vLLM connects instead of binding and the router receives nothing",
		Versions: "llm-d @ebab687; vLLM kv_events.py @5ac2684", Source: "vllm/distributed/kv_events.py; preciseprefixcache/extractor.go", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/approximate-active-active", ID: "LD-06", System: display, Severity: finding.Warning,
		Summary:  "the approximate producer (explicit or auto-created) on several active-active EPP replicas: each keeps its own prefix LRU and the hit rate drops",
		Versions: "llm-d chart @ebab687", Source: "docs/operations.md; config/charts/README.md"},
	{Code: "llm-d/approximate-block-size", ID: "LD-07", System: display, Severity: finding.Info,
		Summary:  "approximate producer blockSizeTokens below 64: raised to 64 at request time",
		Versions: "llm-d @ebab687", Source: "dataproducer/approximateprefix/plugin.go"},
	{Code: "llm-d/experimental-plugin", ID: "LD-08", System: display, Severity: finding.Error,
		Summary:  "an Alpha plugin without --allow-experimental-plugins among the EPP's flags: the EPP refuses to start",
		Versions: "llm-d with plugin stability levels (runner.go @024aa2d); types: burst-prefix-cache-producer, topology-*, multicluster-*", Source: "framework/interface/plugin/registry.go; cmd/epp/runner/runner.go", Defeats: config.DefeatsKVRouter},
	{Code: "llm-d/no-replay", ID: "LD-09", System: display, Severity: finding.Info,
		Summary:  "the precise producer (or the deprecated precise-prefix-cache-scorer, which runs one) without replaySocketPort: after an EPP restart its index starts empty and fills only with new events",
		Versions: "llm-d @ebab687", Source: "pkg/kvevents/pool.go"},
	{Code: "llm-d/deprecated-plugin", ID: "LD-10", System: display, Severity: finding.Warning,
		Summary:  "a deprecated plugin type: tokenizer (removed in v0.11.0; use token-producer) or precise-prefix-cache-scorer (use the producer and prefix-cache-scorer)",
		Versions: "tokenizer deprecated v0.9.0, removed v0.11.0", Source: "cmd/epp/runner/runner.go; plugin READMEs"},
	{Code: "llm-d/block-size-differs", System: display, Severity: finding.Info,
		Summary:  "the precise producer's tokenProcessorConfig.blockSize differs from the engine's --block-size: the producer README says they need not match, the June 2026 guide says they must",
		Versions: "llm-d @ebab687 README vs guide @7edda66", Source: "preciseprefixcache/README.md; guide precise-prefix-cache-routing"},

	{Code: "llm-d/unknown-key", System: display, Severity: finding.Info,
		Summary:  "an EndpointPickerConfig top-level key, or a parameter of approx-prefix-cache-producer, precise-prefix-cache-producer, prefix-cache-scorer or token-producer (llm-d.ai API), this kvcheck does not know (the EPP decodes strictly: a key it does not know either stops it at start)",
		Versions: "llm-d.ai/v1alpha1 @ebab687", Source: "apix/config/v1alpha1/endpointpickerconfig_types.go; the plugins' parameter structs; config/loader/configloader.go (serializer.EnableStrict, plugin.StrictDecoder)"},
	{Code: "llm-d/key-typo", System: display, Severity: finding.Warning,
		Summary:  "an EndpointPickerConfig key or plugin parameter one or two edits from a known one (blockSizeToken, speculativeIndexng): the EPP decodes strictly and refuses the config at start",
		Versions: "llm-d.ai/v1alpha1 @ebab687", Source: "apix/config/v1alpha1/endpointpickerconfig_types.go; the plugins' parameter structs; config/loader/configloader.go (serializer.EnableStrict, plugin.StrictDecoder)"},
	{Code: "llm-d/unknown-plugin", System: display, Severity: finding.Info,
		Summary:  "a plugin type the llm-d router does not register in-tree (a newer or out-of-tree plugin, or a typo too far from any known type to name)",
		Versions: "@ebab687", Source: "pkg/epp/framework/plugins *Type constants"},
	{Code: "llm-d/plugin-typo", System: display, Severity: finding.Warning,
		Summary:  "a plugin type one or two edits from a registered one (queue-scorrer, prefix-cache-scorrer): the EPP refuses to load the config",
		Versions: "@ebab687", Source: "pkg/epp/framework/plugins *Type constants; config/loader/validation.go (\"is not registered\")"},
}

// subscriber is an llm-d precise producer's KV-event subscription, for the checks against the
// engines across files.
type subscriber struct {
	file         string
	at           config.Pos
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
	if epp := config.Get(root, "router", "epp"); epp != nil {
		f.visible = true
		f.replicas = 1
		if n, ok := config.IntAt(epp, "replicas"); ok {
			f.replicas = n
		}
		if fl := config.Get(epp, "flags"); fl != nil {
			if v, ok := config.BoolAt(fl, "allow-experimental-plugins"); ok && v {
				f.experimental = true
			}
			if v, ok := config.BoolAt(fl, "ha-enable-leader-election"); ok {
				f.leaderElection = &v
			}
		}
		return f
	}
	// A Deployment whose container runs the EPP: its args carry the flags.
	var walk func(n *yaml.Node, replicas int, depth int)
	walk = func(n *yaml.Node, replicas int, depth int) {
		n = config.Deref(n)
		if n == nil || depth > 32 || f.visible {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			if r, ok := config.IntAt(n, "replicas"); ok {
				replicas = r
			}
			for _, c := range config.Seq(config.Get(n, "containers")) {
				args := append(config.ListTokens(config.Get(c, "command")), config.ListTokens(config.Get(c, "args"))...)
				epp := false
				for _, a := range args {
					if strings.HasPrefix(a.Text, "--config-file") || strings.HasPrefix(a.Text, "--config-text") || strings.HasPrefix(a.Text, "--pool-name") || strings.HasPrefix(a.Text, "-pool-name") {
						epp = true
					}
				}
				if !epp {
					continue
				}
				f.visible, f.replicas = true, replicas
				for i, a := range args {
					name, val, has := strings.Cut(strings.TrimLeft(a.Text, "-"), "=")
					if !has && i+1 < len(args) && (args[i+1].Text == "true" || args[i+1].Text == "false") {
						val, has = args[i+1].Text, true
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
	// The deprecated scorer's PluginConfig forwards the same fields to the producer it runs.
	"precise-prefix-cache-scorer": {"tokenProcessorConfig", "indexerConfig", "kvEventsConfig", "speculativeIndexing", "speculativeTTL"},
	"prefix-cache-scorer":         {"prefixMatchInfoProducerName", "matchLengthWeight", "matchLengthScaleTokens"},
	"token-producer":              {"udsTokenizerConfig", "vllm", "estimate", "modelName"},
	"tokenizer":                   {"udsTokenizerConfig", "vllm", "estimate", "modelName"},
}

// eppVLLMKeys are token-producer's parameters.vllm fields (tokenizer/vllm_http.go vllmConfig
// @ebab687).
var eppVLLMKeys = []string{"url", "timeout", "mmTimeout"}

// checkEPCNames reports the top-level keys, plugin types and (for the llm-d.ai API, whose
// plugins' parameters kvcheck has read) parameter names an EndpointPickerConfig does not
// know: info, or a warning naming the nearest known name.
func checkEPCNames(d *config.Doc, root *yaml.Node, plugins []eppPlugin, current, ownProducer bool) {
	d.UnknownKeys(root, "", eppTopKeys, ID)
	refs := map[string]bool{}
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = config.Deref(n)
		if n == nil || depth > 16 {
			return
		}
		if n.Kind == yaml.MappingNode {
			if r, ok := config.Str(n, "pluginRef"); ok {
				refs[r] = true
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(config.Get(root, "schedulingProfiles"), 0)
	walk(config.Get(root, "dataLayer"), 0)
	for _, p := range plugins {
		tn := config.Get(p.node, "type")
		if p.typ != "" && !slices.Contains(eppPluginTypes, p.typ) {
			if best := config.NearestName(p.typ, eppPluginTypes); best != "" {
				// The name defaults to the type, and pluginRef entries name it: a plugin named
				// by its misspelt type that entries refer to keeps that name, so the type alone
				// is no longer one rewrite.
				hint := "set type: " + best
				pinned := config.Get(p.node, "name") == nil && refs[p.typ]
				if pinned {
					hint += " and name: " + p.typ + " (the pluginRef entries name it), or rename those entries too"
				}
				f := d.Add("llm-d/plugin-typo", tn, "plugins "+p.name,
					fmt.Sprintf("plugin type %s is not one the llm-d router registers: did you mean %s?", p.typ, best), hint)
				if !pinned {
					d.ReplaceFix(f, tn, best)
				}
			} else {
				d.Add("llm-d/unknown-plugin", tn, "plugins "+p.name,
					fmt.Sprintf("plugin type %s is not one this kvcheck knows (a newer or out-of-tree llm-d plugin?)", p.typ), "")
			}
		}
		known, ok := eppParams[p.typ]
		if !ok || !current || p.typ == deprecatedScorer && ownProducer {
			// Beside a precise-prefix-cache-producer the deprecated scorer defers to it and
			// does not decode its parameters.
			continue
		}
		where := "plugins " + p.name + ".parameters"
		d.UnknownKeys(p.params, where, known, ID)
		if p.typ == "token-producer" || p.typ == "tokenizer" {
			d.UnknownKeys(config.Get(p.params, "vllm"), where+".vllm", eppVLLMKeys, ID)
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
func checkEPC(d *config.Doc, root *yaml.Node, flags eppFlags) {
	fl := d.File()
	if !flags.visible {
		flags = fileFlags(fl)
	}
	api, _ := config.Str(root, "apiVersion")
	current := strings.HasPrefix(api, "llm-d.ai/")
	var plugins []eppPlugin
	for _, p := range config.Seq(config.Get(root, "plugins")) {
		t, _ := config.Str(p, "type")
		n, ok := config.Str(p, "name")
		if !ok {
			n = t
		}
		plugins = append(plugins, eppPlugin{node: p, typ: t, name: n, params: config.Get(p, "parameters")})
	}
	ownProducer := slices.ContainsFunc(plugins, func(p eppPlugin) bool { return p.typ == preciseProducer })
	checkEPCNames(d, root, plugins, current, ownProducer)
	// precise are the precise producers: the precise-prefix-cache-producers, and a deprecated
	// precise-prefix-cache-scorer that runs one of its own (there is no producer to defer to),
	// which every rule about the producer judges as one.
	var precise, approx []eppPlugin
	realTokenizer := false
	for _, p := range plugins {
		switch p.typ {
		case preciseProducer:
			precise = append(precise, p)
		case deprecatedScorer:
			if !ownProducer {
				precise = append(precise, p)
			}
		case "approx-prefix-cache-producer":
			approx = append(approx, p)
		case "token-producer", "tokenizer":
			if config.Get(p.params, "vllm") != nil || config.Get(p.params, "modelName") != nil || config.Get(p.params, "udsTokenizerConfig") != nil {
				realTokenizer = true
			}
		}
		at := d.Pos(config.Get(p.node, "type"))
		switch p.typ {
		case "tokenizer":
			fl.Add("llm-d/deprecated-plugin", at, "plugins "+p.name,
				"plugin type tokenizer is deprecated since v0.9.0 and removed in v0.11.0", "set type: token-producer")
		case "precise-prefix-cache-scorer":
			fl.Add("llm-d/deprecated-plugin", at, "plugins "+p.name,
				"precise-prefix-cache-scorer is deprecated: it wraps precise-prefix-cache-producer and prefix-cache-scorer",
				"replace it with type: precise-prefix-cache-producer and a prefix-cache-scorer with prefixMatchInfoProducerName: precise-prefix-cache-producer")
		}
		if alphaPlugin(p.typ) && flags.visible && !flags.experimental {
			fl.Add("llm-d/experimental-plugin", at, "plugins "+p.name,
				fmt.Sprintf("%s is an Alpha plugin and the EPP's flags lack --allow-experimental-plugins: the EPP refuses to start", p.typ),
				"add --allow-experimental-plugins=true to the EPP's flags (router.epp.flags.allow-experimental-plugins: true)")
		}
		if p.typ == "approx-prefix-cache-producer" {
			if n, ok := config.IntAt(p.params, "blockSizeTokens"); ok && n < 64 {
				d.Add("llm-d/approximate-block-size", config.Get(p.params, "blockSizeTokens"), "plugins "+p.name+".parameters.blockSizeTokens",
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
		ref, ok := config.Str(p.params, "prefixMatchInfoProducerName")
		switch {
		case !ok && len(precise) > 0:
			f := d.Add("llm-d/scorer-approximate-producer", config.Get(p.node, "type"), "plugins "+p.name,
				fmt.Sprintf("prefix-cache-scorer %q names no prefixMatchInfoProducerName, so it reads the auto-spawned approximate producer, not %s", p.name, precise[0].name),
				"set parameters.prefixMatchInfoProducerName: "+precise[0].name)
			// A misspelt prefixMatchInfoProducerName is renamed by its key-typo fix; adding
			// the key too would write it twice.
			if len(precise) == 1 && !config.Misspelt(p.params, "prefixMatchInfoProducerName") {
				d.InsertFix(f, p.node, "parameters.prefixMatchInfoProducerName", precise[0].name)
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
		d.Add("llm-d/approximate-active-active", config.Get(root, "kind"), "EndpointPickerConfig",
			fmt.Sprintf("the approximate prefix producer on %d active-active EPP replicas: each keeps its own prefix LRU, so the hit rate drops", flags.replicas),
			"set router.epp.replicas: 1, keep leader election on (active-passive), or use precise-prefix-cache-producer")
	}
	for _, p := range precise {
		at := d.Pos(config.Get(p.node, "type"))
		switch {
		case realTokenizer:
		case p.typ == preciseProducer:
			fl.Add("llm-d/estimate-tokenizer", at, "plugins "+p.name,
				"precise-prefix-cache-producer with no token-producer on the vllm backend: the auto-created estimate tokenizer (about 4 bytes a token) produces ids that are not the engine's, and precise matching silently degrades",
				"add a plugin type: token-producer with parameters.modelName: <served model> and parameters.vllm.url: <a vLLM render endpoint>")
		case config.Get(p.params, "indexerConfig", "tokenizersPoolConfig") == nil:
			// The deprecated scorer's producer tokenizes the prompt itself only with
			// indexerConfig.tokenizersPoolConfig (legacy_producer.go); without it, it reads the
			// token-producer's tokens as the producer does.
			fl.Add("llm-d/estimate-tokenizer", at, "plugins "+p.name,
				"precise-prefix-cache-scorer with no token-producer on the vllm backend and no indexerConfig.tokenizersPoolConfig: the producer it runs reads the auto-created estimate tokenizer's ids (about 4 bytes a token), which are not the engine's, and precise matching silently degrades",
				"add a plugin type: token-producer with parameters.modelName: <served model> and parameters.vllm.url: <a vLLM render endpoint>, or replace the deprecated scorer with precise-prefix-cache-producer and prefix-cache-scorer")
		}
	}
	// Subscribers: the precise producers (a deprecated scorer that defers to a producer has no
	// subscription of its own: its parameters are not read).
	dials := false
	for _, p := range precise {
		kv := config.Get(p.params, "kvEventsConfig")
		s := &subscriber{file: fl.Path(), at: d.Pos(config.Get(p.node, "type"))}
		if current {
			s.topicFilter, s.discoverPods, s.socketPort = "kv@", true, 5557
		}
		if v, ok := config.Str(kv, "topicFilter"); ok {
			s.topicFilter = v
		}
		if v, ok := config.BoolAt(kv, "discoverPods"); ok {
			s.discoverPods = v
		}
		if n, ok := config.IntAt(kv, "podDiscoveryConfig", "socketPort"); ok {
			s.socketPort = n
		}
		if n, ok := config.IntAt(kv, "podDiscoveryConfig", "replaySocketPort"); ok {
			s.replayPort = n
		} else if n, ok := config.IntAt(kv, "replaySocketPort"); ok {
			s.replayPort = n
		}
		// blockSizeTokens is the current name; the deprecated blockSize counts only when it is
		// 0 or absent (kvblock/token_processor.go NewChunkedTokenDatabase).
		if n, ok := config.IntAt(p.params, "tokenProcessorConfig", "blockSizeTokens"); ok && n != 0 {
			s.blockSize, s.blockSizeKey = n, "tokenProcessorConfig.blockSizeTokens"
		} else if n, ok := config.IntAt(p.params, "tokenProcessorConfig", "blockSize"); ok {
			s.blockSize, s.blockSizeKey = n, "tokenProcessorConfig.blockSize"
		}
		// replaySocketPort is read from the llm-d.ai era's kvevents pool (@ebab687): whether
		// the deprecated scorer of an older inference.networking.x-k8s.io config could ask
		// for replay is not known here, so it is not told to.
		if s.replayPort == 0 && (p.typ == preciseProducer || current) {
			fl.Add("llm-d/no-replay", s.at, "plugins "+p.name,
				"no replaySocketPort: after an EPP restart the index starts empty and fills only from new events",
				"set parameters.kvEventsConfig.podDiscoveryConfig.replaySocketPort and a matching replay_endpoint in the engines' --kv-events-config (vLLM 0.26+)")
		}
		fl.AddFact(s)
		dials = dials || s.discoverPods
	}
	fl.AddRouter(config.Router{Kind: ID, File: fl.Path(), At: d.Pos(config.Get(root, "kind")), Service: gatewayService,
		DialsPods: dials, OwnHashes: dials})
}

// gatewayService reports the service names llm-d's charts give the gateway in front of the
// EPP (an inference-gateway, an llm-d ... gateway).
func gatewayService(first string) bool {
	return strings.Contains(first, "inference-gateway") || strings.Contains(first, "llm-d") && strings.Contains(first, "gateway")
}

// embeddedEPCs checks every EndpointPickerConfig held in a string of the document (a ConfigMap's
// data, the router chart's pluginsCustomConfig) and reports whether there was one.
func embeddedEPCs(d *config.Doc, root *yaml.Node) bool {
	found := false
	flags := eppFlagsOf(root)
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			for _, r := range heldEPCs(n) {
				held := d.Held(n)
				checkEPC(held, r, flags)
				held.DuplicateKeys(r, loaderEPP.Text)
				found = true
			}
		case yaml.MappingNode:
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], depth+1)
			}
		case yaml.SequenceNode, yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	return found
}

// heldEPCs returns the root of every EndpointPickerConfig document held in the scalar n (a
// ConfigMap's data, the router chart's pluginsCustomConfig), in order; a string that does not
// parse as YAML holds none.
func heldEPCs(n *yaml.Node) []*yaml.Node {
	if !strings.Contains(n.Value, "EndpointPickerConfig") || !strings.Contains(n.Value, "plugins") {
		return nil
	}
	docs, err := config.ParseYAML([]byte(n.Value))
	if err != nil {
		return nil
	}
	var out []*yaml.Node
	for _, sub := range docs {
		if len(sub.Content) == 0 {
			continue
		}
		if k, _ := config.Str(sub.Content[0], "kind"); k == "EndpointPickerConfig" {
			out = append(out, sub.Content[0])
		}
	}
	return out
}

// podFinding is one finding of the engine checks against the llm-d routers that dial every
// pod: about the thing to change, with the first router (or engine) it disagrees with named
// and how many in the run disagree in all.
type podFinding struct {
	file, code     string
	at             config.Pos
	loc, msg, hint string
	count          int
	// order is where the finding came up in a walk of every engine against every router in
	// turn (engine, router, check), the order the findings are added in.
	order [3]int
}

// podChecks judges every KV-event publishing engine against the llm-d routers that dial every
// pod (podSubs): the endpoint binds, its port and topic match the router's, the block size and
// the replay port agree. One finding per engine and code (per router for the block size),
// naming the first router or engine it disagrees with and counting the rest: one engine
// behind 500 routers is one finding, not 500. Each engine is set against all routers at once
// through counts by port, topic prefix and block size, so the work is linear in engines plus
// routers (plus the topics' lengths), never their product. With no such routers there is
// nothing to judge (the engine rules tell an engine that connects that its consumer must bind).
func podChecks(engines []*config.Engine, podSubs []*subscriber, where func(string, config.Pos) string) []podFinding {
	if len(podSubs) == 0 {
		return nil
	}
	var out []podFinding
	x := newPodIndex(podSubs)
	type sized struct {
		ei   int
		n    int
		b    config.Token
		file string
	}
	var sizes []sized // the publishing engines with a readable --block-size, in order
	for ei, e := range engines {
		if !e.Publishes() {
			continue
		}
		ep := e.KV.EndpointOrDefault()
		loc := e.Name
		if !config.Binds(ep) {
			s := podSubs[0]
			out = append(out, podFinding{file: e.File, code: "llm-d/engine-connects", at: e.KV.At, loc: loc,
				msg:   fmt.Sprintf("the llm-d router (%s) dials every pod, but endpoint %s has no * or ::, so vLLM connects instead of binding and the router receives nothing", where(s.file, s.at), ep),
				hint:  fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config", s.socketPort),
				count: len(podSubs), order: [3]int{ei, 0, 0}})
		} else if p, ok := config.EndpointPort(ep); ok {
			if si, n := x.otherPort(p); n > 0 {
				s := podSubs[si]
				out = append(out, podFinding{file: e.File, code: "llm-d/socket-port", at: e.KV.At, loc: loc,
					msg:   fmt.Sprintf("the engine publishes on port %d but the llm-d router (%s) dials podDiscoveryConfig.socketPort %d", p, where(s.file, s.at), s.socketPort),
					hint:  fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config, or podDiscoveryConfig.socketPort: %d", s.socketPort, p),
					count: n, order: [3]int{ei, si, 0}})
			}
		}
		topic := ""
		if e.KV.TopicSet {
			topic = e.KV.Topic
		}
		if si, n := x.notPrefixOf(topic); n > 0 {
			s := podSubs[si]
			out = append(out, podFinding{file: e.File, code: "llm-d/topic-filter", at: e.KV.At, loc: loc,
				msg:   fmt.Sprintf("topic %q does not start with the llm-d router's topicFilter %q (%s): the subscription drops every event", topic, s.topicFilter, where(s.file, s.at)),
				hint:  fmt.Sprintf("set \"topic\": \"%s$(POD_IP):8000@<model>\" in --kv-events-config", s.topicFilter),
				count: n, order: [3]int{ei, si, 1}})
		}
		if b, ok := e.Flag("--block-size"); ok {
			if n, err := strconv.Atoi(b.Text); err == nil {
				sizes = append(sizes, sized{ei: ei, n: n, b: b, file: e.File})
			}
		}
		if x.replay > 0 && !e.Version.IsZero() && e.Version.Less(catalog.Version{Major: 0, Minor: 26}) {
			s := podSubs[x.replayFirst]
			out = append(out, podFinding{file: e.File, code: "vllm/replay-needs-0.26", at: e.KV.At, loc: loc,
				msg:   fmt.Sprintf("the llm-d router (%s) asks for replay on port %d, but image %s is vLLM %s: replay needs 0.26 or newer", where(s.file, s.at), s.replayPort, e.Image, e.Version),
				hint:  "use a vLLM 0.26+ image, or drop replaySocketPort",
				count: x.replay, order: [3]int{ei, x.replayFirst, 3}})
		}
	}

	// The block size is the router's to change: one finding per router, naming the first
	// engine whose --block-size differs and counting the others.
	bySize := newCounter()
	for i, z := range sizes {
		bySize.add(z.n, i)
	}
	for si, s := range podSubs {
		if s.blockSize == 0 {
			continue
		}
		i, n := bySize.other(s.blockSize)
		if n == 0 {
			continue
		}
		z := sizes[i]
		out = append(out, podFinding{file: s.file, code: "llm-d/block-size-differs", at: s.at, loc: s.blockSizeKey,
			msg:   fmt.Sprintf("%s %d differs from the engine's --block-size %d (%s): the producer README (@ebab687) says they need not match, the June 2026 guide says they must", s.blockSizeKey, s.blockSize, z.n, where(z.file, z.b.At)),
			hint:  fmt.Sprintf("set %s: %d to be safe with older releases", s.blockSizeKey, z.n),
			count: n, order: [3]int{z.ei, si, 2}})
	}
	slices.SortFunc(out, func(a, b podFinding) int { return slices.Compare(a.order[:], b.order[:]) })
	return out
}

// podIndex is what the engine checks need to know of the llm-d routers that dial every pod,
// counted once: their socket ports, topic filters and replay ports.
type podIndex struct {
	subs    []*subscriber
	byPort  counter
	filters prefixIndex
	// replay is how many routers ask for replay, replayFirst the first of them.
	replay, replayFirst int
}

func newPodIndex(subs []*subscriber) *podIndex {
	x := &podIndex{subs: subs, byPort: newCounter(), filters: newPrefixIndex()}
	for i, s := range subs {
		if s.socketPort != 0 {
			x.byPort.add(s.socketPort, i)
		}
		x.filters.add(s.topicFilter, i)
		if s.replayPort != 0 {
			if x.replay == 0 {
				x.replayFirst = i
			}
			x.replay++
		}
	}
	return x
}

// otherPort returns the first router that dials a socket port other than p, and how many do.
func (x *podIndex) otherPort(p int) (first, n int) { return x.byPort.other(p) }

// notPrefixOf returns the first router whose topic filter does not start topic, and how many
// there are.
func (x *podIndex) notPrefixOf(topic string) (first, n int) { return x.filters.notPrefixOf(topic) }

// counter counts items by an integer value, keeping the first item with each value.
type counter struct {
	total   int
	byValue map[int]int
	// firsts are the first item of the first two values met, with those values: what other
	// needs to find the first item whose value differs from any one value.
	firsts [2]struct{ value, item int }
	kinds  int
}

func newCounter() counter { return counter{byValue: map[int]int{}} }

func (c *counter) add(value, item int) {
	if c.byValue[value] == 0 && c.kinds < 2 {
		c.firsts[c.kinds] = struct{ value, item int }{value, item}
		c.kinds++
	}
	c.byValue[value]++
	c.total++
}

// other returns the first item whose value is not v, and how many items have another value.
func (c *counter) other(v int) (first, n int) {
	n = c.total - c.byValue[v]
	if n == 0 {
		return 0, 0
	}
	if c.firsts[0].value != v {
		return c.firsts[0].item, n
	}
	return c.firsts[1].item, n
}

// prefixIndex holds strings (topic filters) in a trie, so the ones that start a given string
// are found by walking that string once, whatever their number.
type prefixIndex struct {
	nodes []trieNode
	// distinct are the distinct strings in the order first met, with how many items hold each
	// and the first item; seen marks the ones found by the current walk.
	distinct []struct{ first, n int }
	seen     []int
	walk     int
	total    int
}

// trieNode is one byte of a trie: its first child and next sibling (0 for none: the root is
// never a child) and the distinct string ending here (-1 for none).
type trieNode struct {
	child, next int32
	b           byte
	end         int32
}

func newPrefixIndex() prefixIndex { return prefixIndex{nodes: []trieNode{{end: -1}}} }

// step returns the child of node n on byte b, adding it when add is set; -1 when absent.
func (x *prefixIndex) step(n int32, b byte, add bool) int32 {
	for c := x.nodes[n].child; c != 0; c = x.nodes[c].next {
		if x.nodes[c].b == b {
			return c
		}
	}
	if !add {
		return -1
	}
	c := int32(len(x.nodes))
	x.nodes = append(x.nodes, trieNode{b: b, next: x.nodes[n].child, end: -1})
	x.nodes[n].child = c
	return c
}

func (x *prefixIndex) add(s string, item int) {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		n = x.step(n, s[i], true)
	}
	if x.nodes[n].end < 0 {
		x.nodes[n].end = int32(len(x.distinct))
		x.distinct = append(x.distinct, struct{ first, n int }{item, 0})
		x.seen = append(x.seen, 0)
	}
	x.distinct[x.nodes[n].end].n++
	x.total++
}

// notPrefixOf returns the first item whose string does not start s, and how many items there
// are like it. The strings that do start s lie on s's path through the trie, so at most
// len(s)+1 distinct strings are skipped to find the first that does not.
func (x *prefixIndex) notPrefixOf(s string) (first, n int) {
	x.walk++
	n = x.total
	for i, at := 0, int32(0); at >= 0; i++ {
		if d := x.nodes[at].end; d >= 0 {
			x.seen[d] = x.walk
			n -= x.distinct[d].n
		}
		if i == len(s) {
			break
		}
		at = x.step(at, s[i], false)
	}
	if n == 0 {
		return 0, 0
	}
	for d, v := range x.distinct {
		if x.seen[d] != x.walk {
			return v.first, n
		}
	}
	return 0, 0 // unreachable: n > 0 means a distinct string was not seen
}

// epcValues reads an EndpointPickerConfig.
func epcValues(v *config.Values, root *yaml.Node, line int) {
	rf := v.NewRouter(ID, line)
	defer v.Add(rf)
	types := map[string]string{} // plugin name -> type
	precise := map[string]bool{}
	ownProducer := false
	for _, p := range config.Seq(config.Get(root, "plugins")) {
		if t, _ := config.Str(p, "type"); t == preciseProducer {
			ownProducer = true
		}
	}
	rf.Values["producer"], rf.Values["tokenizer"] = "approx", "estimate"
	for _, p := range config.Seq(config.Get(root, "plugins")) {
		t, _ := config.Str(p, "type")
		n, ok := config.Str(p, "name")
		if !ok {
			n = t
		}
		types[n] = t
		params := config.Get(p, "parameters")
		switch t {
		case "precise-prefix-cache-producer":
			precise[n] = true
			tokenProcessorValues(rf, params)
		case deprecatedScorer:
			// Deprecated: the producer and the scorer in one, reading engine events; beside a
			// producer of its own the config's producer is the one it reads.
			rf.Values["producer"] = "precise"
			if !ownProducer {
				tokenProcessorValues(rf, params)
			}
		case "token-producer", "tokenizer":
			switch {
			case config.Get(params, "vllm") != nil || config.Get(params, "modelName") != nil:
				rf.Values["tokenizer"] = "vllm"
			case config.Get(params, "udsTokenizerConfig") != nil:
				// The deprecated UDS backend: the model's own tokenizer in a sidecar, which
				// LD-01 counts as a real tokenizer too.
				rf.Values["tokenizer"] = "uds"
			}
		case "approx-prefix-cache-producer":
			for _, k := range []string{"autoTune", "blockSizeTokens", "lruCapacityPerServer", "maxPrefixBlocksToMatch", "maxPrefixTokensToMatch"} {
				if v, ok := config.Str(params, k); ok {
					rf.Values[k] = v
				}
			}
		}
	}
	for _, p := range config.Seq(config.Get(root, "plugins")) {
		if t, _ := config.Str(p, "type"); t != "prefix-cache-scorer" {
			continue
		}
		if ref, ok := config.Str(p, "parameters", "prefixMatchInfoProducerName"); ok && precise[ref] {
			rf.Values["producer"] = "precise"
		}
	}
	profiles := config.Seq(config.Get(root, "schedulingProfiles"))
	if len(profiles) > 0 {
		for _, s := range []string{"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"} {
			rf.Values[s] = "0"
		}
		// The weights are the first profile's; with several, the names of all are kept, for
		// the ranking to say which one it simulated (a profile handler picks per request).
		var names []string
		for i, p := range profiles {
			n, _ := config.Str(p, "name")
			if n == "" {
				n = "#" + strconv.Itoa(i+1)
			}
			names = append(names, n)
		}
		if len(names) > 1 {
			rf.Values["schedulingProfiles"] = strings.Join(names, ",")
		}
		for _, ref := range config.Seq(config.Get(profiles[0], "plugins")) {
			name, _ := config.Str(ref, "pluginRef")
			t := types[name]
			if t == "" {
				t = name
			}
			if t == "precise-prefix-cache-scorer" {
				t = "prefix-cache-scorer"
			}
			if _, ok := rf.Values[t]; !ok {
				continue
			}
			w, ok := config.Str(ref, "weight")
			if !ok {
				w = "1"
			}
			rf.Values[t] = w
		}
	}
}

// tokenProcessorValues reads the precise producer's tokenProcessorConfig block size, both
// spellings as written: blockSizeTokens, and blockSize, which it replaces (deprecated; used when
// blockSizeTokens is 0 or absent, kvblock/token_processor.go NewChunkedTokenDatabase).
func tokenProcessorValues(rf *config.RouterFacts, params *yaml.Node) {
	for _, k := range []string{"blockSizeTokens", "blockSize"} {
		if v, ok := config.Str(params, "tokenProcessorConfig", k); ok {
			rf.Values["tokenProcessorConfig."+k] = v
		}
	}
}
