package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// ContainerEngines reads a container (command, args, env, image) run by replicas pods and
// returns the vLLM servers it starts.
func (fl *File) ContainerEngines(c *yaml.Node, replicas int, labels map[string]string) []*Engine {
	return fl.containerEngines(c, fl.ContainerCommands(c), replicas, labels)
}

func (fl *File) containerEngines(c *yaml.Node, launches []Launch, replicas int, labels map[string]string) []*Engine {
	image, _ := Str(c, "image")
	name, _ := Str(c, "name")
	var out []*Engine
	for _, l := range launches {
		if e := fl.l.engineFrom(fl.path, l.Argv, l.At, l.ImageArgs); e != nil {
			out = append(out, e)
		}
	}
	env := containerEnv(c)
	var imageAt Pos
	if n := Get(c, "image"); n != nil {
		imageAt = Pos{n.Line, n.Column}
	}
	for _, e := range out {
		e.Name, e.Image, e.ImageAt, e.Replicas, e.Labels = name, image, imageAt, replicas, labels
		e.Version, _ = VLLMImageVersion(image)
		for k, v := range env {
			e.Env[k] = v
		}
	}
	return out
}

// containerEnv reads a container's env, or a compose service's environment.
func containerEnv(c *yaml.Node) map[string]Token {
	if env := ReadEnv(Get(c, "env")); env != nil {
		return env
	}
	return ReadEnv(Get(c, "environment"))
}

// container checks one container (or compose service, read as one): the products' hooks on
// it, the engines it starts and the products' programs on its command lines. It reports
// whether it starts an engine or a product's program.
func (d *Doc) container(c *yaml.Node, replicas int, labels map[string]string, compose bool) bool {
	fl := d.fl
	ct := &Container{Node: c, Env: containerEnv(c), Replicas: replicas, Compose: compose}
	ct.Name, _ = Str(c, "name")
	ct.Image, _ = Str(c, "image")
	for _, k := range fl.l.o.Checkers {
		if cc, ok := k.(ContainerChecker); ok {
			cc.CheckContainer(d, ct)
		}
	}
	found := false
	launches := fl.ContainerCommands(c)
	for _, e := range fl.containerEngines(c, launches, replicas, labels) {
		fl.CheckEngine(e)
		found = true
	}
	for _, k := range fl.l.o.Checkers {
		if cc, ok := k.(CommandChecker); ok {
			for _, l := range launches {
				if cc.CheckCommand(fl, l.Argv, replicas) != "" {
					found = true
				}
			}
		}
	}
	return found
}

// workloads finds the pod specs of a document (any mapping with containers, a mainContainer),
// checks the engines and programs they start and records them; it reports whether there was
// one.
func (d *Doc) workloads(root *yaml.Node) bool {
	found := false
	var walk func(n *yaml.Node, replicas int, labels map[string]string, depth int)
	walk = func(n *yaml.Node, replicas int, labels map[string]string, depth int) {
		n = Deref(n)
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, replicas, labels, depth+1)
			}
			return
		case yaml.MappingNode:
		default:
			return
		}
		if r, ok := IntAt(n, "replicas"); ok {
			replicas = r
		}
		if l := Get(n, "metadata", "labels"); l != nil {
			labels = map[string]string{}
			for i := 0; i+1 < len(l.Content); i += 2 {
				labels[l.Content[i].Value] = l.Content[i+1].Value
			}
		}
		var containers []*yaml.Node
		containers = append(containers, Seq(Get(n, "containers"))...)
		if m := Get(n, "mainContainer"); m != nil && m.Kind == yaml.MappingNode {
			containers = append(containers, m)
		}
		for _, c := range containers {
			if d.container(c, replicas, labels, false) {
				found = true
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if k == "containers" || k == "mainContainer" || k == "initContainers" {
				continue
			}
			walk(n.Content[i+1], replicas, labels, depth+1)
		}
	}
	walk(root, 1, nil, 0)
	return found
}

// composeFile recognises a docker-compose file: services whose entries have an image or a build.
func composeFile(root *yaml.Node) bool {
	s := Get(root, "services")
	if s == nil || s.Kind != yaml.MappingNode || len(s.Content) == 0 {
		return false
	}
	for i := 1; i < len(s.Content); i += 2 {
		svc := Deref(s.Content[i])
		if Get(svc, "image") != nil || Get(svc, "build") != nil {
			return true
		}
	}
	return false
}

