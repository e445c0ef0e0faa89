// Package rank is kvcheck assess's answer to "which router fits this cluster": every router
// emulation (internal/router) replayed on the traffic and fleet assess already replays, as it
// ships, as the user configured it (--config) and as kvcheck would tune it, ordered by one rule
// a reader can check by hand against the table, with what each router needs against what the
// given files show, and the configuration to apply for the one that comes first.
//
// The rule (Rule, with its numbers in Rules):
//
//  1. Not ranked: an emulation that cannot run on the traffic (a text-reading router on a
//     trace of block hashes), a row with a hot spot (sim.Load.HotSpot, the rule kvcheck
//     assess and simulate apply: load max/mean >= 2.0, above the evenest spread the requests
//     allow, with half the busiest replica's requests waiting in the model; for a router that
//     places requests by seeded draws, on its median seed's replay: SeedSpread), and, with
//     --add-replica-at, a row that starves the added replica (it gets less than half its fair
//     share 1/(replicas+1) of the requests after it joins): whatever such a router saves, it
//     is not an answer.
//  2. The rest: fewer requirements the files show missing first; then more prefill saved
//     against today's routing after the warm-up, in whole points (23.4% and 22.6% tie at 23);
//     then more requirements met (what is already in place counts for a row, what is missing
//     against it, what the files cannot show neither); then the user's own product (Stack);
//     then the smaller change: fewer requirements not met, then as shipped before as
//     configured before as tuned (the user's product as configured first); then the lower
//     TTFT p99, in whole milliseconds; then the evener load (load max/mean in hundredths);
//     then by name.
//  3. The first (chooseFirst): with a router verdict (Agree), a row of the verdict's family
//     with no more requirements missing than the first in rule 2's order, unless a KV-aware
//     row saves SessionMargin more than the best session router under a session-affinity
//     verdict (with no session router serving MinGain, more than the verdict's own session
//     affinity, AnswerGain); with none of the family, none (NoWinner, noneAnswering); of those, the user's own product when it serves within
//     StackMargin of the best; and never a row that concentrates requests (load max/mean >=
//     Concentration: a replica with twice its fair share, whether or not requests wait) while
//     a balanced row is within BalancedMargin whole points. Further down, a concentrating row
//     never comes before a balanced row within BalancedMargin of it.
//  4. A first needs a figure from the traffic that sets it apart, unless the verdict is a
//     router (which always names one): none is named when no ranked row saves a whole point,
//     when every ranked row saves exactly the same, or when the first two tie on every count
//     above but the name (Ranking.NoWinner says which).
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

// Rule states the ranking rule in one paragraph, for the text and the JSON; Rules.Describe
// gives its numbers.
const Rule = "not ranked: cannot run on this traffic, a hot spot (%s; a router placing requests by seeded draws by the median of %d seeds), an added replica given under half its fair share; " +
	"the rest by fewest requirements missing, most prefill saved against today after the warm-up (whole points), most requirements met, " +
	"the product you run, fewest requirements not met, shipped before configured before tuned (yours as configured first), lower TTFT p99, evener load, name; " +
	"first: a router of the verdict's family (a KV-aware one over a session router only when it serves the session margin more), none of another kind when none of the family serves the min gain, " +
	"the product you run when within the stack margin of the best, never a row concentrating requests while a balanced one is within the balanced margin; " +
	"without a router verdict none is first when no ranked row saves a whole point, all save the same, or the first two tie but for the name"

// Rules are the ranking rule's numbers, each a named default (DefaultRules), shown by kvcheck
// assess --help (Describe), in the JSON (ranking.rules) and in the README.
type Rules struct {
	// Concentration is the load max/mean from which a row concentrates requests: its busiest
	// replica takes Concentration times its fair share 1/replicas of them (above the evenest
	// spread the requests allow). It is the hot-spot ratio without asking whether requests
	// wait: at the replay's load nothing may wait, but a surge lands on one replica.
	Concentration float64
	// BalancedMargin, in whole points of today's prefill saved: a concentrating row is never
	// first, nor ahead of a balanced row, while that balanced row saves within this many points
	// of it.
	BalancedMargin int
	// StackMargin, in points of all prompt tokens after the warm-up (a difference of hit
	// rates): the user's own product comes first when it serves within this of the best row; a
	// change of product must bring at least this much, the gain a router must bring to be worth
	// deploying (assess sets it to --min-gain).
	StackMargin float64
	// SessionMargin, in the same points: under a session-affinity verdict a KV-aware row comes
	// first only when it serves this much more than the best session router, the margin the
	// verdict asks of the dearer option (--min-gain).
	SessionMargin float64
	// MinGain, in the same points: a row stands for a router verdict only when it serves this
	// much more than today's routing, the gain the verdict asks (--min-gain); a router of the
	// verdict's kind that saves less (LiteLLM's session affinity on traffic without the ids it
	// keys on) is not named for it.
	MinGain float64
}

// The rules' defaults.
const (
	// ConcentrationRatio is sim.HotSpotRatio's 2.0.
	ConcentrationRatio = 2.0
	// BalancedMargin is one whole point.
	BalancedMargin = 1
	// DefaultStackMargin and DefaultSessionMargin are the verdict's default min gain, 5 points.
	DefaultStackMargin   = 0.05
	DefaultSessionMargin = 0.05
	DefaultMinGain       = 0.05
)

// DefaultRules returns the rule's documented numbers.
func DefaultRules() Rules {
	return Rules{Concentration: ConcentrationRatio, BalancedMargin: BalancedMargin, StackMargin: DefaultStackMargin, SessionMargin: DefaultSessionMargin, MinGain: DefaultMinGain}
}

// orDefault fills the numbers left zero with their defaults.
func (r Rules) orDefault() Rules {
	d := DefaultRules()
	if r.Concentration == 0 {
		r.Concentration = d.Concentration
	}
	if r.BalancedMargin == 0 {
		r.BalancedMargin = d.BalancedMargin
	}
	if r.StackMargin == 0 {
		r.StackMargin = d.StackMargin
	}
	if r.SessionMargin == 0 {
		r.SessionMargin = d.SessionMargin
	}
	if r.MinGain == 0 {
		r.MinGain = d.MinGain
	}
	return r
}

