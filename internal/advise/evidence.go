package advise

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/units"
)

// collectEvidence writes one evidence line per figure the rules read, so that every reason can
// cite its lines and the report can show them in one table.
func (d *decision) collectEvidence() {
	if m := d.in.Metrics; m != nil {
		in := m.Source
		switch n := len(m.Inputs); {
		case n > 2:
			in += fmt.Sprintf(" of %d targets", n)
		case n > 0:
			in += " " + strings.Join(m.Inputs, ", ")
		}
		d.evidence("hitrate.replicas", "hitrate", in, "replicas", "%s%s", units.Plural(int64(len(m.Replicas)), "replica"), downNote(m.Down))
		if m.HitRate != nil {
			d.evidence("hitrate.hit_rate", "hitrate", in, "fleet prefix-cache hit rate", "%s (%s)", pct(*m.HitRate), m.Mode)
		}
		if m.Queries != nil {
			fig := fmt.Sprintf("%s prompt tokens looked up", units.Count(int64(math.Round(*m.Queries))))
			if m.Requests != nil {
				fig += fmt.Sprintf(", %s requests", requestCount(*m.Requests))
			}
			d.evidence("hitrate.volume", "hitrate", in, "traffic behind the hit rate ("+m.Mode+")", "%s", fig)
		}
		on, off, unknown := 0, []string{}, 0
		for _, r := range m.Replicas {
			switch {
			case r.PrefixCaching == nil:
				unknown++
			case *r.PrefixCaching:
				on++
			default:
				off = append(off, r.Name)
			}
		}
		// The first part carries the fleet's size; a part with nothing in it is left out.
		var parts []string
		n := int64(len(m.Replicas))
		if on > 0 {
			parts = append(parts, "on in "+units.Of(int64(on), n, "replica"))
		}
		if len(off) > 0 {
			what := shortList(off)
			if on == 0 {
				what = units.Of(int64(len(off)), n, "replica") + ": " + what
			}
			parts = append(parts, "off in "+what)
		}
		if unknown > 0 {
			what := strconv.Itoa(unknown)
			if len(parts) == 0 {
				what = units.Of(int64(unknown), n, "replica")
			}
			parts = append(parts, "unknown in "+what+" (no vllm:cache_config_info)")
		}
		d.evidence("hitrate.caching", "hitrate", in, "prefix caching", "%s", orNone(strings.Join(parts, "; ")))
		if name, v := worst(m.Replicas, func(r Replica) *float64 { return r.PreemptionsPer1k }); name != "" {
			d.evidence("hitrate.preemptions", "hitrate", in, "preemptions per 1k requests (worst replica)", "%.1f on %s", v, name)
		}
		if name, v := worst(m.Replicas, func(r Replica) *float64 { return r.KVUsage }); name != "" {
			d.evidence("hitrate.kv_usage", "hitrate", in, "KV-cache usage (fullest replica)", "%s on %s", pct(v), name)
		}
		if n := len(m.Warnings); n > 0 {
			d.evidence("hitrate.server_warnings", "hitrate", in, "server warnings (figures may miss series)", "%d: %s", n, m.Warnings[0].Message)
		}
		if m.KVBlocks > 0 {
			d.evidence("hitrate.kv_capacity", "hitrate", in, "KV cache per replica (smallest num_gpu_blocks x block_size)", "%d blocks x %d = %d tokens", m.KVBlocks, m.KVBlockSize, int64(m.KVBlocks)*int64(m.KVBlockSize))
		}
	}
	if t := d.in.Templates; t != nil {
		in := shortList(t.Inputs)
		var parts []string
		n := 0
		for _, v := range []string{"breaker", "early", "late", "unknown", "clean"} {
			if c := t.Verdicts[v]; c > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", c, v))
				n += c
			}
		}
		d.evidence("templates.verdicts", "templates", in, "templates audited", "%d: %s", n, orNone(strings.Join(parts, ", ")))
		errs := 0
		for _, f := range t.Findings {
			if f.Severity.String() == "error" {
				errs++
			}
		}
		d.evidence("templates.breakers", "templates", in, "block-zero breakers changing per call or per user", "%d", errs)
	}
	if r := d.in.Requests; r != nil {
		est := ""
		if r.Estimated {
			est = " (estimated)"
		}
		fig := units.Plural(r.Requests, "request")
		switch {
		case r.RepeatedSessions == 0:
		case r.InSessions == r.Requests:
			fig += fmt.Sprintf(", all in %s of two or more", units.Plural(r.RepeatedSessions, "session"))
		default:
			fig += fmt.Sprintf(", %d of them in %s of two or more", r.InSessions, units.Plural(r.RepeatedSessions, "session"))
		}
		d.evidence("requests.count", "requests", r.Input, "requests", "%s, %s prompt tokens%s", fig, units.Count(r.PromptTokens), est)
		d.evidence("requests.shareable", "requests", r.Input, "shareable prefill (unbounded shared cache)", "%s of prompt tokens", pct(frac(r.CacheableTokens, r.PromptTokens)))
		// A share of the shareable exists only when something is shareable.
		ofShareable := func(tokens int64) string {
			if r.CacheableTokens <= 0 {
				return ""
			}
			return ", " + pct(frac(tokens, r.CacheableTokens)) + " of the shareable"
		}
		d.evidence("requests.cross", "requests", r.Input, "cross-session reuse", "%s of prompt tokens%s", pct(frac(r.CrossSessionTokens, r.PromptTokens)), ofShareable(r.CrossSessionTokens))
		d.evidence("requests.within", "requests", r.Input, "within-session reuse", "%s of prompt tokens%s", pct(frac(r.WithinSessionTokens, r.PromptTokens)), ofShareable(r.WithinSessionTokens))
		if r.WithBlock > 0 {
			fig := units.Of(r.UniqueFirstBlock, r.WithBlock, "request")
			if r.UniqueFirstBlock > 0 {
				fig = pct(frac(r.UniqueFirstBlock, r.WithBlock)) + " (" + fig + ")"
			}
			d.evidence("requests.unique_first", "requests", r.Input, "requests whose first block nobody shares", "%s", fig)
		}
	}
	if s := d.in.Stream; s != nil {
		in := shortList(s.Inputs)
		d.evidence("tap.stream", "tap", in, "KV-event stream", "%d publishers, %d stored blocks, %d batches lost", s.Publishers, s.StoredBlocks, s.LostBatches)
		d.evidence("tap.parity", "tap", in, "hash parity", "reproducible %s, consistent across replicas %s", yesNo(s.Reproducible, s.SeedKnown), yesNo(s.Consistent, true))
		if s.DuplicateFraction != nil {
			d.evidence("tap.duplicate", "tap", in, "prefill duplicated on another replica", "%s of stored tokens", pct(*s.DuplicateFraction))
		}
		if s.RestoreFraction != nil {
			d.evidence("tap.restores", "tap", in, "re-stores after eviction", "%s of stored blocks", pct(*s.RestoreFraction))
		}
		d.evidence("tap.first_blocks", "tap", in, "distinct first blocks", "%d of %d stored", s.FirstBlocksDistinct, s.FirstBlockStores)
	}
	d.replayEvidence("replay", d.in.Replay, "replay")
	d.replayEvidence("fixed", d.in.Fixed, "replay once fixed")
	if c, ok := breakerCost(d.in.Replay, d.in.Fixed); ok {
		d.evidence("fixed.cost", "replay once fixed", d.in.Fixed.Input, "what the breaker costs (best once fixed vs best as it is)", "%s of all prompt tokens; replaced by a constant: %s", points(c), d.in.FixedHow)
	}
}

