package dynamo

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// NVIDIA Dynamo's configuration checks (config.Checker): DynamoGraphDeployments, the
// frontend's router flags and DYN_* environment and its vLLM workers, and the frontend on any
// command line for the ranking (components/src/dynamo; ROUTERS.md section 4).

// FormatGraph is a DynamoGraphDeployment.
const FormatGraph config.Format = "dynamo-graph-deployment"

// launcher is the module that starts a Dynamo vLLM worker (python -m dynamo.vllm).
const launcher = "dynamo.vllm"

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatGraph} }

// EngineLaunchers implements config.EngineLauncher: a Dynamo vLLM worker's command line is
// vLLM's.
func (Router) EngineLaunchers() []string { return []string{launcher} }

// ConfigKinds implements config.DocumentChecker.
func (Router) ConfigKinds() []string { return []string{"DynamoGraphDeployment"} }

// CheckDocument implements config.DocumentChecker: a DynamoGraphDeployment.
func (Router) CheckDocument(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if k, _ := config.Str(root, "kind"); k != "DynamoGraphDeployment" {
		return "", config.Loader{}
	}
	checkDynamo(d, root)
	return FormatGraph, config.Loader{}
}

// ReadDocument implements config.DocumentReader: a DynamoGraphDeployment's frontends, from
// their command lines and environment; its containers are read here, not by the walk.
func (Router) ReadDocument(v *config.Values, root *yaml.Node) (mine, walk bool) {
	if k, _ := config.Str(root, "kind"); k != "DynamoGraphDeployment" {
		return false, true
	}
	for _, c := range dynamoComponents(root) {
		if c.typ != "frontend" && !strings.EqualFold(c.name, "frontend") {
			continue
		}
		rf := v.NewRouter(ID, c.node.Line)
		for k, e := range c.envs {
			dynamoEnv(rf, k, e.Text)
		}
		for _, ct := range c.containers {
			for _, l := range v.File().ContainerCommands(ct) {
				if flags, ok := frontendArgs([][]config.Token{l.Argv}); ok {
					dynamoFlags(rf, flags)
				}
			}
			for k, e := range config.ReadEnv(config.Get(ct, "env")) {
				dynamoEnv(rf, k, e.Text)
			}
		}
		v.Add(rf)
	}
	return true, false
}

// ReadCommand implements config.CommandReader: a frontend on a command line.
func (Router) ReadCommand(v *config.Values, argv []config.Token) {
	if flags, ok := frontendArgs([][]config.Token{argv}); ok {
		rf := v.NewRouter(ID, argv[0].At.Line)
		dynamoFlags(rf, flags)
		v.Add(rf)
	}
}

// rules are Dynamo's config rules (components/src/dynamo, 2026).
var rules = []config.Rule{
	{Code: "dynamo/kv-events-missing", ID: "DY-01", System: display, Severity: finding.Error,
		Summary:  "a kv-mode frontend with a vLLM worker that has no --kv-events-config enabling events: the router falls back to load-only decisions",
		Versions: "releases whose dynamo.vllm no longer generates the events config (newest args.py; 1.x recipes pass it)", Source: "components/src/dynamo/vllm/args.py; KV-routing doc", Defeats: config.DefeatsKVRouter},
	{Code: "dynamo/obsolete-flag", ID: "DY-03", System: display, Severity: finding.Warning,
		Summary:  "an obsolete flag spelling (--kv-events, --no-kv-events, --kv-overlap-score-weight, --busy-threshold): renamed, and newer releases may refuse it",
		Versions: "router_args.py @028cab4, kv_router_args.py @021d616", Source: "kv_router_args.py; utils.py obsolete_flag"},
	{Code: "dynamo/approximate-mode", ID: "DY-04", System: display, Severity: finding.Info,
		Summary:  "KV events off on a kv-mode frontend: the router predicts cache state from its own decisions with a 120 s TTL",
		Versions: "kv_router_args.py @021d616", Source: "kv_router_args.py"},
	{Code: "dynamo/replica-sync", ID: "DY-05", System: display, Severity: finding.Info,
		Summary:  "several kv-mode frontends without --router-replica-sync: each tracks active blocks for its own requests only",
		Versions: "kv_router_args.py @021d616", Source: "kv_router_args.py"},
	{Code: "dynamo/unknown-router-mode", System: display, Severity: finding.Warning,
		Summary:  "a frontend --router-mode (or DYN_ROUTER_MODE) not one the frontend knows (round-robin, random, power-of-two, kv, direct, least-loaded, device-aware-weighted): argparse refuses it at start, unless a newer release added it",
		Versions: "router_args.py @028cab4", Source: "components/src/dynamo/common/configuration/groups/router_args.py (--router-mode choices)"},
	{Code: "dynamo/prefix-caching-off", ID: "DY-06", System: display, Severity: finding.Error,
		Summary:  "an aggregated or prefill worker of a kv-mode frontend with --no-enable-prefix-caching: no events config is created and nothing is reused",
		Versions: "newest components/src/dynamo/vllm/args.py", Source: "components/src/dynamo/vllm/args.py", Defeats: config.DefeatsAny},
}