// Describe lists the rule's numbers for --help.
func (r Rules) Describe() string {
	r = r.orDefault()
	return fmt.Sprintf(`  concentrates    load max/mean >= %.1f (a replica with %.0fx its fair share of the requests),
                  whether or not requests wait: never first while a balanced row saves within
                  %d point(s) of it
  requirements    met ones count for a row, missing ones against it, unknown ones neither
  your stack      the product you run (--today) first when it serves within %.0f points of all
                  prompt tokens of the best (a change of product must bring the min gain)
  session margin  under a session-affinity verdict a KV-aware router comes first only when it
                  serves %.0f points more than the best session router (with none that
                  serves the min gain, than the verdict's session affinity; else none is first)
  verdict's kind  with a router verdict the first is a router of its kind that serves %.0f
                  points more than today's routing (the min gain); a concentrating one only
                  when no balanced one of its kind saves within the balanced margin
  seeds           a router that places requests by seeded draws is replayed with %d seeds:
                  each figure the median, the hot spot read on the median seed's replay
`, r.Concentration, r.Concentration, r.BalancedMargin, r.StackMargin*100, r.SessionMargin*100, r.MinGain*100, Seeds)
}

// The families a row's router belongs to (Candidate.Family), as assess's verdict names them.
const (
	FamilySession = "session"
	FamilyKV      = "kv"
	FamilyBalance = "balance"
)

// The answers Agree takes: the verdict's family, AnswerNone when the verdict names no router
// (nothing, cannot tell yet), AnswerUnset for a ranking no verdict was set against.
const (
	AnswerUnset = ""
	AnswerNone  = "none"
)

// Stack is the router product the user runs today, and what showed it.
type Stack struct {
	Product string
	// From says what showed it: "--today litellm-simple-shuffle", a file and line.
	From string
}

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
	// Family is what the router is to the verdict: FamilySession, FamilyKV or FamilyBalance
	// (assess sets it); "" when not known, which no verdict's family matches.
	Family string
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
	// Concentrates: load max/mean at or above Rules.Concentration, above the evenest spread
	// the requests allow, whether or not requests wait (rule 3).
	Concentrates bool
	// Seeds, for a router that places requests by a seeded draw (sim.PolicyInfo.Draws), says
	// over which seeds the row was judged and how far its figures spread; nil for a router
	// replayed once.
	Seeds *SeedSpread
}

// Seeds is how many seeds a row whose router places requests by a seeded draw
// (sim.PolicyInfo.Draws: random, a shuffle, power of two, a session's first replica, a seeded
// hash ring) is replayed with: the base seed and the Seeds-1 after it, fixed, so that a run is
// deterministic. One replay is one draw of the placements: on testdata/assess/chat_sessions.jsonl
// (30 conversations drawn onto 8 replicas) seed 1 puts 44 of 120 requests on one replica, load
// max/mean 2.93, while a replica drawing 8 of the 30 conversations (max/mean 2.13) happens about
// one seed in five. Five replays make the median stand for what the router usually does: it
// takes three unlucky seeds of five to decide a row, at a chance of about 0.06 where one seed
// has 0.2. The rows whose routers do not draw are replayed once, as the seed only breaks their
// exact ties.
const Seeds = 5

// SeedSampleRefs bounds the block references the extra seeds replay: a traffic of more is
// judged over the seeds on its first requests up to that many (SeedSpread.Sample), which keeps
// the extra replays to a fixed cost, about 1/7 of a replay of the 449 MB request log of
// BENCHMARKS.md for each seed, instead of four more replays of the whole.
const SeedSampleRefs = 1 << 20

// SeedSpread is how a row judged over several seeds spread. On the whole traffic (Sample 0)
// the row's figures are the seeds' medians, each its own (HitRate, PrefillSaved, the TTFTs,
// the added replica's share), and its load is the median seed's replay: the one in the middle
// when the replays are sorted hot spots last (sim.Load.HotSpot), each group by load max/mean.
// The hot-spot rule reads that replay, which with an odd number of seeds is a hot spot exactly
// when most seeds' replays are: a majority vote whose reason quotes one replay, all its figures
// the same run's. On a sample
// (a traffic over SeedSampleRefs block references) the row's figures and its judgement stay the
// base seed's replay of the whole traffic, and the spread is the seeds' on the sample: many
// draws make one seed stand for the rest, and the spread shows whether it does.
type SeedSpread struct {
	// Seeds are the seeds replayed, in order; Median the one whose load the row has (on the
	// whole traffic).
	Seeds  []uint64
	Median uint64
	// Sample is the number of first requests the seeds were replayed on; 0 for the whole
	// traffic.
	Sample int
	// The figures' least and greatest over the seeds (PrefillSaved's only on the whole
	// traffic, where today's replay is the one the row is compared with).
	HitMin, HitMax     float64
	SavedMin, SavedMax float64
	LoadMin, LoadMax   float64
	// HotSpots counts the seeds whose replay is a hot spot (sim.Load.HotSpot).
	HotSpots int
}

// Missing counts the requirements the files show missing.
func (r Row) Missing() int { return r.count(product.Missing) }

// Met counts the requirements the files or the traffic show met.
func (r Row) Met() int { return r.count(product.Met) }

// count counts the requirements of one status.
func (r Row) count(status string) int {
	n := 0
	for _, q := range r.Requirements {
		if q.Status == status {
			n++
		}
	}
	return n
}

