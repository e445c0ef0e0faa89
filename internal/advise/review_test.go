package advise

import (
	"slices"
	"strings"
	"testing"
)

// TestDisagreementNeedsVolume: the metrics' hit rate is set against the replay only when it
// stands on the volume the metrics rule asks for (MinSteadyRequests, 21 at 5 points). Over 4
// requests one request weighs 25 points on average: metrics alone cannot say "nothing" on
// them, and by the same rule 70% over 4 requests against the replay's 30% says nothing about
// the replay either, so it is no reason against and the confidence stays high. Over 21
// requests the same 40 points are a reason against. Worked by hand from the rule; kvcheck had
// the 4-request window lower the confidence.
func TestDisagreementNeedsVolume(t *testing.T) {
	for _, c := range []struct {
		requests float64
		against  bool
		conf     Level
	}{
		{4, false, High},
		{20.6, false, High},
		{21, true, Medium},
	} {
		m := healthy(8)
		m.HitRate, m.Queries, m.Requests = ptr(0.70), ptr(c.requests*1000), ptr(c.requests)
		rec := Decide(Input{Metrics: m, Replay: replay(0.30, 10, false, pol("kv-load", 0.60, 1.07))}, DefaultThresholds())
		got := slices.ContainsFunc(rec.Reasons, func(r Reason) bool { return r.Rule == "replay-disagrees-with-metrics" })
		if rec.Verdict != KVAwareRouter || got != c.against || rec.Confidence != c.conf {
			t.Errorf("%.1f requests: verdict %s (%s), against %v; want kv-aware-router (%s), against %v", c.requests, rec.Verdict, rec.Confidence, got, c.conf, c.against)
		}
	}
}

// TestFractionalRequestsPrinted: a rate window's request count is an increase(), often not whole.
// 20.6 requests is under the 21 the metrics rule asks for; printed "%.0f" it read "over 21
// requests ... metrics decide from 21 requests", a reason that contradicts itself. The figure
// printed must be one a reader can set against the rule: 20.6, never rounded up to 21.
func TestFractionalRequestsPrinted(t *testing.T) {
	for _, c := range []struct {
		requests float64
		want     string
	}{
		{20.6, "20.6 requests"},
		{20.96, "20.9 requests"},
		{4, "4 requests"},
	} {
		m := healthy(4)
		m.HitRate, m.Queries, m.Requests = ptr(0.97), ptr(21_000.0), ptr(c.requests)
		rec := Decide(Input{Metrics: m}, DefaultThresholds())
		if rec.Verdict != Undetermined || len(rec.Reasons) == 0 || rec.Reasons[0].Rule != "too-little-traffic" {
			t.Fatalf("%v requests: verdict %s, reasons %+v; want cannot tell (too-little-traffic)", c.requests, rec.Verdict, rec.Reasons)
		}
		if !strings.Contains(rec.Reasons[0].Text, "over "+c.want) {
			t.Errorf("%v requests: reason %q does not say %q", c.requests, rec.Reasons[0].Text, "over "+c.want)
		}
		var vol string
		for _, e := range rec.Evidence {
			if e.ID == "hitrate.volume" {
				vol = e.Figure
			}
		}
		if !strings.Contains(vol, ", "+c.want) {
			t.Errorf("%v requests: hitrate.volume %q does not say %q", c.requests, vol, c.want)
		}
	}
}

// TestIdleImbalanceEvidenceUnderTheLine: the idle_imbalance evidence line names a policy whose
// busiest replica had under 50% of its requests waiting; 49.6% read "50% ... waited; a hot spot
// needs 50%". It is cut to 49%, as simulate's idle-imbalance note is.
func TestIdleImbalanceEvidenceUnderTheLine(t *testing.T) {
	p := pol("session", 0.5, 4)
	p.HotSpot, p.Idle, p.HotWaited = false, true, 0.496
	rec := Decide(Input{Replay: replay(0.30, 10, true, p)}, DefaultThresholds())
	var fig string
	for _, e := range rec.Evidence {
		if e.ID == "replay.idle_imbalance" {
			fig = e.Figure
		}
	}
	if !strings.Contains(fig, "49% of the busiest replica's requests waited; a hot spot needs 50%") {
		t.Errorf("replay.idle_imbalance %q", fig)
	}
}

