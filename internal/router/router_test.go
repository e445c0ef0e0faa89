package router

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestRegistry: every product has one id and one display name, every emulation belongs to one
// product and says so, and the emulations come in the order results are shown.
func TestRegistry(t *testing.T) {
	want := []string{"llmd-approx", "llmd-precise", "dynamo-round-robin", "dynamo-kv",
		"prodstack-roundrobin", "prodstack-session", "prodstack-prefixaware", "prodstack-kvaware", "prodstack-loadaware",
		"litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "sglang-cache-aware", "ray-prefix-affinity",
		"vllm-router-cache-aware", "vllm-router-consistent-hash", "vllm-router-rendezvous-hash", "vllm-router-power-of-two", "vllm-router-round-robin", "vllm-router-random",
		"aibrix-prefix-cache", "kthena-router"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("emulations %q, want %q", got, want)
	}
	ids := map[string]bool{}
	for _, p := range Products() {
		n := p.Name()
		if n.ID == "" || n.Display == "" || ids[n.ID] {
			t.Errorf("product %+v: want a unique id and a display name", n)
		}
		ids[n.ID] = true
		if q, ok := Lookup(n.ID); !ok || q.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n.ID, q, ok)
		}
		for _, v := range p.Shipped() {
			for _, e := range p.Emulations(v.Settings) {
				if e.Product != n.Display || e.Family == "" || e.Source == "" || e.About == "" {
					t.Errorf("%s: product %q family %q, want %q and a family, a source, a line", e.Name, e.Product, e.Family, n.Display)
				}
				if q, ok := Of(e.Name); !ok || q.Name() != n {
					t.Errorf("Of(%q) = %v", e.Name, q)
				}
				if slices.Contains(sim.PolicyNames(), e.Name) {
					t.Errorf("%s is an idealised policy's name too", e.Name)
				}
			}
		}
	}
	if _, ok := Of("round-robin"); ok {
		t.Error("an idealised policy belongs to no product")
	}
}

// TestDefaults: --<id>-defaults picks a product's shipped set by key; a key it does not ship is
// an error naming the ones it does.
func TestDefaults(t *testing.T) {
	es, err := Emulations(map[string]string{"sglang": "hint"})
	if err != nil || len(es) != len(Names()) {
		t.Fatalf("hint: %d emulations, %v", len(es), err)
	}
	_, err = Emulations(map[string]string{"sglang": "rust"})
	if err == nil || !strings.HasPrefix(err.Error(), `"rust": want cli (the gateway's command-line defaults) or hint (the defaults a cache_aware policy hint applies)`) {
		t.Errorf("rust: %v", err)
	}
}

// TestMetricSigns: the products whose metrics show them, as promql reads them (hand-written:
// llm-d's EPP, Dynamo's frontend and LiteLLM's proxy by their own family prefixes,
// production-stack by its router's server label), no prefix claimed by two products (a family
// would name either), and one product at most re-exporting engine series (promql names the
// first).
func TestMetricSigns(t *testing.T) {
	owner := map[string]string{}
	var byPrefix, byLabel []string
	for _, p := range Products() {
		m, ok := p.(product.Metered)
		if !ok {
			continue
		}
		id := p.Name().ID
		if len(m.Metrics().Families) > 0 {
			byPrefix = append(byPrefix, id)
		}
		if m.Metrics().ServerLabel {
			byLabel = append(byLabel, id)
		}
		for _, f := range m.Metrics().Families {
			for other, o := range owner {
				if strings.HasPrefix(f, other) || strings.HasPrefix(other, f) {
					if o != id {
						t.Errorf("prefix %q of %s overlaps %q of %s", f, id, other, o)
					}
				}
			}
			owner[f] = id
		}
	}
	if want := []string{"llm-d", "dynamo", "litellm"}; !slices.Equal(byPrefix, want) {
		t.Errorf("products known by their families %v, want %v", byPrefix, want)
	}
	if want := []string{"production-stack"}; !slices.Equal(byLabel, want) {
		t.Errorf("products known by a server label %v, want %v", byLabel, want)
	}
}
