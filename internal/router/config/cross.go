package config

import (
	"fmt"
	"slices"
	"strings"
)

// Facts is what one file tells the checks across files: the engines it starts, the KV- or
// prefix-aware routers it sets up, and each product's own facts (File.AddFact).
type Facts struct {
	engines []*Engine
	routers []Router
	items   []any
}

// Router is a KV- or prefix-aware router a file sets up, as the checks across files see it:
// what an engine behind it must give it, and how another layer reaches it.
type Router struct {
	// Kind is its product's id (llm-d, dynamo, production-stack).
	Kind string
	File string
	At   Pos
	// Names are the host names it is reached by (a Dynamo graph's services).
	Names []string
	// Service reports whether the first label of a host name is the service its product's
	// chart gives it (production-stack's <release>-router-service); nil when the product names
	// none. The first router of each kind answers for its kind.
	Service func(first string) bool
	// DialsPods says it dials every engine pod's KV-event endpoint, which must then bind.
	DialsPods bool
	// OwnHashes says it keys the engines' blocks by hashes of its own (from the events' token
	// ids), so the replicas' PYTHONHASHSEED does not have to agree.
	OwnHashes bool
}

// Where is the router's file and line.
func (r Router) Where() string { return fmt.Sprintf("%s:%d", r.File, r.At.Line) }

func (fl *File) factsOf() *Facts {
	if fl.facts == nil {
		fl.facts = &Facts{}
	}
	return fl.facts
}

// AddRouter records a router the file sets up, for the checks across files.
func (fl *File) AddRouter(r Router) { fl.factsOf().routers = append(fl.factsOf().routers, r) }

// AddFact records one of a product's own facts for its checks across files (RunChecker): a
// value of a type of the product's own, which FactsOf finds again.
func (fl *File) AddFact(v any) { fl.factsOf().items = append(fl.factsOf().items, v) }

// Run is the facts of one run's files, for the checks across them.
type Run struct {
	l     *Linter
	facts []*Facts
	add   func(path string, f *Finding)
	index *RouterIndex
}

// Engines returns the vLLM engines of every file, in file order.
func (r *Run) Engines() []*Engine {
	var out []*Engine
	for _, c := range r.facts {
		if c != nil {
			out = append(out, c.engines...)
		}
	}
	return out
}

// Routers returns the KV- and prefix-aware routers of every file, in file order.
func (r *Run) Routers() []Router {
	var out []Router
	for _, c := range r.facts {
		if c != nil {
			out = append(out, c.routers...)
		}
	}
	return out
}

