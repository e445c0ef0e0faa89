package router

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// TestOneSpelling: a product is spelt one way wherever kvcheck names it (issue 21): as its
// Name.Display in its config rules' System column (README's rule table, SARIF) and in the first
// words of each line of its advice, and a part named for the engines' hash parity or a load
// term names it too. The names are written out here by hand, so that a changed spelling is
// a decision this test records, not a drift.
func TestOneSpelling(t *testing.T) {
	want := map[string]string{
		"llm-d": "llm-d", "dynamo": "Dynamo", "production-stack": "vLLM production-stack", "litellm": "LiteLLM",
		"sglang": "SGLang", "ray": "Ray Serve", "vllm-router": "vLLM Router", "aibrix": "AIBrix", "kthena": "Kthena",
	}
	for _, p := range Products() {
		n := p.Name()
		if n.Display != want[n.ID] {
			t.Errorf("%s is spelt %q, want %q", n.ID, n.Display, want[n.ID])
		}
		if c, ok := p.(config.Checker); ok {
			for _, r := range c.ConfigRules() {
				if r.System != n.Display {
					t.Errorf("rule %s: system %q, want %q", r.Code, r.System, n.Display)
				}
			}
		}
		a, ok := p.(product.Advisor)
		if !ok {
			continue
		}
		adv := a.Advice()
		for _, l := range append(adv.KVAware, adv.Session...) {
			if !strings.HasPrefix(l, n.Display+" ") && !strings.HasPrefix(l, n.Display+":") {
				t.Errorf("%s: advice line %q does not start with %q", n.ID, l, n.Display)
			}
		}
		for _, part := range []string{adv.Exact, adv.LoadTerm} {
			if part != "" && !strings.HasPrefix(part, n.Display) {
				t.Errorf("%s: %q does not name %q", n.ID, part, n.Display)
			}
		}
	}
}

// TestStackOrder: assess takes the product the user runs from the inputs in the registry's
// order, every product once, LiteLLM (a proxy users put in front of other routers) last.
func TestStackOrder(t *testing.T) {
	want := []string{"llm-d", "dynamo", "production-stack", "sglang", "ray", "vllm-router", "aibrix", "kthena", "litellm"}
	if got := StackOrder(); !slices.Equal(got, want) {
		t.Errorf("StackOrder() = %q, want %q", got, want)
	}
}
