package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/textpos"
)

// token is one word of a command line and where it starts in the file.
type token struct {
	text string
	at   pos
}

// engine is one vLLM server as a file starts it: a container, a compose service, a script line.
type engine struct {
	file     string
	at       pos
	name     string
	model    string
	replicas int
	image    string
	imageAt  pos             // where the image is named; zero when not
	version  catalog.Version // from the image tag; zero when unknown
	flags    map[string]token
	env      map[string]token // value and where it is set; absent when not set
	labels   map[string]string
	dynamo   bool // a Dynamo vLLM worker (python -m dynamo.vllm)
	// prodStack: a production-stack modelSpec, whose prefix caching PS-01 already judges.
	prodStack bool
	// flaggedOff: DY-06 already reported its prefix caching.
	flaggedOff bool
	decode     bool // a disaggregated decode worker
	kv         *kvEvents
	// uses are the flags of its command line in order, as vLLM's parser reads them, for the
	// repetitions it keeps silently; none for a production-stack modelSpec.
	uses []flagUse
}

// kvEvents is a parsed --kv-events-config.
type kvEvents struct {
	at                    pos
	parsed                bool
	enable, enableSet     bool
	publisher             string
	endpoint              string
	replay                string
	topic                 string
	endpointSet, topicSet bool
}

func (e *engine) flag(names ...string) (token, bool) {
	for _, n := range names {
		if t, ok := e.flags[n]; ok {
			return t, true
		}
	}
	return token{}, false
}

// prefixCachingOff reports an explicit --no-enable-prefix-caching (the last of the two wins).
func (e *engine) prefixCachingOff() (token, bool) {
	off, okOff := e.flags["--no-enable-prefix-caching"]
	on, okOn := e.flags["--enable-prefix-caching"]
	if !okOff {
		return token{}, false
	}
	if okOn && (on.at.line > off.at.line || (on.at.line == off.at.line && on.at.col > off.at.col)) {
		return token{}, false
	}
	return off, true
}

// publishes reports whether the engine's KV events are switched on.
func (e *engine) publishes() bool { return e.kv != nil && e.kv.enable }

