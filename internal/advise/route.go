package advise

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/units"
)

// routing is what one replay (or the metrics alone) says about routing: the verdict, the
// reasons for it and the confidence the evidence allows.
type routing struct {
	v       Verdict
	reasons []Reason
	conf    Level
}

// route answers the one question for the traffic replayed in rp (prefix names its evidence
// lines, "replay" or "fixed"): on this fleet, with this traffic, what does each option save over
// what runs today? The verdict is the cheapest option whose saving, in points of all prompt
// tokens after the warm-up, clears MinGain over today's routing and over every cheaper option,
// without a hot spot; otherwise nothing. Without traffic, only metrics can speak, and they
// rarely can (withoutTraffic).
func (d *decision) route(rp *Replay, prefix string) routing {
	if r, ok := d.singleReplica(rp, prefix); ok {
		return routing{Nothing, []Reason{r}, r.Strength}
	}
	if rp == nil {
		return d.withoutTraffic()
	}
	ev := func(ids ...string) []string {
		for i := range ids {
			ids[i] = prefix + "." + ids[i]
		}
		return ids
	}
	if !rp.PrefixInfo {
		return routing{Undetermined, []Reason{{Rule: "lengths-only", Verdict: Undetermined, Strength: Low, Evidence: ev("traffic"),
			Text: "the trace has prompt lengths only, no prefix content: it cannot show reuse either way, so no routing option can be judged on it (a lengths-only replay makes every prompt unique, which is not a finding about the traffic)"}}, Low}
	}
	th := d.th
	if n := rp.SteadyRequests(); n < th.MinSteadyRequests() {
		avg := "all"
		if n > 0 {
			avg = "on average " + pct(1/float64(n))
		}
		return routing{Undetermined, []Reason{{Rule: "too-little-traffic", Verdict: Undetermined, Strength: Low, Evidence: ev("traffic", "warmup"),
			Text: fmt.Sprintf("only %d requests come after the warm-up (the first %d of %d warm the caches up): each is %s of the prompt tokens the gains count, at least the %.0f-point threshold, so one request's placement could decide the answer; the replay decides from %d requests after the warm-up (1/min gain, and one more)",
				n, rp.WarmupRequests, rp.Requests, avg, th.MinGain*100, th.MinSteadyRequests())}}, Low}
	}
	today := rp.policy(rp.Today)
	if today == nil {
		return routing{Undetermined, []Reason{{Rule: "no-baseline", Verdict: Undetermined, Strength: Low, Evidence: ev("traffic"),
			Text: "today's routing (" + rp.Today + ") was not replayed, so no option can be compared with it"}}, Low}
	}
	gain := func(p *Policy) float64 {
		if p == nil {
			return math.Inf(-1)
		}
		return p.SteadyHitRate - today.SteadyHitRate
	}
	var sess *Policy
	if rp.SessionsKnown {
		sess = rp.best(FamilySession, today.Name)
	}
	kv := rp.best(FamilyKV, today.Name)
	sg, kg := gain(sess), gain(kv)
	// The cheaper option a KV-aware router must beat by the threshold is session affinity only
	// when session affinity itself pays; otherwise it is today's routing: a KV router saving
	// 7 points where session affinity would save 3 is worth deploying (issue 22: a router the
	// ranking put first at the threshold's gain was "nothing").
	sessionPays := sess != nil && sg >= th.MinGain
	cheaper := 0.0
	if sessionPays {
		cheaper = sg
	}
	var rs []Reason
	var v Verdict
	var margin float64
	shape := fmt.Sprintf("replayed on %s x %s tokens of KV", units.Plural(int64(rp.Replicas), "replica"), units.Count(rp.KVTokens))
	am := rp.Amortise(th.MinGain)
	switch {
	case am.WarmupOnly && max(kg, sg) >= th.MinGain:
		// A gain the warm-up model explains is cold misses a longer run amortises: not a gain.
		v, margin = Nothing, max(kg, sg)-th.MinGain
		best := kv
		if sess != nil && sg > kg {
			best = sess
		}
		rs = append(rs, Reason{Rule: "warm-up-amortises", Verdict: Nothing, Strength: Medium, Evidence: ev("today", "kv", "session", "amortise"),
			Text: fmt.Sprintf("%s, %s saves %s of all prefill after the warm-up over today's %s, but that is warm-up: %s", shape, best.Name, points(max(kg, sg)), today.Name, d.holds(rp, am))})
	case kv != nil && kg >= th.MinGain && kg-cheaper >= th.MinGain:
		v, margin = KVAwareRouter, min(kg, kg-cheaper)-th.MinGain
		text := fmt.Sprintf("%s, %s serves %s of prompt tokens from cache after the warm-up against %s with today's %s: %s of all prefill%s, above the %.0f-point threshold",
			shape, kv.Name, pct(kv.SteadyHitRate), pct(today.SteadyHitRate), today.Name, points(kg), d.rate(rp, kg), th.MinGain*100)
		switch {
		case sessionPays:
			text += fmt.Sprintf(", and %s more than the best session affinity (%s, %s)", points(kg-sg), sess.Name, points(sg))
		case sess != nil:
			text += fmt.Sprintf("; the best session affinity (%s) saves %s, under the threshold on its own, so the cheaper option does not pay", sess.Name, points(sg))
		case !rp.SessionsKnown:
			text += "; session affinity was not measured (the traffic carries no session ids), so whether the cheaper option would do is open"
		}
		text += "; " + d.holds(rp, am)
		rs = append(rs, Reason{Rule: "kv-router-saves", Verdict: KVAwareRouter, Strength: Medium, Evidence: ev("today", "kv", "session", "amortise"), Text: text})
		if rp.KVTokens > 0 && rp.WorkingSetTokens > rp.KVTokens {
			rs = append(rs, Reason{Rule: "working-set-exceeds-replica", Verdict: KVAwareRouter, Strength: Medium, Evidence: ev("working_set"),
				Text: fmt.Sprintf("the traffic's working set is %.1fx one replica's KV cache: no replica holds every shared prefix, so where a request goes decides whether it hits (SPEC §7)", float64(rp.WorkingSetTokens)/float64(rp.KVTokens))})
		}
		if s := d.in.Stream; s != nil && s.DuplicateFraction != nil && *s.DuplicateFraction >= th.DuplicatePrefill {
			rs = append(rs, Reason{Rule: "duplicated-prefill", Verdict: KVAwareRouter, Strength: Medium, Evidence: []string{"tap.duplicate"},
				Text: fmt.Sprintf("%s of the tokens the replicas stored had been prefilled on another replica already (a lower bound: events never show hits)", pct(*s.DuplicateFraction))})
		}
	case sessionPays:
		v, margin = SessionAffinity, sg-th.MinGain
		text := fmt.Sprintf("%s, %s (session affinity) serves %s of prompt tokens from cache after the warm-up against %s with today's %s: %s of all prefill%s, above the %.0f-point threshold",
			shape, sess.Name, pct(sess.SteadyHitRate), pct(today.SteadyHitRate), today.Name, points(sg), d.rate(rp, sg), th.MinGain*100)
		if kv != nil {
			if kg > sg {
				text += fmt.Sprintf("; the best KV-aware policy (%s, %s) adds only %s more, under the threshold: the cheaper option is enough", kv.Name, points(kg), points(kg-sg))
			} else {
				text += fmt.Sprintf("; the best KV-aware policy (%s, %s) adds nothing over it: the cheaper option is enough", kv.Name, points(kg))
			}
			margin = min(margin, th.MinGain-(kg-sg))
		}
		text += "; " + d.holds(rp, am)
		rs = append(rs, Reason{Rule: "session-affinity-saves", Verdict: SessionAffinity, Strength: Medium, Evidence: ev("today", "session", "kv", "amortise"), Text: text})
	default:
		v = Nothing
		var best *Policy
		switch {
		case kv != nil && (sess == nil || kg > sg): // a tie names the cheaper option
			best = kv
		case sess != nil:
			best = sess
		}
		bg := gain(best)
		margin = th.MinGain - max(bg, 0)
		head := fmt.Sprintf("%s, no option saves %.0f points of all prefill over today's %s (%s of prompt tokens from cache after the warm-up)", shape, th.MinGain*100, today.Name, pct(today.SteadyHitRate))
		var text string
		switch {
		case best == nil:
			text = head + ": every option replayed makes a hot spot, so none can be recommended"
		case bg < 0:
			text = fmt.Sprintf("%s: every option serves less from cache; the closest, %s, %s", head, best.Name, points(bg))
		default:
			text = fmt.Sprintf("%s: the best, %s, saves %s", head, best.Name, points(bg))
		}
		switch f := PolicyFamily(today.Name); {
		case f != FamilyBalance:
			// Today's routing already is what the options are: the reason to keep it is that,
			// not a warm-up.
			text += fmt.Sprintf("; today's %s is itself %s, so it already captures the reuse the options would", today.Name, familyArticle(f))
		case am.WarmupOnly && today.SteadyHitRate > 0:
			text += fmt.Sprintf("; the whole working set (%s tokens) fits in one replica's KV cache and few shared prefixes arrive after the warm-up, so every replica warms up on its own and today's routing finds them", units.Count(rp.WorkingSetTokens))
		}
		rs = append(rs, Reason{Rule: "no-option-pays", Verdict: Nothing, Strength: Medium, Evidence: ev("today", "kv", "session"), Text: text})
		if fleet := int64(rp.Replicas) * rp.KVTokens; fleet > 0 && rp.SharedTokens > fleet {
			// Not routing's to fix: no placement keeps what the whole fleet cannot hold.
			rs = append(rs, Reason{Rule: "capacity-bound", Verdict: Nothing, Strength: Medium, Evidence: ev("fleet", "amortise", "ceiling"),
				Text: fmt.Sprintf("the shared prefixes (%d tokens) are %.1fx the whole fleet's KV cache (%d x %d = %d tokens): no routing keeps them until they come back, so the gap to the ceiling (%s of block references repeat) is capacity, not placement; more KV per replica, or more replicas, is what would save prefill, and routing is worth judging again then",
					rp.SharedTokens, float64(rp.SharedTokens)/float64(fleet), rp.Replicas, rp.KVTokens, fleet, pct(rp.Ceiling))})
		}
		if w, ok := d.warmup(rp, today); ok {
			rs = append(rs, w)
		}
	}
	if !rp.SessionsKnown && v != KVAwareRouter {
		rs = append(rs, Reason{Rule: "sessions-unknown", Verdict: v, Strength: Low, Evidence: ev("traffic"),
			Text: "session affinity was not measured: the traffic carries no session ids and no request continues an earlier one's conversation (a session policy without ids would only hash block 0)"})
	}
	if todayHotSpot(rp, th) {
		// Today's routing is never flagged a hot spot among the options (it is what runs), but
		// a verdict that keeps it must say so.
		why := "its busiest replica is busy enough for requests to wait there"
		if rp.SyntheticArrivals {
			why = "the arrival times are made up (a request log replayed at --rate), so the imbalance alone decides"
		}
		rs = append(rs, Reason{Rule: "today-hot-spot", Verdict: v, Strength: Medium, Against: true, Evidence: ev("policy." + today.Name),
			Text: fmt.Sprintf("today's %s itself puts load max/mean %.2f on one replica, at or above the %.1f hot-spot line: %s (a hot spot: %s), its hit rate is bought with that replica's queue (TTFT p99 %s), and the options are compared against a routing that would never be recommended", today.Name, today.LoadMaxOverMean, th.HotSpot, why, sim.HotSpotRule(th.HotSpot), units.Duration(today.TTFTP99))})
	}
	if hs := rp.hotSpots(); len(hs) > 0 {
		rs = append(rs, Reason{Rule: "hot-spots", Verdict: v, Strength: Low, Evidence: ev("hot_spots"),
			Text: fmt.Sprintf("hot spots, never an option whatever their hits: %s (%s)", strings.Join(hs, ", "), sim.HotSpotRule(th.HotSpot))})
	}
	if rp.Overloaded {
		rs = append(rs, Reason{Rule: "overloaded", Verdict: v, Strength: Medium, Against: true, Evidence: ev("today"),
			Text: fmt.Sprintf("the modelled fleet is overloaded (today's TTFT p99 %s): requests queue whatever the routing, so the figures describe a queue as much as a cache; check the fleet's size", units.Duration(today.TTFTP99))})
	}
	offBy, off := d.metricsDisagree(rp, prefix)
	if off {
		rs = append(rs, Reason{Rule: "replay-disagrees-with-metrics", Verdict: v, Strength: Medium, Against: true, Evidence: []string{"hitrate.hit_rate", prefix + ".today"},
			Text: fmt.Sprintf("the replay is not the fleet the metrics measured: they saw a hit rate of %s (%s), the replay of today's %s %s (over the whole replay, on this fleet's shape), %.1f points apart (at or above the %.0f-point threshold the gains are judged on: a trace from elsewhere or another period, another KV size, another routing); the gains are the replay's",
				pct(*d.in.Metrics.HitRate), d.in.Metrics.Mode, today.Name, pct(today.HitRate), offBy*100, th.MinGain*100)})
	}
	conf := d.replayConfidence(rp, margin)
	if off {
		conf = levelOf(conf.rank() - 1)
	}
	return routing{v, d.citeKnown(rs), conf}
}

