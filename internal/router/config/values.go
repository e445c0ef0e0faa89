package config

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Deployment is what configuration files show of a deployment, read with the config checks'
// own parsers, for kvcheck assess's router ranking: the Kubernetes objects, the vLLM engines,
// and each router with the values its file sets (weights, thresholds, TTLs, tokenizer, session
// key, routing logic or mode, pre-call checks, Redis). Keys a router does not know stay the
// checks' findings; they are not read here.
type Deployment struct {
	Objects []Object
	Engines []EngineFacts
	Routers []RouterFacts
}

// Object is a Kubernetes object (a document with apiVersion and kind).
type Object struct {
	Kind, APIVersion, File string
	Line                   int
}

// EngineFacts is one vLLM server a file starts.
type EngineFacts struct {
	File string
	Line int
	Name string
	// Image is the container image; Version the vLLM release its tag names ("" when it does
	// not say).
	Image, Version string
	// KVEvents: --kv-events-config with enable_kv_cache_events true; PrefixCachingOff:
	// --no-enable-prefix-caching (or a production-stack vllmConfig that renders it).
	KVEvents, PrefixCachingOff bool
	// LMCache: production-stack lmcacheConfig.enabled, an LMCache image or LMCACHE_* in the
	// environment; LMCacheController: lmcacheConfig.enableController or LMCACHE_ENABLE_CONTROLLER.
	LMCache, LMCacheController bool
}

// The router kinds of RouterFacts, as the checks name them.
const (
	RouterLLMD      = "llm-d"
	RouterProdStack = "production-stack"
	RouterDynamo    = "dynamo"
	RouterSGLang    = "sglang"
	RouterRay       = "ray"
	RouterLiteLLM   = "litellm"
)

// RouterFacts is one router a file sets up and the values the file gives it, in the product's
// own spelling:
//   - llm-d: producer (precise or approx: precise only when a prefix-cache-scorer names the
//     precise producer, else the scorer reads the approximate one), tokenizer (vllm, uds for
//     the deprecated udsTokenizerConfig, or estimate), the scorers' weights by plugin type (queue-scorer, kv-cache-utilization-scorer,
//     prefix-cache-scorer; a scorer listed without weight is 1, one not listed 0), the
//     approximate producer's autoTune, blockSizeTokens, lruCapacityPerServer,
//     maxPrefixBlocksToMatch, maxPrefixTokensToMatch, and the precise producer's
//     tokenProcessorConfig.blockSizeTokens and tokenProcessorConfig.blockSize (as written);
//   - production-stack: routingLogic, sessionKey, prefixMinMatchLength, replicaCount, and the
//     router's --kv-aware-threshold and --loadaware-beta;
//   - dynamo: the frontend's flags (--router-mode, --router-kv-overlap-score-weight,
//     --router-kv-overlap-score-credit, --router-kv-overlap-score-credit-decay,
//     --router-prefill-load-scale, --router-kv-events true/false, --router-ttl-secs,
//     --router-temperature, the deprecated --load-aware), from its command line or DYN_* environment, obsolete spellings
//     read as the current ones;
//   - sglang: the gateway's flags as given (--policy, --cache-threshold, ...) and launcher
//     (python or rust);
//   - ray: request_router_kwargs;
//   - litellm: routing_strategy, optional_pre_call_checks (comma-separated),
//     deployment_affinity_ttl_seconds, redis (true when redis_host or redis_url is set),
//     replicas (the proxy's pods, when the file says), enable_anthropic_prompt_caching.
type RouterFacts struct {
	Kind   string
	File   string
	Line   int
	Values map[string]string
}

// Source is one file of a lint run as DeploymentOf reads it: its path, its content as read (nil
// for a file that is not text) and the facts its checks recorded (nil for none).
type Source struct {
	Path     string
	Original []byte
	Facts    *Facts
}