// dpSize is --data-parallel-size (or -dp), 1 when unset or unreadable.
func (e *engine) dpSize() int {
	if t, ok := e.flag("--data-parallel-size", "-dp"); ok {
		if n, err := strconv.Atoi(t.text); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// valueFlags are the vLLM flags whose value is the next word when not written --flag=value.
// Other flags are treated as switches; a switch followed by a word would otherwise eat it.
var valueFlags = map[string]bool{
	"--model": true, "--kv-events-config": true, "--prefix-caching-hash-algo": true,
	"--block-size": true, "--data-parallel-size": true, "-dp": true, "--port": true, "--host": true,
	"--served-model-name": true, "--kv-transfer-config": true, "--tensor-parallel-size": true, "-tp": true,
	"--max-model-len": true, "--gpu-memory-utilization": true, "--kv-events-publisher": true,
	"--disaggregation-mode": true, "--data-parallel-rank": true, "--data-parallel-start-rank": true,
}

// engineFromArgv recognises a vLLM server in a command line: vllm serve, the OpenAI API server
// module, or a Dynamo vLLM worker. imageArgs says the words are the arguments of a vLLM image's
// own entrypoint (no command given).
func engineFromArgv(file string, argv []token, at pos) *engine {
	return engineFrom(file, argv, at, false)
}

func engineFrom(file string, argv []token, at pos, imageArgs bool) *engine {
	start := -1
	e := &engine{file: file, at: at, replicas: 1, flags: map[string]token{}, env: map[string]token{}}
	for i, t := range argv {
		base := path.Base(t.text)
		switch {
		case base == "vllm" && i+1 < len(argv) && argv[i+1].text == "serve":
			start = i + 2
			if start < len(argv) && !strings.HasPrefix(argv[start].text, "-") {
				e.model = argv[start].text
				start++
			}
		case t.text == "vllm.entrypoints.openai.api_server":
			start = i + 1
		case t.text == "dynamo.vllm":
			start = i + 1
			e.dynamo = true
		}
		if start >= 0 {
			e.at = t.at
			break
		}
	}
	if start < 0 {
		if !imageArgs || len(argv) == 0 || !strings.HasPrefix(argv[0].text, "-") {
			return nil
		}
		start = 0
		e.at = argv[0].at
	}
	for i := start; i < len(argv); i++ {
		t := argv[i]
		if !strings.HasPrefix(t.text, "-") || t.text == "-" {
			continue
		}
		name, val, hasVal := strings.Cut(t.text, "=")
		if dotted, field, ok := strings.Cut(name, "--kv-events-config."); ok && dotted == "" {
			// --kv-events-config.field value: one field of the config.
			v := ""
			if hasVal {
				v = val
			} else if i+1 < len(argv) {
				v = argv[i+1].text
				i++
			}
			e.dottedKV(field, v, t.at)
			continue
		}
		u := flagUse{dest: vllmDest(name), name: token{text: name, at: t.at}, val: token{text: val, at: t.at}, hasVal: hasVal}
		if !hasVal && i+1 < len(argv) && (valueFlags[name] || !strings.HasPrefix(argv[i+1].text, "-")) {
			// The value word; a switch followed by a word keeps it to show, not to read.
			u.val, u.hasVal = argv[i+1], true
			if valueFlags[name] {
				val = argv[i+1].text
				i++
			}
		}
		e.uses = append(e.uses, u)
		e.flags[name] = token{text: val, at: t.at}
	}
	if t, ok := e.flags["--model"]; ok && e.model == "" {
		e.model = t.text
	}
	if t, ok := e.flags["--kv-events-config"]; ok {
		e.kv = parseKVEvents(t)
	}
	if t, ok := e.flags["--disaggregation-mode"]; ok && t.text == "decode" {
		e.decode = true
	}
	if _, ok := e.flags["--is-decode-worker"]; ok {
		e.decode = true
	}
	return e
}

func (e *engine) dottedKV(field, v string, at pos) {
	if e.kv == nil {
		e.kv = &kvEvents{at: at, parsed: true}
	}
	switch field {
	case "enable_kv_cache_events":
		b, _ := strconv.ParseBool(strings.ToLower(v))
		e.kv.enable, e.kv.enableSet = b, true
	case "publisher":
		e.kv.publisher = v
	case "endpoint":
		e.kv.endpoint, e.kv.endpointSet = v, true
	case "replay_endpoint":
		e.kv.replay = v
	case "topic":
		e.kv.topic, e.kv.topicSet = v, true
	}
}

func parseKVEvents(t token) *kvEvents {
	kv := &kvEvents{at: t.at}
	var m map[string]any
	if err := json.Unmarshal([]byte(t.text), &m); err != nil {
		return kv
	}
	kv.parsed = true
	switch v := m["enable_kv_cache_events"].(type) {
	case bool:
		kv.enable, kv.enableSet = v, true
	case string:
		b, _ := strconv.ParseBool(strings.ToLower(v))
		kv.enable, kv.enableSet = b, true
	}
	kv.publisher, _ = m["publisher"].(string)
	kv.endpoint, kv.endpointSet = m["endpoint"].(string)
	kv.replay, _ = m["replay_endpoint"].(string)
	kv.topic, kv.topicSet = m["topic"].(string)
	return kv
}

// endpointOrDefault is the PUB endpoint vLLM uses.
func (kv *kvEvents) endpointOrDefault() string {
	if kv.endpointSet {
		return kv.endpoint
	}
	return "tcp://*:5557"
}

// endpointPort returns the TCP port of a ZMQ endpoint; false for inproc, ipc and ports written
// as variables.
func endpointPort(ep string) (int, bool) {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return 0, false
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(p)
	return n, err == nil
}

// binds reports whether vLLM binds the endpoint (it does when it has * or ::) rather than
// connecting to it (kv_events.py).
func binds(ep string) bool { return strings.Contains(ep, "*") || strings.Contains(ep, "::") }

// imageVersionRE reads a vLLM release from an image tag: vllm/vllm-openai:v0.11.0.
var imageVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// vllmImageVersion returns the vLLM version an image's tag names, for images that are vLLM's
// own builds (vllm/vllm-*, or a vllm-openai image another registry rebuilds); other images
// (llm-d, LMCache, Dynamo's nvcr.io/nvidia/ai-dynamo/vllm-runtime) carry their own versions.
func vllmImageVersion(image string) (catalog.Version, bool) {
	image = shellDefault(strings.TrimSpace(image))
	ref, tag, ok := strings.Cut(image[strings.LastIndexByte(image, '/')+1:], ":")
	if !ok {
		return catalog.Version{}, false
	}
	owner := image[:max(strings.LastIndexByte(image, '/'), 0)]
	owner = owner[strings.LastIndexByte(owner, '/')+1:]
	repo := image[:strings.LastIndexByte(image, '/')+1] + ref
	vllms := strings.HasPrefix(ref, "vllm-openai") || (owner == "vllm" && strings.HasPrefix(ref, "vllm"))
	if strings.Contains(repo, "lmcache") || !vllms {
		return catalog.Version{}, false
	}
	m := imageVersionRE.FindStringSubmatch(tag)
	if m == nil {
		return catalog.Version{}, false
	}
	v, err := catalog.ParseVersion(strings.Join([]string{m[1], m[2], orZero(m[3])}, "."))
	return v, err == nil
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// shellDefault resolves ${VAR:-default} to its default, as compose files write images.
func shellDefault(s string) string {
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") {
		if _, d, ok := strings.Cut(s[2:len(s)-1], ":-"); ok {
			return d
		}
	}
	return s
}

// locator finds words of a command in the file, in order, for their positions.
type locator struct {
	fl     *File
	cursor int
	host   pos
}

func (fl *File) locatorAt(n *yaml.Node) *locator {
	p := pos{n.Line, n.Column}
	return &locator{fl: fl, cursor: fl.lines.Offset(n.Line, n.Column), host: p}
}

func (lc *locator) find(text string) pos {
	if text == "" {
		return lc.host
	}
	probe := text
	if len(probe) > 40 {
		probe = probe[:40]
	}
	j := bytes.Index(lc.fl.src[lc.cursor:], []byte(probe))
	if j < 0 {
		return lc.host
	}
	at := lc.cursor + j
	lc.cursor = at + len(probe)
	l, c := lc.fl.lines.Pos(at)
	return pos{l, c}
}

// command is one simple command of a shell text.
type command struct {
	argv []token
	at   pos
}

// shellWords splits shell text into simple commands of words: quotes, backslash escapes and
// line continuations as sh reads them; ;, &&, ||, | and newlines end a command. Variables are
// kept as written. pos maps a byte offset of the text to the file.
func shellWords(s string, at func(off int) pos) []command {
	var out []command
	var cur []token
	var w strings.Builder
	inWord := false
	wordStart := 0
	flushWord := func() {
		if inWord {
			cur = append(cur, token{text: w.String(), at: at(wordStart)})
			w.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			out = append(out, command{argv: cur, at: cur[0].at})
			cur = nil
		}
	}
	start := func(i int) {
		if !inWord {
			inWord, wordStart = true, i
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // continuation
		case c == '\\' && i+1 < len(s) && s[i+1] == '\r' && i+2 < len(s) && s[i+2] == '\n':
			i += 2
		case c == '\\' && i+1 < len(s):
			start(i)
			w.WriteByte(s[i+1])
			i++
		case c == '\'':
			start(i)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				w.WriteString(s[i+1:])
				i = len(s)
				break
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			start(i)
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					if s[i+1] != '\n' {
						w.WriteByte(s[i+1])
					}
					i++
					continue
				}
				w.WriteByte(s[i])
			}
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			flushCmd()
		case c == ' ' || c == '\t' || c == '\r':
			flushWord()
		case c == '\n' || c == ';' || c == '|' || c == '&' || c == '>' || c == '<':
			if c == '>' || c == '<' {
				// A redirection: its target is not an argument, nor is the descriptor
				// number written against it (2>&1).
				if inWord && i-wordStart == w.Len() && strings.Trim(w.String(), "0123456789") == "" {
					w.Reset()
					inWord = false
				}
				flushWord()
				for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&' || s[i+1] == ' ') {
					i++
				}
				for i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\n' {
					i++
				}
				continue
			}
			flushCmd()
		default:
			start(i)
			w.WriteByte(c)
		}
	}
	flushCmd()
	return out
}

