package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// Cross runs the checks that need several files of one run, over the facts of each file (nil
// for a file that told none): the engines' KV-event endpoints and topics against the router's
// subscription, prefix caching against a KV-aware router, hash seeds across the replicas of a
// model, gateway retries against the router they point at. Each finding goes to add with the
// path of the file of the thing to change.
func Cross(facts []*Facts, add func(path string, f *Finding)) {
	var engines []*engine
	var subs []*subscriber
	var gws []*gatewayGroup
	var routers []kvRouter
	var proxies []*litellmProxy
	var proxyReplicas []int
	var sglang []*sglangGateway
	for _, c := range facts {
		if c == nil {
			continue
		}
		engines = append(engines, c.engines...)
		subs = append(subs, c.subscribers...)
		gws = append(gws, c.gateways...)
		routers = append(routers, c.routers...)
		proxies = append(proxies, c.proxies...)
		proxyReplicas = append(proxyReplicas, c.proxyReplicas...)
		sglang = append(sglang, c.sglang...)
	}
	crossCheck(engines, subs, gws, routers, proxies, proxyReplicas, sglang, func(file, code string, at pos, loc, msg, hint string) {
		fl := &File{path: file}
		add(file, fl.addConfig(code, at, loc, msg, hint))
	})
}

// crossCheck runs the checks across files on the facts of a run in file order; add records a
// finding.
func crossCheck(engines []*engine, subs []*subscriber, gws []*gatewayGroup, routers []kvRouter, proxies []*litellmProxy,
	proxyReplicas []int, sglang []*sglangGateway, add func(file, code string, at pos, loc, msg, hint string)) {
	where := func(file string, at pos) string { return fmt.Sprintf("%s:%d", file, at.line) }

	var podSubs []*subscriber
	for _, s := range subs {
		if s.discoverPods {
			podSubs = append(podSubs, s)
		}
	}
	for _, p := range podChecks(engines, podSubs, where) {
		if p.count > 1 {
			p.msg += fmt.Sprintf(" (and %d more like it in this run)", p.count-1)
		}
		add(p.file, p.code, p.at, p.loc, p.msg, p.hint)
	}
	// Prefix caching off: an error behind a KV-aware router, a warning on its own (an engine
	// alone still loses every reuse of its own earlier prompts).
	for _, e := range engines {
		t, off := e.prefixCachingOff()
		if !off || e.decode || e.flaggedOff || e.prodStack {
			continue
		}
		if len(routers) > 0 {
			r := routers[0]
			add(e.file, "vllm/prefix-caching-off", t.at, e.name,
				fmt.Sprintf("--no-enable-prefix-caching behind a KV-aware router (%s, %s): the engine reuses nothing and publishes (almost) no events", r.kind, where(r.file, r.at)),
				"remove --no-enable-prefix-caching (prefix caching is on by default)")
			continue
		}
		add(e.file, "vllm/prefix-caching-disabled", t.at, e.name,
			"--no-enable-prefix-caching: this engine reuses no prefix, not even a system prompt its own earlier requests computed, so no router can gain anything on it",
			"remove --no-enable-prefix-caching (prefix caching is on by default) unless you measured that it costs more than it saves")
	}

	// Hash seeds and algorithms across the replicas of one model.
	recompute := len(podSubs) > 0
	for _, r := range routers {
		if r.kind == "dynamo" {
			recompute = true
		}
	}
	byModel := map[string][]*engine{}
	var models []string
	for _, e := range engines {
		if e.model == "" || e.prodStack {
			continue
		}
		if _, ok := byModel[e.model]; !ok {
			models = append(models, e.model)
		}
		byModel[e.model] = append(byModel[e.model], e)
	}
	for _, m := range models {
		es := byModel[m]
		procs, publishing := 0, false
		for _, e := range es {
			procs += max(e.replicas, 1) * e.dpSize()
			publishing = publishing || e.publishes()
		}
		if procs < 2 {
			continue
		}
		algos := map[string]bool{}
		for _, e := range es {
			a := "sha256"
			if t, ok := e.flag("--prefix-caching-hash-algo"); ok {
				a = t.text
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
				t, ok := e.flag("--prefix-caching-hash-algo")
				at := e.at
				if ok {
					at = t.at
				}
				add(e.file, "vllm/hash-algo", at, e.name,
					fmt.Sprintf("replicas of %s use different --prefix-caching-hash-algo (%s): the same prefix has different block hashes on each", m, strings.Join(names, ", ")),
					"set the same --prefix-caching-hash-algo on every replica")
			}
		}
		if !publishing || recompute {
			continue
		}
		seeds := map[string]bool{}
		unset := false
		for _, e := range es {
			if t, ok := e.env["PYTHONHASHSEED"]; ok && t.text != "" && t.text != "random" {
				seeds[t.text] = true
			} else {
				unset = true
			}
		}
		if !unset && len(seeds) <= 1 {
			continue
		}
		for _, e := range es {
			t, ok := e.env["PYTHONHASHSEED"]
			if ok && !unset && len(seeds) <= 1 {
				continue
			}
			at, msg := e.at, fmt.Sprintf("%d processes serve %s and publish KV events, and PYTHONHASHSEED is not set here: NONE_HASH is random per process, so each replica hashes the same prefix differently", procs, m)
			if ok && t.text != "" {
				at, msg = t.at, fmt.Sprintf("replicas of %s set different PYTHONHASHSEED values: their block hashes differ for the same prefix", m)
			}
			add(e.file, "vllm/hash-seed", at, e.name, msg,
				"set env PYTHONHASHSEED to the same fixed value (such as \"0\") on every replica of the model")
		}
	}

	// Pins kept per pod: an affinity check without Redis on several proxy replicas (LL-04).
	pods := 0
	for _, n := range proxyReplicas {
		pods = max(pods, n)
	}
	for _, p := range proxies {
		n := max(p.replicas, pods)
		if n < 2 {
			continue
		}
		add(p.file, "litellm/affinity-per-pod", p.at, "router_settings.optional_pre_call_checks",
			fmt.Sprintf("%s pins are kept in each proxy pod's own cache without redis_host or redis_url, and the proxy runs %d replicas: a conversation's next turn reaches a pod that never saw the pin", p.flag, n),
			"set router_settings.redis_host (or redis_url) to a Redis every proxy replica shares")
	}

	// Retries on both layers: a LiteLLM deployment whose api_base is a KV-aware router.
	byHost := newRouterIndex(routers)
	for _, g := range gws {
		if g.retriesSet && g.retries <= 1 {
			continue
		}
		r, ok := byHost.find(g.host)
		if !ok {
			continue
		}
		n := "unset (default 2)"
		if g.retriesSet {
			n = strconv.Itoa(g.retries)
		}
		add(g.file, "litellm/retries-stacked", g.at, "model_list "+g.group,
			fmt.Sprintf("api_base %s is the %s router (%s) and num_retries is %s: each failure is retried by the proxy on top of the router's own failover", g.host, r.kind, where(r.file, r.at), n),
			"set router_settings.num_retries: 1 (or 0)")
	}

	sglangRetriesStacked(sglang, byHost, add)
	sglangLaunchersMixed(sglang, add)
}

