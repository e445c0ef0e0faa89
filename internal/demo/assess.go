package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Assess is kvcheck assess --demo: it starts four emulated replicas on loopback serving the
// built-in chat trace round-robin (StartAssessFleet) and runs AssessTargets against them with
// that trace.
func Assess(ctx context.Context, st *report.Status, intro *report.Text) (report.Result, error) {
	tr := AssessTrace()
	f, err := StartAssessFleet(tr)
	if err != nil {
		return report.Result{}, err
	}
	defer func() {
		if err := f.Close(); err != nil {
			st.Note("%v", err)
		}
	}()
	return AssessTargets(ctx, st, intro, f.Targets(), tr)
}

// AssessTargets runs kvcheck assess over the scrape targets (name=URL or host:port) and the
// trace tr (AssessTrace, the built-in multi-turn chat trace), which stands in for the request
// log a real user would give; the replica count and KV size come from the scrape. With intro
// (text output) it first writes the heading, the note on the trace and the command line it
// stands for.
func AssessTargets(ctx context.Context, st *report.Status, intro *report.Text, targets []string, tr *sim.Trace) (report.Result, error) {
	if len(targets) == 0 {
		return report.Result{}, fmt.Errorf("demo assess: no scrape targets")
	}
	src := assess.Sources{
		Embedded: tr, Tokenize: audit.DefaultTokenize,
		Metrics: promql.Spec{Scrape: targets, Window: 3 * time.Second, WindowSet: true, ScrapeTimeout: 5 * time.Second},
	}
	if intro != nil {
		heading, note, command := AssessIntro(targets, src.Embedded)
		intro.Heading(heading)
		intro.Muted("%s", note)
		intro.Line("$ kvcheck %s", command)
		intro.Line("")
	}
	rec, rk, err := assess.Run(ctx, st, src, assess.Options{Thresholds: advise.DefaultThresholds(), Today: AssessToday})
	if err != nil {
		return report.Result{}, err
	}
	return report.AssessRanked(rec, rk), nil
}