// shellCommands splits a script file into simple commands with file positions.
func shellCommands(src []byte) []command {
	if len(src) > 4<<20 {
		return nil
	}
	li := textpos.New(src)
	return shellWords(string(src), func(off int) pos { l, c := li.Pos(off); return pos{l, c} })
}

// scalarCommands splits a YAML scalar holding shell text (sh -c, a compose command string).
func (fl *File) scalarCommands(n *yaml.Node) []command {
	lc := fl.locatorAt(n)
	cmds := shellWords(n.Value, func(int) pos { return lc.host })
	for i := range cmds {
		for j := range cmds[i].argv {
			cmds[i].argv[j].at = lc.find(firstLine(cmds[i].argv[j].text))
		}
		if len(cmds[i].argv) > 0 {
			cmds[i].at = cmds[i].argv[0].at
		}
	}
	return cmds
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s, _, _ = strings.Cut(s, `"`)
	return s
}

// listTokens reads a YAML list of words (a container's command or args).
func listTokens(n *yaml.Node) []token {
	var out []token
	for _, c := range seq(n) {
		if c.Kind == yaml.ScalarNode {
			out = append(out, token{text: c.Value, at: pos{c.Line, c.Column}})
		}
	}
	return out
}

// shellFlag reports a shell invocation: sh -c, bash -lc.
func shellFlag(argv []token) bool {
	if len(argv) < 2 {
		return false
	}
	b := path.Base(argv[0].text)
	return (b == "sh" || b == "bash" || b == "zsh" || b == "dash") && strings.HasPrefix(argv[len(argv)-1].text, "-") && strings.Contains(argv[len(argv)-1].text, "c")
}

