// Package vllmrouter is everything kvcheck knows about vLLM Router (vllm-project/router, the
// Rust router forked from SGLang's gateway): its policies with the command line's defaults,
// their emulations, how a launch command configures them, how kvcheck would tune them, what
// they need and the command line to apply.
//
// Source: vllm-project/router@e667ebb (main, 2026-05-06, merge of PR #157; read whole from a
// mirror of its history), cited file:line below and in each emulation's doc comment. A later
// stored copy of src/protocols/spec.rs (@027876d) routes a chat on the same text. What was
// checked against the source:
//   - the command line (src/main.rs:109-160; py_src/vllm_router/router_args.py:24-34):
//     --policy cache_aware by default, among random, round_robin, cache_aware, power_of_two,
//     consistent_hash, rendezvous_hash; --cache-threshold 0.3, --balance-abs-threshold 64,
//     --balance-rel-threshold 1.5, --eviction-interval 120 s (the Python launcher's
//     --eviction-interval-secs also 120), --max-tree-size 2^26; consistent_hash's 160 virtual
//     nodes and power_of_two's 5 s are fixed (main.rs:357-377). Workers register with no policy
//     hint (router.rs:130), so these values hold, not CacheAwareConfig::default()'s.
//   - the text a policy reads (route_typed_request, router.rs:540-549; spec.rs:542-557,
//     764-766, 2323-2338): for a chat completion its session_params.session_id, else ""; the
//     messages are never read. For a completion its prompt (a list joined with spaces, token
//     ids as "token_ids:<n>"). So cache_aware matches chat requests on session ids, and
//     consistent_hash sends every chat request without a session header or
//     session_params.session_id to one worker.
//   - consistent_hash and its key (consistent_hash.rs:21-450; hash_key.rs:11-229): hash.go
//     ports fbi_hash, the ring and the key operation for operation; rendezvous_hash
//     (rendezvous_hash.rs:42-83).
//   - cache_aware (cache_aware.rs:126-358; tree.rs:209-227, 362-619, the SGLang gateway's
//     tree.rs @8905cbd line for line outside its tests, so it runs on internal/router/chartree)
//     and the load it reads: the router's count of its requests in flight, raised only for
//     cache_aware (router.rs:574-580, decremented when the response ends); the validator's
//     bounds (config/validation.rs:127-167). cacheaware.go lists each step with its lines.
//   - power_of_two (power_of_two.rs:24-84; router.rs:150-172, 1284-1360): the loads come from
//     /get_load, which vLLM does not serve, so it routes at random (rule vllm-router/power-of-two-no-load).
//   - round_robin (round_robin.rs:22-43) and random (random.rs:19-38).
//
// Left out: workers that fail (circuit breakers, health checks, retries: every worker is
// healthy); data-parallel workers ("url@rank"); the prefill/decode and OpenAI-backend modes;
// IGW mode's per-model policies; a string batch's prompts after the first (kvcheck reads the
// first; upstream joins them). kv_aware is not emulated: it is not on main at e667ebb, and the
// stored copies of it disagree (one, src/kv_index/block_hash.rs@2ec0ff0, keys blocks with
// Rust's SipHash DefaultHasher over (seed, parent, tokens), which never equals the hashes
// vLLM's KV events carry and that its index stores, updater.rs@2ec0ff0; later ones match
// vLLM's hashes) and none shows which shipped.
//
// Where ROUTERS.md's corrections say otherwise, the source wins: consistent_hash's body keys
// (session_params.session_id, user, session_id, user_id) are searched in the routing text,
// not the body, so a request's user field is never read; the Python launcher's eviction
// interval is 120 s, not SGLang's 60 s; kv_aware is above.
package vllmrouter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "vllm-router"
	display = "vLLM Router"
)

// VirtualNodes are consistent_hash's ring points a worker (VIRTUAL_NODES_PER_WORKER,
// consistent_hash.rs:21; the command line cannot change it, main.rs:369-371).
const VirtualNodes = 160

