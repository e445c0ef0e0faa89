package sim

import (
	"fmt"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// BestMargin is how close, in prefill saved, two policies must be to count as equally good at
// caching; the lower TTFT p99 then decides.
const BestMargin = 0.005

// A policy makes a hot spot when its load max/mean reaches HotSpotRatio, whatever the modelled
// TTFT: the service model's load is an assumption (its constants only need to be plausible), so
// a policy that sends twice its share to one replica melts that replica at the real fleet's
// load even where the model shows no queue.
const HotSpotRatio = 2.0

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
	// Best is, among the policies without a hot spot, the one with the lowest TTFT p99 of those
	// within BestMargin of the most prefill saved (ties: policy order); empty when every
	// policy makes a hot spot.
	Best string
	// Baseline is the baseline policy's result (round-robin).
	Baseline *Result
	// HotSpots lists the policies that made a hot spot (see HotSpotRatio).
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
			hot := r.LoadMaxOverMean >= HotSpotRatio && r.Policy != baseline
			if hot {
				f.HotSpots = append(f.HotSpots, r.Policy)
				rep.Findings = append(rep.Findings, finding.Finding{
					Severity: finding.Warning,
					Code:     "hot-spot",
					Subject:  fmt.Sprintf("%s@%dx%d", r.Policy, r.Replicas, r.KVBlocks),
					Message: fmt.Sprintf("%s sends %.0f%% of requests to one replica of %d (load max/mean %.2f), TTFT p99 %.1f s against %.2f s with round-robin: affinity without a load bound melts one replica",
						r.Policy, 100*float64(maxInt(r.PerReplica))/float64(max(1, r.Requests)), len(r.PerReplica), r.LoadMaxOverMean, r.TTFTP99, baseTTFT(f.Baseline)),
				})
			}
			if r.FreshShare != nil && *r.FreshShare < 0.25/float64(r.Replicas+1) {
				rep.Findings = append(rep.Findings, finding.Finding{
					Severity: finding.Warning,
					Code:     "starved-replica",
					Subject:  fmt.Sprintf("%s@%dx%d", r.Policy, r.Replicas, r.KVBlocks),
					Message: fmt.Sprintf("the replica added at %.0f s got %.1f%% of later requests under %s, fair share %.1f%%",
						s.Base.AddReplicaAt, 100**r.FreshShare, r.Policy, 100/float64(r.Replicas+1)),
				})
			}
			if !hot {
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