// launch is one command line a container runs: its words, and whether they are the arguments
// of the image's own entrypoint (no command given).
type launch struct {
	command
	imageArgs bool
}

// containerCommands reads a container's command and args (a list, or shell text given to sh -c
// or as a scalar) and returns the command lines it runs.
func (fl *File) containerCommands(c *yaml.Node) []launch {
	image, _ := str(c, "image")
	cmdNode, argsNode := get(c, "command"), get(c, "args")
	var words []token
	var scripts []*yaml.Node
	cmd := listTokens(cmdNode)
	args := listTokens(argsNode)
	if cmdNode != nil && cmdNode.Kind == yaml.ScalarNode {
		scripts = append(scripts, cmdNode)
	}
	if argsNode != nil && argsNode.Kind == yaml.ScalarNode {
		scripts = append(scripts, argsNode)
	}
	switch {
	case shellFlag(cmd):
		// sh -c 'script' [args]: the first argument is the script.
		for _, a := range seq(argsNode) {
			scripts = append(scripts, a)
			break
		}
	case len(cmd) > 0 && shellFlag(cmd[:min(len(cmd), 2)]) && len(cmd) > 2:
		for _, x := range seq(cmdNode)[2:] {
			scripts = append(scripts, x)
			break
		}
	default:
		words = append(cmd, args...)
	}
	var out []launch
	if words != nil {
		out = append(out, launch{command{argv: words, at: pos{c.Line, c.Column}}, vllmImage(image) && len(cmd) == 0})
	}
	for _, s := range scripts {
		for _, sc := range fl.scalarCommands(s) {
			out = append(out, launch{sc, vllmImage(image) && len(cmd) == 0 && cmdNode == nil})
		}
	}
	return out
}

