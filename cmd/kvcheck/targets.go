package main

import (
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// targetFlagHelp describes --target for lint and metrics.
const targetFlagHelp = "releases to judge against, per family: vllm=0.30,llm-d=0.9,gaie=1.5 (families: vllm, llm-d, gaie, production-stack); a family not named is judged at its newest known release"

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
