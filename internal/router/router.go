// Package router is the registry of the router products kvcheck knows: lint, simulate, assess's
// ranking and advise ask it, and never name a product.
//
// How the pieces fit:
//
//   - internal/router/product defines the Router interface every product implements, and the
//     vocabulary the products and their callers share (settings, facts, changes, requirements,
//     snippets). It imports internal/sim and nothing of the products.
//   - internal/router/<product> (llmd, dynamo, prodstack, litellm, sglang, ray) holds
//     everything kvcheck believes about one product: its settings with the shipped defaults,
//     its emulations (sim.Policy implementations, built with their settings by a closure),
//     how a file's values configure it, how kvcheck would tune it, what it requires and the
//     snippet in its own format. Its doc comment cites the upstream source lines it follows.
//   - internal/sim runs an emulation like any policy: it exports the narrow view a policy
//     reads (sim.Pool, sim.Job) and never imports this package; callers hand it the
//     emulations (sim.Sweep.Emulations, sim.SimulatePolicy).
//   - this package lists the products in the order results are shown (Products) and answers
//     the questions that span them: every emulation (Emulations), the product of an emulation
//     (Of), a product by id (Lookup).
//
// Adding a product is its folder plus one line in Products. A product that also has config
// rules or other capabilities implements the optional interfaces of package product; callers
// discover them by type assertion, so the registry's callers do not change.
package router

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/aibrix"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/kthena"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
	"github.com/kvcheck/kvcheck/internal/router/vllmrouter"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Products lists every router product, in the order results are shown. No init()
// registration: this list is the registry.
func Products() []product.Router {
	return []product.Router{
		llmd.Router{},
		dynamo.Router{},
		prodstack.Router{},
		litellm.Router{},
		sglang.Router{},
		ray.Router{},
		vllmrouter.Router{},
		aibrix.Router{},
		kthena.Router{},
	}
}

// StackOrder returns the product ids in the order assess takes the product the user runs when
// the inputs show several: the registry's, with the products users put in front of other
// routers (product.Front) last, since the router behind them picks the replica.
func StackOrder() []string {
	var out, front []string
	for _, p := range Products() {
		if f, ok := p.(product.Front); ok && f.InFront() {
			front = append(front, p.Name().ID)
			continue
		}
		out = append(out, p.Name().ID)
	}
	return append(out, front...)
}

// Lookup returns the product whose id is id.
func Lookup(id string) (product.Router, bool) {
	for _, p := range Products() {
		if p.Name().ID == id {
			return p, true
		}
	}
	return nil, false
}

// Of returns the product an emulation belongs to, by the emulation's name.
func Of(policy string) (product.Router, bool) {
	for _, p := range Products() {
		for _, e := range p.Emulations(p.Shipped()[0].Settings) {
			if e.Name == policy {
				return p, true
			}
		}
	}
	return nil, false
}

// Emulation returns the emulation named, run with settings s of its product (as shipped when
// s is nil).
func Emulation(policy string, s product.Settings) (sim.PolicyInfo, bool) {
	p, ok := Of(policy)
	if !ok {
		return sim.PolicyInfo{}, false
	}
	if s == nil {
		s = p.Shipped()[0].Settings
	}
	for _, e := range p.Emulations(s) {
		if e.Name == policy {
			return e, true
		}
	}
	return sim.PolicyInfo{}, false
}

// Shipped returns every emulation as its product ships, with each product's first default
// set, in the order results are shown.
func Shipped() []sim.PolicyInfo {
	out, _ := Emulations(nil)
	return out
}

// Names returns the names of every emulation, in the order results are shown.
func Names() []string {
	var out []string
	for _, e := range Shipped() {
		out = append(out, e.Name)
	}
	return out
}

// Emulations returns every emulation as its product ships, with the default set defaults
// names by product id (Variant.Key; a product not named runs with its first), in the order
// results are shown. A key its product does not ship is an error naming the ones it does.
func Emulations(defaults map[string]string) ([]sim.PolicyInfo, error) {
	var out []sim.PolicyInfo
	for _, p := range Products() {
		vs := p.Shipped()
		v := vs[0]
		if key, ok := defaults[p.Name().ID]; ok {
			i := slices.IndexFunc(vs, func(v product.Variant) bool { return v.Key == key })
			if i < 0 {
				return nil, fmt.Errorf("%q: want %s", key, Choices(p))
			}
			v = vs[i]
		}
		for _, e := range p.Emulations(v.Settings) {
			if len(vs) > 1 {
				e.Label = v.Label
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// Reasons are the reasons the emulation named gives its routes (sim.PolicyInfo.Reasons) under
// any default set its product ships, in the order the first set lists them; nil for a name
// no product emulates.
func Reasons(policy string) []string {
	p, ok := Of(policy)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range p.Shipped() {
		for _, e := range p.Emulations(v.Settings) {
			if e.Name != policy {
				continue
			}
			for _, r := range e.Reasons {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// Choices lists a product's default sets with what each is, for an error: "cli (...) or hint
// (...)".
func Choices(p product.Router) string {
	var parts []string
	for _, v := range p.Shipped() {
		parts = append(parts, fmt.Sprintf("%s (%s)", v.Key, v.About))
	}
	return strings.Join(parts, " or ")
}
