package product

import (
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// Files is what the configuration files given with --config show about the deployment. A nil
// *Files means no files were given: every requirement the files would show is then unknown.
type Files struct {
	// Paths are the files and directories given.
	Paths []string
	// Kinds are the Kubernetes object kinds found (apiVersion and kind both set), with the
	// file of the first of each.
	Kinds map[string]string
	// Engines are the vLLM servers the files start.
	Engines []Engine
	// Systems are the routers and gateways the files set up, by product id, with where the
	// first is (a Dynamo frontend, an SGLang gateway, a LiteLLM proxy, a Ray Serve router,
	// production-stack values, an EndpointPickerConfig).
	Systems map[string]string
	// Routers are the routers found with the user's values, as settings to simulate.
	Routers []Configured
	// NotSimulated are the routers found that run nothing kvcheck emulates, with why.
	NotSimulated []NotSimulated
}

// NotSimulated is a router the files set up that gets no row: it runs a mode kvcheck does not
// emulate, or a value its product does not know.
type NotSimulated struct {
	// Product is the product's id; Where its file and line.
	Product, Where string
	Reason         string
	// Notes name the values of the router that kvcheck could not read.
	Notes []string
}

// Engine is one vLLM server the files start.
type Engine struct {
	Where string
	Image string
	// Version is the vLLM version the image tag names, "" when the tag does not say.
	Version string
	// KVEvents: the engine publishes KV events (--kv-events-config with
	// enable_kv_cache_events true); PrefixCachingOff: --no-enable-prefix-caching.
	KVEvents, PrefixCachingOff bool
	// LMCache: the engine runs with LMCache (production-stack lmcacheConfig.enabled, an
	// LMCache image or LMCACHE_* environment); LMCacheController: the controller is enabled.
	LMCache, LMCacheController bool
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
	// "" when none was seen.
	SessionHeader string
	// CacheControl is true when some request has a cache_control marker.
	CacheControl bool
	// HotPrefixShare is the share of requests whose first block is the commonest first block.
	HotPrefixShare float64
	// Replicas and KVTokens are the fleet replayed; AddReplica is true with --add-replica-at.
	Replicas   int
	KVTokens   int64
	AddReplica bool
	// Trace is the traffic itself, for what a product reads of it alone (nil when not known).
	Trace *sim.Trace
}

// TrafficOf reads the traffic's facts from a trace.
func TrafficOf(t *sim.Trace, replicas int, kvTokens int64, addReplica bool) Traffic {
	tr := Traffic{Name: t.Name, Format: t.Format, Text: len(t.Requests) > 0, Replicas: replicas, KVTokens: kvTokens, AddReplica: addReplica, Trace: t}
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
		for k, val := range v.Headers {
			if strings.Contains(k, "session") && val != "" {
				headers[k]++
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

// NotSimulatedRouters returns the routers of the files that get no row, with why; nil for no
// files.
func (f *Files) NotSimulatedRouters() []NotSimulated {
	if f == nil {
		return nil
	}
	return slices.Clone(f.NotSimulated)
}

// RoutersFor returns the routers of the files that run policy, with their settings; nil for no
// files.
func (f *Files) RoutersFor(policy string) []Configured {
	if f == nil {
		return nil
	}
	var out []Configured
	for _, r := range f.Routers {
		if r.Policy == policy {
			out = append(out, r)
		}
	}
	return out
}
