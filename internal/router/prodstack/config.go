package prodstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/vllmrouter"
)

// production-stack's configuration checks (config.Checker): the Helm chart's values
// (routerSpec, servingEngineSpec.modelSpec[]) and the router's vllm_router command line in a
// container, a compose service or a script (vllm-project/production-stack @a6c01db; ROUTERS.md
// section 3).

// FormatValues is the production-stack chart's values.
const FormatValues config.Format = "production-stack-values"

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatValues} }

// ConfigKinds implements config.DocumentChecker: the chart's values are told by their keys.
func (Router) ConfigKinds() []string { return nil }

// values reports the chart's values: a servingEngineSpec, or a routerSpec with a routingLogic.
func values(root *yaml.Node) bool {
	return config.Get(root, "servingEngineSpec") != nil || config.Get(root, "routerSpec", "routingLogic") != nil
}

// CheckDocument implements config.DocumentChecker: the chart's values.
func (Router) CheckDocument(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if !values(root) {
		return "", config.Loader{}
	}
	checkProdStack(d, root)
	return FormatValues, config.LoaderHelm
}

// CheckCommand implements config.CommandChecker: the router on a command line.
func (Router) CheckCommand(f *config.File, argv []config.Token, replicas int) config.Format {
	p := prodStackFrom(argv)
	if p == nil {
		return ""
	}
	p.replicas = replicas
	checkProdStackCLI(f, p)
	return config.FormatShellScript
}

// router is a production-stack router for the checks across files: another layer reaches it
// by the service the chart names <release>-router-service.
func router(fl *config.File, at config.Pos) config.Router {
	return config.Router{Kind: ID, File: fl.Path(), At: at, Service: func(first string) bool { return strings.HasSuffix(first, "-router-service") }}
}

// ReadDocument implements config.DocumentReader: the chart's values.
func (Router) ReadDocument(v *config.Values, root *yaml.Node) (mine, walk bool) {
	if !values(root) {
		return false, true
	}
	prodStackValues(v, root)
	return true, true
}

// ReadCommand implements config.CommandReader: the router's flags on a command line, under
// the chart's names.
func (Router) ReadCommand(v *config.Values, argv []config.Token) {
	if standalone, _ := vllmrouter.Standalone(argv); standalone {
		return
	}
	for i, t := range argv {
		if !routerProgram(t.Text) {
			continue
		}
		rf := v.NewRouter(ID, t.At.Line)
		for j := i + 1; j < len(argv); j++ {
			name, val, has := strings.Cut(argv[j].Text, "=")
			if !strings.HasPrefix(name, "--") {
				continue
			}
			if !has && j+1 < len(argv) && !strings.HasPrefix(argv[j+1].Text, "--") {
				val = argv[j+1].Text
				j++
			}
			prodStackFlag(rf, name, val)
		}
		v.Add(rf)
		return
	}
}

// routerProgram reports the word that starts the router: vllm_router, vllm-router, python -m
// vllm_router.app, by any path. vLLM Router (vllm-project/router) installs a vllm-router too:
// a line vllmrouter.Standalone says is its (--policy, --worker-urls, ... and none of this
// router's --routing-logic, --service-discovery, --static-backends) is left to it.
func routerProgram(word string) bool {
	b := word[strings.LastIndexByte(word, '/')+1:]
	return b == "vllm_router.app" || b == "vllm-router" || b == "vllm_router"
}