// Settings are vLLM Router's command-line values kvcheck's emulations read.
type Settings struct {
	// Policy is --policy (cache_aware).
	Policy string
	// CacheThreshold, BalanceAbs and BalanceRel are cache_aware's --cache-threshold (0.3),
	// --balance-abs-threshold (64) and --balance-rel-threshold (1.5).
	CacheThreshold float64
	BalanceAbs     int
	BalanceRel     float64
	// EvictionSecs and MaxTreeSize are --eviction-interval (120 s) and --max-tree-size
	// (2^26 characters a worker).
	EvictionSecs float64
	MaxTreeSize  int
	// WorkerURLs are --worker-urls: the ring's points are hashes of them, so routes follow the
	// URLs. Replica i beyond them is DefaultURL.
	WorkerURLs []string
}

// Shipped are the settings as vLLM Router's command line ships them.
func Shipped() Settings {
	return Settings{Policy: "cache_aware", CacheThreshold: 0.3, BalanceAbs: 64, BalanceRel: 1.5, EvictionSecs: 120, MaxTreeSize: 1 << 26}
}

// Policies are --policy's values (main.rs:110), with their emulations.
var Policies = []struct{ Flag, Emulation string }{
	{"cache_aware", "vllm-router-cache-aware"},
	{"consistent_hash", "vllm-router-consistent-hash"},
	{"rendezvous_hash", "vllm-router-rendezvous-hash"},
	{"power_of_two", "vllm-router-power-of-two"},
	{"round_robin", "vllm-router-round-robin"},
	{"random", "vllm-router-random"},
}

// Router is vLLM Router.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	s := ps.(Settings)
	return []sim.PolicyInfo{cacheAware(s), consistentHash(s), rendezvousHash(s), powerOfTwo(), roundRobin(), random()}
}

// Configure implements product.Router. It reads the launch command's flags as given:
// --policy, --cache-threshold, --balance-abs-threshold, --balance-rel-threshold,
// --eviction-interval (or the Python launcher's --eviction-interval-secs), --max-tree-size
// and --worker-urls (space-separated).
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	rd.Str("--policy", &s.Policy)
	var policies []string
	skip := ""
	if i := slices.IndexFunc(Policies, func(p struct{ Flag, Emulation string }) bool { return p.Flag == s.Policy }); i >= 0 {
		policies = []string{Policies[i].Emulation}
	} else {
		skip = fmt.Sprintf("--policy %q is not one vLLM Router takes (it refuses to start)", s.Policy)
	}
	rd.Float("--cache-threshold", &s.CacheThreshold)
	rd.Int("--balance-abs-threshold", &s.BalanceAbs)
	rd.Float("--balance-rel-threshold", &s.BalanceRel)
	rd.Float("--eviction-interval", &s.EvictionSecs)
	rd.Float("--eviction-interval-secs", &s.EvictionSecs)
	rd.Int("--max-tree-size", &s.MaxTreeSize)
	if u := strings.Fields(f.Values["--worker-urls"]); len(u) > 0 {
		s.WorkerURLs = u
		rd.Note("--worker-urls", strings.Join(u, " "))
	}
	return rd.Result(policies, s, skip)
}

// CharsPerToken is the characters a token stands for when kvcheck sizes the cache_aware tree
// against a KV cache in tokens (the byte estimate's 4).
const CharsPerToken = 4

// Tune implements product.Router: cache_aware's tree is sized to what the fleet's caches hold.
// The other policies have nothing to tune: their behaviour is fixed by the source.
func (Router) Tune(policy string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if policy != "vllm-router-cache-aware" || tr.Replicas <= 0 || tr.KVTokens <= 0 {
		return s, nil
	}
	size := int(min(tr.KVTokens*CharsPerToken, 1<<31-1))
	if s.MaxTreeSize == size {
		return s, nil
	}
	s.MaxTreeSize = size
	return s, []product.Change{{Setting: "--max-tree-size", Value: fmt.Sprint(size),
		Why: fmt.Sprintf("each worker's tree remembers what its engine can hold: %d tokens x %d characters a token; larger routes to prefixes the engine evicted", tr.KVTokens, CharsPerToken)}}
}

// The requirements of vLLM Router's emulations, by name.
const (
	ReqRouter   = "vLLM Router"
	ReqSessions = "session header or session_params.session_id in the traffic"
	// ReqSessionParams is cache_aware's: it reads no header, only the routing text.
	ReqSessionParams = "session_params.session_id in the chat traffic"
)