// Unmet counts the requirements not shown met (missing or unknown): what deploying the row
// may still have to set up, the size of the change.
func (r Row) Unmet() int { return len(r.Requirements) - r.Met() }

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
	// Rules are the rule's numbers; Stack the product the user runs ("" when not known);
	// Answer the verdict's family the first row must agree with (Agree), AnswerNone when the
	// verdict names no router, AnswerUnset when no verdict was set against the ranking.
	Rules  Rules
	Stack  Stack
	Answer string
	// AnswerGain is what the option the verdict chose serves over today's routing, in points
	// of all prompt tokens after the warm-up (the verdict's replay; session affinity's best
	// policy under a session-affinity verdict): a KV-aware row comes first under that verdict,
	// when no session router stands for it, only by serving Rules.SessionMargin more than this.
	// Zero when not set.
	AnswerGain float64
	// FirstBy names the part of rule 3 that chose the first row over the one the order alone
	// puts first ("answer", "stack", "balanced"), with Displaced that row's name; empty when
	// the order alone chose it.
	FirstBy, Displaced string
	// Traffic says what the rows were replayed on when it is not the traffic as given: "the
	// traffic once fixed (...)" after a fix-first.
	Traffic string
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
	// Change, when the first row is another product than the one the user runs (Stack), is
	// the sentence of Why that says the change as such (productChange), and ChangeFrom the
	// display name of the product it replaces; both empty otherwise.
	Change, ChangeFrom string
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
	// Rules are the rule's numbers (DefaultRules where zero); Stack the product the user runs.
	Rules Rules
	Stack Stack
	// Traffic says what the traffic replayed is when not the traffic as given (Ranking.Traffic).
	Traffic string
	// Progress, when set, is called as the replays finish.
	Progress func(done, total int)
	// Routes, when set, is given every replay's routes once all have run (assess --routes):
	// today's routing first (variant today, labelled TodayFrom), then each candidate in the
	// order given (its Variant and Label); one that cannot run gives none.
	Routes sim.RouteWriter
}

// Run replays every candidate and today's routing on t and ranks them.
func Run(ctx context.Context, t *sim.Trace, s Setup, cands []Candidate) (*Ranking, error) {
	if s.HotSpot == 0 {
		s.HotSpot = sim.HotSpotRatio
	}
	rk := &Ranking{Today: s.Today, TodayFrom: s.TodayFrom, TodayNotes: slices.Clone(s.TodayNotes), Replicas: s.Base.Replicas, KVBlocks: s.Base.KVBlocks, BlockSize: t.BlockSize,
		AddReplicaAt: s.Base.AddReplicaAt, HotSpot: s.HotSpot, Rule: fmt.Sprintf(Rule, sim.HotSpotRule(s.HotSpot), Seeds), NotSimulated: s.NotSimulated,
		Rules: s.Rules.orDefault(), Stack: s.Stack, Traffic: s.Traffic}
	results := make([]sim.Result, len(cands)+1)
	errs := make([]error, len(cands)+1)
	infos := make([]sim.PolicyInfo, len(cands)+1)
	infoErrs := make([]error, len(cands)+1)
	for k := range infos {
		name, settings := s.Today, s.TodayRouters
		if k > 0 {
			name, settings = cands[k-1].Policy, cands[k-1].Settings
		}
		infos[k], infoErrs[k] = policy(name, settings)
	}
	// The rows whose routers draw are replayed again on the other seeds (seedReplays): on the
	// whole traffic, or on its first requests when it is large.
	seeded, sample := seedReplays(t, s.Base.Seed)
	var head *sim.Trace
	if sample > 0 {
		head = t.Head(sample)
	}
	extra := make([][]sim.Result, len(cands)+1)
	extraErrs := make([][]error, len(cands)+1)
	var spool *sim.RouteSpool
	var runs []sim.RouteRun
	if s.Routes != nil {
		var err error
		if spool, err = sim.NewRouteSpool(t, s.Base); err != nil {
			return nil, err
		}
		defer spool.Close()
		runs = make([]sim.RouteRun, len(cands)+1)
	}
	// A replay is a row (k, 0 for today's routing) and, for the extra seeds, the index e into
	// seeded of the seed (-1: the row's replay of the whole traffic on the base seed). Each
	// replay's state goes when it ends; what stays is its Result.
	type replay struct{ k, e int }
	work := make(chan replay)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, total := 0, len(cands)+1
	var treeItems, otherItems []replay
	for k := 1; k <= len(cands); k++ {
		items := []replay{{k, -1}}
		if infoErrs[k] == nil && infos[k].Draws {
			extra[k], extraErrs[k] = make([]sim.Result, len(seeded)), make([]error, len(seeded))
			for e := range seeded {
				items = append(items, replay{k, e})
			}
		}
		total += len(items) - 1
		if infoErrs[k] == nil && infos[k].KeepsText {
			treeItems = append(treeItems, items...)
		} else {
			otherItems = append(otherItems, items...)
		}
	}
	// Routers that keep a tree of the text they routed replay one at a time: each may hold the
	// traffic's distinct text (Ray's as shipped never evicts), so two at once would hold it
	// twice. The other worker goes on with the rest meanwhile.
	trees := make(chan struct{}, 1)
	for range min(runtime.GOMAXPROCS(0), total) {
		wg.Go(func() {
			for it := range work {
				k, info := it.k, infos[it.k]
				c := s.Base
				if k > 0 && cands[k-1].Params != nil {
					c.Params = *cands[k-1].Params
				}
				tr := t
				if it.e >= 0 {
					c.Seed = seeded[it.e]
					if head != nil {
						tr, c.MeasureFromRequest = head, sample/2
					}
				}
				switch err := infoErrs[k]; {
				case err != nil:
					errs[k] = err
				default:
					if info.KeepsText {
						trees <- struct{}{}
					}
					switch {
					case it.e >= 0:
						extra[k][it.e], extraErrs[k][it.e] = sim.SimulatePolicy(ctx, tr, c, info)
					case spool != nil:
						results[k], runs[k], errs[k] = spool.Simulate(ctx, t, c, info, k)
					default:
						results[k], errs[k] = sim.SimulatePolicy(ctx, t, c, info)
					}
					if info.KeepsText {
						<-trees
					}
				}
				if s.Progress != nil {
					mu.Lock()
					done++
					s.Progress(done, total)
					mu.Unlock()
				}
			}
		})
	}
	// The tree routers are fed between the others, so that while one runs the other worker has
	// something else to replay.
	order := make([]replay, 0, total)
	for len(treeItems)+len(otherItems) > 0 {
		if len(treeItems) > 0 {
			order, treeItems = append(order, treeItems[0]), treeItems[1:]
		}
		for range 2 {
			if len(otherItems) > 0 {
				order, otherItems = append(order, otherItems[0]), otherItems[1:]
			}
		}
	}
feed:
	for _, it := range order {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	if ctx.Err() == nil {
		work <- replay{0, -1}
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
		for e, err := range extraErrs[i+1] {
			if err != nil {
				return nil, fmt.Errorf("%s (%s) on seed %d: %w", cd.Policy, cd.Variant, seeded[e], err)
			}
		}
		row := rowOf(cd, res, t, todayMiss)
		if extra[i+1] != nil {
			row = judgeSeeds(row, s.Base.Seed, seeded, extra[i+1], head, t, todayMiss, s.HotSpot)
		}
		if s.Base.AddReplicaAt >= 0 {
			row.FairShare = fair
		}
		rk.Rows = append(rk.Rows, row)
	}
	rk.settle()
	if s.Routes != nil {
		if err := writeRoutes(s, cands, runs, errs); err != nil {
			return nil, err
		}
	}
	return rk, nil
}

// seedReplays returns the seeds a row whose router draws is replayed on besides its replay of
// the whole traffic on the base seed, and the requests they replay: on a traffic of at most
// SeedSampleRefs block references, the Seeds-1 seeds after the base on the whole of it (sample
// 0); on a larger one, all Seeds seeds, the base too, on the first requests up to that many
// references (sample, at least one request), so that the spread compares replays of one sample.
func seedReplays(t *sim.Trace, base uint64) (seeds []uint64, sample int) {
	refs := 0
	for i := range t.Requests {
		refs += len(t.Requests[i].Blocks)
		if refs > SeedSampleRefs {
			sample = max(i, 1)
			break
		}
	}
	from, n := base+1, Seeds-1
	if sample > 0 {
		from, n = base, Seeds
	}
	for i := range n {
		seeds = append(seeds, from+uint64(i))
	}
	return seeds, sample
}

// rowOf is a candidate's row from one replay of the traffic.
func rowOf(cd Candidate, res sim.Result, t *sim.Trace, todayMiss int64) Row {
	row := Row{Candidate: cd, HitRate: steadyHit(res), LoadMaxOverMean: res.LoadMaxOverMean,
		TTFTP50: res.TTFTP50, TTFTP99: res.TTFTP99, FreshShare: res.FreshShare, load: sim.LoadOf(res, t)}
	if todayMiss > 0 {
		row.PrefillSaved = float64(todayMiss-(res.SteadyInputTokens-res.SteadyHitTokens)) / float64(todayMiss)
	}
	return row
}

// judgeSeeds judges row, the replay of the whole traffic on seed base (res), over the seeds'
// replays too (SeedSpread says how): on the whole traffic its figures become the seeds'
// medians and its load the median seed's; on a sample it keeps its own and gains the spread.
func judgeSeeds(row Row, base uint64, seeds []uint64, extra []sim.Result, head, t *sim.Trace, todayMiss int64, hotSpot float64) Row {
	var rows []Row
	sp := &SeedSpread{}
	on, miss := t, todayMiss
	if head != nil {
		// Today is not replayed on the sample: no prefill saved there.
		on, miss, sp.Sample = head, 0, len(head.Requests)
	} else {
		rows = append(rows, row)
		sp.Seeds = append(sp.Seeds, base)
	}
	for e, r := range extra {
		rows = append(rows, rowOf(row.Candidate, r, on, miss))
		sp.Seeds = append(sp.Seeds, seeds[e])
	}
	sp.HitMin, sp.HitMax = spread(rows, func(r Row) float64 { return r.HitRate })
	sp.LoadMin, sp.LoadMax = spread(rows, func(r Row) float64 { return r.LoadMaxOverMean })
	for _, r := range rows {
		if r.load.HotSpot(hotSpot) {
			sp.HotSpots++
		}
	}
	row.Seeds = sp
	if head != nil {
		return row
	}
	sp.SavedMin, sp.SavedMax = spread(rows, func(r Row) float64 { return r.PrefillSaved })
	m := medianReplay(rows, hotSpot)
	sp.Median = sp.Seeds[m]
	out := rows[m]
	out.Seeds = sp
	out.HitRate = median(rows, func(r Row) float64 { return r.HitRate })
	out.PrefillSaved = median(rows, func(r Row) float64 { return r.PrefillSaved })
	out.TTFTP50 = median(rows, func(r Row) float64 { return r.TTFTP50 })
	out.TTFTP99 = median(rows, func(r Row) float64 { return r.TTFTP99 })
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.FreshShare == nil }) {
		f := median(rows, func(r Row) float64 { return *r.FreshShare })
		out.FreshShare = &f
	}
	return out
}