// containerEngines reads a container (command, args, env, image) and returns the vLLM servers
// it starts.
func (fl *File) containerEngines(c *yaml.Node, replicas int, labels map[string]string) []*engine {
	image, _ := str(c, "image")
	name, _ := str(c, "name")
	var out []*engine
	for _, l := range fl.containerCommands(c) {
		if e := engineFrom(fl.path, l.argv, l.at, l.imageArgs); e != nil {
			out = append(out, e)
		}
	}
	env := readEnv(get(c, "env"))
	if env == nil {
		env = readEnv(get(c, "environment"))
	}
	var imageAt pos
	if n := get(c, "image"); n != nil {
		imageAt = pos{n.Line, n.Column}
	}
	for _, e := range out {
		e.name, e.image, e.imageAt, e.replicas, e.labels = name, image, imageAt, replicas, labels
		e.version, _ = vllmImageVersion(image)
		for k, v := range env {
			e.env[k] = v
		}
	}
	return out
}

// vllmImage reports one of vLLM's own images, whose entrypoint is the API server.
func vllmImage(image string) bool {
	image = shellDefault(image)
	ref, _, _ := strings.Cut(image[strings.LastIndexByte(image, '/')+1:], ":")
	return strings.HasPrefix(ref, "vllm-openai") || (strings.HasPrefix(image, "vllm/") && strings.HasPrefix(ref, "vllm"))
}

// litellmImage reports the LiteLLM proxy's images (ghcr.io/berriai/litellm, litellm/litellm,
// their -database and -non_root variants).
func litellmImage(image string) bool {
	image = shellDefault(image)
	repo, _, _ := strings.Cut(image, ":")
	last := repo[strings.LastIndexByte(repo, '/')+1:]
	return last == "litellm" || strings.HasPrefix(last, "litellm-")
}

// readEnv reads a Kubernetes env list or a compose environment (mapping or KEY=VALUE list).
// Values from valueFrom are present with an empty value.
func readEnv(n *yaml.Node) map[string]token {
	n = deref(n)
	if n == nil {
		return nil
	}
	out := map[string]token{}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := deref(n.Content[i+1])
			out[n.Content[i].Value] = token{text: v.Value, at: pos{n.Content[i].Line, n.Content[i].Column}}
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			it = deref(it)
			if it.Kind == yaml.ScalarNode {
				k, v, _ := strings.Cut(it.Value, "=")
				out[k] = token{text: v, at: pos{it.Line, it.Column}}
				continue
			}
			if k, ok := str(it, "name"); ok {
				v, _ := str(it, "value")
				kn := keyNode(it, "name")
				out[k] = token{text: v, at: pos{kn.Line, kn.Column}}
			}
		}
	}
	return out
}

