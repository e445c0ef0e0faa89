// Package litellm is everything kvcheck knows about the LiteLLM proxy's router: its
// router_settings with the shipped defaults (ROUTERS.md §1), its emulations (simple-shuffle,
// session_affinity, prompt_caching: shuffle.go, session.go, promptcache.go, whose doc comments
// cite the upstream lines they follow), how a config.yaml's values configure them, how kvcheck
// would tune them, what they need and the config.yaml to apply.
package litellm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "litellm"
	display = "LiteLLM"
)

// Settings are LiteLLM proxy router_settings (ROUTERS.md §1).
type Settings struct {
	// RoutingStrategy is router_settings.routing_strategy (simple-shuffle).
	RoutingStrategy string
	// PreCallChecks is optional_pre_call_checks (none).
	PreCallChecks []string
	// AffinityTTLSecs is deployment_affinity_ttl_seconds (3600), the session pin's lifetime.
	AffinityTTLSecs float64
	// PromptCacheTTLSecs is prompt_caching's pin lifetime (300, hard-coded).
	PromptCacheTTLSecs float64
	// Redis is true when a Redis is configured: pins are then shared by every proxy pod;
	// without it each pod keeps its own.
	Redis bool
	// ProxyPods is the number of LiteLLM proxy pods the requests are spread over (1).
	ProxyPods int
}

// Shipped are the settings as LiteLLM ships them.
func Shipped() Settings {
	return Settings{RoutingStrategy: "simple-shuffle", AffinityTTLSecs: 3600, PromptCacheTTLSecs: 300, ProxyPods: 1}
}

// Router is the LiteLLM proxy's router.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// InFront implements product.Front: the proxy's deployments may be another router's gateway
// (model_list's api_base), which then picks the replica.
func (Router) InFront() bool { return true }

// Advice implements product.Advisor: LiteLLM routes on no prefix, retries across replicas,
// and keys its session affinity on a header.
func (Router) Advice() product.Advice {
	return product.Advice{
		KVAware: []string{display + " has no prefix-aware routing; with a router below it, keep num_retries at 0 or 1"},
		Session: []string{display + ": optional_pre_call_checks session_affinity keys on a session header (x-litellm-session-id, x-litellm-trace-id): send one per conversation; prompt_caching pins only up to the last cache_control marker, never hits when it is on the last message, and holds for 300 s"},
	}
}

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(s product.Settings) []sim.PolicyInfo {
	ls := s.(Settings)
	return []sim.PolicyInfo{simpleShuffle(), sessionAffinity(ls), promptCaching(ls)}
}

// PreCallChecks are the values optional_pre_call_checks takes (types/router.py@0044fbec,
// ROUTERS.md §1).
func PreCallChecks() []string {
	return []string{"prompt_caching", "router_budget_limiting", "responses_api_deployment_check", "deployment_affinity",
		"session_affinity", "forward_client_headers_by_model_group", "enforce_model_rate_limits", "encrypted_content_affinity"}
}

// Configure implements product.Router. It reads routing_strategy, optional_pre_call_checks
// (comma-separated), deployment_affinity_ttl_seconds, redis (true when redis_host or redis_url
// is set) and replicas (the proxy's pods, when the file says). session_affinity and
// prompt_caching each give a row; without either, simple-shuffle does, and another strategy
// none.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	where := rd.Where
	var policies []string
	checks := strings.Split(f.Values["optional_pre_call_checks"], ",")
	for _, c := range checks {
		switch {
		case c == "session_affinity":
			policies = append(policies, "litellm-session-affinity")
		case c == "prompt_caching":
			policies = append(policies, "litellm-prompt-caching")
		case c == "deployment_affinity" || c == "responses_api_deployment_check" || c == "encrypted_content_affinity":
			// They pin by API key, previous_response_id or encrypted content, which no
			// replayed traffic carries.
			rd.Notes = append(rd.Notes, fmt.Sprintf("optional_pre_call_checks %s in %s pins requests kvcheck cannot tell apart (by API key, previous response or encrypted content): not emulated, the row runs without it", c, where))
		case c != "" && !slices.Contains(PreCallChecks(), c):
			rd.Notes = append(rd.Notes, fmt.Sprintf("optional_pre_call_checks %q in %s is not a check LiteLLM knows: it does nothing, and the row runs without it, as LiteLLM does", c, where))
		}
	}
	var skip string
	if len(policies) == 0 {
		if st := f.Values["routing_strategy"]; st == "" || st == "simple-shuffle" {
			policies = []string{"litellm-simple-shuffle"}
		} else {
			skip = fmt.Sprintf("routing_strategy %s without session_affinity or prompt_caching is not emulated (kvcheck emulates simple-shuffle)", st)
		}
	}
	if f.Values["optional_pre_call_checks"] != "" {
		s.PreCallChecks = checks
		rd.Note("optional_pre_call_checks", f.Values["optional_pre_call_checks"])
	}
	rd.Str("routing_strategy", &s.RoutingStrategy)
	rd.Float("deployment_affinity_ttl_seconds", &s.AffinityTTLSecs)
	rd.Bool("redis", &s.Redis)
	rd.Int("replicas", &s.ProxyPods)
	return rd.Result(policies, s, skip)
}

