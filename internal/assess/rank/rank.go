// Package rank is kvcheck assess's answer to "which router fits this cluster": every router
// emulation (internal/router) replayed on the traffic and fleet assess already replays, as it
// ships, as the user configured it (--config) and as kvcheck would tune it, ordered by one rule
// a reader can check by hand against the table, with what each router needs against what the
// given files show, and the configuration to apply for the one that comes first.
//
// The rule (Rule):
//
//  1. Not ranked: an emulation that cannot run on the traffic (a text-reading router on a
//     trace of block hashes), a row with a hot spot (sim.Load.HotSpot, the rule kvcheck
//     assess and simulate apply: load max/mean >= 2.0, above the evenest spread the requests
//     allow, with half the busiest replica's requests waiting in the model), and, with --add-replica-at, a row that starves the
//     added replica (it gets less than half its fair share 1/(replicas+1) of the requests
//     after it joins): whatever such a router saves, it is not an answer.
//  2. The rest: fewer requirements the files show missing first; then more prefill saved
//     against today's routing after the warm-up, in whole points (23.4% and 22.6% tie at 23);
//     then the simpler one: fewer requirements in all, then as shipped before as configured
//     before as tuned (fewer settings to change); then by name.
//  3. A first needs a figure from the traffic that sets it apart: none is named when no ranked
//     row saves a whole point, when every ranked row saves exactly the same, or when the first
//     two tie on every count above but the name (Ranking.NoWinner says which).
package rank

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Rule states the ranking rule in one paragraph, for the text and the JSON.
const Rule = "not ranked: cannot run on this traffic, a hot spot (%s), an added replica given under half its fair share; " +
	"the rest by fewest requirements missing, most prefill saved against today after the warm-up (whole points), " +
	"fewest requirements, shipped before configured before tuned, name; " +
	"none is first when no ranked row saves a whole point, all save the same, or the first two tie but for the name"

// The variants of one emulation.
const (
	Shipped    = "shipped"
	Configured = "configured"
	Tuned      = "tuned"
)

// Candidate is one router under one set of settings.
type Candidate struct {
	// Policy is the emulation's name (internal/router; an idealised sim policy in tests).
	Policy string
	// Product is the product's id (product.Name.ID).
	Product string
	// Variant is Shipped, Configured or Tuned; Label says which shipped set (SGLang's CLI or
	// hint defaults) or the file a configured row came from.
	Variant, Label string
	// Settings are the product's settings the row runs with (its own Settings type).
	Settings product.Settings
	// Params, when set, are an idealised policy's parameters (sim.DefaultParams otherwise).
	Params *sim.Params
	// Changes are the settings that differ from the product as shipped, with why.
	Changes []product.Change
	// Requirements are what the router needs, each against what the files and traffic show.
	Requirements []product.Requirement
	// Notes say where the row is simulated otherwise than its settings alone say (a router
	// reading engine KV events the files show the engines do not publish).
	Notes []string
}

// Row is one candidate's figures on the traffic and its place in the ranking.
type Row struct {
	Candidate
	// Rank is 1 for the first; 0 for a row not ranked (Excluded says why).
	Rank     int
	Excluded string
	// HitRate is the prompt tokens served from cache after the warm-up; PrefillSaved the
	// fraction of today's prefill (after the warm-up) this router does not compute.
	HitRate, PrefillSaved float64
	LoadMaxOverMean       float64
	TTFTP50, TTFTP99      float64
	// load is what the hot-spot rule reads besides LoadMaxOverMean (sim.Load): the evenest
	// spread the requests allow and how busy the busiest replica was. Zero when not known
	// (a row built by hand): the row is then judged on LoadMaxOverMean alone.
	load sim.Load
	// FreshShare is the added replica's share of the requests after it joined (with
	// --add-replica-at), FairShare 1/(replicas+1); Starves by sim.StarvesAt (under half of it).
	FreshShare *float64
	FairShare  float64
	Starves    bool
}

