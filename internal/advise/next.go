package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/units"
)

// nextSteps says, for each measurement missing or weak, what would settle it.
func (d *decision) nextSteps(route Verdict) {
	add := func(measure, settles string) {
		d.rec.NextSteps = append(d.rec.NextSteps, NextStep{Measure: measure, Settles: settles})
	}
	in := d.in
	askedTraffic := false
	switch {
	case d.rec.Verdict == Undetermined || d.rec.Then == Undetermined:
		askedTraffic = true
		// The one measurement that would settle it comes first.
		if rp := in.Replay; rp != nil && rp.PrefixInfo && rp.SteadyRequests() < d.th.MinSteadyRequests() {
			// The warm-up is the first half cut down (len/2), so 2m-1 requests leave m after it.
			add(fmt.Sprintf("give a longer request log or trace: at least %d requests in all, so that %d or more come after the warm-up (the first half)", 2*d.th.MinSteadyRequests()-1, d.th.MinSteadyRequests()),
				"the measurement that decides: a replay in which no single request's placement can move the gain by the threshold")
		} else if in.Replay != nil && !in.Replay.PrefixInfo {
			add("add --requests with a JSONL log of real request bodies (a gateway export), or give a trace with block hashes (Mooncake hash_ids)",
				"the measurement that decides: a lengths-only trace cannot show reuse either way")
		} else {
			add("add --requests with a JSONL log of real request bodies (a gateway export), or --trace with a Mooncake trace",
				"the measurement that decides: the traffic, replayed on the fleet under today's routing and each option")
		}
	case d.rec.Verdict == FixFirst:
		add("run kvcheck assess again with the same inputs after the fixes",
			"whether "+route.Describe()+" is still the answer once nothing blocks the cache")
	}
	if in.Replay == nil && d.metricsTooFew() {
		add(fmt.Sprintf("measure the metrics over a longer window (--window, or --file dumps taken further apart) holding %d requests or more", d.th.MinSteadyRequests()),
			"a hit rate over enough requests that no single one decides it")
	}
	if in.Metrics == nil {
		add("add --scrape HOST:PORT,... (or --prometheus URL) to this run",
			"whether prefix caching is on on every replica and the fleet is not thrashing, and the replica count and KV size the replay should use")
	}
	if m := in.Metrics; m != nil && slices.ContainsFunc(m.Replicas, func(r Replica) bool { return r.PrefixCaching == nil }) {
		add("read vllm:cache_config_info from the replicas' /metrics (--scrape), or check their command lines for --no-enable-prefix-caching",
			"whether prefix caching is on where the metrics given do not say (a log or an old dump carries no cache_config_info)")
	}
	if m := in.Metrics; m != nil && m.Sampled() && len(m.Replicas) == 1 {
		add("add --scrape with every replica (or --prometheus URL) if the fleet has more than the one replica in "+m.Source+" "+shortList(m.Inputs),
			"how many replicas a router would choose between: one dump or log is one replica, not necessarily the fleet")
	}
	if in.Templates == nil {
		add("add --templates with the chat template and the code that builds prompts",
			"whether a date, an id or a per-user value in block 0 breaks every prefix before any router sees it")
	}
	switch {
	case in.Requests == nil && !askedTraffic:
		add("add --requests with a JSONL log of real request bodies (a gateway export)",
			"how much prefill is shareable and whether it is reused within sessions (session affinity) or across them (a KV-aware router)")
	case in.Requests != nil && in.Requests.Estimated:
		add("add --tokenize URL of one replica",
			"exact tokens and block positions instead of the 4-bytes-a-token estimate")
	}
	if rp := in.Replay; rp != nil && (rp.ReplicasFrom == ShapeAssumed || rp.KVFrom == ShapeAssumed) {
		add("give --scrape (or --prometheus URL), or state the fleet with --replicas N and --kv-tokens T",
			"the fleet's own shape for the replay: the replica count and each replica's KV cache decide whether shared prefixes fit everywhere")
	}
	if rp := in.Replay; rp != nil && rp.PrefixInfo && !rp.SessionsKnown {
		add("log a session or conversation id with each request (x-session-id header, metadata.session_id)",
			"whether session affinity, the cheaper option, captures the reuse")
	}
	if route == KVAwareRouter {
		switch s := in.Stream; {
		case s == nil:
			add("run kvcheck tap tcp://REPLICA:5557 ... --hash-seed SEED --record a.kvtap, then add --tap-from a.kvtap",
				"hash parity (the same PYTHONHASHSEED everywhere) and a loss-free event stream before an exact KV-aware router")
		case !s.SeedKnown:
			add("add --hash-seed with the replicas' PYTHONHASHSEED",
				"whether a router can recompute the engines' block hashes (sha256_cbor)")
		}
	}
}

