package rank

import (
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// SnippetFor writes the configuration of a row in its router's own format (its product's
// Snippet), with the settings that matter for the traffic (the row's: as shipped, the user's,
// or tuned) spelled out, and what the router needs from the engines where its format holds it
// (prefix caching on, KV events for the routers that read them, LMCache for production-stack's
// kvaware). Placeholders a user must fill (the model, the worker URLs) are marked "edit". nil
// for a router kvcheck does not know.
func SnippetFor(r Row) *product.Snippet {
	p, ok := router.Of(r.Policy)
	if !ok {
		return nil
	}
	s := p.Snippet(r.Policy, orShipped(p, r.Settings))
	return &s
}