// Missing counts the requirements the files show missing.
func (r Row) Missing() int {
	n := 0
	for _, q := range r.Requirements {
		if q.Status == product.Missing {
			n++
		}
	}
	return n
}

// CannotRun is an emulation the traffic cannot drive, and why.
type CannotRun struct {
	Policy, Product, Variant, Label, Reason string
}

// Ranking is the whole answer.
type Ranking struct {
	// Today is the policy standing for today's routing, TodayHitRate its hit rate after the
	// warm-up; TodayFrom is the file and line its settings were read from, when configured.
	Today     string
	TodayFrom string
	// TodayNotes say where today's routing is replayed otherwise than its settings alone say
	// (Setup.TodayNotes).
	TodayNotes   []string
	TodayHitRate float64
	Replicas     int
	KVBlocks     int
	BlockSize    int
	// AddReplicaAt is --add-replica-at in seconds, negative when not given.
	AddReplicaAt float64
	HotSpot      float64
	Rule         string
	// Rows are ranked rows first (Rank 1, 2, ...), then the rows not ranked.
	Rows      []Row
	CannotRun []CannotRun
	// NotSimulated are the routers the --config files set up that get no row (a mode kvcheck
	// does not emulate, a value the product does not know), with why.
	NotSimulated []product.NotSimulated
	// NoWinner, when set, says why no row is named first although rows are ranked: none saves
	// a whole point of today's prefill after the warm-up, or every ranked row saves exactly the
	// same (the traffic does not separate them). Why and Snippet are then empty.
	NoWinner string
	// Why says why the first row wins, one sentence each.
	Why []string
	// Snippet is the configuration to apply for the first row, when kvcheck can write one.
	Snippet *product.Snippet
}

// Setup is the replay every candidate runs: the fleet, the warm-up and the added replica, as
// assess's own replay has them.
type Setup struct {
	// Base is the simulation (assess.Base), with Replicas, KVBlocks and AddReplicaAt set.
	Base sim.Config
	// Today is the policy standing for today's routing; TodayRouters, when set, the settings
	// of its product it runs with (an emulation as the files configure it, read at
	// TodayFrom), else as shipped.
	Today        string
	TodayRouters product.Settings
	TodayFrom    string
	// TodayNotes say where today's routing runs otherwise than its settings alone say (Today).
	TodayNotes []string
	// NotSimulated are the configured routers that get no row (Files.NotSimulatedRouters).
	NotSimulated []product.NotSimulated
	// HotSpot is the load max/mean from which a row is a hot spot (sim.HotSpotRatio when 0).
	HotSpot float64
	// Progress, when set, is called as the replays finish.
	Progress func(done, total int)
}

