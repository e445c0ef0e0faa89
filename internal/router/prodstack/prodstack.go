// Package prodstack is everything kvcheck knows about the vLLM production-stack router: its
// settings with the shipped defaults (vllm_router CLI, Helm routerSpec; ROUTERS.md §3), its
// emulations (one per --routing-logic kvcheck emulates: roundrobin.go, session.go,
// prefixaware.go, kvaware.go, loadaware.go and what they share, shared.go, whose doc comments
// cite the upstream lines they follow), how the Helm values or command line configure them, how kvcheck would
// tune them, what they need and the Helm values to apply.
package prodstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "production-stack"
	display = "vLLM production-stack"
)

// Settings are vLLM production-stack router settings (vllm_router CLI, Helm routerSpec;
// ROUTERS.md §3).
type Settings struct {
	// SessionKey is the header the session router reads (--session-key); empty makes the
	// session router refuse to start.
	SessionKey string
	// PrefixMinMatch is --prefix-min-match-length in characters (0).
	PrefixMinMatch int
	// KVAwareThreshold is --kv-aware-threshold in tokens (2000).
	KVAwareThreshold int
	// LoadBeta is --loadaware-beta (1.0).
	LoadBeta float64
}

// Shipped are the settings as production-stack ships them.
func Shipped() Settings { return Settings{KVAwareThreshold: 2000, LoadBeta: 1.0} }

// RoutingLogics are the values --routing-logic takes (parsers/parser.py at a6c01db).
func RoutingLogics() []string {
	return []string{"roundrobin", "session", "prefixaware", "kvaware", "loadaware", "disaggregated_prefill", "disaggregated_prefill_orchestrated"}
}

// emulated are the routing logics kvcheck emulates, each as the emulation prodstack-<logic>
// (Emulations, in this order).
var emulated = []string{"roundrobin", "session", "prefixaware", "kvaware", "loadaware"}

// Router is the production-stack router.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: what kvaware, loadaware and prefixaware read of a
// request, and the session router's flag.
func (Router) Advice() product.Advice {
	return product.Advice{
		KVAware: []string{display + ": kvaware and loadaware read only the prompt field, so chat completions are matched on an empty string; prefixaware hashes 128-character text chunks, never evicts and never breaks affinity under load"},
		Session: []string{display + ": --routing-logic session; keep the affinity TTL close to how long a prefix stays cached"},
	}
}

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	s := ps.(Settings)
	return []sim.PolicyInfo{roundRobin(), session(s), prefixAware(s), kvAware(s), loadAware(s)}
}

// Configure implements product.Router. It reads routingLogic, sessionKey,
// prefixMinMatchLength, and the router's --kv-aware-threshold and --loadaware-beta.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	var policies []string
	var skip string
	switch logic, set := f.Values["routingLogic"]; {
	case slices.Contains(emulated, logic):
		policies = []string{"prodstack-" + logic}
	case !set || logic == "":
		// Only a command line can leave it out: the chart's values default to roundrobin.
		skip = "no --routing-logic: the router requires one (it has no default) and refuses to start"
	case strings.Contains(logic, "{{"):
		skip = fmt.Sprintf("routingLogic %q is filled in when the chart renders: which logic runs is not known", logic)
	case slices.Contains(RoutingLogics(), logic):
		skip = "routingLogic " + logic + ": disaggregated prefill is not emulated (kvcheck replays aggregated engines)"
	default:
		skip = fmt.Sprintf("routingLogic %q is not one production-stack's router knows (%s): at a6c01db the router refuses it at start, and how a newer release would route with it is not known",
			logic, strings.Join(RoutingLogics(), ", "))
	}
	rd.Str("sessionKey", &s.SessionKey)
	rd.Int("prefixMinMatchLength", &s.PrefixMinMatch)
	rd.Int("--kv-aware-threshold", &s.KVAwareThreshold)
	rd.Float("--loadaware-beta", &s.LoadBeta)
	return rd.Result(policies, s, skip)
}

