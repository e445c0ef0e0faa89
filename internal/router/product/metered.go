package product

// Metered is a Router whose own metrics show that a user runs it: a metrics input (a dump, a
// scrape, a Prometheus) that holds them names the product as the user's stack, for assess's
// stack rule and hitrate's report.
type Metered interface {
	Metrics() Metrics
}

// Metrics are the signs of a product in a metrics input.
type Metrics struct {
	// Families are the name prefixes of the product's own metric families.
	Families []string
	// ServerLabel says the product's router re-exports the engines' vllm: series with a
	// server label, one a backend: series that look like an engine's but are the router's.
	ServerLabel bool
}
