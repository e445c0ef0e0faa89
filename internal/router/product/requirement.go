package product

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// Requirement is one thing a router needs, against what the given files (or the traffic) show.
type Requirement struct {
	Name   string
	Status string
	// Detail says what showed it, or why it is unknown.
	Detail string
	// Adds says, in a few words, what deploying the router adds to a stack that does not have
	// it in place ("a new component (the SGLang model gateway)", "KV-event plumbing from every
	// engine"), for the sentence that says a change of product as such (AddsOf); "" reads as
	// the requirement's name.
	Adds string
}

// AddsOf says what meeting q adds to a stack: q.Adds, else its name.
func AddsOf(q Requirement) string {
	if q.Adds != "" {
		return q.Adds
	}
	return q.Name
}

// Requirement statuses: a requirement the files cannot show is Unknown, never Met. A
// file-based requirement is met only when a file shows it, missing only when a file shows the
// opposite (an engine without events, an LMCache left off), and unknown otherwise: the files
// given may not be the whole deployment.
const (
	Met     = "met"
	Missing = "missing"
	Unknown = "unknown"
)

// The requirements more than one product has, by name.
const (
	ReqKubernetes    = "Kubernetes objects"
	ReqKVEvents      = "KV events on every engine"
	ReqVLLMVersion   = "vLLM version (image tag)"
	ReqLMCache       = "LMCache with its controller"
	ReqSessionHeader = "session header in the traffic"
)

// System is the requirement name that a router or gateway of product id is set up: met where
// the files show one, else unknown (what says what would show it).
func System(name, id, what string, f *Files) Requirement {
	adds := "a new component (the " + name + ")"
	switch {
	case f == nil:
		return Requirement{Name: name, Status: Unknown, Detail: "no --config files given", Adds: adds}
	case f.Systems[id] != "":
		return Requirement{Name: name, Status: Met, Detail: f.Systems[id], Adds: adds}
	}
	return Requirement{Name: name, Status: Unknown, Detail: "not in the files given: " + what, Adds: adds}
}

// Kubernetes is the requirement that the deployment runs on Kubernetes.
func Kubernetes(f *Files) Requirement {
	switch {
	case f == nil:
		return shared(ReqKubernetes, Unknown, "no --config files given")
	case len(f.Kinds) > 0:
		kinds := make([]string, 0, len(f.Kinds))
		for k := range f.Kinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		return shared(ReqKubernetes, Met, strings.Join(kinds, ", "))
	}
	return shared(ReqKubernetes, Unknown, "no Kubernetes object in the files given")
}

// SessionHeader is the requirement that the traffic names its sessions in a header.
func SessionHeader(tr Traffic) Requirement {
	switch {
	case !tr.Text:
		return shared(ReqSessionHeader, Unknown, "this "+tr.Format+" trace holds no headers")
	case tr.SessionHeader != "":
		return shared(ReqSessionHeader, Met, tr.SessionHeader+" in "+tr.Name)
	}
	return shared(ReqSessionHeader, Missing, "no header naming a session in "+tr.Name)
}

// KVEvents is the requirement that every engine publishes KV events.
func KVEvents(f *Files) Requirement {
	if f == nil {
		return shared(ReqKVEvents, Unknown, "no --config files given")
	}
	if len(f.Engines) == 0 {
		return shared(ReqKVEvents, Unknown, "no vLLM engine in the files given")
	}
	for _, e := range f.Engines {
		if !e.KVEvents || e.PrefixCachingOff {
			why := "no --kv-events-config with enable_kv_cache_events true"
			if e.PrefixCachingOff {
				why = "prefix caching off"
			}
			return shared(ReqKVEvents, Missing, e.Where+": "+why)
		}
	}
	return shared(ReqKVEvents, Met, fmt.Sprintf("%d engine(s) publish", len(f.Engines)))
}

// LMCache is the requirement that every engine runs LMCache with its controller.
func LMCache(f *Files) Requirement {
	if f == nil {
		return shared(ReqLMCache, Unknown, "no --config files given")
	}
	if len(f.Engines) == 0 {
		return shared(ReqLMCache, Unknown, "no vLLM engine in the files given")
	}
	for _, e := range f.Engines {
		if !e.LMCache || !e.LMCacheController {
			what := "LMCache off"
			if e.LMCache {
				what = "LMCache without its controller (lmcacheConfig.enableController)"
			}
			return shared(ReqLMCache, Missing, e.Where+": "+what)
		}
	}
	return shared(ReqLMCache, Met, fmt.Sprintf("%d engine(s) with LMCache and the controller", len(f.Engines)))
}

// VLLMVersion is the requirement that the files name the vLLM release every engine runs, one
// kvcheck's catalog describes.
func VLLMVersion(f *Files) Requirement {
	if f == nil {
		return shared(ReqVLLMVersion, Unknown, "no --config files given")
	}
	var vs []string
	cat, catErr := catalog.Load()
	for _, e := range f.Engines {
		if e.Version == "" {
			image := e.Image
			if image == "" {
				image = "not given"
			}
			return shared(ReqVLLMVersion, Unknown, e.Where+": image "+image+" names no vLLM version")
		}
		// A release newer than any the catalog describes: the files name it, but nothing
		// kvcheck knows says what it still supports.
		v, err := catalog.ParseVersion(e.Version)
		switch {
		case err != nil:
			return shared(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+" is not a version kvcheck can read")
		case catErr != nil:
			return shared(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+", and the catalog to judge it by did not load: "+catErr.Error())
		case cat.Newest.Less(v):
			return shared(ReqVLLMVersion, Unknown, e.Where+": vLLM "+e.Version+" is newer than the newest release kvcheck's catalog describes ("+
				cat.Newest.String()+"): whether it still serves this router is not known")
		}
		if !slices.Contains(vs, e.Version) {
			vs = append(vs, e.Version)
		}
	}
	if len(vs) == 0 {
		return shared(ReqVLLMVersion, Unknown, "no vLLM engine in the files given")
	}
	return shared(ReqVLLMVersion, Met, "vLLM "+strings.Join(vs, ", "))
}

// sharedAdds says what meeting each shared requirement adds to a stack without it.
var sharedAdds = map[string]string{
	ReqKubernetes:    "Kubernetes objects for it",
	ReqKVEvents:      "KV-event plumbing from every engine to the router",
	ReqLMCache:       "LMCache with its controller on every engine",
	ReqVLLMVersion:   "a vLLM release it supports on every engine",
	ReqSessionHeader: "a session header on every request",
}

// shared is one of the shared requirements (by name) with its status and detail.
func shared(name, status, detail string) Requirement {
	return Requirement{Name: name, Status: status, Detail: detail, Adds: sharedAdds[name]}
}