// medianReplay is the index of the median seed's replay among rows: the middle one with hot
// spots (sim.Load.HotSpot) after the others, each group by load max/mean, so that with an odd
// number of rows it is a hot spot exactly when most are. By max/mean alone it was not: a
// replay at or over the ratio whose busiest replica was not busy enough (HotSpot's third rule)
// sorted among the hot ones, so the middle one could be no hot spot on 3 hot seeds of 5, or
// one on 1.
func medianReplay(rows []Row, hotSpot float64) int {
	byLoad := make([]int, len(rows))
	for i := range byLoad {
		byLoad[i] = i
	}
	slices.SortStableFunc(byLoad, func(a, b int) int {
		ha, hb := rows[a].load.HotSpot(hotSpot), rows[b].load.HotSpot(hotSpot)
		switch {
		case ha && !hb:
			return 1
		case hb && !ha:
			return -1
		}
		return cmp.Compare(rows[a].LoadMaxOverMean, rows[b].LoadMaxOverMean)
	})
	return byLoad[len(byLoad)/2]
}

// spread is the least and greatest of a figure over rows.
func spread(rows []Row, f func(Row) float64) (lo, hi float64) {
	lo, hi = f(rows[0]), f(rows[0])
	for _, r := range rows[1:] {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return lo, hi
}

// median is a figure's median over rows (an odd number; with an even one the upper middle).
func median(rows []Row, f func(Row) float64) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// writeRoutes gives s.Routes the routes of today's replay and of every candidate's that ran.
func writeRoutes(s Setup, cands []Candidate, runs []sim.RouteRun, errs []error) error {
	runs[0].Variant, runs[0].Label = "today", s.TodayFrom
	if err := s.Routes.WriteRun(runs[0]); err != nil {
		return err
	}
	for i, cd := range cands {
		if errs[i+1] != nil {
			continue // cannot run: CannotRun says why
		}
		r := runs[i+1]
		r.Variant, r.Label = cd.Variant, cd.Label
		if err := s.Routes.WriteRun(r); err != nil {
			return err
		}
	}
	return nil
}

// Agree sets the verdict's answer the first row must agree with (rule 3) and settles the
// ranking again: the verdict's family (FamilySession, FamilyKV), or AnswerNone when the verdict
// names no router, which then gets no configuration to apply.
func (rk *Ranking) Agree(answer string) {
	rk.Answer = answer
	rk.settle()
}

// RouterAnswer reports whether the ranking was set against a verdict that names a router.
func (rk *Ranking) RouterAnswer() bool {
	return rk.Answer == FamilySession || rk.Answer == FamilyKV
}

// settle applies the rule to the rows' figures: which rows are not ranked and why, which
// concentrate requests, the order, the first, the ranks, why the first wins, and its
// configuration.
func (rk *Ranking) settle() {
	rk.Rules = rk.Rules.orDefault()
	for i := range rk.Rows {
		row := &rk.Rows[i]
		row.Rank, row.Excluded = 0, ""
		row.Starves = rk.AddReplicaAt >= 0 && sim.StarvesAt(row.FreshShare, row.FairShare)
		load := row.load
		load.MaxOverMean = row.LoadMaxOverMean
		row.Concentrates = load.MaxOverMean >= rk.Rules.Concentration && load.MaxOverMean > load.Even*(1+1e-9)
		switch {
		case load.HotSpot(rk.HotSpot):
			row.Excluded = fmt.Sprintf("hot spot: load max/mean %.2f >= %.1f", row.LoadMaxOverMean, rk.HotSpot)
			if load.ArrivalsKnown {
				row.Excluded += fmt.Sprintf(", %.0f%% of the busiest replica's requests waiting", 100*load.HotWaited)
			}
			if sp := row.Seeds; sp != nil && sp.Sample == 0 {
				row.Excluded += fmt.Sprintf(", on the median of %d seeds (seed %d; a hot spot on %d of the %d)", len(sp.Seeds), sp.Median, sp.HotSpots, len(sp.Seeds))
			}
		case row.Starves:
			row.Excluded = fmt.Sprintf("starves the added replica: %.1f%% of the requests after it joined, under half its fair share %.1f%%", 100**row.FreshShare, 100*row.FairShare)
		}
	}
	rk.order()
	rk.Why, rk.Snippet, rk.Change, rk.ChangeFrom = nil, nil, "", ""
	if rk.NoWinner = noWinner(rk); rk.NoWinner != "" {
		return
	}
	rk.Why = why(rk)
	if len(rk.Rows) > 0 && rk.Rows[0].Rank == 1 && rk.Answer != AnswerNone {
		rk.Snippet = SnippetFor(rk.Rows[0])
	}
}

// noWinner says why no ranked row is named first, or "" when the first one is: a winner needs
// a figure from the traffic that sets it apart. None exists when no ranked row saves a whole
// point of today's prefill after the warm-up (today's routing already serves every prompt token
// from cache, one request whose prefix nothing held, traffic without reuse: the rule would then
// name a router by its requirements alone, at 0%), or when two or more are ranked and every one
// has exactly the same figures (the same prefill saved and hit rate: the traffic does not
// separate them), or when the first two tie on every count the rule weighs and are not one
// router under two settings. A verdict that names a router always gets one (rule 3): ties fall
// to the product the user runs and the smaller change, and a tie past them is said in Why.
func noWinner(rk *Ranking) string {
	var ranked []Row
	for _, r := range rk.Rows {
		if r.Rank > 0 {
			ranked = append(ranked, r)
		}
	}
	if len(ranked) == 0 || len(rk.answering(ranked)) > 0 {
		return ""
	}
	if rk.RouterAnswer() {
		return rk.noneAnswering(ranked)
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
	if rk.FirstBy != "" {
		return ""
	}
	var tied []string
	one := true
	for _, r := range ranked {
		if rk.compareFigures(r, ranked[0]) != 0 {
			break
		}
		tied = append(tied, r.Name())
		one = one && r.Policy == ranked[0].Policy
	}
	// One router under several shipped settings is still one router to name: Why says
	// either setting will do.
	if len(tied) < 2 || one {
		return ""
	}
	f := ranked[0]
	return fmt.Sprintf("%s tie on everything the rule weighs (%d requirement(s) missing, %d points of today's prefill saved, %d met, %d not met, all %s, TTFT p99 %s, load max/mean %.2f): only their names differ, so none is named first",
		strings.Join(tied, ", "), f.Missing(), points(f.PrefillSaved), f.Met(), f.Unmet(), f.Variant, seconds(f.TTFTP99), f.LoadMaxOverMean)
}

func steadyHit(r sim.Result) float64 {
	if r.SteadyInputTokens == 0 {
		return 0
	}
	return float64(r.SteadyHitTokens) / float64(r.SteadyInputTokens)
}

// points is prefill saved in whole points, the figure the rule compares.
func points(saved float64) int { return int(math.Round(saved * 100)) }

// millis is a TTFT in whole milliseconds, the figure the rule compares.
func millis(s float64) int64 { return int64(math.Round(s * 1000)) }

// variantOrder is the smaller change among the variants of one router: as shipped, then as
// configured, then tuned; for the product the user runs, as configured (what runs) first.
func (rk *Ranking) variantOrder(r Row) int {
	if r.Variant == Configured && rk.Stack.Product != "" && r.Product == rk.Stack.Product {
		return -1
	}
	return map[string]int{Shipped: 0, Configured: 1, Tuned: 2}[r.Variant]
}

// stackOrder is 0 for a row of the product the user runs, 1 for any other.
func (rk *Ranking) stackOrder(r Row) int {
	if rk.Stack.Product != "" && r.Product == rk.Stack.Product {
		return 0
	}
	return 1
}

// compareFigures is rule 2's order between two ranked rows, the name aside.
func (rk *Ranking) compareFigures(a, b Row) int {
	return cmp.Or(
		cmp.Compare(a.Missing(), b.Missing()),
		cmp.Compare(points(b.PrefillSaved), points(a.PrefillSaved)),
		cmp.Compare(b.Met(), a.Met()),
		cmp.Compare(rk.stackOrder(a), rk.stackOrder(b)),
		cmp.Compare(a.Unmet(), b.Unmet()),
		cmp.Compare(rk.variantOrder(a), rk.variantOrder(b)),
		cmp.Compare(millis(a.TTFTP99), millis(b.TTFTP99)),
		cmp.Compare(hundredths(a.LoadMaxOverMean), hundredths(b.LoadMaxOverMean)),
	)
}

// hundredths is a load max/mean as the table shows it, the figure the rule compares.
func hundredths(x float64) int64 { return int64(math.Round(x * 100)) }

// compare is rule 2's order between two ranked rows.
func (rk *Ranking) compare(a, b Row) int {
	return cmp.Or(rk.compareFigures(a, b), strings.Compare(a.Policy, b.Policy), strings.Compare(a.Label, b.Label))
}

// order sorts the rows by the rule, puts the first row rule 3 chooses first, keeps
// concentrating rows behind balanced ones within the margin, and numbers the ranked rows.
func (rk *Ranking) order() {
	rows := rk.Rows
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
		return rk.compare(a, b)
	})
	n := 0
	for n < len(rows) && rows[n].Excluded == "" {
		n++
	}
	rk.FirstBy, rk.Displaced = "", ""
	if n > 0 {
		rk.chooseFirst(rows[:n])
		rk.balance(rows[1:n])
	}
	for i := range rows {
		if rows[i].Excluded == "" {
			rows[i].Rank = i + 1
		}
	}
}

