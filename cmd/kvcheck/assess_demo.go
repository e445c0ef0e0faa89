package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
)

// demoAssess runs kvcheck assess over the demo fleet's scrape targets (name=URL or host:port)
// and a built-in multi-turn chat trace, and renders the recommendation. The trace stands in for
// the request log a real user would give; the replica count and KV size come from the scrape.
func demoAssess(ctx context.Context, s streams, g *globalOptions, targets []string) (report.Result, error) {
	if len(targets) == 0 {
		return report.Result{}, fmt.Errorf("demo assess: no scrape targets")
	}
	src := assess.Sources{
		Embedded: demo.ChatTrace(1), Tokenize: audit.DefaultTokenize,
		Metrics: promql.Spec{Scrape: targets, Window: 3 * time.Second, WindowSet: true, ScrapeTimeout: 5 * time.Second},
	}
	if g.format != report.FormatJSON {
		heading, note, command := demo.AssessIntro(targets, src.Embedded)
		t := g.text(s.Out)
		t.Heading(heading)
		t.Muted("%s", note)
		t.Line("$ kvcheck %s", command)
		t.Line("")
	}
	return assess.Run(ctx, report.NewStatus(s.ErrOut), src, assess.Options{Thresholds: advise.DefaultThresholds(), Today: assess.DefaultToday})
}

// runAssessDemo starts four emulated replicas on loopback, as kvcheck demo does, and runs
// demoAssess against them.
func runAssessDemo(ctx context.Context, s streams, g *globalOptions) (report.Result, error) {
	f, err := demo.StartAssessFleet()
	if err != nil {
		return report.Result{}, err
	}
	defer func() {
		if err := f.Close(); err != nil {
			report.NewStatus(s.ErrOut).Note("%v", err)
		}
	}()
	return demoAssess(ctx, s, g, f.Targets())
}
