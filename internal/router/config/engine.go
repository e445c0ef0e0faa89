package config

import (
	"encoding/json"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// Engine is one vLLM server as a file starts it: a container, a compose service, a script
// line, a product's worker, a chart's model entry.
type Engine struct {
	File     string
	At       Pos
	Name     string
	Model    string
	Replicas int
	Image    string
	ImageAt  Pos             // where the image is named; zero when not
	Version  catalog.Version // from the image tag; zero when unknown
	Flags    map[string]Token
	Env      map[string]Token // value and where it is set; absent when not set
	Labels   map[string]string
	// Launcher is the word of a product's program that started it (EngineLauncher), "" for
	// vLLM's own entry points.
	Launcher string
	// FromValues says it was read from a chart's values, not a command line: its prefix
	// caching is the chart rule's to judge, and what its pods' environment holds is not all
	// shown.
	FromValues bool
	// PrefixCachingJudged says a product's rule already reported its prefix caching.
	PrefixCachingJudged bool
	Decode              bool // a disaggregated decode worker
	KV                  *KVEvents
	// Uses are the flags of its command line in order, as vLLM's parser reads them, for the
	// repetitions it keeps silently; none for an engine read from values.
	Uses []FlagUse
}

// KVEvents is a parsed --kv-events-config.
type KVEvents struct {
	At                    Pos
	Parsed                bool
	Enable, EnableSet     bool
	Publisher             string
	Endpoint              string
	Replay                string
	Topic                 string
	EndpointSet, TopicSet bool
}

// Flag returns the first of the flags given (their last value each).
func (e *Engine) Flag(names ...string) (Token, bool) {
	for _, n := range names {
		if t, ok := e.Flags[n]; ok {
			return t, true
		}
	}
	return Token{}, false
}

// PrefixCachingOff reports an explicit --no-enable-prefix-caching (the last of the two wins).
func (e *Engine) PrefixCachingOff() (Token, bool) {
	off, okOff := e.Flags["--no-enable-prefix-caching"]
	on, okOn := e.Flags["--enable-prefix-caching"]
	if !okOff {
		return Token{}, false
	}
	if okOn && (on.At.Line > off.At.Line || (on.At.Line == off.At.Line && on.At.Col > off.At.Col)) {
		return Token{}, false
	}
	return off, true
}

// Publishes reports whether the engine's KV events are switched on.
func (e *Engine) Publishes() bool { return e.KV != nil && e.KV.Enable }

// DPSize is --data-parallel-size (or -dp), 1 when unset or unreadable.
func (e *Engine) DPSize() int {
	if t, ok := e.Flag("--data-parallel-size", "-dp"); ok {
		if n, err := strconv.Atoi(t.Text); err == nil && n > 0 {
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

// engineFrom recognises a vLLM server in a command line: vllm serve, the OpenAI API server
// module, or a product's program that starts one (EngineLauncher). imageArgs says the words are
// the arguments of a vLLM image's own entrypoint (no command given).
func (l *Linter) engineFrom(file string, argv []Token, at Pos, imageArgs bool) *Engine {
	start := -1
	e := &Engine{File: file, At: at, Replicas: 1, Flags: map[string]Token{}, Env: map[string]Token{}}
	for i, t := range argv {
		base := path.Base(t.Text)
		switch {
		case base == "vllm" && i+1 < len(argv) && argv[i+1].Text == "serve":
			start = i + 2
			if start < len(argv) && !strings.HasPrefix(argv[start].Text, "-") {
				e.Model = argv[start].Text
				start++
			}
		case t.Text == "vllm.entrypoints.openai.api_server":
			start = i + 1
		case l != nil && slices.Contains(l.launchers, t.Text):
			start = i + 1
			e.Launcher = t.Text
		}
		if start >= 0 {
			e.At = t.At
			break
		}
	}
	if start < 0 {
		if !imageArgs || len(argv) == 0 || !strings.HasPrefix(argv[0].Text, "-") {
			return nil
		}
		start = 0
		e.At = argv[0].At
	}
	for i := start; i < len(argv); i++ {
		t := argv[i]
		if !strings.HasPrefix(t.Text, "-") || t.Text == "-" {
			continue
		}
		name, val, hasVal := strings.Cut(t.Text, "=")
		if dotted, field, ok := strings.Cut(name, "--kv-events-config."); ok && dotted == "" {
			// --kv-events-config.field value: one field of the config.
			v := ""
			if hasVal {
				v = val
			} else if i+1 < len(argv) {
				v = argv[i+1].Text
				i++
			}
			e.dottedKV(field, v, t.At)
			continue
		}
		u := FlagUse{Dest: VLLMDest(name), Name: Token{Text: name, At: t.At}, Val: Token{Text: val, At: t.At}, HasVal: hasVal}
		if !hasVal && i+1 < len(argv) && (valueFlags[name] || !strings.HasPrefix(argv[i+1].Text, "-")) {
			// The value word; a switch followed by a word keeps it to show, not to read.
			u.Val, u.HasVal = argv[i+1], true
			if valueFlags[name] {
				val = argv[i+1].Text
				i++
			}
		}
		e.Uses = append(e.Uses, u)
		e.Flags[name] = Token{Text: val, At: t.At}
	}
	if t, ok := e.Flags["--model"]; ok && e.Model == "" {
		e.Model = t.Text
	}
	if t, ok := e.Flags["--kv-events-config"]; ok {
		e.KV = parseKVEvents(t)
	}
	if t, ok := e.Flags["--disaggregation-mode"]; ok && t.Text == "decode" {
		e.Decode = true
	}
	if _, ok := e.Flags["--is-decode-worker"]; ok {
		e.Decode = true
	}
	return e
}

func (e *Engine) dottedKV(field, v string, at Pos) {
	if e.KV == nil {
		e.KV = &KVEvents{At: at, Parsed: true}
	}
	switch field {
	case "enable_kv_cache_events":
		b, _ := strconv.ParseBool(strings.ToLower(v))
		e.KV.Enable, e.KV.EnableSet = b, true
	case "publisher":
		e.KV.Publisher = v
	case "endpoint":
		e.KV.Endpoint, e.KV.EndpointSet = v, true
	case "replay_endpoint":
		e.KV.Replay = v
	case "topic":
		e.KV.Topic, e.KV.TopicSet = v, true
	}
}

func parseKVEvents(t Token) *KVEvents {
	kv := &KVEvents{At: t.At}
	var m map[string]any
	if err := json.Unmarshal([]byte(t.Text), &m); err != nil {
		return kv
	}
	kv.Parsed = true
	switch v := m["enable_kv_cache_events"].(type) {
	case bool:
		kv.Enable, kv.EnableSet = v, true
	case string:
		b, _ := strconv.ParseBool(strings.ToLower(v))
		kv.Enable, kv.EnableSet = b, true
	}
	kv.Publisher, _ = m["publisher"].(string)
	kv.Endpoint, kv.EndpointSet = m["endpoint"].(string)
	kv.Replay, _ = m["replay_endpoint"].(string)
	kv.Topic, kv.TopicSet = m["topic"].(string)
	return kv
}

// EndpointOrDefault is the PUB endpoint vLLM uses.
func (kv *KVEvents) EndpointOrDefault() string {
	if kv.EndpointSet {
		return kv.Endpoint
	}
	return "tcp://*:5557"
}

// EndpointPort returns the TCP port of a ZMQ endpoint; false for inproc, ipc and ports written
// as variables.
func EndpointPort(ep string) (int, bool) {
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

// Binds reports whether vLLM binds the endpoint (it does when it has * or ::) rather than
// connecting to it (kv_events.py).
func Binds(ep string) bool { return strings.Contains(ep, "*") || strings.Contains(ep, "::") }

// imageVersionRE reads a vLLM release from an image tag: vllm/vllm-openai:v0.11.0.
var imageVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// VLLMImageVersion returns the vLLM version an image's tag names, for images that are vLLM's
// own builds (vllm/vllm-*, or a vllm-openai image another registry rebuilds); other images
// (llm-d, LMCache, Dynamo's nvcr.io/nvidia/ai-dynamo/vllm-runtime) carry their own versions.
func VLLMImageVersion(image string) (catalog.Version, bool) {
	image = ShellDefault(strings.TrimSpace(image))
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

// vllmImage reports one of vLLM's own images, whose entrypoint is the API server.
func vllmImage(image string) bool {
	image = ShellDefault(image)
	ref, _, _ := strings.Cut(image[strings.LastIndexByte(image, '/')+1:], ":")
	return strings.HasPrefix(ref, "vllm-openai") || (strings.HasPrefix(image, "vllm/") && strings.HasPrefix(ref, "vllm"))
}