// chooseFirst applies rule 3 to the ranked rows in rule 2's order and moves the row it chooses
// first, recording which part chose it (FirstBy) and the row it displaced.
func (rk *Ranking) chooseFirst(rows []Row) {
	pool := make([]int, len(rows))
	for i := range pool {
		pool[i] = i
	}
	by := ""
	in := rk.answering(rows)
	if len(in) == 0 {
		if k := rk.kvOverSession(rows); k >= 0 {
			pool, by = []int{k}, "session-margin"
		}
	}
	if len(in) > 0 {
		lead := rows[0]
		keep := rk.Answer == FamilySession && lead.Family == FamilyKV && lead.HitRate-rows[in[0]].HitRate >= rk.Rules.SessionMargin-1e-9
		if !keep {
			pool = in
			if in[0] != 0 {
				by = "answer"
			}
		}
	}
	best := pool[0]
	if p := rk.Stack.Product; p != "" {
		for _, i := range pool {
			if rows[i].Product != p {
				continue
			}
			if i != best && rows[i].Missing() <= rows[best].Missing() && rows[best].HitRate-rows[i].HitRate < rk.Rules.StackMargin-1e-9 {
				best, by = i, "stack"
			}
			break
		}
	}
	if rows[best].Concentrates {
		for _, i := range pool {
			if !rows[i].Concentrates && rows[i].Missing() <= rows[best].Missing() && points(rows[i].PrefillSaved) >= points(rows[best].PrefillSaved)-rk.Rules.BalancedMargin {
				best, by = i, "balanced"
				break
			}
		}
	}
	if best == 0 {
		return
	}
	rk.FirstBy, rk.Displaced = by, rows[0].Name()
	moveTo(rows, best, 0)
}