// dynamoComponent is one service of a DynamoGraphDeployment, in either shape: the older
// spec.services map or the newer spec.components list.
type dynamoComponent struct {
	name       string
	typ        string // frontend, worker, main, prefill, decode
	sub        string // subComponentType
	replicas   int
	node       *yaml.Node
	containers []*yaml.Node
	envs       map[string]config.Token
}

func dynamoComponents(root *yaml.Node) []dynamoComponent {
	var out []dynamoComponent
	if svcs := config.Get(root, "spec", "services"); svcs != nil && svcs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(svcs.Content); i += 2 {
			s := config.Deref(svcs.Content[i+1])
			c := dynamoComponent{name: svcs.Content[i].Value, node: s, replicas: 1}
			c.typ, _ = config.Str(s, "componentType")
			c.sub, _ = config.Str(s, "subComponentType")
			if n, ok := config.IntAt(s, "replicas"); ok {
				c.replicas = n
			}
			if m := config.Get(s, "extraPodSpec", "mainContainer"); m != nil {
				c.containers = append(c.containers, m)
			}
			c.containers = append(c.containers, config.Seq(config.Get(s, "extraPodSpec", "containers"))...)
			c.envs = config.ReadEnv(config.Get(s, "envs"))
			out = append(out, c)
		}
	}
	for _, s := range config.Seq(config.Get(root, "spec", "components")) {
		c := dynamoComponent{node: s, replicas: 1}
		c.name, _ = config.Str(s, "name")
		c.typ, _ = config.Str(s, "type")
		if n, ok := config.IntAt(s, "replicas"); ok {
			c.replicas = n
		}
		c.containers = config.Seq(config.Get(s, "podTemplate", "spec", "containers"))
		c.envs = config.ReadEnv(config.Get(s, "envs"))
		out = append(out, c)
	}
	return out
}

// words returns every command line a container runs: command plus args, and each shell script
// it hands to sh -c.
func words(fl *config.File, c *yaml.Node) [][]config.Token {
	cmd := config.ListTokens(config.Get(c, "command"))
	args := config.ListTokens(config.Get(c, "args"))
	all := append(append([]config.Token{}, cmd...), args...)
	out := [][]config.Token{all}
	for _, n := range append(config.Seq(config.Get(c, "command")), config.Seq(config.Get(c, "args"))...) {
		if strings.ContainsAny(n.Value, " \n") {
			for _, sc := range fl.ScalarCommands(n) {
				out = append(out, sc.Argv)
			}
		}
	}
	for _, k := range []string{"command", "args"} {
		if n := config.Get(c, k); n != nil && n.Kind == yaml.ScalarNode {
			for _, sc := range fl.ScalarCommands(n) {
				out = append(out, sc.Argv)
			}
		}
	}
	return out
}

// frontendArgs returns a frontend's flags (dynamo.frontend, or the older dynamo run in=http).
func frontendArgs(lines [][]config.Token) (map[string]config.Token, bool) {
	for _, argv := range lines {
		for i, t := range argv {
			if t.Text == "dynamo.frontend" || (t.Text == "run" && i > 0 && argv[i-1].Text == "dynamo") {
				flags := map[string]config.Token{}
				for j := i + 1; j < len(argv); j++ {
					a := argv[j]
					if !strings.HasPrefix(a.Text, "--") {
						continue
					}
					name, val, has := strings.Cut(a.Text, "=")
					if !has && j+1 < len(argv) && !strings.HasPrefix(argv[j+1].Text, "-") {
						val = argv[j+1].Text
						j++
					}
					flags[name] = config.Token{Text: val, At: a.At}
				}
				return flags, true
			}
		}
	}
	return nil, false
}