// advice names the traps of the routers that would implement the verdict (SPEC §6), after
// what holds whatever the routing (siblings sent apart): the engines' hash parity, each
// product's own lines (productAdvice) and the load terms of their scores, asked of products
// (router.Products), so that no product is named here.
func advice(route Verdict, in Input, th Thresholds, products []product.Router) []string {
	out := []string{}
	if rp := in.Replay; rp != nil && rp.TwinRequests > 0 && float64(rp.TwinTokens) >= th.MinGain*float64(rp.PromptTokens) {
		// Worth a line when the copies are as much prefill as the gain threshold.
		out = append(out, fmt.Sprintf("%s repeat a prompt sent at the same moment (%s of prompt tokens): where the API allows, send them as one request with n (vLLM's OpenAI-compatible API takes n): the engine computes the prompt once and samples n answers, whatever the router does, where copies sent apart are computed again on every replica they reach or wait for the first copy on the one that holds it",
			units.Plural(int64(rp.TwinRequests), "request"), pct(frac(rp.TwinTokens, rp.PromptTokens))))
	}
	var exact, load []string
	for _, p := range products {
		if a, ok := p.(product.Advisor); ok {
			if e := a.Advice().Exact; e != "" {
				exact = append(exact, e)
			}
			if l := a.Advice().LoadTerm; l != "" {
				load = append(load, l)
			}
		}
	}
	loadTerms := strings.Join(append(load, "match - beta*load"), ", ")
	switch route {
	case KVAwareRouter:
		if s := in.Stream; s == nil || s.Consistent == nil || !*s.Consistent {
			out = append(out, config.HashParityAdvice(exact))
		}
		out = append(out, productAdvice(route, in.Config, products)...)
		out = append(out, "naive longest-prefix routing makes hot spots where many requests share a first block: use a scorer that weighs load ("+loadTerms+"), as the replayed policies do")
	case SessionAffinity:
		out = append(out, productAdvice(route, in.Config, products)...)
		out = append(out, "plain hashing of the session id makes hot spots under skewed traffic: prefer consistent hashing with bounded load; let a new replica take new sessions")
	case Nothing:
		if rp := in.Replay; rp != nil && PolicyFamily(rp.Today) != FamilyBalance {
			if t := rp.policy(rp.Today); t != nil && t.HotSpot {
				out = append(out, fmt.Sprintf("today's routing (%s) keeps the reuse but makes a hot spot (load max/mean %.2f): keep it while the busiest replica keeps up (watch its queue and TTFT), and give its scorer a load term (%s) before traffic grows", rp.Today, t.LoadMaxOverMean, loadTerms))
				break
			}
			out = append(out, "keep today's routing ("+rp.Today+"): it already captures the reuse a new router would")
			break
		}
		if rp := in.Replay; rp != nil && rp.KVTokens > 0 && rp.SharedTokens > int64(rp.Replicas)*rp.KVTokens {
			out = append(out, "keep today's routing, and give the fleet more KV cache (--gpu-memory-utilization, --kv-cache-dtype fp8, larger GPUs, more replicas): the shared prefixes do not fit even across every replica, so no router can keep them")
			break
		}
		out = append(out, "keep today's routing; revisit when traffic with shared prefixes that do not fit in every replica (many long system prompts, RAG documents, agents, multi-turn chat) grows")
	}
	return out
}
