package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ParsePolicies reads a comma-separated list of policy names, or "all", into the policies to
// simulate, without repeats and in the order of Policies, then Emulations, whatever order the
// list gave. "all" is every policy of Policies; an emulation runs when named. An unknown name or
// an empty list is an error naming what to give.
func ParsePolicies(list string) ([]string, error) {
	all := PolicyNames()
	if strings.TrimSpace(list) == "all" {
		return all, nil
	}
	known := slices.Clone(all)
	for _, e := range Emulations() {
		known = append(known, e.Name)
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(known, p) {
			return nil, fmt.Errorf("unknown policy %q: use all or some of %s, or a router emulation (%s)", p, strings.Join(all, ", "), strings.Join(known[len(all):], ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no policy named")
	}
	slices.SortStableFunc(out, func(a, b string) int { return slices.Index(known, a) - slices.Index(known, b) })
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
