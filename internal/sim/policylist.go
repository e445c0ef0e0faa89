package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ParsePolicies reads a comma-separated list of names into the policies to simulate, without
// repeats and in the order results are shown whatever order the list gave: the idealised
// policies in the order of Policies, then the router emulations in the order of emulations. A
// name is a policy's (round-robin, kv-llmd, ...), an emulation's (llmd-precise,
// prodstack-prefixaware, ...), "all" (every idealised policy, the default) or "routers" (every
// emulation); a former name (Aliases) stands for the policy's name now. An unknown name or an
// empty list is an error naming what to give.
func ParsePolicies(list string, emulations []PolicyInfo) ([]string, error) {
	all, routers := PolicyNames(), names(emulations)
	order := append(slices.Clone(all), routers...)
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, p := range strings.Split(list, ",") {
		switch p = Canonical(strings.TrimSpace(p)); {
		case p == "":
		case p == "all":
			add(all...)
		case p == "routers":
			add(routers...)
		case slices.Contains(order, p):
			add(p)
		default:
			return nil, fmt.Errorf("unknown policy %q: use all (the idealised policies), routers (the router emulations) or some of %s", p, strings.Join(order, ", "))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no policy named")
	}
	slices.SortStableFunc(out, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	return out, nil
}

// String is the sweep's progress in words: simulations done, the share of all requests routed,
// and the time left at the rate so far.
func (p Progress) String() string {
	line := fmt.Sprintf("simulating: %d/%d done", p.SimulationsDone, p.Simulations)
	if p.Requests > 0 && p.RequestsRouted > 0 {
		f := float64(p.RequestsRouted) / float64(p.Requests)
		left := time.Duration(float64(p.Elapsed) * (1 - f) / f).Round(time.Second)
		line += fmt.Sprintf(", %.0f%% of %d requests routed, %s elapsed, about %s left", 100*f, p.Requests, p.Elapsed.Round(time.Second), left)
	}
	return line
}
