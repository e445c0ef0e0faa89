package advise

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// productNames are the products' names in prose, written out by hand (issue 21's one spelling
// each): a product added to the registry needs its row here, and the test below then checks
// that its users' advice names it.
var productNames = map[string]string{
	"llm-d": "llm-d", "dynamo": "Dynamo", "production-stack": "vLLM production-stack", "litellm": "LiteLLM",
	"sglang": "SGLang", "ray": "Ray Serve", "vllm-router": "vLLM Router", "aibrix": "AIBrix", "kthena": "Kthena",
}

// TestAdviceNamesTheConfiguredProduct: for a configuration of each product (the snippet it
// writes for its first emulation as shipped, linted as assess --config lints the user's
// files), the advice for a KV-aware router and for session affinity names that product, as a
// line saying its configuration was checked, and names no other product: the user runs that
// router, and the ranking names the alternatives (issue 22, failure 6). A product with no trap
// of its own for the route (AIBrix, Kthena, vLLM Router) is named too.
func TestAdviceNamesTheConfiguredProduct(t *testing.T) {
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	sessionWins := replay(0.30, 10, true, pol("chash-bounded", 0.55, 1.2), pol("session", 0.56, 1.3), pol("kv-load", 0.57, 1.07))
	for _, p := range router.Products() {
		id := p.Name().ID
		name, ok := productNames[id]
		if !ok {
			t.Errorf("product %s has no name in productNames: write the one users know", id)
			continue
		}
		first := p.Emulations(p.Shipped()[0].Settings)[0].Name
		sn := p.Snippet(first, p.Shipped()[0].Settings)
		c := lintConfig(t, map[string]string{sn.File: sn.Text})
		if !slices.Contains(c.Systems, name) {
			t.Errorf("%s: the snippet %s configures %q, want %q among them", id, sn.File, c.Systems, name)
			continue
		}
		for _, rp := range []*Replay{kvWins, sessionWins} {
			rec := Decide(Input{Replay: rp, Config: c}, DefaultThresholds())
			checked := slices.ContainsFunc(rec.Advice, func(l string) bool {
				return strings.HasPrefix(l, name+": your configuration was checked (kvcheck lint)")
			})
			if !checked {
				t.Errorf("%s, %s: advice %q, want a line %q", id, rec.Verdict, rec.Advice, name+": your configuration was checked (kvcheck lint)...")
			}
			for _, other := range productNames {
				if other == name || strings.HasPrefix(name, other) {
					continue
				}
				if slices.ContainsFunc(rec.Advice, func(l string) bool { return strings.HasPrefix(l, other+" ") || strings.HasPrefix(l, other+":") }) {
					t.Errorf("%s, %s: advice %q has a line about %s", id, rec.Verdict, rec.Advice, other)
				}
			}
		}
	}
}

// addedProduct is a product added to the registry with nothing but its folder: it routes like
// llm-d (the embedded Router) under its own name, and has advice of its own.
type addedProduct struct{ product.Router }

func (addedProduct) Name() product.Name { return product.Name{ID: "added", Display: "Added Router"} }

func (addedProduct) Advice() product.Advice {
	return product.Advice{
		KVAware:  []string{"Added Router: its KV trap"},
		Session:  []string{"Added Router: its session trap"},
		Exact:    "Added Router exact mode",
		LoadTerm: "Added Router's load term",
	}
}

// TestAdviceOfAnAddedProduct: a product appended to the registry gets its advice without any
// change to advise: its KV-aware and session lines after the registry's products' (it comes
// last), its exact mode in the engines' hash-parity line, its load term in the line against
// naive longest-prefix routing; and when the user's files configure it, its lines give way to
// what the checks found and the other products' lines go (every expected line written here).
func TestAdviceOfAnAddedProduct(t *testing.T) {
	kvWins := replay(0.30, 10, true, pol("chash-bounded", 0.35, 1.3), pol("session", 0.36, 3), pol("kv-load", 0.60, 1.07))
	sessionWins := replay(0.30, 10, true, pol("chash-bounded", 0.55, 1.2), pol("session", 0.56, 1.3), pol("kv-load", 0.57, 1.07))
	products := append(router.Products(), addedProduct{router.Products()[0]})
	th := DefaultThresholds()

	kv := advice(KVAwareRouter, Input{Replay: kvWins}, th, products)
	if want := "exact KV-aware routers (llm-d exact producer, Dynamo, AIBrix event sync, Added Router exact mode) match block hashes: every replica needs the same PYTHONHASHSEED and --prefix-caching-hash-algo, and --kv-events-config switched on (up to vLLM 0.11.0 also \"publisher\":\"zmq\")"; kv[0] != want {
		t.Errorf("first line %q, want %q", kv[0], want)
	}
	if want := "naive longest-prefix routing makes hot spots where many requests share a first block: use a scorer that weighs load (llm-d's queue and KV-utilisation scorers, Dynamo's decode blocks, Added Router's load term, match - beta*load), as the replayed policies do"; kv[len(kv)-1] != want {
		t.Errorf("last line %q, want %q", kv[len(kv)-1], want)
	}
	if got := kv[len(kv)-2]; got != "Added Router: its KV trap" {
		t.Errorf("the line before the last %q, want the added product's", got)
	}
	ses := advice(SessionAffinity, Input{Replay: sessionWins}, th, products)
	if !slices.Contains(ses, "Added Router: its session trap") || slices.Contains(ses, "Added Router: its KV trap") {
		t.Errorf("session advice %q, want the added product's session line alone", ses)
	}

	c := &Config{Systems: []string{"Added Router", "vLLM"}, Findings: []finding.Finding{}}
	got := advice(KVAwareRouter, Input{Replay: kvWins, Config: c}, th, products)
	want := []string{kv[0], "Added Router: your configuration was checked (kvcheck lint) and none of its router-trap rules fired", kv[len(kv)-1]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("advice with the added product configured (-want +got):\n%s", diff)
	}
}
