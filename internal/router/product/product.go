// Package product is what every router product package (internal/router/<product>) provides
// and the vocabulary they share with the callers that ask the registry (internal/router): the
// Router interface, a product's names and settings, the facts a configuration file shows of a
// router, and what the ranking asks of a product (changes, requirements, a snippet in the
// product's own format).
//
// It sits below both the registry and the product packages, so that neither imports the other
// the wrong way: the registry imports the products, the products import this package and
// internal/sim, and nothing here imports a product.
package product

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// Router is everything kvcheck knows about one router product. A product package holds one
// type implementing it (llmd.Router, ray.Router, ...), and the registry lists it once.
//
// Settings flow through it as opaque values of the product's own Settings type: Shipped gives
// them as the product ships, Configure as a user's files set them, Tune as kvcheck would set
// them for the traffic; Emulations runs the product's routing with any of them.
type Router interface {
	// Name is the product's id and display name.
	Name() Name
	// Shipped returns the settings the product ships with: one set, or one per default set it
	// ships (SGLang's gateway: its command line's and a policy hint's). The first is the one
	// an emulation runs with when nothing chooses.
	Shipped() []Variant
	// Emulations returns the product's emulations, each run with settings s (a value of the
	// product's own Settings type), in the order results are shown. Every call returns the
	// same names in the same order, whatever s.
	Emulations(s Settings) []sim.PolicyInfo
	// Configure reads one router of the product a configuration file sets up (f.Product is
	// the product's id): the emulations it runs with the file's values, or, with Policy "",
	// why it gets none.
	Configure(f Facts) []Configured
	// Tune returns the settings kvcheck would run policy with for this traffic, starting from
	// s, and the changes it made; no changes when it would change nothing.
	Tune(policy string, s Settings, tr Traffic) (Settings, []Change)
	// Requirements are what policy with s needs, each against what the files (nil: none
	// given) and the traffic show.
	Requirements(policy string, s Settings, tr Traffic, f *Files) []Requirement
	// Snippet writes policy with s in the product's own configuration format.
	Snippet(policy string, s Settings) Snippet
}

// EventReader is a Router whose emulations can read the engines' KV events: the ranking asks
// it how an emulation runs when the files show engines that publish none.
type EventReader interface {
	// WithoutEvents returns s as policy runs when the engines publish no KV events, and what
	// the product then does (a clause after "without them"); ok is false when policy with s
	// reads no events.
	WithoutEvents(policy string, s Settings) (without Settings, does string, ok bool)
}

// Front is a Router that users put in front of other routers: a proxy whose deployments may
// be routers or gateways themselves (LiteLLM in front of llm-d's inference gateway). When the
// inputs show it beside another product, the router behind it picks the replica.
type Front interface {
	// InFront reports that the product routes to other routers when deployed beside them.
	InFront() bool
}

// Name is how kvcheck names a product: one spelling of each, from its package.
type Name struct {
	// ID is the product's short id: its configuration rules' code prefix, the router kind
	// lint reads, the product of the ranking's rows ("llm-d", "production-stack", "dynamo",
	// "sglang", "ray", "litellm").
	ID string
	// Display is its name in prose, help and charts ("vLLM production-stack", "NVIDIA
	// Dynamo", ...).
	Display string
}

// Settings are one product's settings: a value of the product's own Settings type (a struct,
// copied on assignment). Only the product that made a value reads it.
type Settings any

// Variant is one default set a product ships.
type Variant struct {
	// Key names it on the command line (simulate --<id>-defaults KEY); "" when the product
	// ships one set.
	Key string
	// Label names it on a ranked row ("CLI defaults"); "" when the product ships one set.
	Label string
	// About says what it is in a few words, for an error naming the keys; Help says it with
	// its values, for --help.
	About, Help string
	Settings    Settings
	// Alternative marks a set the command line may choose (another version of the product, or
	// another of its modes) that assess's ranking does not list as a shipped row of its own.
	Alternative bool
}

// Facts is one router a configuration file sets up and the values the file gives it, in the
// product's own spelling (lint reads them; each product's Configure says which keys it reads).
type Facts struct {
	// Product is the product's id (Name.ID).
	Product string
	File    string
	Line    int
	Values  map[string]string
}

// Where is the file and line of the router.
func (f Facts) Where() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// Configured is one router a file sets up, with the user's values as settings.
type Configured struct {
	// Policy is the emulation it runs; "" when it runs none kvcheck emulates (NotSimulated
	// says why).
	Policy string
	// Where is the file and line.
	Where    string
	Settings Settings
	// Changes are the values that differ from the product as shipped, each with where it was
	// set.
	Changes []Change
	// Notes name the values that could not be read (the row keeps the shipped value for them;
	// with NotSimulated, only the values that could not be read).
	Notes []string
	// NotSimulated, with Policy "", says why the router gets no row.
	NotSimulated string
}

// Change is one setting a configured or tuned row sets away from the shipped value.
type Change struct {
	Setting string
	Value   string
	// Why says what in the traffic, the fleet or the files justifies it (tuned), or where the
	// user set it (configured).
	Why string
}

// Snippet is a router's configuration in its own format.
type Snippet struct {
	// Product is the product's id.
	Product string
	// Format names the format (EndpointPickerConfig YAML, Helm values, ...); File is a file
	// name it would live in (the config lint detects some formats by name).
	Format, File string
	// Where says which file the product reads the text from and under which key (or on which
	// command line) its router settings go, so that a user can tell where to paste it.
	Where string
	Text  string
}