// kvOverSession returns, under a session-affinity verdict no ranked session router stands for,
// the index of the best KV-aware row (rule 2's order) when it serves Rules.SessionMargin more
// than the session affinity the verdict chose (AnswerGain), else -1: the verdict and the first
// row then disagree unless the KV-aware row brings what the verdict asks of the dearer option.
func (rk *Ranking) kvOverSession(rows []Row) int {
	if rk.Answer != FamilySession {
		return -1
	}
	for i, r := range rows {
		if r.Family == FamilyKV && r.Missing() <= rows[0].Missing() {
			if r.HitRate-rk.TodayHitRate-rk.AnswerGain >= rk.Rules.SessionMargin-1e-9 {
				return i
			}
			return -1
		}
	}
	return -1
}

// noneAnswering says why no row is named first under a router verdict that no ranked row
// stands for (none of its kind serves the min gain over today's routing): a row of another
// kind first would contradict the verdict. Under a session-affinity verdict it gives the best
// KV-aware row's figures against the session margin; "" when that row clears it (it is then
// first: kvOverSession).
func (rk *Ranking) noneAnswering(ranked []Row) string {
	kind := map[string]string{FamilySession: "session affinity", FamilyKV: "a KV-aware router"}[rk.Answer]
	routers := map[string]string{FamilySession: "session router", FamilyKV: "KV-aware router"}[rk.Answer]
	text := fmt.Sprintf("the recommendation is %s and no %s ranked here serves the %.0f-point gain over today's %s on this traffic as it is (the recommendation says what holds each back)",
		kind, routers, 100*rk.Rules.MinGain, rk.Today)
	if rk.Answer == FamilySession {
		if rk.kvOverSession(ranked) >= 0 {
			return ""
		}
		for _, r := range ranked {
			if r.Family == FamilyKV {
				more := r.HitRate - rk.TodayHitRate - rk.AnswerGain
				text += fmt.Sprintf("; the best KV-aware row, %s, serves %+.1f points over today's, %.1f more than the session affinity the verdict chose (%+.1f), under the %.0f-point session margin a KV-aware router must bring to come first in its place",
					r.Name(), 100*(r.HitRate-rk.TodayHitRate), 100*more, 100*rk.AnswerGain, 100*rk.Rules.SessionMargin)
				break
			}
		}
	}
	return text + ", so none is named first: a router of another kind would contradict the verdict"
}

