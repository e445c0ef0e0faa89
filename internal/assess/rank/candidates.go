package rank

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// The products, by the prefix of their emulations' names (the names the issue fixes:
// prodstack-prefixaware, llmd-precise, dynamo-kv, sglang-cache-aware, ray-prefix-affinity,
// litellm-session-affinity, ...), in lint's spelling of the router kinds.
const (
	ProdStack = "production-stack"
	LLMD      = "llm-d"
	Dynamo    = "dynamo"
	SGLang    = "sglang"
	Ray       = "ray"
	LiteLLM   = "litellm"
)

var productPrefixes = []struct{ prefix, product string }{
	{"prodstack-", ProdStack}, {"llmd-", LLMD}, {"dynamo-", Dynamo},
	{"sglang-", SGLang}, {"ray-", Ray}, {"litellm-", LiteLLM},
}

// ProductOf returns the product an emulation belongs to, by its name; "" for a name kvcheck
// does not know (an idealised policy, a newer emulation).
func ProductOf(policy string) string {
	for _, p := range productPrefixes {
		if strings.HasPrefix(policy, p.prefix) {
			return p.product
		}
	}
	return ""
}

// Traffic is what the replayed traffic shows that tuning and requirements read.
type Traffic struct {
	// Name and Format are the trace's.
	Name, Format string
	// Text is true when every request carries what a text-reading router sees (a request log).
	Text bool
	// Chat is true when some request is a chat completion.
	Chat bool
	// SessionHeader is the commonest header naming a session (a name holding "session"),
	// "" when none was seen; LiteLLMSessions is true when some request carries an id LiteLLM's
	// session_affinity reads (metadata.session_id, x-litellm-session-id, x-<vendor>-session-id
	// with 8 or more of [A-Za-z0-9_-]).
	SessionHeader   string
	LiteLLMSessions bool
	// CacheControl is true when some request has a cache_control marker.
	CacheControl bool
	// HotPrefixShare is the share of requests whose first block is the commonest first block.
	HotPrefixShare float64
	// Replicas and KVTokens are the fleet replayed; AddReplica is true with --add-replica-at.
	Replicas   int
	KVTokens   int64
	AddReplica bool
}

// TrafficOf reads the traffic's facts from a trace.
func TrafficOf(t *sim.Trace, replicas int, kvTokens int64, addReplica bool) Traffic {
	tr := Traffic{Name: t.Name, Format: t.Format, Text: len(t.Requests) > 0, Replicas: replicas, KVTokens: kvTokens, AddReplica: addReplica}
	first := map[uint64]int{}
	headers := map[string]int{}
	top := 0
	for i := range t.Requests {
		r := &t.Requests[i]
		if len(r.Blocks) > 0 {
			first[r.Blocks[0]]++
			top = max(top, first[r.Blocks[0]])
		}
		v := r.View
		if v == nil {
			tr.Text = false
			continue
		}
		tr.Chat = tr.Chat || v.Chat
		tr.CacheControl = tr.CacheControl || v.CacheKey != 0
		if v.MetadataSession != "" {
			tr.LiteLLMSessions = true
		}
		for k, val := range v.Headers {
			if !strings.Contains(k, "session") || val == "" {
				continue
			}
			headers[k]++
			if litellmSessionHeader(k) && litellmSessionValue(val) {
				tr.LiteLLMSessions = true
			}
		}
	}
	if n := len(t.Requests); n > 0 {
		tr.HotPrefixShare = float64(top) / float64(n)
	}
	best := 0
	for k, n := range headers {
		if n > best || n == best && k < tr.SessionHeader {
			tr.SessionHeader, best = k, n
		}
	}
	return tr
}

// litellmSessionHeader is LiteLLM's header rule (litellm_pre_call_utils.py, ROUTERS.md §1):
// x-litellm-trace-id, x-litellm-session-id, or a name matching ^x-.+-session-id$.
func litellmSessionHeader(k string) bool {
	if k == "x-litellm-trace-id" || k == "x-litellm-session-id" {
		return true
	}
	return strings.HasPrefix(k, "x-") && strings.HasSuffix(k, "-session-id") && len(k) > len("x--session-id")
}

