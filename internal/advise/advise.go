package advise

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Verdict is the recommendation.
type Verdict string

// The verdicts.
const (
	SessionAffinity Verdict = "session-affinity"
	KVAwareRouter   Verdict = "kv-aware-router"
	Nothing         Verdict = "nothing"
	FixFirst        Verdict = "fix-first"
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

// Thresholds are the decision's cut-offs. DefaultThresholds documents each.
type Thresholds struct {
	// MinGain: a routing policy must save at least this share of round-robin's prefill in the
	// simulation to be worth deploying; below it the verdict is nothing.
	MinGain float64
	// MinShareable: below this share of prompt tokens shareable (requests) or of block
	// references repeating (trace ceiling), there is no reuse for a router to find.
	MinShareable float64
	// SessionShare: session affinity is enough when it gets this share of the best policy's
	// simulated gain, or when this share of the reusable prefill is within sessions.
	SessionShare float64
	// MaxImbalance: a KV-aware policy whose load max/mean exceeds it has unacceptable balance.
	MaxImbalance float64
	// ThrashPreemptionsPer1k and ThrashKVUsage: at or above either, the fleet thrashes and its
	// hit rate may be re-prefill (fix first); WarnPreemptionsPer1k and WarnKVUsage only warn.
	ThrashPreemptionsPer1k, ThrashKVUsage float64
	WarnPreemptionsPer1k, WarnKVUsage     float64
	// DuplicatePrefill: a tap that saw at least this share of stored tokens prefilled again on
	// another replica supports a KV-aware router.
	DuplicatePrefill float64
}

// DefaultThresholds returns the documented defaults: MinGain 5% (a router is a component to run;
// llm-d saw all schedulers within 8% at low load), MinShareable 10%, SessionShare 80%,
// MaxImbalance 1.5, thrash at 50 preemptions per 1k requests or a KV cache 95% full (warning
// from 10 and 90%, hitrate's kv-pressure thresholds), DuplicatePrefill 20% (tap's warning).
func DefaultThresholds() Thresholds {
	return Thresholds{
		MinGain: 0.05, MinShareable: 0.10, SessionShare: 0.80, MaxImbalance: 1.5,
		ThrashPreemptionsPer1k: 50, ThrashKVUsage: 0.95,
		WarnPreemptionsPer1k: 10, WarnKVUsage: 0.90,
		DuplicatePrefill: 0.20,
	}
}

// Evidence is one measured figure, with the analysis and input it came from.
type Evidence struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	Input  string `json:"input"`
	What   string `json:"what"`
	Figure string `json:"figure"`
}

// Reason is one rule that applied, the evidence it used and how strong that evidence is.
type Reason struct {
	Rule     string  `json:"rule"`
	Verdict  Verdict `json:"verdict"`
	Strength Level   `json:"strength"`
	Text     string  `json:"text"`
	// Evidence are the IDs of the evidence lines used.
	Evidence []string `json:"evidence"`
	// Against is true for a measurement that contradicts the verdict; it lowers confidence.
	Against bool `json:"against,omitempty"`
}

// NextStep is a measurement that would settle what the evidence leaves open.
type NextStep struct {
	Measure string `json:"measure"`
	Settles string `json:"settles"`
}

// Recommendation is the result of Decide.
type Recommendation struct {
	Verdict    Verdict `json:"verdict"`
	Confidence Level   `json:"confidence"`
	// Then is, for FixFirst, what the evidence recommends once the fixes are made; empty when
	// the evidence does not say.
	Then      Verdict           `json:"then,omitempty"`
	Reasons   []Reason          `json:"reasons"`
	Evidence  []Evidence        `json:"evidence"`
	Fixes     []finding.Finding `json:"fixes"`
	NextSteps []NextStep        `json:"next_steps"`
	// Advice names the traps of the routers that implement the verdict (SPEC §6).
	Advice []string `json:"advice"`
}

// Severities lists the fixes' severities, for --fail-on.
func (r Recommendation) Severities() []finding.Severity {
	out := make([]finding.Severity, len(r.Fixes))
	for i, f := range r.Fixes {
		out[i] = f.Severity
	}
	return out
}

// Decide applies the rules in order: fix this first (every blocker that applies), then nothing,
// session affinity, and a KV-aware router. It is a pure function of its input.
func Decide(in Input, th Thresholds) Recommendation {
	d := &decision{in: in, th: th}
	d.rec = Recommendation{Reasons: []Reason{}, Evidence: []Evidence{}, Fixes: []finding.Finding{}, NextSteps: []NextStep{}, Advice: []string{}}
	d.collectEvidence()
	route, routeReasons, decided := d.route()
	blockers := d.citeKnown(d.fixFirst(route))
	slices.SortStableFunc(d.rec.Fixes, func(a, b finding.Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	if len(blockers) > 0 {
		d.rec.Verdict = FixFirst
		d.rec.Reasons = blockers
		if decided {
			d.rec.Then = route
			d.rec.Reasons = append(d.rec.Reasons, routeReasons...)
		}
		d.rec.Confidence = confidence(blockers)
	} else {
		d.rec.Verdict = route
		d.rec.Reasons = routeReasons
		d.rec.Confidence = confidence(routeReasons)
	}
	if d.rec.Verdict == FixFirst && !decided {
		route = ""
	}
	d.nextSteps(route)
	d.rec.Advice = advice(route, in)
	return d.rec
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
