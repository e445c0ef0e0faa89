package main

import (
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// targetFlagHelp describes --target for lint and metrics.
var targetFlagHelp = "releases to judge against, per family: vllm=0.30,llm-d=0.9,gaie=1.5 (families: " + catalogFamilies() + "); a family not named is judged at its newest known release"

// catalogFamilies lists the catalog's families for help texts and usage errors.
func catalogFamilies() string {
	cat, err := catalog.Load()
	if err != nil {
		return "see kvcheck metrics"
	}
	return cat.FamilyNames()
}

// parseTargets reads --target-version (vLLM's) and --target (per family) into one set of
// targets. A release newer than the catalog knows is judged anyway, with a note on stderr.
func parseTargets(cat *catalog.Catalog, version, spec string, st *report.Status) (catalog.Targets, error) {
	t, err := cat.ParseTargets(spec)
	if err != nil {
		return nil, usage.Errorf("--target: %v", err)
	}
	if version != "" {
		if _, both := t[catalog.VLLM]; both {
			return nil, usage.Errorf("--target-version and --target vllm=...: give vLLM's release once")
		}
		v, err := catalog.ParseVersion(version)
		if err != nil {
			return nil, usage.Errorf("--target-version: %v", err)
		}
		t[catalog.VLLM] = v
	}
	for _, w := range cat.Beyond(t) {
		st.Warn("%s", w)
	}
	return t, nil
}