// checkCompose checks each service of a compose file as a container: entrypoint as its
// command, command as its args.
func (d *Doc) checkCompose(root *yaml.Node) {
	s := Get(root, "services")
	for i := 0; i+1 < len(s.Content); i += 2 {
		svc := Deref(s.Content[i+1])
		if svc == nil || svc.Kind != yaml.MappingNode {
			continue
		}
		replicas := 1
		if r, ok := IntAt(svc, "deploy", "replicas"); ok {
			replicas = r
		}
		c := &yaml.Node{Kind: yaml.MappingNode, Line: svc.Line, Column: svc.Column}
		for j := 0; j+1 < len(svc.Content); j += 2 {
			k := svc.Content[j].Value
			switch k {
			case "entrypoint":
				c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "command"}, svc.Content[j+1])
			case "command":
				c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "args"}, svc.Content[j+1])
			case "image", "environment":
				c.Content = append(c.Content, svc.Content[j], svc.Content[j+1])
			}
		}
		c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "name"}, &yaml.Node{Kind: yaml.ScalarNode, Value: s.Content[i].Value})
		d.container(c, replicas, nil, true)
	}
}

// CheckEngine runs the single-file engine rules on e and records it for the checks across
// files.
func (fl *File) CheckEngine(e *Engine) {
	fl.factsOf().engines = append(fl.factsOf().engines, e)
	where := e.Name
	if where == "" {
		where = "vllm"
	}
	fl.DuplicateFlags(e.Uses, "vLLM", where, vllmAppendFlags)
	for _, u := range e.Uses {
		fl.duplicateJSONKeys(u, "vLLM", where)
	}
	if newest := fl.l.o.VLLMNewest; !newest.IsZero() && newest.Less(e.Version) {
		at := e.ImageAt
		if at.Line == 0 {
			at = e.At
		}
		fl.Add("vllm/newer-than-catalog", at, where,
			fmt.Sprintf("image %s is vLLM %s, newer than this kvcheck's metric catalog knows (up to vLLM %s): metric names are checked against vLLM %s, and renames after %s are not known",
				e.Image, e.Version, newest, fl.l.o.VLLMTarget, newest),
			fmt.Sprintf("use a kvcheck whose catalog reaches vLLM %d.%d, or judge at the newest it knows with --target vllm=%s", e.Version.Major, e.Version.Minor, newest))
	}
	for _, bad := range []string{"--enable-kv-cache-events", "--kv-events-publisher"} {
		if t, ok := e.Flags[bad]; ok {
			fl.Add("vllm/no-such-flag", t.At, where,
				fmt.Sprintf("%s is not a vLLM flag: the server refuses to start", bad),
				`pass --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}' instead`)
		}
	}
	kv := e.KV
	if kv == nil {
		return
	}
	if kv.Parsed && !kv.Enable {
		msg := "--kv-events-config does not set \"enable_kv_cache_events\": true, so the engine publishes nothing"
		if kv.EnableSet {
			msg = "--kv-events-config sets \"enable_kv_cache_events\": false, so the engine publishes nothing"
		}
		fl.Add("vllm/kv-events-disabled", kv.At, where, msg, `set "enable_kv_cache_events": true in --kv-events-config`)
	}
	if kv.Parsed && kv.Enable && kv.Publisher == "" && !e.Version.IsZero() && !(catalog.Version{Major: 0, Minor: 11}).Less(e.Version) {
		fl.Add("vllm/publisher-null", kv.At, where,
			fmt.Sprintf("vLLM %s (image %s) defaults the KV-event publisher to \"null\": with publisher omitted nothing is sent", e.Version, e.Image),
			`set "publisher": "zmq" in --kv-events-config`)
	}
	if kv.Parsed && kv.Enable && kv.Replay != "" {
		ep, okE := EndpointPort(kv.EndpointOrDefault())
		rp, okR := EndpointPort(kv.Replay)
		n := e.DPSize()
		// Rank r binds endpoint port + r and replay port + r (offset_endpoint_port): the two
		// ranges of n ports overlap when the base ports are fewer than n apart.
		if okE && okR && rp-ep < n && ep-rp < n {
			fl.Add("vllm/replay-port-collision", kv.At, where,
				fmt.Sprintf("with %d data-parallel rank(s) the engine binds ports %d..%d for events and %d..%d for replay: they overlap, so a rank cannot bind", n, ep, ep+n-1, rp, rp+n-1),
				fmt.Sprintf("set replay_endpoint to a port at least %d away from the endpoint's, such as tcp://*:%d", n, ep+n))
		}
	}
}

// RecordEngine records an engine a product read from its own configuration (a chart's model
// entry) for the checks across files, without the command-line rules.
func (fl *File) RecordEngine(e *Engine) { fl.factsOf().engines = append(fl.factsOf().engines, e) }
