package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/report"
)

// demoOptions are the flags of kvcheck demo.
type demoOptions struct {
	window time.Duration
	seed   uint64
}

// demoStep is one section of the demo. Each step starts what it needs on loopback, prints its
// part of the report and cleans up, so sections can be added without touching the others.
type demoStep struct {
	title string
	run   func(ctx context.Context, s streams, g *globalOptions) error
}

func newDemoCmd(s streams, g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run kvcheck against an emulated vLLM fleet on loopback",
		Long: `Starts emulated vLLM replicas on 127.0.0.1 with a built-in workload and runs kvcheck's
commands against them, section by section. Nothing leaves the machine; it finishes in well under a
minute.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), s, g, o)
		},
	}
	cmd.Flags().DurationVar(&o.window, "window", 3*time.Second, "scrape window of the hitrate section (short, for the demo)")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "workload seed")
	return cmd
}

// demoSteps lists the demo's sections in order.
func demoSteps(o *demoOptions) []demoStep {
	return []demoStep{
		{title: "hitrate", run: func(ctx context.Context, s streams, g *globalOptions) error { return demoHitrate(ctx, s, g, o) }},
	}
}

func runDemo(ctx context.Context, s streams, g *globalOptions, o *demoOptions) error {
	if _, err := g.format(report.FormatText, report.FormatJSON); err != nil {
		return err
	}
	if o.window <= 0 || o.window > 30*time.Second {
		return usageErrorf("--window %s: keep the demo between 0 and 30s", o.window)
	}
	for _, st := range demoSteps(o) {
		if err := st.run(ctx, s, g); err != nil {
			return fmt.Errorf("demo %s: %w", st.title, err)
		}
	}
	return nil
}

// demoFleet is the hitrate section's fleet: four replicas, one colder than the rest (mostly
// unique prompts) and one still on vLLM 0.9.1's metric names.
func demoFleet(seed uint64) []fleet.Config {
	cold := fleet.DefaultWorkload
	cold.SharedFraction = 0.15
	cold.SharedPrefixes = 32
	cfgs := fleet.Uniform(4, fleet.Config{Seed: seed, WarmupSteps: 2000})
	cfgs[2].Version = "0.9.1"
	cfgs[3].Workload = cold
	return cfgs
}

func demoHitrate(ctx context.Context, s streams, g *globalOptions, o *demoOptions) error {
	// 5 steps every 5 ms at 0.3 arrivals per step: about 300 requests per second per replica, enough to move every
	// counter inside a few seconds.
	f, err := fleet.New(fleet.Options{Replicas: demoFleet(o.seed), Tick: 5 * time.Millisecond, StepsPerTick: 5})
	if err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	defer f.Close()
	var scrape []string
	if g.Output != string(report.FormatJSON) {
		t := g.text(s.Out)
		t.Heading("Demo: kvcheck hitrate against 4 emulated vLLM replicas")
		for _, r := range f.Replicas() {
			c := r.Config()
			note := ""
			switch r.Name() {
			case "replica-2":
				note = " (old metric names)"
			case "replica-3":
				note = " (mostly unique prompts: colder)"
			}
			t.Muted("  %s  %s  vLLM %s%s", r.Name(), r.URL(), c.Version, note)
		}
		t.Muted("Scrape window %s (30s by default outside the demo); the built-in workload runs about 300 requests/s per replica so the counters move within seconds.", o.window)
		t.Line("$ kvcheck hitrate --scrape replica-0=%s,... --window %s", f.URLs()[0], o.window)
		t.Line("")
	}
	for _, r := range f.Replicas() {
		scrape = append(scrape, r.Name()+"="+r.URL())
	}
	ho := &hitrateOptions{scrape: scrape, window: o.window, windowSet: true, scrapeTimeout: 5 * time.Second, progress: func(string) {}, warn: func(string) {}}
	return runHitrate(ctx, s, g, ho)
}
