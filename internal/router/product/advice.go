package product

// Advisor is a Router with advice about itself for a user whose evidence recommends a way of
// routing the product implements: kvcheck assess asks every product of the registry (advise
// never names one), so a product added to the registry gives its advice with no other change.
type Advisor interface {
	Advice() Advice
}

// Advice is what a product says about itself in assess's advice.
type Advice struct {
	// KVAware are its traps when the evidence recommends a KV-aware router, Session when it
	// recommends session affinity. Each line starts with Name.Display, so that a reader sees
	// whose trap it is; assess replaces the lines of a product the user's files configure with
	// what the checks found in them.
	KVAware, Session []string
	// Exact names the part of the product that matches the engines' block hashes ("llm-d
	// exact producer"), for the engines' line on hash parity; "" when it has none.
	Exact string
	// LoadTerm names what weighs load in the product's scores ("llm-d's queue and
	// KV-utilisation scorers"), for the lines against routing on the longest prefix alone; ""
	// when it has none.
	LoadTerm string
}