// Tune implements product.Router: the session router gets the header the traffic names its
// sessions in.
func (Router) Tune(policy string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if policy != "prodstack-session" || s.SessionKey != "" || tr.SessionHeader == "" {
		return s, nil
	}
	s.SessionKey = tr.SessionHeader
	return s, []product.Change{{Setting: "sessionKey", Value: tr.SessionHeader,
		Why: "the traffic names its sessions in this header; without a key the session router refuses to start"}}
}

// ReqValues is the requirement of production-stack's Helm values.
const ReqValues = "production-stack Helm values"

// Requirements implements product.Router.
func (Router) Requirements(policy string, _ product.Settings, tr product.Traffic, f *product.Files) []product.Requirement {
	out := []product.Requirement{product.System(ReqValues, ID, "values with servingEngineSpec / routerSpec", f)}
	if policy == "prodstack-kvaware" || policy == "prodstack-loadaware" {
		// Both ask the LMCache controller where prefixes are cached (PS-04).
		out = append(out, product.LMCache(f), product.VLLMVersion(f))
	}
	if policy == "prodstack-session" {
		out = append(out, product.SessionHeader(tr))
	}
	return out
}

// Snippet implements product.Router: Helm values for the routing logic.
func (Router) Snippet(policy string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	logic := strings.TrimPrefix(policy, "prodstack-")
	w("# vLLM production-stack Helm values for routingLogic %s", logic)
	w("servingEngineSpec:")
	w("  modelSpec:")
	w("  - name: model # edit")
	lmcache := logic == "kvaware" || logic == "loadaware"
	if lmcache {
		w("    repository: lmcache/vllm-openai # LMCache's vLLM build, pinned")
		w("    tag: v0.3.5 # edit: the release you run")
	} else {
		w("    repository: vllm/vllm-openai")
		w("    tag: v0.11.0 # edit: the release you run")
	}
	w("    modelURL: your-org/your-model # edit")
	w("    replicaCount: 2 # edit")
	w("    vllmConfig:")
	w("      enablePrefixCaching: true # the chart renders --no-enable-prefix-caching unless this is true")
	if lmcache {
		w("    lmcacheConfig:")
		w("      enabled: true")
		w("      enableController: true")
		w("      controllerPort: 9000")
	}
	w("routerSpec:")
	if logic == "loadaware" {
		// The chart's values.schema.json (a6c01db) has no loadaware in routingLogic's enum, so
		// helm refuses routingLogic: loadaware (PS-07); the router takes the last
		// --routing-logic, and the chart renders extraArgs after its own.
		w("  routingLogic: roundrobin # the chart's schema lists no loadaware: extraArgs sets it")
	} else {
		w("  routingLogic: %s", logic)
	}
	switch {
	case s.SessionKey != "":
		w("  sessionKey: %s", s.SessionKey)
	case logic == "session":
		w("  sessionKey: x-session-id # edit: the header your clients send; the router refuses to start without one")
	}
	if s.PrefixMinMatch > 0 {
		w("  prefixMinMatchLength: %d", s.PrefixMinMatch)
	}
	if lmcache {
		w("  lmcacheControllerPort: 9000")
	}
	var extra []string
	if logic == "loadaware" {
		extra = append(extra, "--routing-logic=loadaware")
	}
	if logic == "kvaware" && s.KVAwareThreshold != Shipped().KVAwareThreshold {
		extra = append(extra, "--kv-aware-threshold="+strconv.Itoa(s.KVAwareThreshold))
	}
	if logic == "loadaware" && s.LoadBeta != Shipped().LoadBeta {
		extra = append(extra, "--loadaware-beta="+product.Num(s.LoadBeta))
	}
	if len(extra) > 0 {
		w("  extraArgs: [%s]", product.FlowList(extra))
	}
	return product.Snippet{Product: ID, Format: "production-stack Helm values", File: "values.yaml",
		Where: "the production-stack chart's values.yaml (helm install -f): routerSpec, and servingEngineSpec.modelSpec[] for the engines", Text: b.String()}
}

// Metrics: the router re-exports the engines' gauges under their vllm: names with a server
// label, one series a backend (SPEC.md, "production-stack's router re-exports gauges"), and
// has no family of its own kvcheck reads.
func (Router) Metrics() product.Metrics { return product.Metrics{ServerLabel: true} }
