package catalog

import "github.com/kvcheck/kvcheck/internal/usage"

// TargetsFlag describes --target for lint and metrics.
func TargetsFlag() string {
	return "releases to judge against, per family: vllm=0.30,llm-d=0.9,gaie=1.5 (families: " + FamiliesHelp() + "); a family not named is judged at its newest known release"
}

// FamiliesHelp lists the catalog's families for help texts.
func FamiliesHelp() string {
	cat, err := Load()
	if err != nil {
		return "see kvcheck metrics"
	}
	return cat.FamilyNames()
}

// ResolveTargets reads --target-version (vLLM's release) and --target (per family) into one
// set of targets; a value that cannot be read is a usage error naming its flag. A release
// newer than the catalog knows is judged anyway, and warn (when set) is told (Beyond).
func (c *Catalog) ResolveTargets(version, spec string, warn func(format string, args ...any)) (Targets, error) {
	t, err := c.ParseTargets(spec)
	if err != nil {
		return nil, usage.Errorf("--target: %v", err)
	}
	if version != "" {
		if _, both := t[VLLM]; both {
			return nil, usage.Errorf("--target-version and --target vllm=...: give vLLM's release once")
		}
		v, err := ParseRelease(version)
		if err != nil {
			return nil, usage.Errorf("--target-version: %v", err)
		}
		t[VLLM] = v
	}
	for _, w := range c.Beyond(t) {
		if warn != nil {
			warn("%s", w)
		}
	}
	return t, nil
}

// CheckView rejects --family and --status values kvcheck metrics cannot filter by.
func (c *Catalog) CheckView(families []string, status string) error {
	for _, f := range families {
		if c.Family(f) == nil {
			return usage.Errorf("--family %q: not a family of the catalog (%s)", f, c.FamilyNames())
		}
	}
	switch Status(status) {
	case "", Current, Deprecated, Hidden, Removed, NotYet:
		return nil
	}
	return usage.Errorf("--status %q: write current, deprecated, hidden, removed or not-yet", status)
}