// litellmSessionValue is _SESSION_ID_VALUE_RE: ^[a-zA-Z0-9_\-]{8,}$.
func litellmSessionValue(v string) bool {
	if len(v) < 8 {
		return false
	}
	for _, c := range v {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// Candidates lists every emulation's rows: as shipped (SGLang's cache_aware twice: the CLI's
// defaults and the ones a policy hint applies), as configured by each router the files set up
// for it, and tuned (from the configured row when there is one, else as shipped) when kvcheck
// would change a setting for this traffic. Requirements are filled from the files and traffic.
func Candidates(emus []sim.PolicyInfo, tr Traffic, files *Files) []Candidate {
	var out []Candidate
	for _, e := range emus {
		product := cmpOr(ProductOf(e.Name), e.Product)
		shipped := []Candidate{{Policy: e.Name, Product: product, Variant: Shipped, Settings: sim.DefaultRouterSettings()}}
		if product == SGLang {
			hint := sim.DefaultRouterSettings()
			hint.SGLang = sim.SGLangHintDefaults()
			shipped = []Candidate{
				{Policy: e.Name, Product: product, Variant: Shipped, Label: "CLI defaults", Settings: sim.DefaultRouterSettings()},
				{Policy: e.Name, Product: product, Variant: Shipped, Label: "policy-hint defaults", Settings: hint},
			}
		}
		out = append(out, shipped...)
		var configured []Candidate
		for _, rc := range files.routersFor(e.Name) {
			c := Candidate{Policy: e.Name, Product: product, Variant: Configured, Label: rc.Where, Settings: rc.Settings, Changes: rc.Changes, Notes: slices.Clone(rc.Notes)}
			configured = append(configured, c)
		}
		out = append(out, configured...)
		from := shipped[0]
		if len(configured) > 0 {
			from = configured[0]
		}
		if t, ok := tune(from, tr); ok {
			out = append(out, t)
		}
	}
	for i := range out {
		if out[i].Policy == "dynamo-kv" && out[i].Variant != Configured {
			// The emulation is --router-mode kv whatever Mode says; say so in its settings.
			out[i].Settings.Dynamo.Mode = "kv"
		}
		out[i].Requirements = requirements(out[i], tr, files)
		withoutEvents(&out[i])
	}
	return out
}

// withoutEvents simulates a router that reads the engines' KV events as the product behaves
// when the files show the engines publish none (the requirement missing, not unknown): Dynamo's
// KV router (with --router-kv-events) "falls back to load-only decisions even in kv mode"
// (ROUTERS.md §4) and llm-d's precise producer, whose index only the events build (§2), matches
// no prefix. A tuned row stays simulated with the events: it is kvcheck's configuration, which
// needs them, and its requirement stays missing; its note says so. Unknown keeps the events.
func withoutEvents(c *Candidate) {
	var product string
	switch {
	case c.Policy == "dynamo-kv" && c.Settings.Dynamo.KVEvents:
		product = "Dynamo's KV router falls back to load-only decisions (\"even in kv mode\", Dynamo's KV routing guide): no overlap is credited"
	case c.Policy == "llmd-precise":
		product = "llm-d's precise producer builds its index only from them: no pod matches a prefix"
	default:
		return
	}
	i := slices.IndexFunc(c.Requirements, func(q Requirement) bool { return q.Name == ReqKVEvents && q.Status == Missing })
	if i < 0 {
		return
	}
	shown := "the files show an engine without KV events (" + c.Requirements[i].Detail + ")"
	if c.Variant == Tuned {
		c.Notes = append(c.Notes, "simulated with the engines publishing KV events, as this configuration needs; "+shown+": enable them to get these figures")
		return
	}
	c.Settings.Dynamo.NoEngineEvents = c.Policy == "dynamo-kv"
	c.Settings.LLMD.NoEngineEvents = c.Policy == "llmd-precise"
	c.Notes = append(c.Notes, "simulated without engine KV events: "+shown+", and without them "+product)
}

// Today returns the settings today's routing (policy, with settings as the files configure it,
// or nil as shipped) runs with as the files show the deployment behaves, and the notes that say
// where that differs from its settings alone: the same correction the ranked rows get, so that
// --today dynamo-kv or llmd-precise on engines the files show publish no KV events is replayed
// load-only or without a prefix match, as its shipped and configured rows are. notes are the
// configured router's own notes (values it could not read), kept first. An idealised policy, or
// no files, comes back as given.
func Today(policy string, settings *sim.RouterSettings, notes []string, f *Files) (*sim.RouterSettings, []string) {
	if f == nil {
		return settings, notes
	}
	c := Candidate{Policy: policy, Product: ProductOf(policy), Variant: Shipped, Settings: sim.DefaultRouterSettings(), Notes: slices.Clone(notes)}
	if settings != nil {
		c.Variant, c.Settings = Configured, *settings
	}
	if policy == "dynamo-kv" && c.Variant == Shipped {
		c.Settings.Dynamo.Mode = "kv"
	}
	c.Requirements = requirements(c, Traffic{}, f)
	withoutEvents(&c)
	if len(c.Notes) == len(notes) {
		return settings, notes
	}
	return &c.Settings, c.Notes
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TunedCreditDecay is the credit decay kvcheck sets for Dynamo's KV router when a replica is
// added: the idealised kv-decay policy's default, under which a replica's overlap credit halves
// at two queued requests, so a loaded holder of the prefix loses to the empty newcomer.
const TunedCreditDecay = 0.5

// TunedRayImbalance is the imbalance threshold kvcheck sets for Ray's prefix router when one
// first block is shared by more than a replica's fair share: Ray's earlier default (ROUTERS.md
// §6), under which a replica more than 10 requests busier than the least loaded is left.
const TunedRayImbalance = 10

// CharsPerToken is the characters a token stands for when kvcheck sizes a character tree
// against a KV cache in tokens (the byte estimate's 4).
const CharsPerToken = 4

// tune returns the row kvcheck would run for this traffic, when it changes a setting.
func tune(from Candidate, tr Traffic) (Candidate, bool) {
	c := from
	c.Variant, c.Label = Tuned, ""
	c.Changes = slices.Clone(from.Changes)
	c.Notes = slices.Clone(from.Notes)
	s := &c.Settings
	var ch []Change
	switch from.Policy {
	case "dynamo-kv":
		if tr.AddReplica && s.Dynamo.CreditDecay == 0 {
			s.Dynamo.CreditDecay = TunedCreditDecay
			ch = append(ch, Change{"--router-kv-overlap-score-credit-decay", fmt.Sprint(TunedCreditDecay),
				"a replica is added (--add-replica-at) and with decay 0 its empty cache never outbids a replica holding the prefix"})
		}
	case "llmd-precise":
		if s.LLMD.Tokenizer != "vllm" {
			s.LLMD.Tokenizer = "vllm"
			ch = append(ch, Change{"token-producer", "vllm",
				"the estimate tokenizer's keys never match the engine's blocks, so the precise producer finds no prefix"})
		}
	case "ray-prefix-affinity":
		if math.IsInf(s.Ray.ImbalancedThreshold, 1) && tr.Replicas > 0 && tr.HotPrefixShare > 1/float64(tr.Replicas) {
			s.Ray.ImbalancedThreshold = TunedRayImbalance
			ch = append(ch, Change{"imbalanced_threshold", fmt.Sprint(TunedRayImbalance),
				fmt.Sprintf("one first block opens %.0f%% of the requests, more than one replica's fair share (%.0f%%); an infinite threshold sends them all to one replica", 100*tr.HotPrefixShare, 100/float64(tr.Replicas))})
		}
	case "sglang-cache-aware":
		if tr.Replicas > 0 && tr.KVTokens > 0 {
			size := int(min(int64(tr.Replicas)*tr.KVTokens*CharsPerToken, math.MaxInt32))
			if s.SGLang.MaxTreeSize != size {
				s.SGLang.MaxTreeSize = size
				ch = append(ch, Change{"--max-tree-size", fmt.Sprint(size),
					fmt.Sprintf("the tree remembers what the fleet can hold: %d replicas x %d tokens x %d characters a token; smaller forgets prefixes the engines still hold, larger routes to prefixes they evicted", tr.Replicas, tr.KVTokens, CharsPerToken)})
			}
		}
	case "prodstack-session":
		if s.ProdStack.SessionKey == "" && tr.SessionHeader != "" {
			s.ProdStack.SessionKey = tr.SessionHeader
			ch = append(ch, Change{"sessionKey", tr.SessionHeader,
				"the traffic names its sessions in this header; without a key the session router refuses to start"})
		}
	}
	if strings.HasPrefix(from.Policy, "litellm-") && s.LiteLLM.ProxyPods > 1 && !s.LiteLLM.Redis {
		s.LiteLLM.Redis = true
		ch = append(ch, Change{"router_settings.redis_host", "(your Redis)",
			fmt.Sprintf("%d proxy pods keep their own pins without Redis", s.LiteLLM.ProxyPods)})
	}
	if len(ch) == 0 {
		return Candidate{}, false
	}
	c.Changes = append(c.Changes, ch...)
	return c, true
}
