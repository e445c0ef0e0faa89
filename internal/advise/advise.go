package advise

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Verdict is the recommendation.
type Verdict string

// The verdicts.
const (
	SessionAffinity Verdict = "session-affinity"
	KVAwareRouter   Verdict = "kv-aware-router"
	Nothing         Verdict = "nothing"
	FixFirst        Verdict = "fix-first"
	// Undetermined is "cannot tell yet": no evidence given can show reuse either way; the next
	// steps name the one measurement to add. It is not Nothing.
	Undetermined Verdict = "undetermined"
)

// Describe names the verdict for people.
func (v Verdict) Describe() string {
	switch v {
	case SessionAffinity:
		return "session affinity"
	case KVAwareRouter:
		return "a KV-aware router"
	case Nothing:
		return "nothing (prefix-aware routing would not pay)"
	case FixFirst:
		return "fix this first"
	case Undetermined:
		return "cannot tell yet"
	}
	return string(v)
}

// Level grades a reason's strength and the recommendation's confidence.
type Level string

// The levels.
const (
	Low    Level = "low"
	Medium Level = "medium"
	High   Level = "high"
)

func (l Level) rank() int { return slices.Index([]Level{Low, Medium, High}, l) }

func levelOf(rank int) Level { return []Level{Low, Medium, High}[max(0, min(2, rank))] }

// Thresholds are the decision's cut-offs, every one in this one place; DefaultThresholds
// documents each, and assess prints them in --help and in its JSON.
type Thresholds struct {
	// MinGain is the least saving, in points of all the fleet's prompt tokens after the
	// warm-up, that an option must bring over today's routing to be worth deploying, and that a
	// dearer option must bring over a cheaper one (nothing < session affinity < a KV-aware
	// router). A breaker that costs at least this much is fixed first; metrics alone decide
	// nothing unless the fleet's hit rate is within MinGain of 100%.
	MinGain float64
	// HotSpot is the load max/mean from which a policy can make a hot spot (sim.HotSpotRatio;
	// the rule is sim.Load.HotSpot): a hot spot is never recommended, whatever its hits.
	HotSpot float64
	// MinRequests is the traffic, in requests, below which a replay cannot give high
	// confidence.
	MinRequests int
	// ThrashPreemptionsPer1k and ThrashKVUsage: at or above either, the fleet thrashes and its
	// hit rate may be re-prefill (fix first); WarnPreemptionsPer1k and WarnKVUsage only warn.
	ThrashPreemptionsPer1k float64
	ThrashKVUsage          float64
	WarnPreemptionsPer1k   float64
	WarnKVUsage            float64
	// DuplicatePrefill: a tap that saw at least this share of stored tokens prefilled again on
	// another replica is named as evidence for a KV-aware router.
	DuplicatePrefill float64
}

// DefaultThresholds returns the documented defaults: MinGain 5 points of all prompt tokens (a
// router is a component to run; llm-d saw all schedulers within 8% at low load), HotSpot 2.0
// (simulate's hot-spot ratio), MinRequests 1000, thrash at 50 preemptions per 1k requests or a
// KV cache 95% full (warning from 10 and 90%, hitrate's kv-pressure thresholds),
// DuplicatePrefill 20% (tap's warning).
func DefaultThresholds() Thresholds {
	return Thresholds{
		MinGain: 0.05, HotSpot: sim.HotSpotRatio, MinRequests: 1000,
		ThrashPreemptionsPer1k: 50, ThrashKVUsage: 0.95,
		WarnPreemptionsPer1k: 10, WarnKVUsage: 0.90,
		DuplicatePrefill: 0.20,
	}
}

// Describe lists the thresholds for --help.
func (th Thresholds) Describe() string {
	return fmt.Sprintf(`  min gain        %.0f points of all prompt tokens (after warm-up) over today's routing, and
                  over the next cheaper option (--min-gain)
  hot spot        load max/mean >= %.1f, above the evenest spread the requests allow, with (when
                  the arrival times are the traffic's own) at least %.0f%% of the busiest
                  replica's requests waiting in the service model: never recommended. One long
                  conversation on one replica at light load never waits: no hot spot
  metrics alone   decide nothing unless the fleet hit rate is >= %.0f%% (100%% - min gain)
  traffic         a replay decides from %d requests after the warm-up, metrics alone from as
                  many in their window (more than 1/min gain: with fewer, one request weighs
                  at least min gain); fewer: cannot tell yet, and metrics that few are not
                  set against a replay
  confidence      high needs >= %d requests, exact tokens, a measured fleet and a margin of
                  half the min gain
  thrashing       >= %.0f preemptions per 1k requests or KV cache >= %.0f%% full (warning from
                  %.0f and %.0f%%)
  duplicated      >= %.0f%% of stored tokens prefilled again elsewhere (tap)
`, th.MinGain*100, th.HotSpot, 100/th.HotSpot, (1-th.MinGain)*100, th.MinSteadyRequests(), th.MinRequests, th.ThrashPreemptionsPer1k, th.ThrashKVUsage*100,
		th.WarnPreemptionsPer1k, th.WarnKVUsage*100, th.DuplicatePrefill*100)
}

// Evidence is one measured figure, with the analysis and input it came from.
type Evidence struct {
	ID     string
	Source string
	Input  string
	What   string
	Figure string
}

