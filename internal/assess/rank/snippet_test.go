package rank

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
)

// TestSnippetsPassTheLint writes the snippet of every row kvcheck can produce (every known
// emulation, shipped, with both SGLang sets, tuned for a traffic that tunes each one, and with
// the settings a user may give) and runs the config lint on it: no error finding, and the
// lint recognises the format (it is the router's own).
func TestSnippetsPassTheLint(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range snippetRows(t) {
		sn := SnippetFor(Row{Candidate: c})
		if sn == nil {
			t.Errorf("%s: no snippet", c.Policy)
			continue
		}
		seen[c.Product] = true
		l := lint.New(cat, lint.Options{})
		res := l.Finish([]lint.FileResult{l.File(sn.File, []byte(sn.Text))})
		for _, f := range res[0].Findings {
			if f.Severity >= finding.Error {
				t.Errorf("%s (%s): %s %s line %d: %s\n%s", c.Policy, c.Variant, f.Code, sn.File, f.Line, f.Message, sn.Text)
			}
		}
		formats := 0
		for _, f := range res[0].Formats {
			if f != "" {
				formats++
			}
		}
		if formats == 0 && !strings.HasSuffix(sn.File, ".sh") {
			t.Errorf("%s: the lint does not recognise %s:\n%s", c.Policy, sn.File, sn.Text)
		}
		dep := lint.DeploymentOf(res)
		if len(dep.Routers) == 0 {
			t.Errorf("%s: no router read back from its own snippet:\n%s", c.Policy, sn.Text)
		}
	}
	if len(seen) != 9 {
		t.Errorf("products with snippets: %v", seen)
	}
}

// snippetRows are the rows of every snippet kvcheck can write: every known emulation,
// shipped, with both SGLang sets, tuned for a traffic that tunes each one, and with the
// settings a user may give.
func snippetRows(t *testing.T) []Candidate {
	t.Helper()
	tr := Traffic{Format: "requests", Text: true, SessionHeader: "x-session-id", Replicas: 4, KVTokens: 1 << 20, AddReplica: true, HotPrefixShare: 0.9}
	rows := Candidates(infos(allEmulations...), tr, nil)
	// Settings a user may give: the approximate Dynamo mode, Ray eviction, LiteLLM with Redis,
	// production-stack's thresholds.
	dy := dynamo.Shipped()
	dy.KVEvents, dy.TTLSecs, dy.Temperature = false, 30, 0.5
	ry := ray.Shipped()
	ry.DoEviction, ry.ImbalancedThreshold = true, 4
	ll := litellm.Shipped()
	ll.Redis = true
	ps := prodstack.Shipped()
	ps.KVAwareThreshold, ps.LoadBeta, ps.SessionKey, ps.PrefixMinMatch = 500, 0.5, "x-user-id", 256
	extra := map[string]product.Settings{Dynamo: dy, Ray: ry, LiteLLM: ll, ProdStack: ps}
	for _, p := range allEmulations {
		s, ok := extra[productOf(p)]
		if !ok {
			s = shippedOf(p)
		}
		rows = append(rows, Candidate{Policy: p, Product: productOf(p), Variant: Configured, Settings: s})
	}
	return rows
}

// TestSnippetRoundTrip: a snippet read back as --config gives the row's own settings, so
// applying it runs the router as ranked.
func TestSnippetRoundTrip(t *testing.T) {
	tr := Traffic{Replicas: 4, KVTokens: 1 << 20, AddReplica: true, HotPrefixShare: 0.9, SessionHeader: "x-session-id", Text: true}
	for _, c := range Candidates(infos("dynamo-kv", "llmd-precise", "ray-prefix-affinity", "sglang-cache-aware", "prodstack-session"), tr, nil) {
		if c.Variant != Tuned {
			continue
		}
		sn := SnippetFor(Row{Candidate: c})
		f := filesOf(t, map[string]string{snippetSlot(sn.File): sn.Text})
		if sn.File == "launch-router.sh" {
			continue // filesOf reads YAML slots; the SGLang script is read in TestSnippetsPassTheLint
		}
		var back *product.Configured
		for i := range f.Routers {
			if f.Routers[i].Policy == c.Policy {
				back = &f.Routers[i]
			}
		}
		if back == nil {
			t.Errorf("%s: not read back:\n%s", c.Policy, sn.Text)
			continue
		}
		want := c.Settings
		switch c.Product {
		case Dynamo:
			if back.Settings.(dynamo.Settings) != want.(dynamo.Settings) {
				t.Errorf("dynamo: %+v, want %+v", back.Settings.(dynamo.Settings), want.(dynamo.Settings))
			}
		case LLMD:
			if back.Settings.(llmd.Settings).Tokenizer != want.(llmd.Settings).Tokenizer || back.Settings.(llmd.Settings).PrefixWeight != want.(llmd.Settings).PrefixWeight {
				t.Errorf("llm-d: %+v, want %+v", back.Settings.(llmd.Settings), want.(llmd.Settings))
			}
		case Ray:
			if back.Settings.(ray.Settings).ImbalancedThreshold != want.(ray.Settings).ImbalancedThreshold {
				t.Errorf("ray: %+v, want %+v", back.Settings.(ray.Settings), want.(ray.Settings))
			}
		case ProdStack:
			if back.Settings.(prodstack.Settings).SessionKey != want.(prodstack.Settings).SessionKey {
				t.Errorf("production-stack: %+v, want %+v", back.Settings.(prodstack.Settings), want.(prodstack.Settings))
			}
		}
	}
}

// snippetSlot is the file name filesOf reads a snippet under.
func snippetSlot(file string) string {
	switch file {
	case "dynamo.yaml":
		return "dgd.yaml"
	case "epp-config.yaml":
		return "epc.yaml"
	case "serve-config.yaml":
		return "gateway.yaml"
	case "litellm-config.yaml":
		return "litellm.yaml"
	}
	return "values.yaml"
}