// sglangRetriesStacked reports SG-03: an SGLang gateway whose worker URLs name another router
// of the run, with its retries not limited to one. add records a finding as crossCheck's does.
func sglangRetriesStacked(sglang []*sglangGateway, byHost routerIndex, add func(file, code string, at pos, loc, msg, hint string)) {
	for _, g := range sglang {
		if _, off := g.flags["--disable-retries"]; off {
			continue
		}
		n := fmt.Sprintf("unset (default %d in the Python launcher)", sglangPyRetries)
		if t, ok := g.flags["--retry-max-retries"]; ok {
			v, err := strconv.Atoi(t.text)
			if err == nil && v <= 1 {
				continue
			}
			n = t.text
		}
		for _, w := range g.workers {
			r, ok := byHost.find(workerHost(w.text))
			if !ok {
				continue
			}
			add(g.file, "sglang/retries-stacked", w.at, "sglang gateway",
				fmt.Sprintf("worker %s is the %s router (%s:%d) and retry_max_retries is %s: each failure is retried by the gateway on top of the router's own failover", w.text, r.kind, r.file, r.at.line, n),
				"pass --retry-max-retries 1 (or --disable-retries) to the gateway")
			break
		}
	}
}

// routerIndex finds the first router of a run that a host name is: by its name, or by the
// service name the router's chart gives it. One lookup per host, so a run with many gateways
// and many routers stays linear.
type routerIndex struct {
	routers []kvRouter
	byName  map[string]int // the first router each name belongs to
	byKind  map[string]int // the first router of each kind whose chart names its service
}

func newRouterIndex(routers []kvRouter) routerIndex {
	x := routerIndex{routers: routers, byName: map[string]int{}, byKind: map[string]int{}}
	for i, r := range routers {
		for _, n := range r.names {
			if _, ok := x.byName[n]; !ok {
				x.byName[n] = i
			}
		}
		if _, ok := x.byKind[r.kind]; !ok && serviceOfKind(r.kind) != nil {
			x.byKind[r.kind] = i
		}
	}
	return x
}

// find returns the first router (in the run's order) that host names.
func (x routerIndex) find(host string) (kvRouter, bool) {
	if host == "" {
		return kvRouter{}, false
	}
	first, _, _ := strings.Cut(host, ".")
	best := -1
	if i, ok := x.byName[first]; ok {
		best = i
	}
	for kind, i := range x.byKind {
		if (best < 0 || i < best) && serviceOfKind(kind)(first) {
			best = i
		}
	}
	if best < 0 {
		return kvRouter{}, false
	}
	return x.routers[best], true
}