// DeploymentOf reads what the files of a lint run show. Files that are not YAML are read as
// shell scripts and Python Ray Serve applications, as the checks read them.
func DeploymentOf(files []Source) Deployment {
	var dep Deployment
	for _, r := range files {
		if r.Facts != nil {
			for _, e := range r.Facts.engines {
				ef := EngineFacts{File: e.file, Line: e.at.line, Name: e.name, Image: e.image, KVEvents: e.publishes()}
				if !e.version.IsZero() {
					ef.Version = e.version.String()
				}
				_, ef.PrefixCachingOff = e.prefixCachingOff()
				_, lm := e.env["LMCACHE_USE_EXPERIMENTAL"]
				_, ctl := e.env["LMCACHE_ENABLE_CONTROLLER"]
				ef.LMCache = lm || ctl || strings.Contains(e.image, "lmcache")
				ef.LMCacheController = ctl && strings.EqualFold(strings.Trim(e.env["LMCACHE_ENABLE_CONTROLLER"].text, `"'`), "true")
				dep.Engines = append(dep.Engines, ef)
			}
		}
		if len(r.Original) == 0 {
			continue
		}
		fl := &File{path: r.Path, src: r.Original, lines: textpos.New(r.Original)}
		docs, err := ParseYAML(r.Original)
		if err != nil || !yamlLike(r.Path, docs) {
			dep.Routers = append(dep.Routers, fl.textRouters()...)
			continue
		}
		budget := maxAliasNodes
		if aliasBomb(docs, &budget) {
			continue
		}
		for _, d := range docs {
			if len(d.Content) == 0 || d.Content[0].Kind != yaml.MappingNode {
				continue
			}
			fl.docValues(d.Content[0], &dep)
		}
	}
	return dep
}