// Run replays every candidate and today's routing on t and ranks them.
func Run(ctx context.Context, t *sim.Trace, s Setup, cands []Candidate) (*Ranking, error) {
	if s.HotSpot == 0 {
		s.HotSpot = sim.HotSpotRatio
	}
	rk := &Ranking{Today: s.Today, TodayFrom: s.TodayFrom, TodayNotes: slices.Clone(s.TodayNotes), Replicas: s.Base.Replicas, KVBlocks: s.Base.KVBlocks, BlockSize: t.BlockSize,
		AddReplicaAt: s.Base.AddReplicaAt, HotSpot: s.HotSpot, Rule: fmt.Sprintf(Rule, sim.HotSpotRule(s.HotSpot)), NotSimulated: s.NotSimulated}
	results := make([]sim.Result, len(cands)+1)
	errs := make([]error, len(cands)+1)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(runtime.GOMAXPROCS(0), len(cands)+1) {
		wg.Go(func() {
			for k := range work {
				c := s.Base
				name, settings := s.Today, s.TodayRouters
				if k > 0 {
					cd := cands[k-1]
					if cd.Params != nil {
						c.Params = *cd.Params
					}
					name, settings = cd.Policy, cd.Settings
				}
				if info, err := policy(name, settings); err != nil {
					errs[k] = err
				} else {
					results[k], errs[k] = sim.SimulatePolicy(ctx, t, c, info)
				}
				if s.Progress != nil {
					mu.Lock()
					done++
					s.Progress(done, len(cands)+1)
					mu.Unlock()
				}
			}
		})
	}
feed:
	for k := range cands {
		select {
		case work <- k + 1:
		case <-ctx.Done():
			break feed
		}
	}
	if ctx.Err() == nil {
		work <- 0
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ranking interrupted: %w", err)
	}
	if errs[0] != nil {
		return nil, fmt.Errorf("today's routing %s: %w", s.Today, errs[0])
	}
	today := results[0]
	rk.TodayHitRate = steadyHit(today)
	todayMiss := today.SteadyInputTokens - today.SteadyHitTokens
	fair := 1 / float64(s.Base.Replicas+1)
	for i, cd := range cands {
		res, err := results[i+1], errs[i+1]
		var cannot *sim.CannotRunError
		switch {
		case errors.As(err, &cannot):
			rk.CannotRun = append(rk.CannotRun, CannotRun{Policy: cd.Policy, Product: cd.Product, Variant: cd.Variant, Label: cd.Label, Reason: cannot.Reason})
			continue
		case err != nil:
			return nil, fmt.Errorf("%s (%s): %w", cd.Policy, cd.Variant, err)
		}
		row := Row{Candidate: cd, HitRate: steadyHit(res), LoadMaxOverMean: res.LoadMaxOverMean,
			TTFTP50: res.TTFTP50, TTFTP99: res.TTFTP99, FreshShare: res.FreshShare, load: sim.LoadOf(res, t)}
		if todayMiss > 0 {
			row.PrefillSaved = float64(todayMiss-(res.SteadyInputTokens-res.SteadyHitTokens)) / float64(todayMiss)
		}
		if s.Base.AddReplicaAt >= 0 {
			row.FairShare = fair
		}
		rk.Rows = append(rk.Rows, row)
	}
	rk.settle()
	return rk, nil
}

// settle applies the rule to the rows' figures: which rows are not ranked and why, the order,
// the ranks, why the first wins, and its configuration.
func (rk *Ranking) settle() {
	for i := range rk.Rows {
		row := &rk.Rows[i]
		row.Rank, row.Excluded = 0, ""
		row.Starves = rk.AddReplicaAt >= 0 && sim.StarvesAt(row.FreshShare, row.FairShare)
		load := row.load
		load.MaxOverMean = row.LoadMaxOverMean
		switch {
		case load.HotSpot(rk.HotSpot):
			row.Excluded = fmt.Sprintf("hot spot: load max/mean %.2f >= %.1f", row.LoadMaxOverMean, rk.HotSpot)
			if load.ArrivalsKnown {
				row.Excluded += fmt.Sprintf(", %.0f%% of the busiest replica's requests waiting", 100*load.HotWaited)
			}
		case row.Starves:
			row.Excluded = fmt.Sprintf("starves the added replica: %.1f%% of the requests after it joined, under half its fair share %.1f%%", 100**row.FreshShare, 100*row.FairShare)
		}
	}
	order(rk.Rows)
	rk.Why, rk.Snippet = nil, nil
	if rk.NoWinner = noWinner(rk); rk.NoWinner != "" {
		return
	}
	rk.Why = why(rk)
	if len(rk.Rows) > 0 && rk.Rows[0].Rank == 1 {
		rk.Snippet = SnippetFor(rk.Rows[0])
	}
}

