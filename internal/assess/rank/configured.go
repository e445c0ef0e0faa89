package rank

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// FilesFrom turns what lint read of the --config files into the ranking's view: the Kubernetes
// kinds, the engines, which systems are set up, and every router found as the emulation it
// runs with the user's values (its product's Configure). A router whose mode kvcheck does not
// emulate (Dynamo's random, SGLang's power_of_two, production-stack's disaggregated prefill, a
// LiteLLM usage-based strategy) is a system present, not a configured row.
func FilesFrom(paths []string, dep lint.Deployment) *product.Files {
	f := &product.Files{Paths: paths, Kinds: map[string]string{}, Systems: map[string]string{}}
	for _, o := range dep.Objects {
		if f.Kinds[o.Kind] == "" {
			f.Kinds[o.Kind] = fmt.Sprintf("%s:%d", o.File, o.Line)
		}
	}
	for _, e := range dep.Engines {
		where := fmt.Sprintf("%s:%d", e.File, e.Line)
		if e.Name != "" {
			where += " " + e.Name
		}
		f.Engines = append(f.Engines, product.Engine{Where: where, Image: e.Image, Version: e.Version, KVEvents: e.KVEvents,
			PrefixCachingOff: e.PrefixCachingOff, LMCache: e.LMCache, LMCacheController: e.LMCacheController})
	}
	for _, r := range dep.Routers {
		facts := product.Facts{Product: r.Kind, File: r.File, Line: r.Line, Values: r.Values}
		where := facts.Where()
		if f.Systems[r.Kind] == "" {
			f.Systems[r.Kind] = where
		}
		p, ok := router.Lookup(r.Kind)
		if !ok {
			continue
		}
		for _, rc := range p.Configure(facts) {
			if rc.Policy == "" {
				f.NotSimulated = append(f.NotSimulated, product.NotSimulated{Product: r.Kind, Where: where, Reason: rc.NotSimulated, Notes: rc.Notes})
				continue
			}
			f.Routers = append(f.Routers, rc)
		}
	}
	return f
}