// Reason is one rule that applied, the evidence it used and how strong that evidence is.
type Reason struct {
	Rule     string
	Verdict  Verdict
	Strength Level
	// Text is written claim first: its first clause, up to a "; " outside parentheses, with
	// its parenthesised asides left out, is the reason in brief, which assess's text shows by
	// default (report's gist; the rest with --evidence all). Figures the claim rests on belong
	// in that clause, detail after the semicolon or in parentheses.
	Text string
	// Evidence are the IDs of the evidence lines used.
	Evidence []string
	// Against is true for a measurement that contradicts the verdict; it lowers confidence.
	Against bool
}

// NextStep is a measurement that would settle what the evidence leaves open.
type NextStep struct {
	Measure string
	Settles string
}

// Recommendation is the result of Decide.
type Recommendation struct {
	Verdict    Verdict
	Confidence Level
	// Then is, for FixFirst, what the evidence recommends once the fixes are made; empty when
	// the evidence does not say.
	Then Verdict
	// Router names the router to start from when the answer (Verdict, or Then after a
	// fix-first) is session affinity or a KV-aware router: the router ranking's first row
	// (assess sets it), "" without a ranking or without a ranked router of that kind.
	Router    string
	Reasons   []Reason
	Evidence  []Evidence
	Fixes     []finding.Finding
	NextSteps []NextStep
	// Advice names the traps of the routers that implement the verdict (SPEC §6).
	Advice []string
	// Thresholds are the cut-offs the decision used.
	Thresholds Thresholds
}

// Decide answers one question: on this fleet, with this traffic, what does each routing option
// save over what runs today? Fix this first comes before it when something blocks the cache
// whatever the router (prefix caching off, a thrashing fleet, a breaker that costs at least
// MinGain), and then says what the answer is once fixed: on the traffic as it would be (the
// Fixed replay) when the request audit found the divergence, else on the traffic as it is. It
// is a pure function of its input.
func Decide(in Input, th Thresholds) Recommendation {
	d := &decision{in: in, th: th}
	d.rec = Recommendation{Reasons: []Reason{}, Evidence: []Evidence{}, Fixes: []finding.Finding{}, NextSteps: []NextStep{}, Advice: []string{}, Thresholds: th}
	d.collectEvidence()
	d.configEvidence()
	now := d.route(in.Replay, "replay")
	then := now
	if in.Fixed != nil {
		then = d.route(in.Fixed, "fixed")
	}
	blockers := d.citeKnown(d.fixFirst(then.v))
	slices.SortStableFunc(d.rec.Fixes, func(a, b finding.Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	route := now.v
	if in.Fixed == nil && in.Replay != nil && slices.ContainsFunc(blockers, func(r Reason) bool { return r.Rule == "request-breaker" || r.Rule == "stream-breaker" }) {
		// The traffic replayed is the broken one and no fixed replay could be built: what it
		// says is not what routing pays once fixed.
		then = routing{Undetermined, []Reason{{Rule: "then-not-measured", Verdict: Undetermined, Strength: Low, Evidence: []string{},
			Text: "what routing pays once fixed cannot be measured here: the divergence could not be replaced by a constant automatically, and the traffic as it is shows the breaker, not the reuse behind it; fix it and run assess again"}}, Low}
	}
	if len(blockers) > 0 {
		d.rec.Verdict = FixFirst
		d.rec.Then = then.v
		d.rec.Reasons = append(blockers, then.reasons...)
		d.rec.Confidence = confidence(blockers)
		route = then.v
	} else {
		d.rec.Verdict = now.v
		d.rec.Reasons = now.reasons
		d.rec.Confidence = now.conf
		if c, ok := breakerCost(in.Replay, in.Fixed); ok {
			d.rec.Reasons = append(d.rec.Reasons, Reason{Rule: "breaker-cheap", Verdict: now.v, Strength: Low, Evidence: d.knownIDs("fixed.cost"),
				Text: fmt.Sprintf("the divergence the request audit found costs %s of all prompt tokens (the best option on the traffic once fixed against the best on the traffic as it is), under the %.0f-point threshold: worth fixing, not blocking", points(c), th.MinGain*100)})
		}
	}
	d.nextSteps(route)
	d.rec.Advice = advice(route, in, th, router.Products())
	return d.rec
}

// knownIDs keeps the evidence IDs that were recorded.
func (d *decision) knownIDs(ids ...string) []string {
	out := []string{}
	for _, id := range ids {
		if d.has(id) {
			out = append(out, id)
		}
	}
	return out
}

// confidence grades the reasons for a verdict: the strongest supporting reason, one level up
// when two analyses agree, one down when a measurement disagrees.
func confidence(rs []Reason) Level {
	best, sources, against := -1, map[string]bool{}, false
	for _, r := range rs {
		if r.Against {
			against = true
			continue
		}
		best = max(best, r.Strength.rank())
		for _, e := range r.Evidence {
			src, _, _ := strings.Cut(e, ".")
			sources[src] = true
		}
	}
	if best < 0 {
		return Low
	}
	if len(sources) >= 2 {
		best++
	}
	if against {
		best--
	}
	return levelOf(best)
}

type decision struct {
	in  Input
	th  Thresholds
	rec Recommendation
}

func (d *decision) evidence(id, source, input, what, format string, args ...any) string {
	d.rec.Evidence = append(d.rec.Evidence, Evidence{ID: id, Source: source, Input: input, What: what, Figure: fmt.Sprintf(format, args...)})
	return id
}

func (d *decision) fix(f finding.Finding) { d.rec.Fixes = append(d.rec.Fixes, f) }

func pct(v float64) string { return fmt.Sprintf("%.1f%%", v*100) }

func frac(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