// noWinner says why no ranked row is named first, or "" when the first one is: a winner needs
// a figure from the traffic that sets it apart. None exists when no ranked row saves a whole
// point of today's prefill after the warm-up (today's routing already serves every prompt token
// from cache, one request whose prefix nothing held, traffic without reuse: the rule would then
// name a router by its requirements alone, at 0%), or when two or more are ranked and every one
// has exactly the same figures (the same prefill saved and hit rate: the traffic does not
// separate them).
func noWinner(rk *Ranking) string {
	var ranked []Row
	for _, r := range rk.Rows {
		if r.Rank > 0 {
			ranked = append(ranked, r)
		}
	}
	if len(ranked) == 0 {
		return ""
	}
	best := ranked[0]
	for _, r := range ranked[1:] {
		if r.PrefillSaved > best.PrefillSaved {
			best = r
		}
	}
	switch {
	case rk.TodayHitRate >= 1:
		return fmt.Sprintf("today's %s serves every prompt token after the warm-up from cache: there is nothing for a router to save on this traffic, so none is named first", rk.Today)
	case points(best.PrefillSaved) <= 0:
		return fmt.Sprintf("no router saves a whole point of today's prefill (%s) after the warm-up (the most is %s at %+.1f%%): on this traffic today's routing does as well as any, so none is named first",
			rk.Today, best.Name(), 100*best.PrefillSaved)
	}
	if len(ranked) < 2 {
		return ""
	}
	same := true
	for _, r := range ranked[1:] {
		if r.PrefillSaved != ranked[0].PrefillSaved || r.HitRate != ranked[0].HitRate {
			same = false
		}
	}
	if same {
		return fmt.Sprintf("the traffic does not separate the %d ranked routers: each saves %.1f%% of today's prefill (%s) after the warm-up with a hit rate of %.1f%%, so none is named first; their order comes from requirements and simplicity alone",
			len(ranked), 100*ranked[0].PrefillSaved, rk.Today, 100*ranked[0].HitRate)
	}
	// The first and the next tie on everything the rule weighs: only the name would pick one.
	var tied []string
	for _, r := range ranked {
		if !tiesOnRule(r, ranked[0]) {
			break
		}
		tied = append(tied, r.Name())
	}
	if len(tied) < 2 {
		return ""
	}
	f := ranked[0]
	return fmt.Sprintf("%s tie on everything the rule weighs (%d requirement(s) missing, %d points of today's prefill saved, %d requirement(s), all %s): only their names differ, so none is named first",
		strings.Join(tied, ", "), f.Missing(), points(f.PrefillSaved), len(f.Requirements), f.Variant)
}

// tiesOnRule reports whether two ranked rows are equal on every count of the rule but the name.
func tiesOnRule(a, b Row) bool {
	return a.Missing() == b.Missing() && points(a.PrefillSaved) == points(b.PrefillSaved) &&
		len(a.Requirements) == len(b.Requirements) && variantOrder[a.Variant] == variantOrder[b.Variant]
}

func steadyHit(r sim.Result) float64 {
	if r.SteadyInputTokens == 0 {
		return 0
	}
	return float64(r.SteadyHitTokens) / float64(r.SteadyInputTokens)
}

// points is prefill saved in whole points, the figure the rule compares.
func points(saved float64) int { return int(math.Round(saved * 100)) }

var variantOrder = map[string]int{Shipped: 0, Configured: 1, Tuned: 2}

// compare is the rule's order between two ranked rows.
func compare(a, b Row) int {
	return cmp.Or(
		cmp.Compare(a.Missing(), b.Missing()),
		cmp.Compare(points(b.PrefillSaved), points(a.PrefillSaved)),
		cmp.Compare(len(a.Requirements), len(b.Requirements)),
		cmp.Compare(variantOrder[a.Variant], variantOrder[b.Variant]),
		strings.Compare(a.Policy, b.Policy),
		strings.Compare(a.Label, b.Label),
	)
}