// answering returns the indexes of the ranked rows that stand for the verdict: of its kind,
// serving Rules.MinGain more than today's routing, with no more requirements missing than
// rows[0] (the fewest, in rule 2's order: a row that cannot run as replayed stands for nothing,
// vLLM Router's consistent_hash on chats without a session header sending every one to one
// worker, say); none without a router verdict.
func (rk *Ranking) answering(rows []Row) []int {
	if !rk.RouterAnswer() || len(rows) == 0 {
		return nil
	}
	var in []int
	for i := range rows {
		if rows[i].Family == rk.Answer && rows[i].HitRate-rk.TodayHitRate >= rk.Rules.MinGain-1e-9 && rows[i].Missing() <= rows[0].Missing() {
			in = append(in, i)
		}
	}
	return in
}

// Answering reports whether the first row stands for the router verdict the ranking was set
// against: ranked first, of the verdict's kind, serving the min gain over today's routing.
func (rk *Ranking) Answering() bool {
	if len(rk.Rows) == 0 || rk.Rows[0].Rank != 1 {
		return false
	}
	return len(rk.answering(rk.Rows[:1])) == 1
}

// balance keeps a concentrating row behind every balanced row that saves within the margin of
// it (and has no more requirements missing), the rest of rule 2's order kept.
func (rk *Ranking) balance(rows []Row) {
	for i := range rows {
		if !rows[i].Concentrates {
			continue
		}
		for j := i + 1; j < len(rows); j++ {
			if !rows[j].Concentrates && rows[j].Missing() <= rows[i].Missing() && points(rows[j].PrefillSaved) >= points(rows[i].PrefillSaved)-rk.Rules.BalancedMargin {
				moveTo(rows, j, i)
				break
			}
		}
	}
}

// moveTo moves rows[from] to index to (to < from), shifting the rows between down by one.
func moveTo(rows []Row, from, to int) {
	r := rows[from]
	copy(rows[to+1:from+1], rows[to:from])
	rows[to] = r
}

// Name is a row's name in sentences: the policy and its variant.
func (r Row) Name() string {
	s := r.Policy + " (" + r.Variant
	if r.Label != "" {
		s += ", " + r.Label
	}
	return s + ")"
}

