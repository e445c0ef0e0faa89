package config

import (
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

// RouterFacts is one router a file sets up and the values the file gives it, in the product's
// own spelling (each product's ValuesReader hooks say which keys it reads). Kind is the
// product's id.
type RouterFacts struct {
	Kind   string
	File   string
	Line   int
	Values map[string]string
}

// DocumentReader reads the routers of whole YAML documents that are the product's (by the
// kinds its DocumentChecker owns, or its keys), for DeploymentOf.
type DocumentReader interface {
	// ReadDocument reads root when the document is the product's (mine) and says whether the
	// generic walk should still read its nodes and containers (walk).
	ReadDocument(v *Values, root *yaml.Node) (mine, walk bool)
}

// NodeReader reads the routers held inside any document: every scalar and mapping of a
// document the walk reaches (aliases resolved) is offered.
type NodeReader interface {
	ReadNode(v *Values, n *yaml.Node)
}

// CommandReader reads the router a command line starts (a container's, a script's).
type CommandReader interface {
	ReadCommand(v *Values, argv []Token)
}

// TextReader reads the routers of a file that is not YAML.
type TextReader interface {
	ReadText(v *Values)
}

// Values is one file being read for DeploymentOf, as the reader hooks see it.
type Values struct {
	fl  *File
	dep *Deployment
}

// File is the file being read (its path, content and positions).
func (v *Values) File() *File { return v.fl }

// NewRouter starts the facts of a router of product kind at line (Add adds them).
func (v *Values) NewRouter(kind string, line int) *RouterFacts {
	return &RouterFacts{Kind: kind, File: v.fl.path, Line: line, Values: map[string]string{}}
}

// Add adds a router's facts to the deployment.
func (v *Values) Add(rf *RouterFacts) { v.dep.Routers = append(v.dep.Routers, *rf) }

// EnginesAt returns the engines the file's checks read at line (a chart's model entry).
func (v *Values) EnginesAt(line int) []*EngineFacts {
	var out []*EngineFacts
	for i := range v.dep.Engines {
		if e := &v.dep.Engines[i]; e.File == v.fl.path && e.Line == line {
			out = append(out, e)
		}
	}
	return out
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
func (l *Linter) DeploymentOf(files []Source) Deployment {
	var dep Deployment
	for _, r := range files {
		if r.Facts != nil {
			for _, e := range r.Facts.engines {
				ef := EngineFacts{File: e.File, Line: e.At.Line, Name: e.Name, Image: e.Image, KVEvents: e.Publishes()}
				if !e.Version.IsZero() {
					ef.Version = e.Version.String()
				}
				_, ef.PrefixCachingOff = e.PrefixCachingOff()
				_, lm := e.Env["LMCACHE_USE_EXPERIMENTAL"]
				_, ctl := e.Env["LMCACHE_ENABLE_CONTROLLER"]
				ef.LMCache = lm || ctl || strings.Contains(e.Image, "lmcache")
				ef.LMCacheController = ctl && strings.EqualFold(strings.Trim(e.Env["LMCACHE_ENABLE_CONTROLLER"].Text, `"'`), "true")
				dep.Engines = append(dep.Engines, ef)
			}
		}
		if len(r.Original) == 0 {
			continue
		}
		v := &Values{fl: &File{l: l, path: r.Path, src: r.Original, lines: textpos.New(r.Original)}, dep: &dep}
		docs, err := ParseYAML(r.Original)
		if err != nil || !yamlLike(r.Path, docs) {
			v.text()
			continue
		}
		if aliasBomb(docs) {
			continue
		}
		for _, d := range docs {
			if len(d.Content) == 0 || d.Content[0].Kind != yaml.MappingNode {
				continue
			}
			v.document(d.Content[0])
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

// document reads one YAML document: the product whose it is, then every node and container in
// it.
func (v *Values) document(root *yaml.Node) {
	kind, _ := Str(root, "kind")
	api, _ := Str(root, "apiVersion")
	if kind != "" && api != "" {
		v.dep.Objects = append(v.dep.Objects, Object{Kind: kind, APIVersion: api, File: v.fl.path, Line: root.Line})
	}
	l := v.fl.l
	walk := true
	if c := l.owner(kind); c != nil {
		if dr, ok := c.(DocumentReader); ok {
			_, walk = dr.ReadDocument(v, root)
		}
	} else {
		for _, c := range l.o.Checkers {
			if dr, ok := c.(DocumentReader); ok {
				if mine, w := dr.ReadDocument(v, root); mine {
					walk = w
					break
				}
			}
		}
	}
	if walk {
		v.walk(root, 0)
	}
}

// walk offers every scalar and mapping to the NodeReaders and every container's command lines
// to the CommandReaders.
func (v *Values) walk(n *yaml.Node, depth int) {
	n = Deref(n)
	if n == nil || depth > 64 {
		return
	}
	checkers := v.fl.l.o.Checkers
	switch n.Kind {
	case yaml.ScalarNode, yaml.MappingNode:
		for _, c := range checkers {
			if nr, ok := c.(NodeReader); ok {
				nr.ReadNode(v, n)
			}
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for _, c := range Seq(Get(n, "containers")) {
			for _, l := range v.fl.ContainerCommands(c) {
				v.command(l.Argv)
			}
		}
		for i := 1; i < len(n.Content); i += 2 {
			if n.Content[i-1].Value == "containers" {
				continue
			}
			v.walk(n.Content[i], depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			v.walk(c, depth+1)
		}
	}
}

// command offers one command line to the CommandReaders.
func (v *Values) command(argv []Token) {
	for _, c := range v.fl.l.o.Checkers {
		if cr, ok := c.(CommandReader); ok {
			cr.ReadCommand(v, argv)
		}
	}
}

// text reads a file that is not YAML: the command lines of a shell script, then what the
// TextReaders read.
func (v *Values) text() {
	for _, cmd := range ShellCommands(v.fl.src) {
		v.command(cmd.Argv)
	}
	for _, c := range v.fl.l.o.Checkers {
		if tr, ok := c.(TextReader); ok {
			tr.ReadText(v)
		}
	}
}
