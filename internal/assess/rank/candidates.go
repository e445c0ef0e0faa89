package rank

import (
	"slices"

	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Candidates lists every emulation's rows: as shipped (one row per default set its product
// ships, alternatives left out: SGLang's cache_aware twice, the CLI's defaults and the ones a
// policy hint applies), as
// configured by each router the files set up for it, and tuned (from the configured row when
// there is one, else as shipped) when kvcheck would change a setting for this traffic.
// Requirements are filled from the files and traffic. An emulation no product holds (an
// idealised policy, in tests) gets one shipped row, run as it is.
func Candidates(emus []sim.PolicyInfo, tr product.Traffic, files *product.Files) []Candidate {
	var out []Candidate
	for _, e := range emus {
		p, ok := router.Of(e.Name)
		if !ok {
			out = append(out, Candidate{Policy: e.Name, Product: e.Product, Variant: Shipped})
			continue
		}
		id := p.Name().ID
		vs := p.Shipped()
		var shipped []Candidate
		for _, v := range vs {
			if !v.Alternative {
				shipped = append(shipped, Candidate{Policy: e.Name, Product: id, Variant: Shipped, Label: v.Label, Settings: v.Settings})
			}
		}
		out = append(out, shipped...)
		var configured []Candidate
		for _, rc := range files.RoutersFor(e.Name) {
			configured = append(configured, Candidate{Policy: e.Name, Product: id, Variant: Configured, Label: rc.Where, Settings: rc.Settings, Changes: rc.Changes, Notes: slices.Clone(rc.Notes)})
		}
		out = append(out, configured...)
		from := shipped[0]
		if len(configured) > 0 {
			from = configured[0]
		}
		if t, ok := tune(from, tr); ok {
			out = append(out, t)
		}
	}
	for i := range out {
		out[i].Requirements = requirements(out[i], tr, files)
		withoutEvents(&out[i])
	}
	return out
}

// requirements are what a row's router needs, against what the files and the traffic show
// (none for a policy no product holds).
func requirements(c Candidate, tr product.Traffic, f *product.Files) []product.Requirement {
	p, ok := router.Of(c.Policy)
	if !ok {
		return nil
	}
	return p.Requirements(c.Policy, orShipped(p, c.Settings), tr, f)
}

// orShipped is s, or the product's shipped settings when s is nil (a row built without
// settings runs as shipped).
func orShipped(p product.Router, s product.Settings) product.Settings {
	if s == nil {
		return p.Shipped()[0].Settings
	}
	return s
}

// withoutEvents simulates a router that reads the engines' KV events as the product behaves
// when the files show the engines publish none (the requirement missing, not unknown): Dynamo's
// KV router (with --router-kv-events) "falls back to load-only decisions even in kv mode"
// (ROUTERS.md §4) and llm-d's precise producer, whose index only the events build (§2), matches
// no prefix (product.EventReader). A tuned row stays simulated with the events: it is kvcheck's
// configuration, which needs them, and its requirement stays missing; its note says so. Unknown
// keeps the events.
func withoutEvents(c *Candidate) {
	p, ok := router.Of(c.Policy)
	if !ok {
		return
	}
	er, ok := p.(product.EventReader)
	if !ok {
		return
	}
	without, does, ok := er.WithoutEvents(c.Policy, orShipped(p, c.Settings))
	if !ok {
		return
	}
	i := slices.IndexFunc(c.Requirements, func(q product.Requirement) bool {
		return q.Name == product.ReqKVEvents && q.Status == product.Missing
	})
	if i < 0 {
		return
	}
	shown := "the files show an engine without KV events (" + c.Requirements[i].Detail + ")"
	if c.Variant == Tuned {
		c.Notes = append(c.Notes, "simulated with the engines publishing KV events, as this configuration needs; "+shown+": enable them to get these figures")
		return
	}
	c.Settings = without
	c.Notes = append(c.Notes, "simulated without engine KV events: "+shown+", and without them "+does)
}

// Today returns the settings today's routing (policy, with settings as the files configure it,
// or nil as shipped) runs with as the files show the deployment behaves, and the notes that say
// where that differs from its settings alone: the same correction the ranked rows get, so that
// --today dynamo-kv or llmd-precise on engines the files show publish no KV events is replayed
// load-only or without a prefix match, as its shipped and configured rows are. notes are the
// configured router's own notes (values it could not read), kept first. An idealised policy, or
// no files, comes back as given.
func Today(policy string, settings product.Settings, notes []string, f *product.Files) (product.Settings, []string) {
	p, ok := router.Of(policy)
	if f == nil || !ok {
		return settings, notes
	}
	c := Candidate{Policy: policy, Product: p.Name().ID, Variant: Shipped, Settings: p.Shipped()[0].Settings, Notes: slices.Clone(notes)}
	if settings != nil {
		c.Variant, c.Settings = Configured, settings
	}
	c.Requirements = requirements(c, product.Traffic{}, f)
	withoutEvents(&c)
	if len(c.Notes) == len(notes) {
		return settings, notes
	}
	return c.Settings, c.Notes
}

// tune returns the row kvcheck would run for this traffic, when it changes a setting.
func tune(from Candidate, tr product.Traffic) (Candidate, bool) {
	p, ok := router.Of(from.Policy)
	if !ok {
		return Candidate{}, false
	}
	s, ch := p.Tune(from.Policy, orShipped(p, from.Settings), tr)
	if len(ch) == 0 {
		return Candidate{}, false
	}
	c := from
	c.Variant, c.Label, c.Settings = Tuned, "", s
	c.Changes = append(slices.Clone(from.Changes), ch...)
	c.Notes = slices.Clone(from.Notes)
	return c, true
}
