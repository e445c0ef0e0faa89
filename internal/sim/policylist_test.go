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
	got, err := ParsePolicies(" session, round-robin ,session,")
	if err != nil || !slices.Equal(got, []string{"round-robin", "session"}) {
		t.Errorf("ParsePolicies = %q, %v; want round-robin, session", got, err)
	}
	if got, err := ParsePolicies(" all "); err != nil || !slices.Equal(got, all) {
		t.Errorf("ParsePolicies(all) = %q, %v; want %q", got, err, all)
	}
	if _, err := ParsePolicies("round-robin,lru"); err == nil || !strings.HasPrefix(err.Error(), `unknown policy "lru": use all or some of `+strings.Join(all, ", ")+", or a router emulation (") || !strings.Contains(err.Error(), "prodstack-prefixaware") {
		t.Errorf("unknown policy: err = %v", err)
	}
	// An emulation runs when named, after the idealised policies; "all" does not include them.
	got, err = ParsePolicies("litellm-simple-shuffle,prodstack-prefixaware,kv-load")
	if err != nil || !slices.Equal(got, []string{"kv-load", "prodstack-prefixaware", "litellm-simple-shuffle"}) {
		t.Errorf("ParsePolicies with emulations = %q, %v; want kv-load, prodstack-prefixaware, litellm-simple-shuffle", got, err)
	}
	if _, err := ParsePolicies(" , "); err == nil || err.Error() != "no policy named" {
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
