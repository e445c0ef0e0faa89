package router

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// DefaultSet is a product that ships more than one default set, as simulate's
// --<ID>-defaults offers them: the first set's key, and a help line naming the product's
// emulations and every set.
type DefaultSet struct {
	ID, Default, Help string
}

// DefaultSets lists the products that ship more than one default set, in the order results
// are shown.
func DefaultSets() []DefaultSet {
	var out []DefaultSet
	for _, p := range Products() {
		vs := p.Shipped()
		if len(vs) < 2 {
			continue
		}
		var names, sets []string
		for _, e := range p.Emulations(vs[0].Settings) {
			names = append(names, e.Name)
		}
		for _, v := range vs {
			sets = append(sets, fmt.Sprintf("%s (%s)", v.Key, v.Help))
		}
		out = append(out, DefaultSet{ID: p.Name().ID, Default: vs[0].Key,
			Help: strings.Join(names, ", ") + "'s default set: " + strings.Join(sets, " or ")})
	}
	return out
}

// PolicyHelp lists the idealised policies and the router emulations with their one-line
// descriptions (an emulation's wrapped under its name, with its product) and the reasons
// --routes gives for their routes, for simulate's --help.
func PolicyHelp() string {
	var b strings.Builder
	for _, p := range sim.Policies() {
		fmt.Fprintf(&b, "  %-14s %s\n", p.Name, p.About)
		fmt.Fprintf(&b, "  %-14s reasons: %s\n", "", strings.Join(p.Reasons, ", "))
	}
	b.WriteString(`  all            every policy above (the default)

Router emulations, as each product ships (settings: the product's defaults; --policies routers
runs them all). Those marked "text" read the request itself and run only on --requests; on a
trace of block hashes the output says they cannot run and why (a cannot-run finding, info);
an emulation's reasons are those of every default set its product ships:
`)
	for _, e := range Shipped() {
		mark := ""
		if e.NeedsText {
			mark = " (text)"
		}
		fmt.Fprintf(&b, "  %s: %s%s\n", e.Name, e.Product, mark)
		line := "   "
		for _, w := range strings.Fields(e.About) {
			if len(line)+1+len(w) > 100 && line != "   " {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
		if r := Reasons(e.Name); len(r) > 0 {
			fmt.Fprintf(&b, "    reasons: %s\n", strings.Join(r, ", "))
		}
	}
	return b.String()
}