// TestDisagreementAtTheLine: metrics at 35% against a replay of today's routing at 30% are 5.0
// points apart, exactly the threshold, which the rule counts (min gain or more). The reason
// said "5.0 points apart, more than the 5-point threshold"; it says "at or above".
func TestDisagreementAtTheLine(t *testing.T) {
	m := healthy(8)
	m.HitRate = ptr(0.35)
	rec := Decide(Input{Metrics: m, Replay: replay(0.30, 10, false, pol("kv-load", 0.60, 1.07))}, DefaultThresholds())
	i := slices.IndexFunc(rec.Reasons, func(r Reason) bool { return r.Rule == "replay-disagrees-with-metrics" })
	if i < 0 || !strings.Contains(rec.Reasons[i].Text, "5.0 points apart (at or above the 5-point threshold") {
		t.Errorf("reasons %+v", rec.Reasons)
	}
}

// TestLongerLogAsksForEnough: the warm-up is the first half of the requests by order, cut down
// (assess: len/2), so 41 requests leave 21 after it, the fewest a replay decides on; 40 leave
// 20. The next step asked for "at least 42 requests in all", one more than needed: a reader who
// gave 41 was told too little though kvcheck decided.
func TestLongerLogAsksForEnough(t *testing.T) {
	for _, c := range []struct {
		requests int
		decides  bool
	}{{40, false}, {41, true}} {
		r := replay(0.30, 10, false, pol("kv-load", 0.60, 1.07))
		r.Requests, r.WarmupRequests = c.requests, c.requests/2
		rec := Decide(Input{Replay: r}, DefaultThresholds())
		if got := rec.Verdict != Undetermined; got != c.decides {
			t.Errorf("%d requests: verdict %s, decides %v, want %v", c.requests, rec.Verdict, got, c.decides)
		}
		if c.decides {
			continue
		}
		if len(rec.NextSteps) == 0 || !strings.Contains(rec.NextSteps[0].Measure, "at least 41 requests in all, so that 21 or more come after the warm-up") {
			t.Errorf("%d requests: next steps %+v", c.requests, rec.NextSteps)
		}
	}
}

// TestTodayHotSpotMadeUpArrivals: where the arrival times are made up (a request log replayed
// at --rate), the hot-spot rule skips its third condition and the imbalance alone decides
// (sim.Load.HotSpot). The today-hot-spot reason still said "its busiest replica is busy enough
// for requests to wait there", a fact nothing measured; it says the imbalance decided.
func TestTodayHotSpotMadeUpArrivals(t *testing.T) {
	for _, synthetic := range []bool{false, true} {
		r := replay(0.30, 10, false, pol("kv-load", 0.60, 1.07))
		r.Policies[0].LoadMaxOverMean, r.Policies[0].HotSpot = 2.5, true
		r.SyntheticArrivals = synthetic
		rec := Decide(Input{Replay: r}, DefaultThresholds())
		i := slices.IndexFunc(rec.Reasons, func(x Reason) bool { return x.Rule == "today-hot-spot" })
		if i < 0 {
			t.Fatalf("synthetic %v: no today-hot-spot in %+v", synthetic, rec.Reasons)
		}
		text := rec.Reasons[i].Text
		busy := strings.Contains(text, "busy enough for requests to wait there")
		madeUp := strings.Contains(text, "the arrival times are made up")
		if busy == synthetic || madeUp != synthetic {
			t.Errorf("synthetic %v: %q", synthetic, text)
		}
	}
}