// metricsDisagree compares the fleet's measured hit rate with the replay of today's routing
// (whole replay, as a metrics window sees cold and warm requests alike): when they are MinGain
// or more apart, the replay does not reproduce the fleet to the precision the verdict needs.
// Only the traffic as it is can be compared (not the replay once fixed), and only with complete
// metrics over as many requests as metrics alone decide on (metricsTooFew): over fewer, one
// request moves the measured hit rate by the threshold, so a gap says nothing of the replay.
func (d *decision) metricsDisagree(rp *Replay, prefix string) (float64, bool) {
	m := d.in.Metrics
	today := rp.policy(rp.Today)
	if prefix != "replay" || m == nil || m.HitRate == nil || today == nil || m.Down > 0 || len(m.Warnings) > 0 || d.metricsTooFew() {
		return 0, false
	}
	diff := math.Abs(*m.HitRate - today.HitRate)
	return diff, diff >= d.th.MinGain-1e-9 // 0.35 - 0.30 is 0.0499999...: points are compared at the precision shown
}

// todayHotSpot reports whether today's routing itself makes a hot spot (sim.Load.HotSpot).
func todayHotSpot(rp *Replay, th Thresholds) bool {
	t := rp.policy(rp.Today)
	return t != nil && t.HotSpot
}

