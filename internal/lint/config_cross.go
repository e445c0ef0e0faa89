package lint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// crossCheck runs the checks that need several files of one run: the engines' KV-event
// endpoints and topics against the router's subscription, prefix caching against a KV-aware
// router, hash seeds across the replicas of a model, gateway retries against the router they
// point at. Findings go to the file of the thing to change.
func crossCheck(results []FileResult) {
	byPath := map[string]*FileResult{}
	var engines []*engine
	var subs []*subscriber
	var gws []*gatewayGroup
	var routers []kvRouter
	var proxies []*litellmProxy
	var proxyReplicas []int
	var sglang []*sglangGateway
	for i := range results {
		r := &results[i]
		byPath[r.Path] = r
		if r.config == nil {
			continue
		}
		engines = append(engines, r.config.engines...)
		subs = append(subs, r.config.subscribers...)
		gws = append(gws, r.config.gateways...)
		routers = append(routers, r.config.routers...)
		proxies = append(proxies, r.config.proxies...)
		proxyReplicas = append(proxyReplicas, r.config.proxyReplicas...)
		sglang = append(sglang, r.config.sglang...)
	}
	add := func(file, code string, at pos, loc, msg, hint string) {
		r := byPath[file]
		if r == nil {
			return
		}
		fl := &fileLint{path: file}
		f := fl.addConfig(code, at, loc, msg, hint)
		r.Findings = append(r.Findings, *f)
	}
	where := func(file string, at pos) string { return fmt.Sprintf("%s:%d", file, at.line) }
	// once reports a pair's finding the first time its key (the thing to change and the code)
	// comes up and counts the repeats: one engine behind 500 routers is one finding, not 500.
	type first struct {
		file    string
		idx     int
		repeats int
	}
	seen := map[string]*first{}
	once := func(key, file, code string, at pos, loc, msg, hint string) {
		key += "\x00" + code
		if f := seen[key]; f != nil {
			f.repeats++
			return
		}
		r := byPath[file]
		if r == nil {
			return
		}
		add(file, code, at, loc, msg, hint)
		seen[key] = &first{file: file, idx: len(r.Findings) - 1}
	}

	var podSubs []*subscriber
	for _, s := range subs {
		if s.discoverPods {
			podSubs = append(podSubs, s)
		}
	}
	for _, e := range engines {
		if !e.publishes() {
			continue
		}
		ep := e.kv.endpointOrDefault()
		loc := e.name
		if len(podSubs) == 0 {
			if !binds(ep) && !strings.HasPrefix(ep, "inproc") && !strings.HasPrefix(ep, "ipc") {
				add(e.file, "vllm/endpoint-connects", e.kv.at, loc,
					fmt.Sprintf("KV-event endpoint %s has no * or ::, so vLLM connects to it: whatever consumes the events must bind that address", ep),
					"if the consumer dials the engine, set \"endpoint\": \"tcp://*:5557\" in --kv-events-config")
			}
		}
		for _, s := range podSubs {
			if !binds(ep) {
				once(fmt.Sprintf("%p", e), e.file, "llm-d/engine-connects", e.kv.at, loc,
					fmt.Sprintf("the llm-d router (%s) dials every pod, but endpoint %s has no * or ::, so vLLM connects instead of binding and the router receives nothing", where(s.file, s.at), ep),
					fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config", s.socketPort))
			} else if p, ok := endpointPort(ep); ok && s.socketPort != 0 && p != s.socketPort {
				once(fmt.Sprintf("%p", e), e.file, "llm-d/socket-port", e.kv.at, loc,
					fmt.Sprintf("the engine publishes on port %d but the llm-d router (%s) dials podDiscoveryConfig.socketPort %d", p, where(s.file, s.at), s.socketPort),
					fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config, or podDiscoveryConfig.socketPort: %d", s.socketPort, p))
			}
			topic := ""
			if e.kv.topicSet {
				topic = e.kv.topic
			}
			if !strings.HasPrefix(topic, s.topicFilter) {
				once(fmt.Sprintf("%p", e), e.file, "llm-d/topic-filter", e.kv.at, loc,
					fmt.Sprintf("topic %q does not start with the llm-d router's topicFilter %q (%s): the subscription drops every event", topic, s.topicFilter, where(s.file, s.at)),
					fmt.Sprintf("set \"topic\": \"%s$(POD_IP):8000@<model>\" in --kv-events-config", s.topicFilter))
			}
			if b, ok := e.flag("--block-size"); ok && s.blockSize != 0 {
				if n, err := strconv.Atoi(b.text); err == nil && n != s.blockSize {
					once(fmt.Sprintf("%p", s), s.file, "llm-d/block-size-differs", s.at, s.blockSizeKey,
						fmt.Sprintf("%s %d differs from the engine's --block-size %d (%s): the producer README (@ebab687) says they need not match, the June 2026 guide says they must", s.blockSizeKey, s.blockSize, n, where(e.file, b.at)),
						fmt.Sprintf("set %s: %d to be safe with older releases", s.blockSizeKey, n))
				}
			}
			if s.replayPort != 0 && !e.version.IsZero() && e.version.Less(catalog.Version{Major: 0, Minor: 26}) {
				once(fmt.Sprintf("%p", e), e.file, "vllm/replay-needs-0.26", e.kv.at, loc,
					fmt.Sprintf("the llm-d router (%s) asks for replay on port %d, but image %s is vLLM %s: replay needs 0.26 or newer", where(s.file, s.at), s.replayPort, e.image, e.version),
					"use a vLLM 0.26+ image, or drop replaySocketPort")
			}
		}
	}

	for _, f := range seen {
		if f.repeats > 0 {
			x := &byPath[f.file].Findings[f.idx]
			x.Message += fmt.Sprintf(" (and %d more like it in this run)", f.repeats)
		}
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
	for _, g := range gws {
		if g.retriesSet && g.retries <= 1 {
			continue
		}
		for _, r := range routers {
			if !routerHost(r, g.host) {
				continue
			}
			n := "unset (default 2)"
			if g.retriesSet {
				n = strconv.Itoa(g.retries)
			}
			add(g.file, "litellm/retries-stacked", g.at, "model_list "+g.group,
				fmt.Sprintf("api_base %s is the %s router (%s) and num_retries is %s: each failure is retried by the proxy on top of the router's own failover", g.host, r.kind, where(r.file, r.at), n),
				"set router_settings.num_retries: 1 (or 0)")
			break
		}
	}

	sglangRetriesStacked(sglang, routers, add)
	sglangLaunchersMixed(sglang, add)
}

// sglangRetriesStacked reports SG-03: an SGLang gateway whose worker URLs name another router
// of the run, with its retries not limited to one. add records a finding as crossCheck's does.
func sglangRetriesStacked(sglang []*sglangGateway, routers []kvRouter, add func(file, code string, at pos, loc, msg, hint string)) {
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
	workers:
		for _, w := range g.workers {
			host := workerHost(w.text)
			for _, r := range routers {
				if !routerHost(r, host) {
					continue
				}
				add(g.file, "sglang/retries-stacked", w.at, "sglang gateway",
					fmt.Sprintf("worker %s is the %s router (%s:%d) and retry_max_retries is %s: each failure is retried by the gateway on top of the router's own failover", w.text, r.kind, r.file, r.at.line, n),
					"pass --retry-max-retries 1 (or --disable-retries) to the gateway")
				break workers
			}
		}
	}
}

// routerHost reports whether a host name is a router of the run: its name, or the service
// name the router's chart gives it.
func routerHost(r kvRouter, host string) bool {
	if host == "" {
		return false
	}
	first, _, _ := strings.Cut(host, ".")
	if slices.Contains(r.names, first) {
		return true
	}
	switch r.kind {
	case "production-stack":
		return strings.HasSuffix(first, "-router-service")
	case "llm-d":
		return strings.Contains(first, "inference-gateway") || strings.Contains(first, "llm-d") && strings.Contains(first, "gateway")
	}
	return false
}