// FactsOf returns the facts of type T every file recorded (File.AddFact), in file order.
func FactsOf[T any](r *Run) []T {
	var out []T
	for _, c := range r.facts {
		if c == nil {
			continue
		}
		for _, v := range c.items {
			if t, ok := v.(T); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// Add records a finding in file: the file of the thing to change.
func (r *Run) Add(file, code string, at Pos, loc, msg, hint string) {
	fl := &File{l: r.l, path: file}
	r.add(file, fl.Add(code, at, loc, msg, hint))
}

// Index returns the run's routers by the host names that reach them.
func (r *Run) Index() *RouterIndex {
	if r.index == nil {
		x := newRouterIndex(r.Routers())
		r.index = &x
	}
	return r.index
}

// Cross runs the checks that need several files of one run, over the facts of each file (nil
// for a file that told none): each product's (RunChecker, in the registry's order), then the
// engines' own (prefix caching off behind a KV-aware router, hash seeds and algorithms across
// the replicas of a model, an endpoint that connects). Each finding goes to add with the path
// of the file of the thing to change.
func (l *Linter) Cross(facts []*Facts, add func(path string, f *Finding)) {
	r := &Run{l: l, facts: facts, add: add}
	for _, c := range l.o.Checkers {
		if rc, ok := c.(RunChecker); ok {
			rc.CheckRun(r)
		}
	}
	r.engineChecks()
}

// engineChecks runs the engine rules across files.
func (r *Run) engineChecks() {
	engines, routers := r.Engines(), r.Routers()
	dialled, ownHashes := false, false
	for _, x := range routers {
		dialled = dialled || x.DialsPods
		ownHashes = ownHashes || x.OwnHashes
	}
	// An endpoint vLLM connects from: its consumer must bind (with a router that dials the
	// pods, that router's rules say what is wrong instead).
	for _, e := range engines {
		if dialled || !e.Publishes() {
			continue
		}
		if ep := e.KV.EndpointOrDefault(); !Binds(ep) && !strings.HasPrefix(ep, "inproc") && !strings.HasPrefix(ep, "ipc") {
			r.Add(e.File, "vllm/endpoint-connects", e.KV.At, e.Name,
				fmt.Sprintf("KV-event endpoint %s has no * or ::, so vLLM connects to it: whatever consumes the events must bind that address", ep),
				"if the consumer dials the engine, set \"endpoint\": \"tcp://*:5557\" in --kv-events-config")
		}
	}
	// Prefix caching off: an error behind a KV-aware router, a warning on its own (an engine
	// alone still loses every reuse of its own earlier prompts).
	for _, e := range engines {
		t, off := e.PrefixCachingOff()
		if !off || e.Decode || e.PrefixCachingJudged || e.FromValues {
			continue
		}
		if len(routers) > 0 {
			x := routers[0]
			r.Add(e.File, "vllm/prefix-caching-off", t.At, e.Name,
				fmt.Sprintf("--no-enable-prefix-caching behind a KV-aware router (%s, %s): the engine reuses nothing and publishes (almost) no events", x.Kind, x.Where()),
				"remove --no-enable-prefix-caching (prefix caching is on by default)")
			continue
		}
		r.Add(e.File, "vllm/prefix-caching-disabled", t.At, e.Name,
			"--no-enable-prefix-caching: this engine reuses no prefix, not even a system prompt its own earlier requests computed, so no router can gain anything on it",
			"remove --no-enable-prefix-caching (prefix caching is on by default) unless you measured that it costs more than it saves")
	}

	// Hash seeds and algorithms across the replicas of one model.
	byModel := map[string][]*Engine{}
	var models []string
	for _, e := range engines {
		if e.Model == "" || e.FromValues {
			continue
		}
		if _, ok := byModel[e.Model]; !ok {
			models = append(models, e.Model)
		}
		byModel[e.Model] = append(byModel[e.Model], e)
	}
	for _, m := range models {
		es := byModel[m]
		procs, publishing := 0, false
		for _, e := range es {
			procs += max(e.Replicas, 1) * e.DPSize()
			publishing = publishing || e.Publishes()
		}
		if procs < 2 {
			continue
		}
		algos := map[string]bool{}
		for _, e := range es {
			a := "sha256"
			if t, ok := e.Flag("--prefix-caching-hash-algo"); ok {
				a = t.Text
			}
			algos[a] = true
		}
		if len(algos) > 1 {
			names := slices.Sorted(func(yield func(string) bool) {
				for a := range algos {
					if !yield(a) {
						return
					}
				}
			})
			for _, e := range es {
				t, ok := e.Flag("--prefix-caching-hash-algo")
				at := e.At
				if ok {
					at = t.At
				}
				r.Add(e.File, "vllm/hash-algo", at, e.Name,
					fmt.Sprintf("replicas of %s use different --prefix-caching-hash-algo (%s): the same prefix has different block hashes on each", m, strings.Join(names, ", ")),
					"set the same --prefix-caching-hash-algo on every replica")
			}
		}
		if !publishing || ownHashes {
			continue
		}
		seeds := map[string]bool{}
		unset := false
		for _, e := range es {
			if t, ok := e.Env["PYTHONHASHSEED"]; ok && t.Text != "" && t.Text != "random" {
				seeds[t.Text] = true
			} else {
				unset = true
			}
		}
		if !unset && len(seeds) <= 1 {
			continue
		}
		for _, e := range es {
			t, ok := e.Env["PYTHONHASHSEED"]
			if ok && !unset && len(seeds) <= 1 {
				continue
			}
			at, msg := e.At, fmt.Sprintf("%d processes serve %s and publish KV events, and PYTHONHASHSEED is not set here: NONE_HASH is random per process, so each replica hashes the same prefix differently", procs, m)
			if ok && t.Text != "" {
				at, msg = t.At, fmt.Sprintf("replicas of %s set different PYTHONHASHSEED values: their block hashes differ for the same prefix", m)
			}
			r.Add(e.File, "vllm/hash-seed", at, e.Name, msg,
				"set env PYTHONHASHSEED to the same fixed value (such as \"0\") on every replica of the model")
		}
	}
}

// RouterIndex finds the first router of a run that a host name is: by its name, or by the
// service name the router's chart gives it. One lookup per host, so a run with many gateways
// and many routers stays linear.
type RouterIndex struct {
	routers []Router
	byName  map[string]int // the first router each name belongs to
	byKind  map[string]int // the first router of each kind whose chart names its service
}

func newRouterIndex(routers []Router) RouterIndex {
	x := RouterIndex{routers: routers, byName: map[string]int{}, byKind: map[string]int{}}
	for i, r := range routers {
		for _, n := range r.Names {
			if _, ok := x.byName[n]; !ok {
				x.byName[n] = i
			}
		}
		if _, ok := x.byKind[r.Kind]; !ok && r.Service != nil {
			x.byKind[r.Kind] = i
		}
	}
	return x
}

// Find returns the first router (in the run's order) that host names.
func (x *RouterIndex) Find(host string) (Router, bool) {
	if host == "" {
		return Router{}, false
	}
	first, _, _ := strings.Cut(host, ".")
	best := -1
	if i, ok := x.byName[first]; ok {
		best = i
	}
	for _, i := range x.byKind {
		if (best < 0 || i < best) && x.routers[i].Service(first) {
			best = i
		}
	}
	if best < 0 {
		return Router{}, false
	}
	return x.routers[best], true
}