// yamlLike tells a YAML file from a script that happens to parse as one scalar.
func yamlLike(path string, docs []*yaml.Node) bool {
	for _, d := range docs {
		if len(d.Content) > 0 && d.Content[0].Kind == yaml.MappingNode {
			return true
		}
	}
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

func (fl *File) router(kind string, line int) *RouterFacts {
	return &RouterFacts{Kind: kind, File: fl.path, Line: line, Values: map[string]string{}}
}

// docValues reads one YAML document.
func (fl *File) docValues(root *yaml.Node, dep *Deployment) {
	kind, _ := str(root, "kind")
	api, _ := str(root, "apiVersion")
	if kind != "" && api != "" {
		dep.Objects = append(dep.Objects, Object{Kind: kind, APIVersion: api, File: fl.path, Line: root.Line})
	}
	switch {
	case kind == "EndpointPickerConfig":
		dep.Routers = append(dep.Routers, *fl.epcValues(root, root.Line))
	case kind == "DynamoGraphDeployment":
		for _, c := range dynamoComponents(root) {
			if c.typ != "frontend" && !strings.EqualFold(c.name, "frontend") {
				continue
			}
			rf := fl.router(RouterDynamo, c.node.Line)
			for k, v := range c.envs {
				dynamoEnv(rf, k, v.text)
			}
			for _, ct := range c.containers {
				for _, l := range fl.containerCommands(ct) {
					if flags, ok := frontendArgs([][]token{l.argv}); ok {
						dynamoFlags(rf, flags)
					}
				}
				for k, v := range readEnv(get(ct, "env")) {
					dynamoEnv(rf, k, v.text)
				}
			}
			dep.Routers = append(dep.Routers, *rf)
		}
		return // its containers are the components read above
	case get(root, "model_list") != nil || (get(root, "router_settings") != nil && get(root, "litellm_settings") != nil):
		dep.Routers = append(dep.Routers, *fl.litellmValues(root, 0))
	case get(root, "proxy_config", "model_list") != nil:
		n, ok := intAt(root, "replicaCount")
		if !ok {
			n = 1
		}
		dep.Routers = append(dep.Routers, *fl.litellmValues(get(root, "proxy_config"), n))
	case get(root, "servingEngineSpec") != nil || get(root, "routerSpec", "routingLogic") != nil:
		dep.Routers = append(dep.Routers, *fl.prodStackValues(root, dep))
	}
	fl.walkValues(root, dep, 0)
}

// walkValues finds what any workload holds: containers starting a router (an SGLang gateway, a
// Dynamo frontend, production-stack's vllm_router), Ray's request_router_config, and
// EndpointPickerConfigs held in strings (a ConfigMap, the router chart's pluginsCustomConfig).
func (fl *File) walkValues(n *yaml.Node, dep *Deployment, depth int) {
	n = deref(n)
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		for _, r := range heldEPCs(n) {
			dep.Routers = append(dep.Routers, *fl.epcValues(r, n.Line))
		}
	case yaml.MappingNode:
		if rc := get(n, "request_router_config"); rc != nil {
			if cls, _ := str(rc, "request_router_class"); strings.HasSuffix(cls, "PrefixCacheAffinityRouter") {
				rf := fl.router(RouterRay, rc.Line)
				if kw := get(rc, "request_router_kwargs"); kw != nil && kw.Kind == yaml.MappingNode {
					for i := 0; i+1 < len(kw.Content); i += 2 {
						if v := deref(kw.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode {
							rf.Values[kw.Content[i].Value] = v.Value
						}
					}
				}
				dep.Routers = append(dep.Routers, *rf)
			}
		}
		for _, c := range seq(get(n, "containers")) {
			for _, l := range fl.containerCommands(c) {
				dep.Routers = append(dep.Routers, fl.commandRouters(l.argv)...)
			}
		}
		for i := 1; i < len(n.Content); i += 2 {
			if k := n.Content[i-1].Value; k == "containers" || k == "request_router_config" {
				continue
			}
			fl.walkValues(n.Content[i], dep, depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			fl.walkValues(c, dep, depth+1)
		}
	}
}

// commandRouters reads the routers one command line starts.
func (fl *File) commandRouters(argv []token) []RouterFacts {
	var out []RouterFacts
	if g := sglangFrom(fl.path, argv); g != nil {
		rf := fl.router(RouterSGLang, g.at.line)
		rf.Values["launcher"] = "python"
		if g.rust {
			rf.Values["launcher"] = "rust"
		}
		for k, v := range g.flags {
			rf.Values[k] = v.text
		}
		out = append(out, *rf)
	}
	if flags, ok := frontendArgs([][]token{argv}); ok {
		rf := fl.router(RouterDynamo, argv[0].at.line)
		dynamoFlags(rf, flags)
		out = append(out, *rf)
	}
	for i, t := range argv {
		if b := t.text[strings.LastIndexByte(t.text, '/')+1:]; b != "vllm_router.app" && b != "vllm-router" && b != "vllm_router" {
			continue
		}
		rf := fl.router(RouterProdStack, t.at.line)
		for j := i + 1; j < len(argv); j++ {
			name, val, has := strings.Cut(argv[j].text, "=")
			if !strings.HasPrefix(name, "--") {
				continue
			}
			if !has && j+1 < len(argv) && !strings.HasPrefix(argv[j+1].text, "--") {
				val = argv[j+1].text
				j++
			}
			prodStackFlag(rf, name, val)
		}
		out = append(out, *rf)
		break
	}
	return out
}

// prodStackFlag reads one vllm_router flag into the Helm values' names.
func prodStackFlag(rf *RouterFacts, name, val string) {
	switch name {
	case "--routing-logic":
		rf.Values["routingLogic"] = val
	case "--session-key":
		rf.Values["sessionKey"] = val
	case "--prefix-min-match-length":
		rf.Values["prefixMinMatchLength"] = val
	case "--kv-aware-threshold", "--loadaware-beta":
		rf.Values[name] = val
	}
}

var (
	rayKwargRE = regexp.MustCompile(`["']?(imbalanced_threshold|match_rate_threshold|do_eviction|eviction_threshold_chars|eviction_target_chars|eviction_interval_secs)["']?\s*[:=]\s*([\w.]+(?:\(["']?inf["']?\))?)`)
)

// textRouters reads a file that is not YAML: the command lines of a shell script, and a
// Python Ray Serve application naming PrefixCacheAffinityRouter.
func (fl *File) textRouters() []RouterFacts {
	var out []RouterFacts
	for _, cmd := range shellCommands(fl.src) {
		out = append(out, fl.commandRouters(cmd.argv)...)
	}
	if loc := rayClassRE.FindIndex(fl.src); loc != nil {
		l, _ := fl.lines.Pos(loc[0])
		rf := fl.router(RouterRay, l)
		for _, m := range rayKwargRE.FindAllSubmatch(fl.src, -1) {
			rf.Values[string(m[1])] = string(m[2])
		}
		out = append(out, *rf)
	}
	return out
}

// epcValues reads an EndpointPickerConfig.
func (fl *File) epcValues(root *yaml.Node, line int) *RouterFacts {
	rf := fl.router(RouterLLMD, line)
	types := map[string]string{} // plugin name -> type
	precise := map[string]bool{}
	rf.Values["producer"], rf.Values["tokenizer"] = "approx", "estimate"
	for _, p := range seq(get(root, "plugins")) {
		t, _ := str(p, "type")
		n, ok := str(p, "name")
		if !ok {
			n = t
		}
		types[n] = t
		params := get(p, "parameters")
		switch t {
		case "precise-prefix-cache-producer":
			precise[n] = true
			tokenProcessorValues(rf, params)
		case "precise-prefix-cache-scorer":
			// Deprecated: the producer and the scorer in one, reading engine events.
			rf.Values["producer"] = "precise"
			tokenProcessorValues(rf, params)
		case "token-producer", "tokenizer":
			switch {
			case get(params, "vllm") != nil || get(params, "modelName") != nil:
				rf.Values["tokenizer"] = "vllm"
			case get(params, "udsTokenizerConfig") != nil:
				// The deprecated UDS backend: the model's own tokenizer in a sidecar, which
				// LD-01 counts as a real tokenizer too.
				rf.Values["tokenizer"] = "uds"
			}
		case "approx-prefix-cache-producer":
			for _, k := range []string{"autoTune", "blockSizeTokens", "lruCapacityPerServer", "maxPrefixBlocksToMatch", "maxPrefixTokensToMatch"} {
				if v, ok := str(params, k); ok {
					rf.Values[k] = v
				}
			}
		}
	}
	for _, p := range seq(get(root, "plugins")) {
		if t, _ := str(p, "type"); t != "prefix-cache-scorer" {
			continue
		}
		if ref, ok := str(p, "parameters", "prefixMatchInfoProducerName"); ok && precise[ref] {
			rf.Values["producer"] = "precise"
		}
	}
	profiles := seq(get(root, "schedulingProfiles"))
	if len(profiles) > 0 {
		for _, s := range []string{"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"} {
			rf.Values[s] = "0"
		}
		// The weights are the first profile's; with several, the names of all are kept, for
		// the ranking to say which one it simulated (a profile handler picks per request).
		var names []string
		for i, p := range profiles {
			n, _ := str(p, "name")
			if n == "" {
				n = "#" + strconv.Itoa(i+1)
			}
			names = append(names, n)
		}
		if len(names) > 1 {
			rf.Values["schedulingProfiles"] = strings.Join(names, ",")
		}
		for _, ref := range seq(get(profiles[0], "plugins")) {
			name, _ := str(ref, "pluginRef")
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
			w, ok := str(ref, "weight")
			if !ok {
				w = "1"
			}
			rf.Values[t] = w
		}
	}
	return rf
}

// tokenProcessorValues reads the precise producer's tokenProcessorConfig block size, both
// spellings as written: blockSizeTokens, and blockSize, which it replaces (deprecated; used when
// blockSizeTokens is 0 or absent, kvblock/token_processor.go NewChunkedTokenDatabase).
func tokenProcessorValues(rf *RouterFacts, params *yaml.Node) {
	for _, k := range []string{"blockSizeTokens", "blockSize"} {
		if v, ok := str(params, "tokenProcessorConfig", k); ok {
			rf.Values["tokenProcessorConfig."+k] = v
		}
	}
}

// dynamoFlags reads a Dynamo frontend's router flags, obsolete spellings as the current ones.
func dynamoFlags(rf *RouterFacts, flags map[string]token) {
	for name, t := range flags {
		switch name {
		case "--router-mode", "--router-kv-overlap-score-weight", "--router-kv-overlap-score-credit", "--router-kv-overlap-score-credit-decay",
			"--router-prefill-load-scale", "--router-ttl-secs", "--router-temperature":
			rf.Values[name] = t.text
		case "--kv-overlap-score-weight":
			rf.Values["--router-kv-overlap-score-weight"] = t.text
		case "--router-kv-events", "--kv-events":
			rf.Values["--router-kv-events"] = "true"
		case "--no-router-kv-events", "--no-kv-events":
			rf.Values["--router-kv-events"] = "false"
		case "--load-aware":
			rf.Values["--load-aware"] = "true"
		}
	}
}

// dynamoEnv reads a DYN_* variable as its flag (ROUTERS.md §4).
func dynamoEnv(rf *RouterFacts, k, v string) {
	flag := map[string]string{
		"DYN_ROUTER_MODE": "--router-mode", "DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT": "--router-kv-overlap-score-weight",
		"DYN_OVERLAP_SCORE_WEIGHT": "--router-kv-overlap-score-weight", "DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT": "--router-kv-overlap-score-credit",
		"DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT_DECAY": "--router-kv-overlap-score-credit-decay", "DYN_ROUTER_PREFILL_LOAD_SCALE": "--router-prefill-load-scale", "DYN_ROUTER_LOAD_AWARE": "--load-aware",
		"DYN_ROUTER_USE_KV_EVENTS": "--router-kv-events", "DYN_ROUTER_TTL_SECS": "--router-ttl-secs", "DYN_ROUTER_TEMPERATURE": "--router-temperature",
	}[k]
	if flag != "" && v != "" {
		rf.Values[flag] = strings.Trim(v, `"'`)
	}
}

// litellmValues reads a LiteLLM proxy config; replicas is the proxy's pod count when the file
// says it, else 0.
func (fl *File) litellmValues(root *yaml.Node, replicas int) *RouterFacts {
	rf := fl.router(RouterLiteLLM, root.Line)
	rs := get(root, "router_settings")
	for _, k := range []string{"routing_strategy", "deployment_affinity_ttl_seconds"} {
		if v, ok := str(rs, k); ok {
			rf.Values[k] = v
		}
	}
	var checks []string
	for _, c := range seq(get(rs, "optional_pre_call_checks")) {
		checks = append(checks, c.Value)
	}
	if len(checks) > 0 {
		rf.Values["optional_pre_call_checks"] = strings.Join(checks, ",")
	}
	_, host := str(rs, "redis_host")
	_, url := str(rs, "redis_url")
	rf.Values["redis"] = "false"
	if host || url {
		rf.Values["redis"] = "true"
	}
	if replicas > 0 {
		rf.Values["replicas"] = strconv.Itoa(replicas)
	}
	if on, set := boolAt(get(root, "litellm_settings"), "enable_anthropic_prompt_caching"); set {
		rf.Values["enable_anthropic_prompt_caching"] = map[bool]string{true: "true", false: "false"}[on]
	}
	return rf
}

// prodStackValues reads production-stack Helm values: the router's settings, and LMCache on
// the engines the checks already read from the same modelSpecs.
func (fl *File) prodStackValues(root *yaml.Node, dep *Deployment) *RouterFacts {
	rs := get(root, "routerSpec")
	rf := fl.router(RouterProdStack, root.Line)
	rf.Values["routingLogic"] = "roundrobin" // the chart's default
	for _, k := range []string{"routingLogic", "sessionKey", "prefixMinMatchLength", "replicaCount"} {
		if v, ok := str(rs, k); ok && v != "" {
			rf.Values[k] = v
		}
	}
	for i, a := range seq(get(rs, "extraArgs")) {
		name, val, has := strings.Cut(a.Value, "=")
		if !has && i+1 < len(seq(get(rs, "extraArgs"))) {
			val = seq(get(rs, "extraArgs"))[i+1].Value
		}
		prodStackFlag(rf, name, val)
	}
	for _, ms := range seq(get(root, "servingEngineSpec", "modelSpec")) {
		en, _ := boolAt(ms, "lmcacheConfig", "enabled")
		ctl, _ := boolAt(ms, "lmcacheConfig", "enableController")
		for i := range dep.Engines {
			if e := &dep.Engines[i]; e.File == fl.path && e.Line == ms.Line {
				e.LMCache, e.LMCacheController = e.LMCache || en, e.LMCacheController || ctl
			}
		}
	}
	return rf
}