// Tune implements product.Router: several proxy pods without Redis get Redis, so that every
// pod sees the same pins.
func (Router) Tune(_ string, ps product.Settings, _ product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if s.ProxyPods <= 1 || s.Redis {
		return s, nil
	}
	s.Redis = true
	return s, []product.Change{{Setting: "router_settings.redis_host", Value: "(your Redis)",
		Why: fmt.Sprintf("%d proxy pods keep their own pins without Redis", s.ProxyPods)}}
}

// The requirements of LiteLLM's emulations, by name.
const (
	ReqProxy        = "LiteLLM proxy"
	ReqSessionIDs   = "LiteLLM session ids in the traffic"
	ReqCacheControl = "cache_control markers in the traffic"
	ReqRedis        = "Redis shared by the proxy pods"
)

// reqAdds says what meeting each requirement adds to a stack without it.
var reqAdds = map[string]string{
	ReqSessionIDs:   "a LiteLLM session id on every request (x-litellm-session-id or metadata.session_id)",
	ReqCacheControl: "cache_control markers in the prompts",
	ReqRedis:        "a Redis the proxy pods share",
}

// Requirements implements product.Router.
func (Router) Requirements(policy string, ps product.Settings, tr product.Traffic, f *product.Files) []product.Requirement {
	s := ps.(Settings)
	out := []product.Requirement{product.System(ReqProxy, ID, "a LiteLLM config.yaml", f)}
	add := func(name, status, detail string) {
		out = append(out, product.Requirement{Name: name, Status: status, Detail: detail, Adds: reqAdds[name]})
	}
	switch policy {
	case "litellm-session-affinity":
		switch {
		case !tr.Text:
			add(ReqSessionIDs, product.Unknown, "this "+tr.Format+" trace holds no headers or metadata")
		case sessions(tr.Trace):
			add(ReqSessionIDs, product.Met, "x-litellm-session-id, x-<vendor>-session-id or metadata.session_id in "+tr.Name)
		default:
			add(ReqSessionIDs, product.Missing, "no x-litellm-session-id, x-<vendor>-session-id (8+ characters) or metadata.session_id in "+tr.Name)
		}
		if pods := s.ProxyPods; pods > 1 {
			if s.Redis {
				add(ReqRedis, product.Met, fmt.Sprintf("%d proxy pods, Redis set", pods))
			} else {
				add(ReqRedis, product.Missing, fmt.Sprintf("%d proxy pods and no redis_host or redis_url: each pod keeps its own pins", pods))
			}
		}
	case "litellm-prompt-caching":
		switch {
		case !tr.Text:
			add(ReqCacheControl, product.Unknown, "this "+tr.Format+" trace holds no request bodies")
		case tr.CacheControl:
			add(ReqCacheControl, product.Met, "in "+tr.Name)
		default:
			add(ReqCacheControl, product.Missing, "no message in "+tr.Name+" has one: nothing is pinned")
		}
	}
	return out
}

// sessions reports whether some request of t carries a session id session_affinity reads by
// the proxy's patterns: metadata.session_id, or a header matching ^x-.+-session-id$ (which
// x-litellm-session-id does) whose value matches ^[a-zA-Z0-9_\-]{8,}$.
func sessions(t *sim.Trace) bool {
	if t == nil {
		return false
	}
	for i := range t.Requests {
		v := t.Requests[i].View
		if v == nil {
			continue
		}
		if v.MetadataSession != "" {
			return true
		}
		for k, val := range v.Headers {
			if litellmGenericSessionHeader.MatchString(k) && litellmSessionValue.MatchString(val) {
				return true
			}
		}
	}
	return false
}

// Snippet implements product.Router: a config.yaml with one deployment per replica.
func (Router) Snippet(policy string, ps product.Settings) product.Snippet {
	l := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# LiteLLM proxy config.yaml")
	w("model_list:")
	for i := range 2 {
		w("- model_name: model # edit")
		w("  litellm_params:")
		w("    model: hosted_vllm/your-org/your-model # edit")
		w("    api_base: http://vllm-%d:8000/v1 # edit: one per replica", i)
	}
	w("router_settings:")
	w("  routing_strategy: %s", l.RoutingStrategy)
	switch policy {
	case "litellm-session-affinity":
		w("  optional_pre_call_checks: [session_affinity] # pins x-litellm-session-id, x-<vendor>-session-id (8+ characters) or metadata.session_id")
		w("  deployment_affinity_ttl_seconds: %s", product.Num(l.AffinityTTLSecs))
	case "litellm-prompt-caching":
		w("  optional_pre_call_checks: [prompt_caching] # pins the messages up to the last cache_control marker, 1,024 tokens or more, for 300 s")
	}
	if l.Redis {
		w("  redis_host: os.environ/REDIS_HOST # pins shared by every proxy pod")
	}
	return product.Snippet{Product: ID, Format: "LiteLLM config.yaml", File: "litellm-config.yaml",
		Where: "the proxy's config.yaml (litellm --config): router_settings, with one model_list entry per replica", Text: b.String()}
}

// Metrics are the proxy's own metric families, litellm_* (its Prometheus callback,
// litellm/integrations/prometheus.py).
func (Router) Metrics() product.Metrics {
	return product.Metrics{Families: []string{"litellm_"}}
}