// rules are production-stack's config rules (vllm-project/production-stack @a6c01db, 2026-08-05).
var rules = []config.Rule{
	{Code: "production-stack/prefix-caching-off", ID: "PS-01", System: display, Severity: finding.Error,
		Summary:  "a modelSpec with vllmConfig but without enablePrefixCaching: true: the chart renders --no-enable-prefix-caching, so nothing is reused and no events are published",
		Versions: "chart @a6c01db (template read again @010004e)", Source: "helm/templates/deployment-vllm-multi.yaml", Defeats: config.DefeatsAny},
	{Code: "production-stack/session-key-missing", ID: "PS-02", System: display, Severity: finding.Error,
		Summary:  "routingLogic session with an empty sessionKey (or a vllm_router command line's --routing-logic session without --session-key): the router raises ValueError at start",
		Versions: "router @a6c01db", Source: "src/vllm_router/routers/routing_logic.py; templates/deployment-router.yaml", Defeats: config.DefeatsSession},
	{Code: "production-stack/kvaware-chat", ID: "PS-03", System: display, Severity: finding.Warning,
		Summary:  "kvaware and loadaware (routingLogic, or --routing-logic in routerSpec.extraArgs, which wins, or on a vllm_router command line) tokenize only a request's prompt field: chat completions are matched on an empty string",
		Versions: "router @a6c01db", Source: "src/vllm_router/routers/routing_logic.py"},
	{Code: "production-stack/kvaware-controller", ID: "PS-04", System: display, Severity: finding.Error,
		Summary:  "kvaware or loadaware (routingLogic, or --routing-logic in routerSpec.extraArgs, which wins) without LMCache enabled with its controller on routerSpec.lmcacheControllerPort: the router has no controller to ask",
		Versions: "chart @a6c01db", Source: "tutorials/assets/values-17-kv-aware.yaml; templates", Defeats: config.DefeatsKVRouter},
	{Code: "production-stack/prefixaware-replicas", ID: "PS-05", System: display, Severity: finding.Warning,
		Summary:  "prefixaware on several router replicas (routerSpec.replicaCount, or the replicas of a workload whose command line starts vllm_router): each keeps its own in-memory trie, never evicted",
		Versions: "router @a6c01db", Source: "prefix/hashtrie.py; routing_logic.py"},
	{Code: "production-stack/prefix-min-match-length", ID: "PS-06", System: display, Severity: finding.Info,
		Summary:  "prefixMinMatchLength (or a command line's --prefix-min-match-length) not a multiple of 128: the trie matches 128-character chunks",
		Versions: "router @a6c01db", Source: "prefix/hashtrie.py; parsers/parser.py"},
	{Code: "production-stack/loadaware-schema", ID: "PS-07", System: display, Severity: finding.Warning,
		Summary:  "routingLogic loadaware on a chart whose schema enum lacks it: helm refuses the values",
		Versions: "chart @a6c01db (loadaware added to the router by PR #1035)", Source: "helm/values.schema.json"},
	{Code: "production-stack/unknown-routing-logic", System: display, Severity: finding.Warning,
		Summary:  "routingLogic (or --routing-logic in routerSpec.extraArgs or on a vllm_router command line: a container's command/args, a compose service, a script) not one the router knows (roundrobin, session, prefixaware, kvaware, loadaware, disaggregated_prefill, disaggregated_prefill_orchestrated): the router refuses it at start and the chart's schema refuses the values, unless a newer release added it",
		Versions: "router and chart @a6c01db (loadaware from PR #1035)", Source: "src/vllm_router/parsers/parser.py (--routing-logic choices); helm/values.schema.json"},
	{Code: "production-stack/unknown-key", System: display, Severity: finding.Info,
		Summary:  "a routerSpec, servingEngineSpec.modelSpec[] or modelSpec[].vllmConfig key the chart does not read (a newer chart's key, or a typo too far from any known key to name)",
		Versions: "chart @a6c01db", Source: "helm/values.schema.json; helm/templates"},
	{Code: "production-stack/key-typo", System: display, Severity: finding.Warning,
		Summary:  "a routerSpec, modelSpec[] or vllmConfig key one or two edits from one the chart reads (routingLogik, sesionKey, enablePrefixcaching): the chart ignores it and renders its default",
		Versions: "chart @a6c01db", Source: "helm/values.schema.json; helm/templates"},
}

// prodStackCLI is production-stack's router as a command line starts it (vllm_router,
// vllm-router, python -m vllm_router.app): in a container's command/args, a compose service or
// a script, outside the chart's routerSpec.
type prodStackCLI struct {
	at config.Pos // the program word
	// flags are the router's flags in order, each as given: --name=value or --name value.
	flags []cliFlag
	// replicas is how many pods run the line (a Deployment's replicas; 1 in a script).
	replicas int
}