// familyArticle names a family with its article, for "today's X is itself ...".
func familyArticle(f Family) string {
	if f == FamilySession {
		return "session affinity"
	}
	return "a " + familyName(f) + " policy"
}

// replayConfidence grades a replay's verdict from the evidence: exact tokens, enough requests,
// a measured fleet, complete traffic, a model not overloaded, today's routing without a hot spot
// and a margin of at least half the threshold each keep it high; each one missing lowers it a
// level.
func (d *decision) replayConfidence(rp *Replay, margin float64) Level {
	rank := High.rank()
	for _, weak := range []bool{
		rp.Estimated,
		rp.Requests < d.th.MinRequests,
		rp.ReplicasFrom == ShapeAssumed || rp.KVFrom == ShapeAssumed,
		margin < d.th.MinGain/2,
		rp.LowerBound,
		rp.Overloaded,
		todayHotSpot(rp, d.th),
	} {
		if weak {
			rank--
		}
	}
	return levelOf(rank)
}

// warmup explains a gain that is only warm-up: over the whole replay the best option clears
// the threshold, after the warm-up it does not. It says how long the traffic must run for the
// difference to fall under the threshold.
func (d *decision) warmup(rp *Replay, today *Policy) (Reason, bool) {
	var best *Policy
	for i := range rp.Policies {
		p := &rp.Policies[i]
		if p.HotSpot || p.Name == today.Name || (p.Family == FamilySession && !rp.SessionsKnown) {
			continue
		}
		if best == nil || p.HitRate > best.HitRate {
			best = p
		}
	}
	if best == nil || best.HitRate-today.HitRate < d.th.MinGain {
		return Reason{}, false
	}
	full, steady := best.HitRate-today.HitRate, best.SteadyHitRate-today.SteadyHitRate
	text := fmt.Sprintf("over the whole replay %s saves %s, but after the warm-up (the first %d requests, %.0f s) only %s: the difference is cold misses, each replica computing the shared prefixes once, which a longer run amortises",
		best.Name, points(full), rp.WarmupRequests, rp.WarmupSeconds, points(steady))
	if rp.Duration > 0 && steady < d.th.MinGain {
		rate := float64(rp.PromptTokens) / rp.Duration
		extra := (full - steady) * float64(rp.PromptTokens)
		if t := extra / (rate * (d.th.MinGain - steady)); t > 0 && !math.IsInf(t, 0) {
			text += fmt.Sprintf("; at the traffic's rate, any run longer than about %s brings it under the %.0f-point threshold", units.Duration(t), d.th.MinGain*100)
		}
	}
	return Reason{Rule: "warm-up-only", Verdict: Nothing, Strength: Medium, Evidence: []string{}, Text: text}, true
}

