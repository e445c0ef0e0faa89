package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParsePolicies: the list comes back in the documented order without repeats; "all" is
// every policy; an unknown name and an empty list are errors.
func TestParsePolicies(t *testing.T) {
	all := PolicyNames()
	// Emulations in the order internal/router lists them.
	emus := []PolicyInfo{{Name: "llmd-approx"}, {Name: "prodstack-prefixaware"}, {Name: "litellm-simple-shuffle"}}
	got, err := ParsePolicies(" session, round-robin ,session,", emus)
	if err != nil || !slices.Equal(got, []string{"round-robin", "session"}) {
		t.Errorf("ParsePolicies = %q, %v; want round-robin, session", got, err)
	}
	if got, err := ParsePolicies(" all ", emus); err != nil || !slices.Equal(got, all) {
		t.Errorf("ParsePolicies(all) = %q, %v; want %q", got, err, all)
	}
	routers := names(emus)
	if got, err := ParsePolicies("routers", emus); err != nil || !slices.Equal(got, routers) {
		t.Errorf("ParsePolicies(routers) = %q, %v; want every emulation %q", got, err, routers)
	}
	// Emulations come after the idealised policies, in the order given, whatever the
	// list's order; the keywords mix with names.
	got, err = ParsePolicies("prodstack-prefixaware, kv-llmd, llmd-approx", emus)
	if want := []string{"kv-llmd", "llmd-approx", "prodstack-prefixaware"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePolicies(mixed) = %q, %v; want %q", got, err, want)
	}
	if got, err := ParsePolicies("llmd-approx,all", emus); err != nil || !slices.Equal(got, append(slices.Clone(all), "llmd-approx")) {
		t.Errorf("ParsePolicies(llmd-approx,all) = %q, %v; want the policies then llmd-approx", got, err)
	}
	want := `unknown policy "lru": use all (the idealised policies), routers (the router emulations) or some of ` + strings.Join(append(slices.Clone(all), routers...), ", ")
	if _, err := ParsePolicies("round-robin,lru", emus); err == nil || err.Error() != want {
		t.Errorf("unknown policy: err = %v", err)
	}
	// An emulation runs when named, after the idealised policies; "all" does not include them.
	got, err = ParsePolicies("litellm-simple-shuffle,prodstack-prefixaware,kv-load", emus)
	if err != nil || !slices.Equal(got, []string{"kv-load", "prodstack-prefixaware", "litellm-simple-shuffle"}) {
		t.Errorf("ParsePolicies with emulations = %q, %v; want kv-load, prodstack-prefixaware, litellm-simple-shuffle", got, err)
	}
	if _, err := ParsePolicies(" , ", emus); err == nil || err.Error() != "no policy named" {
		t.Errorf("empty list: err = %v", err)
	}
}

// TestProgressString: a quarter of the requests routed in 10 s leaves 30 s at that rate.
func TestProgressString(t *testing.T) {
	got := Progress{Simulations: 4, SimulationsDone: 1, Requests: 400, RequestsRouted: 100, Elapsed: 10 * time.Second}.String()
	if want := "simulating: 1/4 done, 25% of 400 requests routed, 10s elapsed, about 30s left"; got != want {
		t.Errorf("Progress.String = %q, want %q", got, want)
	}
	if got := (Progress{Simulations: 4}).String(); got != "simulating: 0/4 done" {
		t.Errorf("before any request is routed: %q, want the count alone", got)
	}
}

// TestPolicyAlias: kv-dynamo, the idealised cost's former name, is taken as kv-cost everywhere a
// name is, so that it is never taken for dynamo-kv, the emulation.
func TestPolicyAlias(t *testing.T) {
	if got, err := ParsePolicies("kv-dynamo,round-robin", nil); err != nil || !slices.Equal(got, []string{"round-robin", "kv-cost"}) {
		t.Errorf("ParsePolicies(kv-dynamo) = %q, %v; want round-robin, kv-cost", got, err)
	}
	if info, ok := lookupIn("kv-dynamo", nil); !ok || info.Name != "kv-cost" {
		t.Errorf("lookup kv-dynamo = %q, %v", info.Name, ok)
	}
}
