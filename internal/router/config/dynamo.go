package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// dynamoComponent is one service of a DynamoGraphDeployment, in either shape: the older
// spec.services map or the newer spec.components list.
type dynamoComponent struct {
	name       string
	typ        string // frontend, worker, main, prefill, decode
	sub        string // subComponentType
	replicas   int
	node       *yaml.Node
	containers []*yaml.Node
	envs       map[string]token
}

func dynamoComponents(root *yaml.Node) []dynamoComponent {
	var out []dynamoComponent
	if svcs := get(root, "spec", "services"); svcs != nil && svcs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(svcs.Content); i += 2 {
			s := deref(svcs.Content[i+1])
			c := dynamoComponent{name: svcs.Content[i].Value, node: s, replicas: 1}
			c.typ, _ = str(s, "componentType")
			c.sub, _ = str(s, "subComponentType")
			if n, ok := intAt(s, "replicas"); ok {
				c.replicas = n
			}
			if m := get(s, "extraPodSpec", "mainContainer"); m != nil {
				c.containers = append(c.containers, m)
			}
			c.containers = append(c.containers, seq(get(s, "extraPodSpec", "containers"))...)
			c.envs = readEnv(get(s, "envs"))
			out = append(out, c)
		}
	}
	for _, s := range seq(get(root, "spec", "components")) {
		c := dynamoComponent{node: s, replicas: 1}
		c.name, _ = str(s, "name")
		c.typ, _ = str(s, "type")
		if n, ok := intAt(s, "replicas"); ok {
			c.replicas = n
		}
		c.containers = seq(get(s, "podTemplate", "spec", "containers"))
		c.envs = readEnv(get(s, "envs"))
		out = append(out, c)
	}
	return out
}

// words returns every command line a container runs: command plus args, and each shell script
// it hands to sh -c.
func (fl *File) words(c *yaml.Node) [][]token {
	cmd := listTokens(get(c, "command"))
	args := listTokens(get(c, "args"))
	all := append(append([]token{}, cmd...), args...)
	out := [][]token{all}
	for _, n := range append(seq(get(c, "command")), seq(get(c, "args"))...) {
		if strings.ContainsAny(n.Value, " \n") {
			for _, sc := range fl.scalarCommands(n) {
				out = append(out, sc.argv)
			}
		}
	}
	for _, k := range []string{"command", "args"} {
		if n := get(c, k); n != nil && n.Kind == yaml.ScalarNode {
			for _, sc := range fl.scalarCommands(n) {
				out = append(out, sc.argv)
			}
		}
	}
	return out
}

// frontendArgs returns a frontend's flags (dynamo.frontend, or the older dynamo run in=http).
func frontendArgs(lines [][]token) (map[string]token, bool) {
	for _, argv := range lines {
		for i, t := range argv {
			if t.text == "dynamo.frontend" || (t.text == "run" && i > 0 && argv[i-1].text == "dynamo") {
				flags := map[string]token{}
				for j := i + 1; j < len(argv); j++ {
					a := argv[j]
					if !strings.HasPrefix(a.text, "--") {
						continue
					}
					name, val, has := strings.Cut(a.text, "=")
					if !has && j+1 < len(argv) && !strings.HasPrefix(argv[j+1].text, "-") {
						val = argv[j+1].text
						j++
					}
					flags[name] = token{text: val, at: a.at}
				}
				return flags, true
			}
		}
	}
	return nil, false
}

// DynamoRouterModes are the --router-mode choices of Dynamo's frontend
// (router_args.py@028cab4, ROUTERS.md section 4).
func DynamoRouterModes() []string {
	return []string{"round-robin", "random", "power-of-two", "kv", "direct", "least-loaded", "device-aware-weighted"}
}