// withoutTraffic is the verdict from metrics alone. Per-replica hit rates cannot say where the
// misses come from, so they decide only when the fleet already hits within MinGain of 100%
// under today's routing: no router could add MinGain then. Otherwise the answer is "cannot tell
// yet", naming the cold replicas and those without prefix metrics.
func (d *decision) withoutTraffic() routing {
	m := d.in.Metrics
	const measure = "a request log (--requests, a gateway export of the request bodies) or a trace (--trace) would show where the misses come from"
	if m == nil {
		return routing{Undetermined, []Reason{{Rule: "no-traffic", Verdict: Undetermined, Strength: Low, Evidence: []string{},
			Text: "nothing given shows the traffic, so no routing option can be judged: " + measure}}, Low}
	}
	complete := m.Down == 0 && len(m.Warnings) == 0
	if m.HitRate != nil && *m.HitRate >= 1-d.th.MinGain && complete && d.metricsTooFew() {
		// A hit rate over a handful of requests says nothing about the traffic.
		return routing{Undetermined, d.citeKnown([]Reason{{Rule: "too-little-traffic", Verdict: Undetermined, Strength: Low, Evidence: []string{"hitrate.hit_rate", "hitrate.volume"},
			Text: fmt.Sprintf("the fleet serves %s of prompt tokens from cache, but over %s requests %s: each weighs on average at least the %.0f-point threshold, so one request could make the difference; metrics decide from %d requests (1/min gain, and one more): %s",
				pct(*m.HitRate), requestCount(*m.Requests), windowWord(m.Mode), d.th.MinGain*100, d.th.MinSteadyRequests(), measure)}}), Low}
	}
	if m.HitRate != nil && *m.HitRate >= 1-d.th.MinGain && complete {
		st := Medium
		if m.Mode != "rate" {
			st = Low
		}
		return routing{Nothing, []Reason{{Rule: "already-hits", Verdict: Nothing, Strength: st, Evidence: []string{"hitrate.hit_rate"},
			Text: fmt.Sprintf("the fleet already serves %s of prompt tokens from cache under today's routing: the most any router could add is the %s left, under the %.0f-point threshold", pct(*m.HitRate), points(1-*m.HitRate), d.th.MinGain*100)}}, st}
	}
	text := "metrics alone cannot show whether a router would help: a hit rate below 100% - min gain may be unique traffic (nothing to gain) or shared prefixes sent to the wrong replica (a router's gain)"
	if m.HitRate != nil {
		text = fmt.Sprintf("the fleet serves %s of prompt tokens from cache; %s", pct(*m.HitRate), text)
	}
	var cold, none []string
	for _, r := range m.Replicas {
		if r.Cold {
			cold = append(cold, r.Name)
		}
		if r.NoPrefixMetrics {
			none = append(none, r.Name)
		}
	}
	if len(cold) > 0 {
		text += "; cold replicas (far below the fleet's median hit rate): " + shortList(cold)
	}
	if len(none) > 0 {
		text += "; replicas without prefix-cache metrics: " + shortList(none)
	}
	if !complete {
		text += "; and the metrics are partial (a target down or a partial response)"
	}
	return routing{Undetermined, d.citeKnown([]Reason{{Rule: "metrics-cannot-tell", Verdict: Undetermined, Strength: Low, Evidence: []string{"hitrate.hit_rate", "hitrate.replicas"},
		Text: text + ": " + measure}}), Low}
}