// replayEvidence writes the lines of one replay under prefix.
func (d *decision) replayEvidence(prefix string, rp *Replay, source string) {
	if rp == nil {
		return
	}
	in := rp.Input
	notes := []string{}
	if rp.Estimated {
		notes = append(notes, "estimated tokens")
	}
	if rp.LowerBound {
		notes = append(notes, "a lower bound: recordings miss requests that hit fully")
	}
	if rp.SessionsKnown {
		notes = append(notes, "sessions known")
	} else {
		notes = append(notes, "no sessions")
	}
	if !rp.PrefixInfo {
		notes = append(notes, "lengths only")
	}
	d.evidence(prefix+".traffic", source, in, "traffic ("+rp.Source+")", "%s over %s, %s prompt tokens; %s", units.Plural(int64(rp.Requests), "request"), units.Duration(rp.Duration), units.Count(rp.PromptTokens), strings.Join(notes, ", "))
	if len(rp.Unused) > 0 {
		d.evidence(prefix+".unused", source, in, "traffic given but not replayed (one trace is: the request log, else a trace, else the recordings)", "%s", strings.Join(rp.Unused, ", "))
	}
	d.evidence(prefix+".fleet", source, in, "fleet replayed", "%s (%s) x %s tokens of KV (%s)", units.Plural(int64(rp.Replicas), "replica"), rp.ReplicasFrom, units.Count(rp.KVTokens), rp.KVFrom)
	if !rp.PrefixInfo {
		return
	}
	d.evidence(prefix+".ceiling", source, in, "ceiling (block references repeating an earlier one)", "%s", pct(rp.Ceiling))
	if rp.KVTokens > 0 {
		d.evidence(prefix+".working_set", source, in, "working set against one replica's KV", "%s tokens = %sx", units.Count(rp.WorkingSetTokens), ratio(float64(rp.WorkingSetTokens)/float64(rp.KVTokens)))
	}
	d.evidence(prefix+".warmup", source, in, "warm-up left out of the gains", "the first %d of %d requests (up to %s)", rp.WarmupRequests, rp.Requests, units.Duration(rp.WarmupSeconds))
	am := rp.Amortise(d.th.MinGain)
	hold := "the rate is unknown"
	if am.Rate > 0 {
		hold = fmt.Sprintf("under %.0f points after %s at %.0f prompt tokens/s", d.th.MinGain*100, units.Duration(am.HoldSeconds), am.Rate)
	}
	fits, only := "fits one replica", "not warm-up alone"
	if !am.Fits {
		fits = "does not fit one replica"
	}
	if am.WarmupOnly {
		only = "warm-up alone"
	}
	d.evidence(prefix+".amortise", source, in, "warm-up model (README)",
		"%s shared tokens, %s of them after the warm-up; one-off %s tokens, %s; the working set %s; the gain is %s",
		units.Count(rp.SharedTokens), units.Count(rp.LateSharedTokens), units.Count(am.OneOff), hold, fits, only)
	today := rp.policy(rp.Today)
	if today == nil {
		return
	}
	d.evidence(prefix+".today", source, in, "today's routing ("+today.Name+")", "hit %s after warm-up (%s over the whole replay), TTFT p99 %s", pct(today.SteadyHitRate), pct(today.HitRate), units.Duration(today.TTFTP99))
	for _, f := range []Family{FamilySession, FamilyKV} {
		if f == FamilySession && !rp.SessionsKnown {
			d.evidence(prefix+".session", source, in, "best session-affinity policy", "not measured: no sessions in the traffic")
			continue
		}
		if p := rp.best(f, today.Name); p != nil {
			d.evidence(prefix+"."+string(f), source, in, "best "+familyName(f)+" policy", "%s: hit %s after warm-up, %s over today's; load max/mean %.2f, TTFT p99 %s", p.Name, pct(p.SteadyHitRate), points(p.SteadyHitRate-today.SteadyHitRate), p.LoadMaxOverMean, units.Duration(p.TTFTP99))
		}
	}
	for _, p := range rp.Policies {
		d.evidence(prefix+".policy."+p.Name, source, in, "replayed policy "+p.Name, "hit %.2f%% over the whole replay, %.2f%% after warm-up; load max/mean %.2f, TTFT p99 %s", p.HitRate*100, p.SteadyHitRate*100, p.LoadMaxOverMean, units.Duration(p.TTFTP99))
	}
	if rp.TwinRequests > 0 {
		d.evidence(prefix+".twins", source, in, "requests sent as copies of a prompt still in prefill (siblings sent apart)", "%s, %s prompt tokens (%s of all)",
			units.Plural(int64(rp.TwinRequests), "request"), units.Count(rp.TwinTokens), pct(frac(rp.TwinTokens, rp.PromptTokens)))
	}
	if hs := rp.hotSpots(); len(hs) > 0 {
		d.evidence(prefix+".hot_spots", source, in, "policies that make a hot spot", "%s", strings.Join(hs, ", "))
	}
	if idle := rp.idleImbalances(d.th.HotSpot); len(idle) > 0 {
		d.evidence(prefix+".idle_imbalance", source, in, "imbalances that are no hot spot (too few requests waited)", "%s", strings.Join(idle, "; "))
	}
}

