package router

import "github.com/kvcheck/kvcheck/internal/router/config"

// Checkers returns the configuration checks lint runs (config.Checker): those of every product
// that has them, in the order of Products.
func Checkers() []config.Checker {
	var out []config.Checker
	for _, p := range Products() {
		if c, ok := p.(config.Checker); ok {
			out = append(out, c)
		}
	}
	return out
}
