package sim

import (
	"fmt"
	"math"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// BestMargin is how close, in prefill saved, two policies must be to count as equally good at
// caching; the lower TTFT p99 then decides.
const BestMargin = 0.005

// HotSpotRatio is the load max/mean from which an imbalance can be a hot spot (HotSpot says
// when it is one), and the factor by which the service model's load may be off: a replica
// whose requests find it busy 1/HotSpotRatio of the time at the modelled load is saturated at
// HotSpotRatio times that load.
const HotSpotRatio = 2.0

// Load is what the hot-spot rule reads of one replay: the imbalance, the evenest imbalance the
// requests allow, and how busy the busiest replica was.
type Load struct {
	// MaxOverMean is the load max/mean of the requests routed (Result.LoadMaxOverMean).
	MaxOverMean float64
	// Even is the max/mean of the evenest spread of the same requests (EvenLoad); 0 when not
	// known.
	Even float64
	// HotWaited is the share of the busiest replica's requests that waited (Result.HotWaited).
	HotWaited float64
	// ArrivalsKnown is set when the arrival times are the traffic's own (not --rate's): only
	// then does the modelled busy time say anything about the real load.
	ArrivalsKnown bool
}

// LoadOf is the Load of a result on a trace.
func LoadOf(r Result, t *Trace) Load {
	return Load{MaxOverMean: r.LoadMaxOverMean, Even: EvenLoad(r.PerReplica), HotWaited: r.HotWaited, ArrivalsKnown: t != nil && !t.SyntheticArrivals}
}

// HotSpot is the hot-spot rule, the one simulate, assess and assess's ranking apply. An
// imbalance costs something only when it makes requests wait, so a replay makes a hot spot
// when all three hold:
//
//  1. load max/mean is at least ratio (HotSpotRatio);
//  2. it is above the evenest spread the requests allow (ceil(n/r) of n requests on the
//     busiest of r replicas: 3 requests on 4 replicas cannot do better than max/mean 1.33,
//     1 request than 4);
//  3. the busiest replica is busy enough for the imbalance to matter: at least 1/ratio of its
//     requests could not start their prefill on arrival in the service model (the prefill
//     engine busy, requests queued ahead, every slot taken), twins aside: a request that arrives
//     while the first of its siblings (or the same prompt sent again) computes that prompt
//     waits for that prefill, as it would on any replica that keeps them together, and is not
//     counted (fleet.twinWait). For random arrivals that share is
//     the replica's utilisation, so below it the replica stays under capacity even at ratio
//     times the modelled load. One conversation of sequential turns, each arriving after the
//     last one's answer, never waits, however many turns one replica takes. Where the arrival
//     times are made up (Load.ArrivalsKnown false: a request log replayed at --rate) the
//     modelled load is an assumption and 3 is not asked: the imbalance alone decides.
func (l Load) HotSpot(ratio float64) bool {
	return l.MaxOverMean >= ratio && l.MaxOverMean > l.Even*(1+1e-9) && (!l.ArrivalsKnown || l.HotWaited >= 1/ratio)
}

// Idle reports whether an imbalance of ratio or more is no hot spot only because its busiest
// replica was not busy enough (rule 3 of HotSpot): worth saying, since the same routing is a
// hot spot at a higher load.
func (l Load) Idle(ratio float64) bool {
	return l.MaxOverMean >= ratio && l.MaxOverMean > l.Even*(1+1e-9) && !l.HotSpot(ratio)
}

// HotSpotRule states HotSpot in one line, for --help, the ranking rule and the reasons.
func HotSpotRule(ratio float64) string {
	return fmt.Sprintf("load max/mean >= %.1f and above the evenest spread the requests allow, and, where the arrival times are the traffic's own, at least %.0f%% of the busiest replica's requests waiting in the model", ratio, 100/ratio)
}

// WaitedPct writes a busiest replica's waited share (Load.HotWaited) as a whole percent cut
// down, never rounded up: an idle imbalance at 49.6% reads 49%, under the 50% line rule 3 of
// HotSpot draws, where rounding printed the line itself. Used where the share is under the line
// (idle-imbalance); a hot spot's share, at or above it, cannot round below it.
func WaitedPct(w float64) string {
	return fmt.Sprintf("%.0f%%", math.Floor(100*w+1e-6))
}

// EvenLoad is the load max/mean of the evenest spread of the requests over the replicas: the
// busiest replica holds at least ceil(n/r) of n requests, against a mean of n/r. 0 when no
// request was routed.
func EvenLoad(perReplica []int) float64 {
	n, r := 0, len(perReplica)
	for _, x := range perReplica {
		n += x
	}
	if n == 0 || r == 0 {
		return 0
	}
	return float64((n+r-1)/r) / (float64(n) / float64(r))
}

// StarveFraction is the share of its fair share 1/(replicas+1) under which an added replica is
// starved: with under half its share of the requests after it joined, it relieves the fleet at
// less than half the rate a scale-out is bought for, and a policy that does that is not the
// best, in simulate as in assess's ranking.
const StarveFraction = 0.5

// Starves reports whether an added replica's share of the requests after it joined (nil when no
// replica was added) is under StarveFraction of its fair share among replicas+1.
func Starves(fresh *float64, replicas int) bool {
	return StarvesAt(fresh, 1/float64(replicas+1))
}

// StarvesAt is Starves for a fair share already known (assess's ranking keeps it on its rows).
func StarvesAt(fresh *float64, fair float64) bool {
	return fresh != nil && fair > 0 && *fresh < StarveFraction*fair
}

// OverloadedTTFT is the round-robin TTFT p99, in seconds, above which the modelled fleet is
// overloaded: requests queue for minutes whatever the routing, the policies' figures describe a
// queue rather than a cache, and the fleet's size (or the trace's rate) is wrong for the model.
const OverloadedTTFT = 60.0

// Fleet is one point of a sweep: the results of every policy on the same fleet, and which won.
type Fleet struct {
	Replicas int
	KVBlocks int
	// Results for this fleet, in policy order.
	Results []Result
	// Best is, among the policies without a hot spot that do not starve an added replica
	// (Starves), the one with the lowest TTFT p99 of those
	// within BestMargin of the most prefill saved (ties: policy order); empty when every
	// policy makes a hot spot.
	Best string
	// Baseline is the baseline policy's result (round-robin).
	Baseline *Result
	// HotSpots lists the policies that made a hot spot (HotSpot).
	HotSpots []string
	// Overloaded is set when round-robin's TTFT p99 exceeds OverloadedTTFT.
	Overloaded bool
}

// Report is everything `kvcheck simulate` shows: the trace, the model, results and findings.
type Report struct {
	Trace    *Trace
	Stats    TraceStats
	Sweep    Sweep
	Fleets   []Fleet
	Findings []finding.Finding
}

// NewReport groups results by fleet, picks each fleet's winner and raises findings.
func NewReport(t *Trace, stats TraceStats, s Sweep, results []Result) Report {
	rep := Report{Trace: t, Stats: stats, Sweep: s, Findings: []finding.Finding{}}
	idx := map[[2]int]int{}
	for _, r := range results {
		k := [2]int{r.Replicas, r.KVBlocks}
		i, ok := idx[k]
		if !ok {
			i = len(rep.Fleets)
			idx[k] = i
			rep.Fleets = append(rep.Fleets, Fleet{Replicas: r.Replicas, KVBlocks: r.KVBlocks, HotSpots: []string{}})
		}
		rep.Fleets[i].Results = append(rep.Fleets[i].Results, r)
	}
	baseline := ""
	for _, p := range Policies() {
		if p.Baseline {
			baseline = p.Name
		}
	}
	for fi := range rep.Fleets {
		f := &rep.Fleets[fi]
		for ri := range f.Results {
			if f.Results[ri].Policy == baseline {
				f.Baseline = &f.Results[ri]
			}
		}
		var balanced []*Result
		for ri := range f.Results {
			r := &f.Results[ri]
			// Starvation is reported for hot-spot policies too: they are the ones most likely
			// to leave a fresh replica idle, and a reader filtering on the code must see them.
			load := LoadOf(*r, t)
			hot := load.HotSpot(HotSpotRatio) && r.Policy != baseline
			switch {
			case hot:
				f.HotSpots = append(f.HotSpots, r.Policy)
				rep.Findings = append(rep.Findings, finding.Finding{
					Severity: finding.Warning,
					Code:     "hot-spot",
					Subject:  fmt.Sprintf("%s@%dx%d", r.Policy, r.Replicas, r.KVBlocks),
					Message: fmt.Sprintf("%s sends %.0f%% of requests to one replica of %d (load max/mean %.2f)%s, TTFT p99 %.1f s against %.2f s with round-robin: affinity without a load bound melts one replica",
						r.Policy, 100*float64(maxInt(r.PerReplica))/float64(max(1, r.Requests)), len(r.PerReplica), r.LoadMaxOverMean, busyClause(load), r.TTFTP99, baseTTFT(f.Baseline)),
				})
			case load.Idle(HotSpotRatio) && r.Policy != baseline:
				rep.Findings = append(rep.Findings, finding.Finding{
					Severity: finding.Info,
					Code:     "idle-imbalance",
					Subject:  fmt.Sprintf("%s@%dx%d", r.Policy, r.Replicas, r.KVBlocks),
					Message: fmt.Sprintf("%s sends %.0f%% of requests to one replica of %d (load max/mean %.2f), but only %s of that replica's requests waited in the model: at this load the imbalance costs nothing, and it is no hot spot until %.0f%% of them wait",
						r.Policy, 100*float64(maxInt(r.PerReplica))/float64(max(1, r.Requests)), len(r.PerReplica), r.LoadMaxOverMean, WaitedPct(load.HotWaited), 100/HotSpotRatio),
				})
			}
			starved := Starves(r.FreshShare, r.Replicas)
			if starved {
				rep.Findings = append(rep.Findings, finding.Finding{
					Severity: finding.Warning,
					Code:     "starved-replica",
					Subject:  fmt.Sprintf("%s@%dx%d", r.Policy, r.Replicas, r.KVBlocks),
					Message: fmt.Sprintf("the replica added at %.0f s got %.1f%% of later requests under %s, under half its fair share %.1f%%: not a candidate for best",
						s.Base.AddReplicaAt, 100**r.FreshShare, r.Policy, 100/float64(r.Replicas+1)),
				})
			}
			if !hot && !starved {
				balanced = append(balanced, r)
			}
		}
		f.Best = pickBest(balanced)
		if b := f.Baseline; b != nil && b.TTFTP99 > OverloadedTTFT {
			rep.Findings = append(rep.Findings, finding.Finding{
				Severity: finding.Warning,
				Code:     "overloaded",
				Subject:  fmt.Sprintf("%dx%d", f.Replicas, f.KVBlocks),
				Message: fmt.Sprintf("the modelled fleet is overloaded: round-robin's TTFT p99 is %.0f s (over %.0f s), so requests queue whatever the routing and the figures describe a queue, not a cache; simulate the fleet's real size (--replicas) or check the trace's arrival rate",
					b.TTFTP99, OverloadedTTFT),
			})
			f.Overloaded = true
		}
	}
	if !t.PrefixInfo {
		rep.Findings = append(rep.Findings, finding.Finding{
			Severity: finding.Info,
			Code:     "no-prefix-info",
			Subject:  t.Name,
			Message:  "the trace has lengths only, so every prompt is treated as unique: no routing policy can hit, and only the load-balancing columns mean anything",
		})
	}
	return rep
}

// busyClause says how busy the hot replica was, where the model's load is the traffic's.
func busyClause(l Load) string {
	if !l.ArrivalsKnown {
		return " with arrival times made up (the imbalance alone decides)"
	}
	return fmt.Sprintf(" and %.0f%% of its requests waited", 100*l.HotWaited)
}

func baseTTFT(b *Result) float64 {
	if b == nil {
		return 0
	}
	return b.TTFTP99
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// pickBest returns the policy that saves the most prefill, preferring a lower TTFT p99 among
// those within BestMargin of the top.
func pickBest(rs []*Result) string {
	if len(rs) == 0 {
		return ""
	}
	top := rs[0].PrefillSaved
	for _, r := range rs {
		top = max(top, r.PrefillSaved)
	}
	var best *Result
	for _, r := range rs {
		if r.PrefillSaved >= top-BestMargin && (best == nil || r.TTFTP99 < best.TTFTP99) {
			best = r
		}
	}
	return best.Policy
}
