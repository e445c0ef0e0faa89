package rank

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
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
	// Systems are the routers and gateways the files set up, by product, with where the
	// first is (a Dynamo frontend, an SGLang gateway, a LiteLLM proxy, a Ray Serve router,
	// production-stack values, an EndpointPickerConfig).
	Systems map[string]string
	// Routers are the routers found with the user's values, as settings to simulate.
	Routers []RouterConfig
	// NotSimulated are the routers found that run nothing kvcheck emulates, with why.
	NotSimulated []NotSimulated
}

// NotSimulated is a router the files set up that gets no row: it runs a mode kvcheck does not
// emulate, or a value its product does not know.
type NotSimulated struct {
	// Product is the router's kind (lint.RouterProdStack, ...); Where its file and line.
	Product, Where string
	Reason         string
	// Notes name the values of the router that kvcheck could not read.
	Notes []string
}

// NotSimulatedRouters returns the routers of the files that get no row, with why; nil for no
// files.
func (f *Files) NotSimulatedRouters() []NotSimulated {
	if f == nil {
		return nil
	}
	return slices.Clone(f.NotSimulated)
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

// RouterConfig is one router a file sets up, with the user's values as settings.
type RouterConfig struct {
	Policy string
	// Where is the file and line.
	Where    string
	Settings sim.RouterSettings
	// Changes are the values that differ from the product as shipped, each with where it was
	// set.
	Changes []Change
	// Notes name the values that could not be read (the row keeps the shipped value for them;
	// with NotSimulated, only the values that could not be read).
	Notes []string
	// NotSimulated, with Policy "", says why the router gets no row.
	NotSimulated string
}

func (f *Files) routersFor(policy string) []RouterConfig {
	if f == nil {
		return nil
	}
	var out []RouterConfig
	for _, r := range f.Routers {
		if r.Policy == policy {
			out = append(out, r)
		}
	}
	return out
}

// The requirements, by name.
const (
	ReqKubernetes    = "Kubernetes objects"
	ReqGatewayPool   = "Gateway API + InferencePool"
	ReqKVEvents      = "KV events on every engine"
	ReqVLLMVersion   = "vLLM version (image tag)"
	ReqLMCache       = "LMCache with its controller"
	ReqDynamo        = "Dynamo frontend"
	ReqSGLang        = "SGLang model gateway"
	ReqRay           = "Ray Serve LLM application"
	ReqLiteLLM       = "LiteLLM proxy"
	ReqProdStack     = "production-stack Helm values"
	ReqLLMD          = "llm-d EndpointPickerConfig"
	ReqSessionHeader = "session header in the traffic"
	ReqSessionIDs    = "LiteLLM session ids in the traffic"
	ReqCacheControl  = "cache_control markers in the traffic"
	ReqRedis         = "Redis shared by the proxy pods"
)

// requirements are what a router needs, each against what the files and the traffic show.
// Without files every file-based requirement is unknown; a file-based one is met only when a
// file shows it, missing only when a file shows the opposite (an engine without events, an
// LMCache left off), and unknown otherwise: the files given may not be the whole deployment.
func requirements(c Candidate, tr Traffic, f *Files) []Requirement {
	var out []Requirement
	add := func(name, status, detail string) { out = append(out, Requirement{name, status, detail}) }
	system := func(name, product, what string) {
		switch {
		case f == nil:
			add(name, Unknown, "no --config files given")
		case f.Systems[product] != "":
			add(name, Met, f.Systems[product])
		default:
			add(name, Unknown, "not in the files given: "+what)
		}
	}
	kube := func() {
		switch {
		case f == nil:
			add(ReqKubernetes, Unknown, "no --config files given")
		case len(f.Kinds) > 0:
			kinds := make([]string, 0, len(f.Kinds))
			for k := range f.Kinds {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			add(ReqKubernetes, Met, strings.Join(kinds, ", "))
		default:
			add(ReqKubernetes, Unknown, "no Kubernetes object in the files given")
		}
	}
	switch c.Product {
	case LLMD:
		kube()
		switch {
		case f == nil:
			add(ReqGatewayPool, Unknown, "no --config files given")
		case f.Kinds["InferencePool"] != "" && (f.Kinds["Gateway"] != "" || f.Kinds["HTTPRoute"] != ""):
			add(ReqGatewayPool, Met, "InferencePool in "+f.Kinds["InferencePool"])
		case f.Kinds["InferencePool"] != "":
			add(ReqGatewayPool, Unknown, "InferencePool in "+f.Kinds["InferencePool"]+", no Gateway or HTTPRoute in the files given")
		default:
			add(ReqGatewayPool, Unknown, "no InferencePool in the files given")
		}
		if c.Policy == "llmd-precise" {
			events(add, f)
		}
	case ProdStack:
		system(ReqProdStack, ProdStack, "values with servingEngineSpec / routerSpec")
		if c.Policy == "prodstack-kvaware" || c.Policy == "prodstack-loadaware" {
			// Both ask the LMCache controller where prefixes are cached (PS-04).
			lmcache(add, f)
			version(add, f)
		}
		if c.Policy == "prodstack-session" {
			session(add, tr)
		}
	case Dynamo:
		if f != nil && f.Systems[Dynamo] == "" && f.Kinds["DynamoGraphDeployment"] != "" {
			add(ReqDynamo, Missing, "the DynamoGraphDeployment at "+f.Kinds["DynamoGraphDeployment"]+" has no frontend component")
		} else {
			system(ReqDynamo, Dynamo, "a DynamoGraphDeployment frontend or python -m dynamo.frontend")
		}
		if c.Policy == "dynamo-kv" && c.Settings.Dynamo.KVEvents {
			events(add, f)
		}
	case SGLang:
		system(ReqSGLang, SGLang, "python -m sglang_router.launch_router or sgl-model-gateway")
	case Ray:
		system(ReqRay, Ray, "a Serve config with request_router_config")
	case LiteLLM:
		system(ReqLiteLLM, LiteLLM, "a LiteLLM config.yaml")
		switch c.Policy {
		case "litellm-session-affinity":
			switch {
			case !tr.Text:
				add(ReqSessionIDs, Unknown, "this "+tr.Format+" trace holds no headers or metadata")
			case tr.LiteLLMSessions:
				add(ReqSessionIDs, Met, "x-litellm-session-id, x-<vendor>-session-id or metadata.session_id in "+tr.Name)
			default:
				add(ReqSessionIDs, Missing, "no x-litellm-session-id, x-<vendor>-session-id (8+ characters) or metadata.session_id in "+tr.Name)
			}
			if pods := c.Settings.LiteLLM.ProxyPods; pods > 1 {
				if c.Settings.LiteLLM.Redis {
					add(ReqRedis, Met, fmt.Sprintf("%d proxy pods, Redis set", pods))
				} else {
					add(ReqRedis, Missing, fmt.Sprintf("%d proxy pods and no redis_host or redis_url: each pod keeps its own pins", pods))
				}
			}
		case "litellm-prompt-caching":
			switch {
			case !tr.Text:
				add(ReqCacheControl, Unknown, "this "+tr.Format+" trace holds no request bodies")
			case tr.CacheControl:
				add(ReqCacheControl, Met, "in "+tr.Name)
			default:
				add(ReqCacheControl, Missing, "no message in "+tr.Name+" has one: nothing is pinned")
			}
		}
	}
	return out
}

func session(add func(name, status, detail string), tr Traffic) {
	switch {
	case !tr.Text:
		add(ReqSessionHeader, Unknown, "this "+tr.Format+" trace holds no headers")
	case tr.SessionHeader != "":
		add(ReqSessionHeader, Met, tr.SessionHeader+" in "+tr.Name)
	default:
		add(ReqSessionHeader, Missing, "no header naming a session in "+tr.Name)
	}
}

func events(add func(name, status, detail string), f *Files) {
	if f == nil {
		add(ReqKVEvents, Unknown, "no --config files given")
		return
	}
	if len(f.Engines) == 0 {
		add(ReqKVEvents, Unknown, "no vLLM engine in the files given")
		return
	}
	for _, e := range f.Engines {
		if !e.KVEvents || e.PrefixCachingOff {
			why := "no --kv-events-config with enable_kv_cache_events true"
			if e.PrefixCachingOff {
				why = "prefix caching off"
			}
			add(ReqKVEvents, Missing, e.Where+": "+why)
			return
		}
	}
	add(ReqKVEvents, Met, fmt.Sprintf("%d engine(s) publish", len(f.Engines)))
}

func lmcache(add func(name, status, detail string), f *Files) {
	if f == nil {
		add(ReqLMCache, Unknown, "no --config files given")
		return
	}
	if len(f.Engines) == 0 {
		add(ReqLMCache, Unknown, "no vLLM engine in the files given")
		return
	}
	for _, e := range f.Engines {
		if !e.LMCache || !e.LMCacheController {
			what := "LMCache off"
			if e.LMCache {
				what = "LMCache without its controller (lmcacheConfig.enableController)"
			}
			add(ReqLMCache, Missing, e.Where+": "+what)
			return
		}
	}
	add(ReqLMCache, Met, fmt.Sprintf("%d engine(s) with LMCache and the controller", len(f.Engines)))
}

func version(add func(name, status, detail string), f *Files) {
	if f == nil {
		add(ReqVLLMVersion, Unknown, "no --config files given")
		return
	}
	var vs []string
	cat, catErr := catalog.Load()
	for _, e := range f.Engines {
		if e.Version == "" {
			add(ReqVLLMVersion, Unknown, e.Where+": image "+cmpOr(e.Image, "not given")+" names no vLLM version")
			return
		}
		// A release newer than any the catalog describes: the files name it, but nothing
		// kvcheck knows says what it still supports.
		v, err := catalog.ParseVersion(e.Version)
		switch {
		case err != nil:
			add(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+" is not a version kvcheck can read")
			return
		case catErr != nil:
			add(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+", and the catalog to judge it by did not load: "+catErr.Error())
			return
		case cat.Newest.Less(v):
			add(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+" is newer than the newest release kvcheck's catalog describes ("+
				cat.Newest.String()+"): whether it still serves this router is not known")
			return
		}
		if !slices.Contains(vs, e.Version) {
			vs = append(vs, e.Version)
		}
	}
	if len(vs) == 0 {
		add(ReqVLLMVersion, Unknown, "no vLLM engine in the files given")
		return
	}
	add(ReqVLLMVersion, Met, "vLLM "+strings.Join(vs, ", "))
}