// checkDynamo checks a DynamoGraphDeployment: the frontend's router flags and its vLLM workers.
func (d *ydoc) checkDynamo(root *yaml.Node) {
	fl := d.fl
	name, _ := str(root, "metadata", "name")
	comps := dynamoComponents(root)
	type fe struct {
		c     dynamoComponent
		flags map[string]token
	}
	var fronts []fe
	var workers []*engine
	for _, c := range comps {
		for _, ct := range c.containers {
			lines := fl.words(ct)
			if flags, ok := frontendArgs(lines); ok || c.typ == "frontend" {
				if flags == nil {
					flags = map[string]token{}
				}
				fronts = append(fronts, fe{c, flags})
				continue
			}
			for _, e := range fl.containerEngines(ct, c.replicas, nil) {
				if c.sub == "decode" || strings.Contains(strings.ToLower(c.name), "decode") && c.sub == "" && e.flags["--disaggregation-mode"].text == "decode" {
					e.decode = true
				}
				if c.sub == "decode" {
					e.decode = true
				}
				for k, v := range c.envs {
					if _, ok := e.env[k]; !ok {
						e.env[k] = v
					}
				}
				e.name = c.name
				fl.checkEngine(e)
				workers = append(workers, e)
			}
		}
	}
	for _, f := range fronts {
		loc := "spec " + f.c.name
		mode, modeAt := "round-robin", pos{}
		if t, ok := f.flags["--router-mode"]; ok {
			mode, modeAt = t.text, t.at
		} else if t, ok := f.c.envs["DYN_ROUTER_MODE"]; ok {
			mode, modeAt = t.text, t.at
		}
		for _, old := range []struct{ flag, now string }{
			{"--kv-events", "--router-kv-events"}, {"--no-kv-events", "--no-router-kv-events"},
			{"--kv-overlap-score-weight", "--router-kv-overlap-score-weight"},
			{"--busy-threshold", "--active-decode-blocks-threshold / --active-prefill-tokens-threshold"},
		} {
			if t, ok := f.flags[old.flag]; ok {
				fl.addConfig("dynamo/obsolete-flag", t.at, loc,
					fmt.Sprintf("%s is an obsolete spelling: newer frontends may refuse to parse it", old.flag),
					"use "+old.now)
			}
		}
		if mode != "" && !slices.Contains(DynamoRouterModes(), mode) && !fl.templateValue(mode) {
			at := modeAt
			if at == (pos{}) {
				at = d.pos(f.c.node)
			}
			msg := fmt.Sprintf("router mode %q is not one Dynamo's frontend knows (%s): argparse refuses it at start; if a newer release added it, kvcheck does not know how it routes",
				mode, strings.Join(DynamoRouterModes(), ", "))
			hint := "set --router-mode (or DYN_ROUTER_MODE) to one of " + strings.Join(DynamoRouterModes(), ", ")
			if best := nearestName(mode, DynamoRouterModes()); best != "" {
				msg += "; did you mean " + best + "?"
				hint = "set --router-mode (or DYN_ROUTER_MODE) to " + best
			}
			fl.addConfig("dynamo/unknown-router-mode", at, loc, msg, hint)
		}
		if mode != "kv" {
			continue
		}
		events := true
		var evAt pos
		for _, k := range []string{"--no-router-kv-events", "--no-kv-events"} {
			if t, ok := f.flags[k]; ok {
				events, evAt = false, t.at
			}
		}
		if t, ok := f.c.envs["DYN_ROUTER_USE_KV_EVENTS"]; ok && strings.EqualFold(t.text, "false") {
			events, evAt = false, t.at
		}
		if !events {
			fl.addConfig("dynamo/approximate-mode", evAt, loc,
				"KV events are off: the kv router predicts cache state from its own routing decisions and forgets them after 120 s (--router-ttl-secs)",
				"drop --no-router-kv-events and give the workers --kv-events-config with enable_kv_cache_events: true for the router to see real cache state")
		}
		_, sync := f.flags["--router-replica-sync"]
		if t, ok := f.c.envs["DYN_ROUTER_REPLICA_SYNC"]; ok && strings.EqualFold(t.text, "true") {
			sync = true
		}
		if f.c.replicas > 1 && !sync {
			fl.addConfig("dynamo/replica-sync", d.pos(keyNode(f.c.node, "replicas")), loc,
				fmt.Sprintf("%d kv-mode frontends without --router-replica-sync: each tracks the active blocks of its own requests only", f.c.replicas),
				"add --router-replica-sync to the frontend's args")
		}
		names := []string{}
		if name != "" {
			names = append(names, name, name+"-frontend", name+"-"+strings.ToLower(f.c.name))
		}
		fl.facts().routers = append(fl.facts().routers, kvRouter{file: fl.path, kind: "dynamo", names: names, at: modeAt, events: events})
		if !events {
			continue
		}
		for _, w := range workers {
			if !w.dynamo || w.decode {
				continue
			}
			if t, off := w.prefixCachingOff(); off {
				fl.addConfig("dynamo/prefix-caching-off", t.at, "spec "+w.name,
					"a worker of a kv-mode frontend runs with --no-enable-prefix-caching: no KV events config is created, nothing is reused, and the router sees no cache",
					"remove --no-enable-prefix-caching from the worker's args")
				w.flaggedOff = true
				continue
			}
			if !w.publishes() {
				fl.addConfig("dynamo/kv-events-missing", w.at, "spec "+w.name,
					"the frontend routes in kv mode, but this vLLM worker has no --kv-events-config enabling events: the router falls back to load-only decisions",
					`add --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:20080"}' to the worker's args`)
			}
		}
	}
}