// Requirements implements product.Router.
func (Router) Requirements(policy string, _ product.Settings, tr product.Traffic, f *product.Files) []product.Requirement {
	out := []product.Requirement{product.System(ReqRouter, ID, "a vllm-router or python -m vllm_router.launch_router command", f)}
	switch policy {
	case "vllm-router-consistent-hash", "vllm-router-rendezvous-hash":
		out = append(out, sessionRequirement(tr, true))
	case "vllm-router-cache-aware":
		out = append(out, sessionRequirement(tr, false))
	}
	return out
}

// sessionRequirement is whether the traffic names what vLLM Router routes chat requests by: a
// session header of consistent_hash's list (when headers: the hash policies read them,
// hash_key.rs:11-60; cache_aware reads none), or session_params.session_id. A completion's
// prompt is read, so a log of completions needs neither.
func sessionRequirement(tr product.Traffic, headers bool) product.Requirement {
	r := product.Requirement{Name: ReqSessions, Adds: "a session id on every chat request (a session header or session_params.session_id)"}
	if !headers {
		r.Name, r.Adds = ReqSessionParams, "a session_params.session_id on every chat request"
	}
	switch {
	case !tr.Text || tr.Trace == nil:
		r.Status, r.Detail = product.Unknown, "this "+tr.Format+" trace holds no headers or bodies"
		return r
	case !tr.Chat:
		r.Status, r.Detail = product.Met, "completions in "+tr.Name+": the router reads their prompts"
		return r
	}
	chats, named := 0, 0
	for i := range tr.Trace.Requests {
		v := tr.Trace.Requests[i].View
		if v == nil || !v.Chat {
			continue
		}
		chats++
		if routingText(v) != "" || headers && slices.ContainsFunc(sessionHeaders, func(h string) bool { return v.Headers[h] != "" }) {
			named++
		}
	}
	if named == chats {
		r.Status, r.Detail = product.Met, fmt.Sprintf("every chat request of %s names its session", tr.Name)
		return r
	}
	r.Status = product.Missing
	if !headers {
		r.Detail = fmt.Sprintf("%d of %d chat requests in %s carry no session_params.session_id: cache_aware matches a chat on it alone (no header, no message), so those go to the least loaded worker and share no prefix", chats-named, chats, tr.Name)
		return r
	}
	r.Detail = fmt.Sprintf("%d of %d chat requests in %s carry neither x-session-id (or x-user-id, x-tenant-id, x-correlation-id, x-request-id, x-trace-id) nor session_params.session_id: the router reads nothing else of a chat, so consistent_hash sends them all to one worker and cache_aware to the least loaded", chats-named, chats, tr.Name)
	return r
}

// Snippet implements product.Router: the router's launch command with policy's values given.
func (Router) Snippet(policy string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	flag := "cache_aware"
	for _, p := range Policies {
		if p.Emulation == policy {
			flag = p.Flag
		}
	}
	workers := s.WorkerURLs
	if len(workers) == 0 {
		workers = []string{fmt.Sprintf(DefaultURL, 0), fmt.Sprintf(DefaultURL, 1)}
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# vLLM Router (vllm-project/router): its command line, as a container's command and args")
	w("vllm-router \\")
	w("  --host 0.0.0.0 --port 30000 \\")
	w("  --worker-urls %s \\", strings.Join(workers, " "))
	if flag != "cache_aware" {
		w("  --policy %s", flag)
	} else {
		w("  --policy cache_aware \\")
		w("  --cache-threshold %s \\", product.Num(s.CacheThreshold))
		w("  --balance-abs-threshold %d \\", s.BalanceAbs)
		w("  --balance-rel-threshold %s \\", product.Num(s.BalanceRel))
		w("  --eviction-interval %s \\", product.Num(s.EvictionSecs))
		w("  --max-tree-size %d", s.MaxTreeSize)
	}
	switch flag {
	case "consistent_hash", "rendezvous_hash", "cache_aware":
		w("# Chat requests are routed on the x-session-id header (or x-user-id, x-tenant-id, x-correlation-id,")
		w("# x-request-id, x-trace-id) or the body's session_params.session_id: send one per conversation.")
	}
	return product.Snippet{Product: ID, Format: "vLLM Router command line", File: "vllm-router.sh",
		Where: "the router's command line: the flags of vllm-router (the container's command and args)", Text: b.String()}
}
