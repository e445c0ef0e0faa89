package router

import (
	"slices"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/kthena"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestDraws: the emulations that place requests by a seeded draw (sim.PolicyInfo.Draws, what
// assess's ranking replays over several seeds), each for its reason in its product's source,
// and the ones whose settings decide it.
//   - as shipped: production-stack's session ring is a seeded stand-in for md5 of the engines'
//     URLs (session, and kvaware and loadaware's fallback to it), prefixaware a random.choice
//     among the longest matches; LiteLLM's three draw (simple-shuffle, and the first replica of
//     a session or cache key); Ray's fallback draws a power-of-two pair; vLLM Router's random
//     and power of two draw. The rest draw only among exact ties (Dynamo at temperature 0,
//     llm-d's picker, SGLang's first-match order, AIBrix's shuffle of equal matches, Kthena's
//     tied pods) or not at all.
//   - Dynamo above --router-temperature 0 is a softmax draw; SGLang's smg above
//     selection_temperature 0 draws among the candidates (the fork gateway has no
//     temperature); Kthena with the random plugin adds a draw to every score.
func TestDraws(t *testing.T) {
	want := []string{"prodstack-session", "prodstack-prefixaware", "prodstack-kvaware", "prodstack-loadaware",
		"litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "ray-prefix-affinity",
		"vllm-router-power-of-two", "vllm-router-random"}
	var got []string
	for _, e := range Shipped() {
		if e.Draws {
			got = append(got, e.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("drawing as shipped: %q, want %q", got, want)
	}
	// The idealised policies: random draws a replica, session and chash-bounded hash the key
	// with the seed (sim.keyHash), chash-bounded its ring's points too.
	got = nil
	for _, p := range sim.Policies() {
		if p.Draws {
			got = append(got, p.Name)
		}
	}
	if want := []string{"random", "session", "chash-bounded"}; !slices.Equal(got, want) {
		t.Errorf("idealised drawing: %q, want %q", got, want)
	}
	draws := func(policy string, s product.Settings) bool {
		e, ok := Emulation(policy, s)
		if !ok {
			t.Fatalf("no %s", policy)
		}
		return e.Draws
	}
	dy := shippedSettings(t, "dynamo-kv").(dynamo.Settings)
	dy.Temperature = 0.5
	sg := shippedSettings(t, "sglang-cache-aware").(sglang.Settings)
	sg.SelectionTemperature = 0.3
	fork := sg
	fork.Gateway = sglang.Fork
	kt := shippedSettings(t, "kthena-router").(kthena.Settings)
	kt.Score = []kthena.Plugin{{Name: "random", Weight: 1}}
	for _, c := range []struct {
		policy string
		s      product.Settings
		want   bool
	}{{"dynamo-kv", dy, true}, {"sglang-cache-aware", sg, true}, {"sglang-cache-aware", fork, false}, {"kthena-router", kt, true}} {
		if got := draws(c.policy, c.s); got != c.want {
			t.Errorf("%s with %+v: draws %v, want %v", c.policy, c.s, got, c.want)
		}
	}
}

// shippedSettings is the settings the product of an emulation ships first.
func shippedSettings(t *testing.T, policy string) product.Settings {
	t.Helper()
	p, ok := Of(policy)
	if !ok {
		t.Fatalf("no product for %s", policy)
	}
	return p.Shipped()[0].Settings
}
