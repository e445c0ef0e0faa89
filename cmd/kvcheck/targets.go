package main

import (
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
)

// targetFlagHelp describes --target for lint and metrics.
const targetFlagHelp = "releases to judge against, per family: vllm=0.30,llm-d=0.9,gaie=1.5 (families: vllm, llm-d, gaie, production-stack); a family not named is judged at its newest known release"

// parseTargets reads --target-version (vLLM's) and --target (per family) into one set of
// targets. A release newer than the catalog knows is judged anyway, with a note on stderr.
func parseTargets(cat *catalog.Catalog, version, spec string, st *report.Status) (catalog.Targets, error) {
	t, err := cat.ParseTargets(spec)
	if err != nil {
		return nil, usageErrorf("--target: %v", err)
	}
	if version != "" {
		if _, both := t[catalog.VLLM]; both {
			return nil, usageErrorf("--target-version and --target vllm=...: give vLLM's release once")
		}
		v, err := catalog.ParseVersion(version)
		if err != nil {
			return nil, usageErrorf("--target-version: %v", err)
		}
		t[catalog.VLLM] = v
	}
	for _, f := range cat.Families {
		if v, ok := t[f.Name]; ok && f.Newest.Less(v) {
			// Judging goes on (what was gone by the newest known release stays gone), but
			// renames after it are not known: say so rather than imply a full check.
			st.Warn("target %s %s is newer than the metric catalog (%s %s): changes after %s are not known to this kvcheck",
				f.Display, v, f.Display, f.Newest, f.Newest)
		}
	}
	return t, nil
}