// metricsTooFew reports whether the metrics' window holds fewer requests than MinSteadyRequests
// (known volume only): too few for metrics alone to decide, and too few to set against a replay.
func (d *decision) metricsTooFew() bool {
	m := d.in.Metrics
	return m != nil && m.Requests != nil && *m.Requests < float64(d.th.MinSteadyRequests())
}

// requestCount writes a request count as a reader can set it against MinSteadyRequests: whole counts
// as they are, a rate window's fractional one cut (never rounded up) to a tenth, so 20.96 reads
// 20.9 and not the 21 it falls short of.
func requestCount(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return strconv.FormatFloat(math.Floor(x*10)/10, 'f', -1, 64)
}

// windowWord says what a metrics mode's figures cover.
func windowWord(mode string) string {
	switch mode {
	case "rate":
		return "in the window"
	case "lifetime":
		return "since the replicas started"
	}
	return "in what " + mode + " covers"
}

// singleReplica: a fleet of one replica has nothing to route between. One replica in a dump or
// a log the user picked is a sample, not the fleet, and a partial answer may miss the others.
func (d *decision) singleReplica(rp *Replay, prefix string) (Reason, bool) {
	if rp != nil && rp.ReplicasFrom == ShapeFlag && rp.Replicas == 1 {
		return Reason{Rule: "single-replica", Verdict: Nothing, Strength: High, Evidence: []string{prefix + ".fleet"},
			Text: "the fleet has one replica (--replicas 1): a router has nothing to choose between; prefix-aware routing starts to matter from two replicas up"}, true
	}
	if m := d.in.Metrics; m != nil && len(m.Replicas) == 1 && m.Down == 0 && len(m.Warnings) == 0 && !m.Sampled() && (rp == nil || rp.ReplicasFrom != ShapeFlag) {
		return Reason{Rule: "single-replica", Verdict: Nothing, Strength: High, Evidence: []string{"hitrate.replicas"},
			Text: "the fleet has one replica: a router has nothing to choose between; prefix-aware routing starts to matter from two replicas up"}, true
	}
	return Reason{}, false
}