// cliFlag is one flag of a command line with its value and where each is written.
type cliFlag struct {
	name, val config.Token
	// hasVal: the flag carries a value (--name=value, or a next word that is not a flag).
	hasVal bool
}

// prodStackFrom recognises production-stack's router in a command line, or returns nil.
func prodStackFrom(argv []config.Token) *prodStackCLI {
	if standalone, _ := vllmrouter.Standalone(argv); standalone {
		return nil
	}
	for i, t := range argv {
		if !routerProgram(t.Text) {
			continue
		}
		return &prodStackCLI{at: t.At, flags: cliFlags(argv[i+1:]), replicas: 1}
	}
	return nil
}

// cliFlags reads the --flags of a command line's arguments: --name=value, --name value (when
// the next word is not a flag), or --name alone.
func cliFlags(args []config.Token) []cliFlag {
	var out []cliFlag
	for j := 0; j < len(args); j++ {
		name, val, has := strings.Cut(args[j].Text, "=")
		if !strings.HasPrefix(name, "--") {
			continue
		}
		f := cliFlag{name: config.Token{Text: name, At: args[j].At}}
		switch {
		case has:
			f.val, f.hasVal = config.Token{Text: val, At: args[j].At}, true
		case j+1 < len(args) && !strings.HasPrefix(args[j+1].Text, "--"):
			f.val, f.hasVal = args[j+1], true
			j++
		}
		out = append(out, f)
	}
	return out
}

// last returns the value argparse keeps for a flag: the last one given.
func (p *prodStackCLI) last(name string) (cliFlag, bool) {
	for i := len(p.flags) - 1; i >= 0; i-- {
		if p.flags[i].name.Text == name {
			return p.flags[i], true
		}
	}
	return cliFlag{}, false
}