// order sorts the rows by the rule and numbers the ranked ones.
func order(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		if (a.Excluded == "") != (b.Excluded == "") {
			if a.Excluded == "" {
				return -1
			}
			return 1
		}
		if a.Excluded != "" {
			return cmp.Or(cmp.Compare(points(b.PrefillSaved), points(a.PrefillSaved)), strings.Compare(a.Policy, b.Policy))
		}
		return compare(a, b)
	})
	for i := range rows {
		if rows[i].Excluded == "" {
			rows[i].Rank = i + 1
		}
	}
}

// Name is a row's name in sentences: the policy and its variant.
func (r Row) Name() string {
	s := r.Policy + " (" + r.Variant
	if r.Label != "" {
		s += ", " + r.Label
	}
	return s + ")"
}

// why explains the first row's place against the second and against the rows left out.
func why(rk *Ranking) []string {
	if len(rk.Rows) == 0 || rk.Rows[0].Rank != 1 {
		return nil
	}
	first := rk.Rows[0]
	var out []string
	out = append(out, fmt.Sprintf("%s saves %.1f%% of today's prefill (%s) after the warm-up, with load max/mean %.2f and TTFT p99 %s",
		first.Name(), 100*first.PrefillSaved, rk.Today, first.LoadMaxOverMean, seconds(first.TTFTP99)))
	if len(rk.Rows) > 1 && rk.Rows[1].Rank == 2 {
		second := rk.Rows[1]
		switch {
		case first.Missing() < second.Missing():
			out = append(out, fmt.Sprintf("ahead of %s, which saves %.1f%%, because the files show %d of that one's requirements missing and %d of this one's",
				second.Name(), 100*second.PrefillSaved, second.Missing(), first.Missing()))
		case points(first.PrefillSaved) > points(second.PrefillSaved):
			out = append(out, fmt.Sprintf("ahead of %s by %d point(s) of prefill saved (%.1f%%)",
				second.Name(), points(first.PrefillSaved)-points(second.PrefillSaved), 100*second.PrefillSaved))
		case len(first.Requirements) < len(second.Requirements):
			out = append(out, fmt.Sprintf("ties with %s at %d points and needs less (%d requirement(s) against %d)",
				second.Name(), points(first.PrefillSaved), len(first.Requirements), len(second.Requirements)))
		case variantOrder[first.Variant] < variantOrder[second.Variant]:
			out = append(out, fmt.Sprintf("ties with %s at %d points and changes fewer settings (%s before %s)",
				second.Name(), points(first.PrefillSaved), first.Variant, second.Variant))
		}
		// A tie the name alone would break names no first (noWinner).
	}
	for _, r := range rk.Rows[1:] {
		if r.Rank > 0 && r.Missing() > first.Missing() && points(r.PrefillSaved) > points(first.PrefillSaved) {
			out = append(out, fmt.Sprintf("%s saves more (%.1f%%) but the files show %d of its requirements missing", r.Name(), 100*r.PrefillSaved, r.Missing()))
		}
	}
	for _, r := range rk.Rows {
		if r.Excluded != "" && points(r.PrefillSaved) > points(first.PrefillSaved) {
			out = append(out, fmt.Sprintf("%s saves more (%.1f%%) but is not ranked: %s", r.Name(), 100*r.PrefillSaved, r.Excluded))
		}
	}
	if n := first.Missing(); n > 0 {
		out = append(out, fmt.Sprintf("the files show %d of its own requirements missing: meet them before it can run as replayed", n))
	}
	return out
}

func seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", 1000*s)
	}
	return fmt.Sprintf("%.2f s", s)
}

// policy is the policy named: an emulation run with settings of its product (as shipped when
// nil), or an idealised policy.
func policy(name string, settings product.Settings) (sim.PolicyInfo, error) {
	if info, ok := router.Emulation(name, settings); ok {
		return info, nil
	}
	for _, p := range sim.Policies() {
		if p.Name == name {
			return p, nil
		}
	}
	return sim.PolicyInfo{}, fmt.Errorf("unknown policy %q", name)
}