// holds says how long the traffic must run for a difference over today's routing to hold,
// from the warm-up model (Replay.Amortise).
func (d *decision) holds(rp *Replay, a Amortise) string {
	hold := "the traffic's rate is unknown"
	if a.Rate > 0 {
		hold = fmt.Sprintf("at the traffic's %.0f prompt tokens/s that is under %.0f points of all prefill in any run longer than %s", a.Rate, d.th.MinGain*100, units.Duration(a.HoldSeconds))
	}
	oneOff := fmt.Sprintf("blind routing computes each of the %d shared-prefix tokens at most once per replica, at most %d x %d = %d extra prefill tokens once; %s",
		rp.SharedTokens, max(rp.Replicas-1, 0), rp.SharedTokens, a.OneOff, hold)
	switch {
	case a.WarmupOnly:
		until := ": the difference holds only for runs shorter than that"
		if a.Rate <= 0 {
			until = " (every request arrives at one instant), so how long a run amortises it cannot be said: it is paid once, however long the traffic runs"
		}
		return fmt.Sprintf("the working set (%s tokens) fits in one replica's KV cache and only %s shared-prefix tokens first arrived after the warm-up, so %s%s",
			units.Count(rp.WorkingSetTokens), units.Count(rp.LateSharedTokens), oneOff, until)
	case !a.Fits && rp.KVTokens > 0:
		return fmt.Sprintf("the difference holds as long as the traffic keeps its shape, however long it runs: the working set is %.1fx one replica's KV cache, so blind routing's misses are evictions that recur, not warm-up",
			float64(rp.WorkingSetTokens)/float64(rp.KVTokens))
	}
	late := ""
	if rp.Duration > 0 && rp.WarmupSeconds < rp.Duration {
		late = fmt.Sprintf(" (%.0f tokens/s)", float64(rp.LateSharedTokens)/(rp.Duration-rp.WarmupSeconds))
	}
	return fmt.Sprintf("the difference holds as long as the traffic keeps its shape, however long it runs: new shared prefixes keep arriving (%s tokens first seen after the warm-up%s), and blind routing's cold misses on them recur at that rate",
		units.Count(rp.LateSharedTokens), late)
}

// rate writes a gain as tokens per second at the traffic's rate.
func (d *decision) rate(rp *Replay, g float64) string {
	if rp.Duration <= 0 || rp.PromptTokens <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f prompt tokens/s at the traffic's rate)", g*float64(rp.PromptTokens)/rp.Duration)
}

// points writes a difference of shares as percentage points.
func points(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "nothing"
	}
	return fmt.Sprintf("%+.1f points", x*100)
}

// breakerCost is what the breaker the request audit found costs: the best any option serves
// from cache on the traffic once fixed, against the best any option (today's routing included)
// serves on the traffic as it is, in points of all prompt tokens after the warm-up. A value that
// routing can work around (a per-session account number that session affinity keeps together)
// costs little; one that breaks every prefix (a timestamp) costs all the reuse there is.
func breakerCost(now, fixed *Replay) (float64, bool) {
	if now == nil || fixed == nil {
		return 0, false
	}
	a, b := bestSteady(now), bestSteady(fixed)
	if math.IsInf(a, -1) || math.IsInf(b, -1) {
		return 0, false
	}
	return b - a, true
}

// bestSteady is the most any option without a hot spot (today's routing included; session
// affinity only when measured) serves from cache after the warm-up.
func bestSteady(rp *Replay) float64 {
	best := math.Inf(-1)
	for _, p := range rp.Policies {
		if (p.HotSpot && p.Name != rp.Today) || (p.Family == FamilySession && !rp.SessionsKnown && p.Name != rp.Today) {
			continue
		}
		best = max(best, p.SteadyHitRate)
	}
	return best
}