// serviceOfKind returns how the charts of a router kind name its service (the first label of
// a host), or nil for a kind known only by its own names.
func serviceOfKind(kind string) func(first string) bool {
	switch kind {
	case "production-stack":
		return func(first string) bool { return strings.HasSuffix(first, "-router-service") }
	case "llm-d":
		return func(first string) bool {
			return strings.Contains(first, "inference-gateway") || strings.Contains(first, "llm-d") && strings.Contains(first, "gateway")
		}
	}
	return nil
}

// podFinding is one finding of the engine checks against the llm-d routers that dial every
// pod: about the thing to change, with the first router (or engine) it disagrees with named
// and how many in the run disagree in all.
type podFinding struct {
	file, code     string
	at             pos
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
// routers (plus the topics' lengths), never their product. With no such routers, an engine
// that connects instead of binding is told its consumer must bind.
func podChecks(engines []*engine, podSubs []*subscriber, where func(string, pos) string) []podFinding {
	var out []podFinding
	x := newPodIndex(podSubs)
	type sized struct {
		ei   int
		n    int
		b    token
		file string
	}
	var sizes []sized // the publishing engines with a readable --block-size, in order
	for ei, e := range engines {
		if !e.publishes() {
			continue
		}
		ep := e.kv.endpointOrDefault()
		loc := e.name
		if len(podSubs) == 0 {
			if !binds(ep) && !strings.HasPrefix(ep, "inproc") && !strings.HasPrefix(ep, "ipc") {
				out = append(out, podFinding{file: e.file, code: "vllm/endpoint-connects", at: e.kv.at, loc: loc,
					msg:   fmt.Sprintf("KV-event endpoint %s has no * or ::, so vLLM connects to it: whatever consumes the events must bind that address", ep),
					hint:  "if the consumer dials the engine, set \"endpoint\": \"tcp://*:5557\" in --kv-events-config",
					count: 1, order: [3]int{ei, 0, 0}})
			}
			continue
		}
		if !binds(ep) {
			s := podSubs[0]
			out = append(out, podFinding{file: e.file, code: "llm-d/engine-connects", at: e.kv.at, loc: loc,
				msg:   fmt.Sprintf("the llm-d router (%s) dials every pod, but endpoint %s has no * or ::, so vLLM connects instead of binding and the router receives nothing", where(s.file, s.at), ep),
				hint:  fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config", s.socketPort),
				count: len(podSubs), order: [3]int{ei, 0, 0}})
		} else if p, ok := endpointPort(ep); ok {
			if si, n := x.otherPort(p); n > 0 {
				s := podSubs[si]
				out = append(out, podFinding{file: e.file, code: "llm-d/socket-port", at: e.kv.at, loc: loc,
					msg:   fmt.Sprintf("the engine publishes on port %d but the llm-d router (%s) dials podDiscoveryConfig.socketPort %d", p, where(s.file, s.at), s.socketPort),
					hint:  fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config, or podDiscoveryConfig.socketPort: %d", s.socketPort, p),
					count: n, order: [3]int{ei, si, 0}})
			}
		}
		topic := ""
		if e.kv.topicSet {
			topic = e.kv.topic
		}
		if si, n := x.notPrefixOf(topic); n > 0 {
			s := podSubs[si]
			out = append(out, podFinding{file: e.file, code: "llm-d/topic-filter", at: e.kv.at, loc: loc,
				msg:   fmt.Sprintf("topic %q does not start with the llm-d router's topicFilter %q (%s): the subscription drops every event", topic, s.topicFilter, where(s.file, s.at)),
				hint:  fmt.Sprintf("set \"topic\": \"%s$(POD_IP):8000@<model>\" in --kv-events-config", s.topicFilter),
				count: n, order: [3]int{ei, si, 1}})
		}
		if b, ok := e.flag("--block-size"); ok {
			if n, err := strconv.Atoi(b.text); err == nil {
				sizes = append(sizes, sized{ei: ei, n: n, b: b, file: e.file})
			}
		}
		if x.replay > 0 && !e.version.IsZero() && e.version.Less(catalog.Version{Major: 0, Minor: 26}) {
			s := podSubs[x.replayFirst]
			out = append(out, podFinding{file: e.file, code: "vllm/replay-needs-0.26", at: e.kv.at, loc: loc,
				msg:   fmt.Sprintf("the llm-d router (%s) asks for replay on port %d, but image %s is vLLM %s: replay needs 0.26 or newer", where(s.file, s.at), s.replayPort, e.image, e.version),
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
			msg:   fmt.Sprintf("%s %d differs from the engine's --block-size %d (%s): the producer README (@ebab687) says they need not match, the June 2026 guide says they must", s.blockSizeKey, s.blockSize, z.n, where(z.file, z.b.at)),
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