// checkDynamo checks a DynamoGraphDeployment: the frontend's router flags and its vLLM workers.
func checkDynamo(d *config.Doc, root *yaml.Node) {
	fl := d.File()
	name, _ := config.Str(root, "metadata", "name")
	comps := dynamoComponents(root)
	type fe struct {
		c     dynamoComponent
		flags map[string]config.Token
	}
	var fronts []fe
	var workers []*config.Engine
	for _, c := range comps {
		for _, ct := range c.containers {
			lines := words(fl, ct)
			if flags, ok := frontendArgs(lines); ok || c.typ == "frontend" {
				if flags == nil {
					flags = map[string]config.Token{}
				}
				fronts = append(fronts, fe{c, flags})
				continue
			}
			for _, e := range fl.ContainerEngines(ct, c.replicas, nil) {
				if c.sub == "decode" || strings.Contains(strings.ToLower(c.name), "decode") && c.sub == "" && e.Flags["--disaggregation-mode"].Text == "decode" {
					e.Decode = true
				}
				if c.sub == "decode" {
					e.Decode = true
				}
				for k, v := range c.envs {
					if _, ok := e.Env[k]; !ok {
						e.Env[k] = v
					}
				}
				e.Name = c.name
				fl.CheckEngine(e)
				workers = append(workers, e)
			}
		}
	}
	for _, f := range fronts {
		loc := "spec " + f.c.name
		mode, modeAt := "round-robin", config.Pos{}
		if t, ok := f.flags["--router-mode"]; ok {
			mode, modeAt = t.Text, t.At
		} else if t, ok := f.c.envs["DYN_ROUTER_MODE"]; ok {
			mode, modeAt = t.Text, t.At
		}
		for _, old := range []struct{ flag, now string }{
			{"--kv-events", "--router-kv-events"}, {"--no-kv-events", "--no-router-kv-events"},
			{"--kv-overlap-score-weight", "--router-kv-overlap-score-weight"},
			{"--busy-threshold", "--active-decode-blocks-threshold / --active-prefill-tokens-threshold"},
		} {
			if t, ok := f.flags[old.flag]; ok {
				fl.Add("dynamo/obsolete-flag", t.At, loc,
					fmt.Sprintf("%s is an obsolete spelling: newer frontends may refuse to parse it", old.flag),
					"use "+old.now)
			}
		}
		if mode != "" && !slices.Contains(RouterModes(), mode) && !fl.TemplateValue(mode) {
			at := modeAt
			if at == (config.Pos{}) {
				at = d.Pos(f.c.node)
			}
			msg := fmt.Sprintf("router mode %q is not one Dynamo's frontend knows (%s): argparse refuses it at start; if a newer release added it, kvcheck does not know how it routes",
				mode, strings.Join(RouterModes(), ", "))
			hint := "set --router-mode (or DYN_ROUTER_MODE) to one of " + strings.Join(RouterModes(), ", ")
			if best := config.NearestName(mode, RouterModes()); best != "" {
				msg += "; did you mean " + best + "?"
				hint = "set --router-mode (or DYN_ROUTER_MODE) to " + best
			}
			fl.Add("dynamo/unknown-router-mode", at, loc, msg, hint)
		}
		if mode != "kv" {
			continue
		}
		events := true
		var evAt config.Pos
		for _, k := range []string{"--no-router-kv-events", "--no-kv-events"} {
			if t, ok := f.flags[k]; ok {
				events, evAt = false, t.At
			}
		}
		if t, ok := f.c.envs["DYN_ROUTER_USE_KV_EVENTS"]; ok && strings.EqualFold(t.Text, "false") {
			events, evAt = false, t.At
		}
		if !events {
			fl.Add("dynamo/approximate-mode", evAt, loc,
				"KV events are off: the kv router predicts cache state from its own routing decisions and forgets them after 120 s (--router-ttl-secs)",
				"drop --no-router-kv-events and give the workers --kv-events-config with enable_kv_cache_events: true for the router to see real cache state")
		}
		_, sync := f.flags["--router-replica-sync"]
		if t, ok := f.c.envs["DYN_ROUTER_REPLICA_SYNC"]; ok && strings.EqualFold(t.Text, "true") {
			sync = true
		}
		if f.c.replicas > 1 && !sync {
			fl.Add("dynamo/replica-sync", d.Pos(config.KeyNode(f.c.node, "replicas")), loc,
				fmt.Sprintf("%d kv-mode frontends without --router-replica-sync: each tracks the active blocks of its own requests only", f.c.replicas),
				"add --router-replica-sync to the frontend's args")
		}
		names := []string{}
		if name != "" {
			names = append(names, name, name+"-frontend", name+"-"+strings.ToLower(f.c.name))
		}
		fl.AddRouter(config.Router{Kind: ID, File: fl.Path(), Names: names, At: modeAt, OwnHashes: true})
		if !events {
			continue
		}
		for _, w := range workers {
			if w.Launcher != launcher || w.Decode {
				continue
			}
			if t, off := w.PrefixCachingOff(); off {
				fl.Add("dynamo/prefix-caching-off", t.At, "spec "+w.Name,
					"a worker of a kv-mode frontend runs with --no-enable-prefix-caching: no KV events config is created, nothing is reused, and the router sees no cache",
					"remove --no-enable-prefix-caching from the worker's args")
				w.PrefixCachingJudged = true
				continue
			}
			if !w.Publishes() {
				fl.Add("dynamo/kv-events-missing", w.At, "spec "+w.Name,
					"the frontend routes in kv mode, but this vLLM worker has no --kv-events-config enabling events: the router falls back to load-only decisions",
					`add --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:20080"}' to the worker's args`)
			}
		}
	}
}

// dynamoFlags reads a Dynamo frontend's router flags, obsolete spellings as the current ones.
func dynamoFlags(rf *config.RouterFacts, flags map[string]config.Token) {
	for name, t := range flags {
		switch name {
		case "--router-mode", "--router-kv-overlap-score-weight", "--router-kv-overlap-score-credit", "--router-kv-overlap-score-credit-decay",
			"--router-prefill-load-scale", "--router-ttl-secs", "--router-temperature":
			rf.Values[name] = t.Text
		case "--kv-overlap-score-weight":
			rf.Values["--router-kv-overlap-score-weight"] = t.Text
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
func dynamoEnv(rf *config.RouterFacts, k, v string) {
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