// checkProdStackCLI runs the production-stack rules that read the router's own flags on a
// router a command line starts, as checkProdStack runs them on routerSpec: an unknown
// --routing-logic, session without --session-key, kvaware or loadaware on chat traffic,
// prefixaware on several pods, a --prefix-min-match-length off the 128-character chunks. The
// rules that read the chart (its schema's enum, lmcacheConfig beside the router) do not apply.
func checkProdStackCLI(fl *config.File, p *prodStackCLI) {
	loc := "vllm_router command line"
	// vllm_router's parser is plain argparse: no flag of it appends, none has a --no- twin.
	var uses []config.FlagUse
	for _, f := range p.flags {
		uses = append(uses, config.FlagUse{Dest: f.name.Text, Name: f.name, Val: f.val, HasVal: f.hasVal})
	}
	fl.DuplicateFlags(uses, "vllm_router", loc, nil)
	lf, set := p.last("--routing-logic")
	logic, at := lf.val.Text, lf.val.At
	if set && !lf.hasVal {
		logic, at = "", lf.name.At
	}
	switch {
	case !set || logic == "" || fl.TemplateValue(logic) || strings.Contains(logic, "$"):
		// No logic (the router refuses to start; assess says so), or one the chart or the
		// shell fills in: nothing to judge.
	case logic == "session":
		if k, ok := p.last("--session-key"); !ok || strings.TrimSpace(k.val.Text) == "" {
			fl.Add("production-stack/session-key-missing", at, loc,
				"--routing-logic session without --session-key: the router raises \"SessionRouter must be initialized with a session_key\" at start",
				"pass --session-key with the header your clients send, such as --session-key x-user-id")
		}
	case logic == "kvaware" || logic == "loadaware":
		fl.Add("production-stack/kvaware-chat", at, loc,
			fmt.Sprintf("%s tokenizes only the request's prompt field: /v1/chat/completions requests are matched on an empty string", logic),
			"for chat traffic use --routing-logic prefixaware or session (with --session-key)")
	case logic == "prefixaware":
		if p.replicas > 1 {
			fl.Add("production-stack/prefixaware-replicas", at, loc,
				fmt.Sprintf("prefixaware on %d router replicas: each keeps its own in-memory trie (never evicted), so a conversation's turns spread over tries", p.replicas),
				"run one router replica, or put session affinity in front of the routers")
		}
	case !slices.Contains(RoutingLogics(), logic):
		unknownRoutingLogicAt(fl, at, loc, logic)
	}
	if m, ok := p.last("--prefix-min-match-length"); ok {
		if n, err := strconv.Atoi(m.val.Text); err == nil && n > 0 && n%128 != 0 {
			fl.Add("production-stack/prefix-min-match-length", m.val.At, loc,
				fmt.Sprintf("--prefix-min-match-length %d is not a multiple of 128: the trie matches whole 128-character chunks", n),
				fmt.Sprintf("pass --prefix-min-match-length %d", (n+127)/128*128))
		}
	}
	if logic == "kvaware" || logic == "prefixaware" || logic == "loadaware" {
		fl.AddRouter(router(fl, at))
	}
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
func checkProdStack(d *config.Doc, root *yaml.Node) {
	fl := d.File()
	for i, ms := range config.Seq(config.Get(root, "servingEngineSpec", "modelSpec")) {
		name, _ := config.Str(ms, "name")
		loc := fmt.Sprintf("servingEngineSpec.modelSpec[%d]", i)
		if name != "" {
			loc += " " + name
		}
		d.UnknownKeys(ms, loc, prodStackModelKeys, ID)
		vc := config.Get(ms, "vllmConfig")
		d.UnknownKeys(vc, loc+".vllmConfig", prodStackVLLMKeys, ID)
		off := false
		var offAt config.Pos
		// The chart's `with .vllmConfig` skips an empty map, and an --enable-prefix-caching in
		// extraArgs comes after the chart's --no-enable-prefix-caching, so it wins.
		reenabled := false
		for _, a := range config.Seq(config.Get(vc, "extraArgs")) {
			if strings.TrimSpace(a.Value) == "--enable-prefix-caching" {
				reenabled = true
			}
		}
		if vc != nil && vc.Kind == yaml.MappingNode && len(vc.Content) > 0 && !reenabled {
			on, set := config.BoolAt(vc, "enablePrefixCaching")
			if !on {
				off = true
				if set {
					offAt = d.Pos(config.Get(vc, "enablePrefixCaching"))
					f := fl.Add("production-stack/prefix-caching-off", offAt, loc+".vllmConfig.enablePrefixCaching",
						"enablePrefixCaching is not true, so the chart renders --no-enable-prefix-caching: nothing is reused and no KV events are published",
						"set vllmConfig.enablePrefixCaching: true")
					d.ReplaceFix(f, config.Get(vc, "enablePrefixCaching"), "true")
				} else {
					offAt = d.Pos(config.KeyNode(ms, "vllmConfig"))
					f := fl.Add("production-stack/prefix-caching-off", offAt, loc+".vllmConfig",
						"vllmConfig has no enablePrefixCaching, and the chart renders --no-enable-prefix-caching whenever it is not true: nothing is reused and no KV events are published",
						"add vllmConfig.enablePrefixCaching: true")
					// A misspelt enablePrefixCaching is renamed by its key-typo fix; adding the
					// key too would write it twice.
					if !config.Misspelt(vc, "enablePrefixCaching") {
						d.InsertFix(f, vc, "enablePrefixCaching", "true")
					}
				}
			}
		}
		repo, _ := config.Str(ms, "repository")
		tag, _ := config.Str(ms, "tag")
		model, _ := config.Str(ms, "modelURL")
		replicas, ok := config.IntAt(ms, "replicaCount")
		if !ok {
			replicas = 1
		}
		e := &config.Engine{File: fl.Path(), At: d.Pos(ms), Name: loc, Model: model, Replicas: replicas, Image: repo + ":" + tag,
			Flags: map[string]config.Token{}, Env: config.ReadEnv(config.Get(ms, "env")), FromValues: true}
		if e.Env == nil {
			e.Env = map[string]config.Token{}
		}
		e.Version, _ = config.VLLMImageVersion(e.Image)
		if off {
			e.Flags["--no-enable-prefix-caching"] = config.Token{At: offAt}
		}
		fl.RecordEngine(e)
	}
	rsNode := config.Get(root, "routerSpec")
	d.UnknownKeys(rsNode, "routerSpec", prodStackRouterKeys, ID)
	keyLogic, _ := config.Str(rsNode, "routingLogic")
	logic, logicNode, loc := keyLogic, config.Get(rsNode, "routingLogic"), "routerSpec.routingLogic"
	sessionKey, _ := config.Str(rsNode, "sessionKey")
	// routerSpec.extraArgs are rendered after the chart's --routing-logic and --session-key
	// (templates/deployment-router.yaml @a6c01db:117-140), and argparse keeps the last: a logic
	// or key given there is the one the router runs, and the rules judge it.
	args := config.Seq(config.Get(rsNode, "extraArgs"))
	for i, a := range args {
		name, val, has := strings.Cut(strings.TrimSpace(a.Value), "=")
		if name != "--routing-logic" && name != "--session-key" {
			continue
		}
		at := a
		if !has && i+1 < len(args) && !strings.HasPrefix(args[i+1].Value, "-") {
			val, at = args[i+1].Value, args[i+1]
		}
		val = strings.TrimSpace(val)
		if name == "--session-key" {
			sessionKey = val
			continue
		}
		if !slices.Contains(RoutingLogics(), val) {
			unknownRoutingLogic(d, at, "routerSpec.extraArgs", val)
		}
		logic, logicNode, loc = val, at, "routerSpec.extraArgs"
	}
	at := d.Pos(logicNode)
	fromArgs := loc == "routerSpec.extraArgs"
	where := "routingLogic "
	if fromArgs {
		where = "--routing-logic "
	}
	// The chart's schema judges the routingLogic key whatever extraArgs say.
	if keyLogic != "" && !slices.Contains(RoutingLogics(), keyLogic) {
		unknownRoutingLogic(d, config.Get(rsNode, "routingLogic"), "routerSpec.routingLogic", keyLogic)
	}
	if keyLogic == "loadaware" {
		fl.Add("production-stack/loadaware-schema", d.Pos(config.Get(rsNode, "routingLogic")), "routerSpec.routingLogic",
			"loadaware is not in the chart's values.schema.json enum at a6c01db: helm refuses these values",
			"use a chart release whose schema lists loadaware, or pass --routing-logic loadaware in routerSpec.extraArgs")
	}
	switch logic {
	case "session":
		if strings.TrimSpace(sessionKey) == "" {
			fl.Add("production-stack/session-key-missing", at, loc,
				where+"session without a sessionKey: the router raises \"SessionRouter must be initialized with a session_key\" at start",
				"set routerSpec.sessionKey to the header your clients send, such as x-user-id")
		}
	case "kvaware", "loadaware":
		fl.Add("production-stack/kvaware-chat", at, loc,
			fmt.Sprintf("%s%s tokenizes only the request's prompt field: /v1/chat/completions requests are matched on an empty string", where, logic),
			"for chat traffic use routingLogic: prefixaware or session (with sessionKey)")
		ctlPort, portSet := config.IntAt(rsNode, "lmcacheControllerPort")
		good := false
		for _, ms := range config.Seq(config.Get(root, "servingEngineSpec", "modelSpec")) {
			en, _ := config.BoolAt(ms, "lmcacheConfig", "enabled")
			ctl, _ := config.BoolAt(ms, "lmcacheConfig", "enableController")
			p, pSet := config.IntAt(ms, "lmcacheConfig", "controllerPort")
			if en && ctl && (!portSet || !pSet || p == ctlPort) {
				good = true
			}
		}
		if !good {
			fl.Add("production-stack/kvaware-controller", at, loc,
				fmt.Sprintf("%s%s asks the LMCache controller where prefixes are cached, but no modelSpec enables lmcacheConfig with enableController on routerSpec.lmcacheControllerPort", where, logic),
				"set lmcacheConfig.enabled: true, lmcacheConfig.enableController: true and lmcacheConfig.controllerPort equal to routerSpec.lmcacheControllerPort")
		}
	case "prefixaware":
		if n, ok := config.IntAt(rsNode, "replicaCount"); ok && n > 1 {
			fl.Add("production-stack/prefixaware-replicas", d.Pos(config.Get(rsNode, "replicaCount")), "routerSpec.replicaCount",
				fmt.Sprintf("prefixaware on %d router replicas: each keeps its own in-memory trie (never evicted), so a conversation's turns spread over tries", n),
				"set routerSpec.replicaCount: 1, or put session affinity in front of the routers")
		}
	}
	if n, ok := config.IntAt(rsNode, "prefixMinMatchLength"); ok && n > 0 && n%128 != 0 {
		fl.Add("production-stack/prefix-min-match-length", d.Pos(config.Get(rsNode, "prefixMinMatchLength")), "routerSpec.prefixMinMatchLength",
			fmt.Sprintf("prefixMinMatchLength %d is not a multiple of 128: the trie matches whole 128-character chunks", n),
			fmt.Sprintf("set routerSpec.prefixMinMatchLength: %d", (n+127)/128*128))
	}
	if logic == "kvaware" || logic == "prefixaware" || logic == "loadaware" {
		fl.AddRouter(router(fl, at))
	}
}

// unknownRoutingLogic reports a production-stack routing logic the router does not know: at
// a6c01db argparse refuses it ("invalid choice") and the chart's schema refuses the values, so
// the router does not start; a newer release may have added it, so it is a warning naming the
// logics kvcheck knows (and the nearest, when one or two edits away), not an error.
func unknownRoutingLogic(d *config.Doc, n *yaml.Node, loc, logic string) {
	unknownRoutingLogicAt(d.File(), d.Pos(n), loc, logic)
}

// unknownRoutingLogicAt reports an unknown routing logic written at at (unknownRoutingLogic).
func unknownRoutingLogicAt(fl *config.File, at config.Pos, loc, logic string) {
	if fl.TemplateValue(logic) {
		return
	}
	known := RoutingLogics()
	msg := fmt.Sprintf("routing logic %q is not one production-stack's router knows (%s): at a6c01db the router refuses it at start (invalid choice) and the chart's schema refuses the values; if a newer release added it, kvcheck does not know how it routes",
		logic, strings.Join(known, ", "))
	hint := "set it to one of " + strings.Join(known, ", ")
	if best := config.NearestName(logic, known); best != "" {
		msg += "; did you mean " + best + "?"
		hint = "set it to " + best
	}
	fl.Add("production-stack/unknown-routing-logic", at, loc, msg, hint)
}

// prodStackFlag reads one vllm_router flag into the Helm values' names.
func prodStackFlag(rf *config.RouterFacts, name, val string) {
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

// prodStackValues reads production-stack Helm values: the router's settings, and LMCache on
// the engines the checks already read from the same modelSpecs.
func prodStackValues(v *config.Values, root *yaml.Node) {
	rs := config.Get(root, "routerSpec")
	rf := v.NewRouter(ID, root.Line)
	defer v.Add(rf)
	rf.Values["routingLogic"] = "roundrobin" // the chart's default
	for _, k := range []string{"routingLogic", "sessionKey", "prefixMinMatchLength", "replicaCount"} {
		if v, ok := config.Str(rs, k); ok && v != "" {
			rf.Values[k] = v
		}
	}
	for i, a := range config.Seq(config.Get(rs, "extraArgs")) {
		name, val, has := strings.Cut(a.Value, "=")
		if !has && i+1 < len(config.Seq(config.Get(rs, "extraArgs"))) {
			val = config.Seq(config.Get(rs, "extraArgs"))[i+1].Value
		}
		prodStackFlag(rf, name, val)
	}
	for _, ms := range config.Seq(config.Get(root, "servingEngineSpec", "modelSpec")) {
		en, _ := config.BoolAt(ms, "lmcacheConfig", "enabled")
		ctl, _ := config.BoolAt(ms, "lmcacheConfig", "enableController")
		for _, e := range v.EnginesAt(ms.Line) {
			e.LMCache, e.LMCacheController = e.LMCache || en, e.LMCacheController || ctl
		}
	}
}
