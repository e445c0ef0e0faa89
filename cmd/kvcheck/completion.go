package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// completeFlagValues registers the completion of flag values (cobra's completion command
// writes the bash, zsh, fish and PowerShell scripts): -o with the formats the command offers
// (and FORMAT= for a file), --fail-on with the severities, --target with the catalog's
// families (family=), and --policies with simulate's policies, router emulations and groups,
// each after the commas already typed.
func completeFlagValues(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fs := c.Flags()
		if fs.Lookup("fail-on") != nil {
			_ = c.RegisterFlagCompletionFunc("fail-on", fixed("error", "warning", "info", "never"))
		}
		if fs.Lookup("target") != nil {
			_ = c.RegisterFlagCompletionFunc("target", func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
				var fams []string
				if cat, err := catalog.Load(); err == nil {
					for _, f := range cat.Families {
						fams = append(fams, f.Name+"=")
					}
				}
				return afterComma(typed, fams), cobra.ShellCompDirectiveNoSpace
			})
		}
		if fs.Lookup("policies") != nil {
			_ = c.RegisterFlagCompletionFunc("policies", func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
				names := append(append([]string{"all", "routers"}, sim.PolicyNames()...), router.Names()...)
				return afterComma(typed, names), cobra.ShellCompDirectiveNoSpace
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	_ = root.RegisterFlagCompletionFunc("output", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, f := range report.Formats(c.Flags().Lookup("fail-on") != nil) {
			out = append(out, string(f), string(f)+"=")
		}
		return out, cobra.ShellCompDirectiveNoSpace
	})
}

func fixed(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// afterComma completes the last item of a comma-separated value: each candidate after what
// was typed before the last comma.
func afterComma(typed string, candidates []string) []string {
	head := ""
	if i := strings.LastIndexByte(typed, ','); i >= 0 {
		head = typed[:i+1]
	}
	out := make([]string, len(candidates))
	for i, c := range candidates {
		out[i] = head + c
	}
	return out
}