// ratio writes a multiple so that a small one is not 0.0: 0.001, 0.01, 0.4, 2.3.
func ratio(x float64) string {
	switch {
	case x > 0 && x < 0.001:
		return "<0.001"
	case x < 0.01:
		return strconv.FormatFloat(x, 'f', 3, 64)
	case x < 0.1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

func familyName(f Family) string {
	switch f {
	case FamilySession:
		return "session-affinity"
	case FamilyKV:
		return "KV-aware"
	}
	return "load-balancing"
}

func (s *Replay) policy(name string) *Policy {
	for i := range s.Policies {
		if s.Policies[i].Name == name {
			return &s.Policies[i]
		}
	}
	return nil
}

// best returns the family's option without a hot spot, other than today's, that serves the
// most prompt tokens from cache after the warm-up (nil when there is none): an idealised policy
// or a router the ranking replayed (Routers); of equals, the idealised one.
func (s *Replay) best(f Family, today string) *Policy {
	var b *Policy
	for _, list := range [][]Policy{s.Policies, s.Routers} {
		for i := range list {
			p := &list[i]
			if p.HotSpot || p.Family != f || p.Name == today {
				continue
			}
			if b == nil || p.SteadyHitRate > b.SteadyHitRate {
				b = p
			}
		}
	}
	return b
}

func (s *Replay) hotSpots() []string {
	var out []string
	for _, p := range s.Policies {
		if p.HotSpot && p.Name != s.Today {
			out = append(out, p.Name)
		}
	}
	return out
}

// idleImbalances describes the policies whose load max/mean reaches the hot-spot ratio but whose
// busiest replica's requests seldom waited in the model (sim.Load.Idle): the rule lets them
// through, and a reader must see why.
func (s *Replay) idleImbalances(ratio float64) []string {
	var out []string
	for _, p := range s.Policies {
		if p.Idle && p.Name != s.Today {
			out = append(out, fmt.Sprintf("%s (load max/mean %.2f, %s of the busiest replica's requests waited; a hot spot needs %.0f%%)", p.Name, p.LoadMaxOverMean, sim.WaitedPct(p.HotWaited), 100/ratio))
		}
	}
	return out
}

// worst returns the replica with the highest value of v, when any has one.
func worst(rs []Replica, v func(Replica) *float64) (string, float64) {
	name, top := "", 0.0
	for _, r := range rs {
		if x := v(r); x != nil && (name == "" || *x > top) {
			name, top = r.Name, *x
		}
	}
	return name, top
}

// KVCapacity returns each replica's KV cache in tokens (the smallest replica's) and the fleet's
// replica count from the metrics, 0 when unknown: the defaults of the simulated fleet.
func (m *Metrics) KVCapacity() (tokens int64, replicas int) {
	if m == nil {
		return 0, 0
	}
	return int64(m.KVBlocks) * int64(m.KVBlockSize), len(m.Replicas)
}

func shortList(xs []string) string {
	if len(xs) <= 3 {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:3], ", ") + fmt.Sprintf(" and %d more", len(xs)-3)
}

func downNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more could not be read)", n)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yesNo(b *bool, determinable bool) string {
	switch {
	case !determinable:
		return "not checked (no --hash-seed)"
	case b == nil:
		return "undetermined"
	case *b:
		return "yes"
	}
	return "NO"
}

// has reports whether the evidence line id exists.
func (d *decision) has(id string) bool {
	return slices.ContainsFunc(d.rec.Evidence, func(e Evidence) bool { return e.ID == id })
}