// workloads finds the pod specs of a document (any mapping with containers, a Dynamo
// mainContainer), checks the engines they start and records them; it reports whether there was
// one.
func (d *ydoc) workloads(root *yaml.Node, kind string) bool {
	fl := d.fl
	found := false
	var walk func(n *yaml.Node, replicas int, labels map[string]string, depth int)
	walk = func(n *yaml.Node, replicas int, labels map[string]string, depth int) {
		n = deref(n)
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
		if r, ok := intAt(n, "replicas"); ok {
			replicas = r
		}
		if l := get(n, "metadata", "labels"); l != nil {
			labels = map[string]string{}
			for i := 0; i+1 < len(l.Content); i += 2 {
				labels[l.Content[i].Value] = l.Content[i+1].Value
			}
		}
		var containers []*yaml.Node
		containers = append(containers, seq(get(n, "containers"))...)
		if m := get(n, "mainContainer"); m != nil && m.Kind == yaml.MappingNode {
			containers = append(containers, m)
		}
		for _, c := range containers {
			d.checkAIBrixEnv(readEnv(get(c, "env")), c)
			if img, _ := str(c, "image"); litellmImage(img) {
				fl.facts().proxyReplicas = append(fl.facts().proxyReplicas, replicas)
			}
			for _, e := range fl.containerEngines(c, replicas, labels) {
				fl.checkEngine(e)
				found = true
			}
			if fl.containerGateways(c) {
				found = true
			}
			if fl.containerProdStack(c, replicas) {
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
	s := get(root, "services")
	if s == nil || s.Kind != yaml.MappingNode || len(s.Content) == 0 {
		return false
	}
	for i := 1; i < len(s.Content); i += 2 {
		svc := deref(s.Content[i])
		if get(svc, "image") != nil || get(svc, "build") != nil {
			return true
		}
	}
	return false
}

func (d *ydoc) checkCompose(root *yaml.Node) {
	s := get(root, "services")
	for i := 0; i+1 < len(s.Content); i += 2 {
		svc := deref(s.Content[i+1])
		if svc == nil || svc.Kind != yaml.MappingNode {
			continue
		}
		replicas := 1
		if r, ok := intAt(svc, "deploy", "replicas"); ok {
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
		for _, e := range d.fl.containerEngines(c, replicas, nil) {
			d.fl.checkEngine(e)
		}
		d.fl.containerGateways(c)
		d.fl.containerProdStack(c, replicas)
		d.checkAIBrixEnv(readEnv(get(svc, "environment")), s.Content[i])
	}
}

// checkEngine runs the single-file engine rules and records the engine for the cross-file ones.
func (fl *File) checkEngine(e *engine) {
	fl.facts().engines = append(fl.facts().engines, e)
	where := e.name
	if where == "" {
		where = "vllm"
	}
	fl.duplicateFlags(e.uses, "vLLM", where, vllmAppendFlags)
	for _, u := range e.uses {
		fl.duplicateJSONKeys(u, "vLLM", where)
	}
	if newest := fl.l.o.VLLMNewest; !newest.IsZero() && newest.Less(e.version) {
		at := e.imageAt
		if at.line == 0 {
			at = e.at
		}
		fl.addConfig("vllm/newer-than-catalog", at, where,
			fmt.Sprintf("image %s is vLLM %s, newer than this kvcheck's metric catalog knows (up to vLLM %s): metric names are checked against vLLM %s, and renames after %s are not known",
				e.image, e.version, newest, fl.l.o.VLLMTarget, newest),
			fmt.Sprintf("use a kvcheck whose catalog reaches vLLM %d.%d, or judge at the newest it knows with --target vllm=%s", e.version.Major, e.version.Minor, newest))
	}
	for _, bad := range []string{"--enable-kv-cache-events", "--kv-events-publisher"} {
		if t, ok := e.flags[bad]; ok {
			fl.addConfig("vllm/no-such-flag", t.at, where,
				fmt.Sprintf("%s is not a vLLM flag: the server refuses to start", bad),
				`pass --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}' instead`)
		}
	}
	kv := e.kv
	if kv == nil {
		return
	}
	if kv.parsed && !kv.enable {
		msg := "--kv-events-config does not set \"enable_kv_cache_events\": true, so the engine publishes nothing"
		if kv.enableSet {
			msg = "--kv-events-config sets \"enable_kv_cache_events\": false, so the engine publishes nothing"
		}
		fl.addConfig("vllm/kv-events-disabled", kv.at, where, msg, `set "enable_kv_cache_events": true in --kv-events-config`)
	}
	if kv.parsed && kv.enable && kv.publisher == "" && !e.version.IsZero() && !(catalog.Version{Major: 0, Minor: 11}).Less(e.version) {
		fl.addConfig("vllm/publisher-null", kv.at, where,
			fmt.Sprintf("vLLM %s (image %s) defaults the KV-event publisher to \"null\": with publisher omitted nothing is sent", e.version, e.image),
			`set "publisher": "zmq" in --kv-events-config`)
	}
	if kv.parsed && kv.enable && kv.replay != "" {
		ep, okE := endpointPort(kv.endpointOrDefault())
		rp, okR := endpointPort(kv.replay)
		n := e.dpSize()
		// Rank r binds endpoint port + r and replay port + r (offset_endpoint_port): the two
		// ranges of n ports overlap when the base ports are fewer than n apart.
		if okE && okR && rp-ep < n && ep-rp < n {
			fl.addConfig("vllm/replay-port-collision", kv.at, where,
				fmt.Sprintf("with %d data-parallel rank(s) the engine binds ports %d..%d for events and %d..%d for replay: they overlap, so a rank cannot bind", n, ep, ep+n-1, rp, rp+n-1),
				fmt.Sprintf("set replay_endpoint to a port at least %d away from the endpoint's, such as tcp://*:%d", n, ep+n))
		}
	}
}