// why explains the first row's place: the part of rule 3 that chose it, against the second,
// and against the rows that save more but are behind it.
func why(rk *Ranking) []string {
	if len(rk.Rows) == 0 || rk.Rows[0].Rank != 1 {
		return nil
	}
	first := rk.Rows[0]
	var out []string
	out = append(out, fmt.Sprintf("%s saves %.1f%% of today's prefill (%s) after the warm-up, with load max/mean %.2f and TTFT p99 %s",
		first.Name(), 100*first.PrefillSaved, rk.Today, first.LoadMaxOverMean, seconds(first.TTFTP99)))
	if c := rk.sessionMargin(first); c != "" {
		out = append(out, c)
	}
	if c := rk.productChange(first); c != "" {
		out = append(out, c)
		rk.Change, rk.ChangeFrom = c, displayOf(rk.Stack.Product)
	}
	var displaced *Row
	for i := range rk.Rows {
		if rk.Rows[i].Name() == rk.Displaced {
			displaced = &rk.Rows[i]
		}
	}
	if displaced != nil {
		d := *displaced
		switch rk.FirstBy {
		case "answer":
			what := map[string]string{FamilySession: "session affinity", FamilyKV: "a KV-aware router"}[rk.Answer]
			text := fmt.Sprintf("the recommendation is %s, and this is the first router of that kind; %s comes before it in the order alone (%.1f%%) but is not one", what, d.Name(), 100*d.PrefillSaved)
			if rk.Answer == FamilySession && d.Family == FamilyKV {
				text += fmt.Sprintf(", and serves %.1f points more, under the %.0f-point session margin", 100*(d.HitRate-first.HitRate), 100*rk.Rules.SessionMargin)
			}
			out = append(out, text)
		case "session-margin":
			out = append(out, fmt.Sprintf("%s comes before it in the order alone (%.1f%%)", d.Name(), 100*d.PrefillSaved))
		case "stack":
			out = append(out, fmt.Sprintf("%s is the product you run (%s): %s serves %.1f points more of all prompt tokens, under the %.0f-point stack margin a change of product must bring",
				displayOf(first.Product), rk.Stack.From, d.Name(), 100*(d.HitRate-first.HitRate), 100*rk.Rules.StackMargin))
		case "balanced":
			out = append(out, fmt.Sprintf("%s saves %.1f%% but concentrates requests (load max/mean %.2f >= %.1f: a surge lands on one replica, whether or not requests wait at this load); a balanced row within %d point(s) comes first",
				d.Name(), 100*d.PrefillSaved, d.LoadMaxOverMean, rk.Rules.Concentration, rk.Rules.BalancedMargin))
		}
	}
	if len(rk.Rows) > 1 && rk.Rows[1].Rank == 2 && (displaced == nil || rk.Rows[1].Name() != displaced.Name()) {
		second := rk.Rows[1]
		switch {
		case first.Missing() < second.Missing():
			out = append(out, fmt.Sprintf("ahead of %s, which saves %.1f%%, because the files show %d of that one's requirements missing and %d of this one's",
				second.Name(), 100*second.PrefillSaved, second.Missing(), first.Missing()))
		case points(first.PrefillSaved) > points(second.PrefillSaved):
			out = append(out, fmt.Sprintf("ahead of %s by %d point(s) of prefill saved (%.1f%%)",
				second.Name(), points(first.PrefillSaved)-points(second.PrefillSaved), 100*second.PrefillSaved))
		case first.Met() > second.Met():
			out = append(out, fmt.Sprintf("ties with %s at %d points and has more requirements met (%d requirement(s) met against %d)",
				second.Name(), points(first.PrefillSaved), first.Met(), second.Met()))
		case rk.stackOrder(first) < rk.stackOrder(second):
			out = append(out, fmt.Sprintf("ties with %s at %d points and is the product you run (%s)", second.Name(), points(first.PrefillSaved), rk.Stack.From))
		case first.Unmet() < second.Unmet():
			out = append(out, fmt.Sprintf("ties with %s at %d points and is the smaller change (%d requirement(s) not shown met against %d)",
				second.Name(), points(first.PrefillSaved), first.Unmet(), second.Unmet()))
		case rk.variantOrder(first) < rk.variantOrder(second):
			out = append(out, fmt.Sprintf("ties with %s at %d points and changes fewer settings (%s before %s)",
				second.Name(), points(first.PrefillSaved), first.Variant, second.Variant))
		case millis(first.TTFTP99) < millis(second.TTFTP99):
			out = append(out, fmt.Sprintf("ties with %s at %d points on everything else and has the lower TTFT p99 (%s against %s)",
				second.Name(), points(first.PrefillSaved), seconds(first.TTFTP99), seconds(second.TTFTP99)))
		case hundredths(first.LoadMaxOverMean) < hundredths(second.LoadMaxOverMean):
			out = append(out, fmt.Sprintf("ties with %s at %d points on everything else and spreads the requests more evenly (load max/mean %.2f against %.2f)",
				second.Name(), points(first.PrefillSaved), first.LoadMaxOverMean, second.LoadMaxOverMean))
		case rk.compareFigures(first, second) == 0 && first.Policy == second.Policy:
			out = append(out, fmt.Sprintf("the same router as %s with other settings, and the same figures: either will do; start from this one", second.Name()))
		case rk.compareFigures(first, second) == 0:
			out = append(out, fmt.Sprintf("ties with %s on every count the rule weighs; the recommendation needs one router, and this one comes first by name: either will do, start from this one", second.Name()))
		}
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
	if first.Concentrates {
		text := fmt.Sprintf("it concentrates requests itself (load max/mean %.2f): no balanced row", first.LoadMaxOverMean)
		if rk.FirstBy == "answer" || len(rk.answering(rk.Rows[:1])) == 1 {
			text += " of the recommendation's kind"
		}
		text += fmt.Sprintf(" saves within %d point(s) of it; watch its busiest replica's queue as traffic grows", rk.Rules.BalancedMargin)
		for _, r := range rk.Rows[1:] {
			if r.Rank > 0 && !r.Concentrates && r.Family != first.Family && points(r.PrefillSaved) >= points(first.PrefillSaved)-rk.Rules.BalancedMargin {
				text += fmt.Sprintf("; %s, of another kind, does (%.1f%%, load max/mean %.2f)", r.Name(), 100*r.PrefillSaved, r.LoadMaxOverMean)
				break
			}
		}
		out = append(out, text)
	}
	if n := first.Missing(); n > 0 {
		out = append(out, fmt.Sprintf("the files show %d of its own requirements missing: meet them before it can run as replayed", n))
	}
	return out
}

// sessionMargin says why a KV-aware first row stands under a session-affinity verdict: it serves
// Rules.SessionMargin more than the best session router ranked for the verdict, or, with none,
// than the session affinity the verdict chose (AnswerGain); "" otherwise.
func (rk *Ranking) sessionMargin(first Row) string {
	if rk.Answer != FamilySession || first.Family != FamilyKV {
		return ""
	}
	ranked := rk.Rows
	for i, r := range rk.Rows {
		if r.Rank == 0 {
			ranked = rk.Rows[:i]
			break
		}
	}
	if in := rk.answering(ranked); len(in) > 0 {
		s := ranked[in[0]]
		return fmt.Sprintf("the recommendation is session affinity; this KV-aware router serves %.1f points more of all prompt tokens than the best session router ranked, %s (%+.1f over today's), at or above the %.0f-point session margin, so it comes first",
			100*(first.HitRate-s.HitRate), s.Name(), 100*(s.HitRate-rk.TodayHitRate), 100*rk.Rules.SessionMargin)
	}
	return fmt.Sprintf("the recommendation is session affinity and no session router ranked here serves the %.0f-point gain; this KV-aware router serves %.1f points more of all prompt tokens than the session affinity the verdict chose (%+.1f over today's), at or above the %.0f-point session margin, so it comes first in its place",
		100*rk.Rules.MinGain, 100*(first.HitRate-rk.TodayHitRate-rk.AnswerGain), 100*rk.AnswerGain, 100*rk.Rules.SessionMargin)
}

// productChange says a change of product as such when the first row's product is not the one
// the user runs (Stack): from which product's routing to which router, and what it adds: each
// of its requirements the files do not show met, as its product says meeting it adds
// (product.AddsOf: its own component, KV-event plumbing from the engines, ...), and a tokenizer
// when the router tokenizes prompts itself (product.Tokenizing). "" when the stack is not known
// or the first row is of it.
func (rk *Ranking) productChange(first Row) string {
	if rk.Stack.Product == "" || first.Product == "" || first.Product == rk.Stack.Product {
		return ""
	}
	display := displayOf
	from := "its routing"
	switch {
	case rk.stackOf(rk.Today):
		from = rk.Today
	default:
		for _, r := range rk.Rows {
			if r.Product == rk.Stack.Product && r.Variant == Configured {
				from = r.Policy + " (as configured in " + r.Label + ")"
				break
			}
		}
	}
	var adds []string
	for _, q := range first.Requirements {
		if q.Status != product.Met {
			adds = append(adds, product.AddsOf(q))
		}
	}
	if p, ok := router.Lookup(first.Product); ok {
		if t, ok := p.(product.Tokenizing); ok {
			if s := t.Tokenizes(first.Policy); s != "" {
				adds = append(adds, s)
			}
		}
	}
	text := fmt.Sprintf("a change of product, from %s (you run it: %s) to %s: replace %s with %s", display(rk.Stack.Product), rk.Stack.From, display(first.Product), from, first.Policy)
	if len(adds) == 0 {
		return text + "; the files show everything it needs in place"
	}
	return text + "; it adds " + strings.Join(adds, ", ")
}

// displayOf is a product's display name, its id when the registry does not know it.
func displayOf(id string) string {
	if p, ok := router.Lookup(id); ok {
		return p.Name().Display
	}
	return id
}

// stackOf reports whether policy is an emulation of the product the user runs.
func (rk *Ranking) stackOf(policy string) bool {
	p, ok := router.Of(policy)
	return ok && p.Name().ID == rk.Stack.Product
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
