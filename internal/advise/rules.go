package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// route applies rules 2 to 4 (nothing, session affinity, a KV-aware router) and returns the
// verdict they give with the reasons for it, followed by the reasons for the other verdicts
// marked Against. decided is false when no rule applied and the verdict is the default.
func (d *decision) route() (v Verdict, reasons []Reason, decided bool) {
	if r, ok := d.singleReplica(); ok {
		return Nothing, []Reason{r}, true
	}
	support := map[Verdict][]Reason{
		Nothing:         d.nothingReasons(),
		SessionAffinity: d.sessionReasons(),
		KVAwareRouter:   d.kvReasons(),
	}
	for _, v := range []Verdict{Nothing, SessionAffinity, KVAwareRouter} {
		rs := support[v]
		if !slices.ContainsFunc(rs, func(r Reason) bool { return !r.Against }) {
			continue
		}
		out := slices.Clone(rs)
		for _, o := range []Verdict{Nothing, SessionAffinity, KVAwareRouter} {
			if o == v {
				continue
			}
			for _, r := range support[o] {
				// Weak reasons and the working-set context do not contradict on their own.
				if !r.Against && r.Strength != Low && !strings.HasPrefix(r.Rule, "working-set-") {
					r.Against = true
					out = append(out, r)
				}
			}
		}
		return v, out, true
	}
	return Nothing, []Reason{{
		Rule: "no-reuse-measured", Verdict: Nothing, Strength: Low, Evidence: []string{},
		Text: "none of the measurements given shows reuse a router could exploit; routing cannot create reuse that is not there, so measure it before deploying a router (see the next steps)",
	}}, false
}

func (d *decision) singleReplica() (Reason, bool) {
	// A dump or a log is one replica's view unless it says otherwise: one replica there is a
	// sample, not the fleet's size, so it decides nothing (nextSteps asks for every replica).
	// A partial response (a server warning) may have left the other replicas out, as a target
	// that could not be read may have.
	if m := d.in.Metrics; m != nil && len(m.Replicas) == 1 && m.Down == 0 && len(m.Warnings) == 0 && !m.Sampled() {
		return Reason{Rule: "single-replica", Verdict: Nothing, Strength: High, Evidence: []string{"hitrate.replicas"},
			Text: "the fleet has one replica: a router has nothing to choose between; prefix-aware routing starts to matter from two replicas up"}, true
	}
	if s := d.in.Simulation; s != nil && s.Replicas == 1 {
		return Reason{Rule: "single-replica", Verdict: Nothing, Strength: Medium, Evidence: []string{"simulate.fleet"},
			Text: "the simulated fleet has one replica: a router has nothing to choose between"}, true
	}
	return Reason{}, false
}

// nothingReasons is rule 2: little shareable prefill, or a simulated gain below the threshold.
func (d *decision) nothingReasons() []Reason {
	var out []Reason
	th := d.th
	if r := d.in.Requests; r != nil && r.PromptTokens > 0 {
		if f := frac(r.CacheableTokens, r.PromptTokens); f < th.MinShareable {
			out = append(out, Reason{Rule: "little-shareable-prefill", Verdict: Nothing, Strength: requestStrength(r), Evidence: []string{"requests.shareable"},
				Text: fmt.Sprintf("only %s of prompt tokens could come from even an unbounded shared cache (threshold %s): no router can create reuse that is not there", pct(f), pct(th.MinShareable))})
		}
	}
	if s := d.in.Simulation; s != nil && s.PrefixInfo {
		if s.Ceiling < th.MinShareable {
			out = append(out, Reason{Rule: "low-trace-ceiling", Verdict: Nothing, Strength: Medium, Evidence: []string{"simulate.ceiling"},
				Text: fmt.Sprintf("only %s of the trace's block references repeat an earlier one (threshold %s): little prefix reuse exists", pct(s.Ceiling), pct(th.MinShareable))})
		}
		if b := s.best(""); b == nil || b.PrefillSaved < th.MinGain {
			gain, name := 0.0, "no policy without a hot spot"
			if b != nil {
				gain, name = b.PrefillSaved, b.Name
			}
			text := fmt.Sprintf("the best routing policy (%s) saves %+.1f%% of round-robin's prefill on this fleet, below the %.0f%% worth deploying a router for", name, gain*100, th.MinGain*100)
			ev := []string{"simulate.round_robin", "simulate.kv", "simulate.session"}
			if s.KVTokens > 0 && s.WorkingSetTokens > 100*s.KVTokens && s.Ceiling >= th.MinShareable {
				// The reuse exists but no cache keeps a prefix until it comes back.
				text += fmt.Sprintf("; the working set is %.0fx one replica's KV cache, so prefixes are evicted before they are reused: more KV cache per replica would pay before any router", float64(s.WorkingSetTokens)/float64(s.KVTokens))
				ev = append(ev, "simulate.working_set")
			}
			out = append(out, Reason{Rule: "small-simulated-gain", Verdict: Nothing, Strength: Medium, Evidence: ev, Text: text})
		}
	}
	return d.citeKnown(out)
}

// sessionReasons is rule 3: reuse mostly within sessions, or session affinity getting most of
// the best policy's simulated gain without its hot spots.
func (d *decision) sessionReasons() []Reason {
	var out []Reason
	th := d.th
	if r := d.in.Requests; r != nil && r.Sessions > 0 && frac(r.CacheableTokens, r.PromptTokens) >= th.MinShareable {
		within := frac(r.WithinSessionTokens, r.CacheableTokens)
		cross := frac(r.CrossSessionTokens, r.PromptTokens)
		if within >= 0.5 && cross < th.MinShareable {
			out = append(out, Reason{Rule: "reuse-within-sessions", Verdict: SessionAffinity, Strength: requestStrength(r), Evidence: []string{"requests.within", "requests.cross"},
				Text: fmt.Sprintf("%s of the shareable prefill is reused within the same session and only %s of prompt tokens across sessions: keeping a session on one replica captures it", pct(within), pct(cross))})
		}
	}
	if s := d.in.Simulation; s != nil && s.PrefixInfo {
		b, sess := s.best(""), s.best(FamilySession)
		if b != nil && sess != nil && b.PrefillSaved >= th.MinGain && sess.PrefillSaved >= th.SessionShare*b.PrefillSaved {
			text := fmt.Sprintf("simulated %s saves %+.1f%% of round-robin's prefill, %.0f%% of the best policy's %+.1f%% (%s), without a hot spot", sess.Name, sess.PrefillSaved*100, 100*sess.PrefillSaved/b.PrefillSaved, b.PrefillSaved*100, b.Name)
			if b == sess {
				text = fmt.Sprintf("simulated %s is the best policy on this fleet: it saves %+.1f%% of round-robin's prefill without a hot spot", sess.Name, sess.PrefillSaved*100)
				if kv := s.best(FamilyKV); kv != nil {
					text += fmt.Sprintf(", against %+.1f%% for the best KV-aware policy (%s)", kv.PrefillSaved*100, kv.Name)
				}
			}
			out = append(out, Reason{Rule: "session-gets-most-gain", Verdict: SessionAffinity, Strength: Medium, Evidence: []string{"simulate.session", "simulate.kv"}, Text: text})
		}
	}
	return d.citeKnown(out)
}

// kvReasons is rule 4: substantial cross-session reuse, a working set larger than one replica's
// KV cache (SPEC §7), and a simulated KV-aware policy that clearly beats round-robin and
// session affinity with acceptable balance.
func (d *decision) kvReasons() []Reason {
	var out []Reason
	th := d.th
	if r := d.in.Requests; r != nil && r.PromptTokens > 0 {
		if cross := frac(r.CrossSessionTokens, r.PromptTokens); cross >= th.MinShareable {
			st, text := requestStrength(r), fmt.Sprintf("%s of prompt tokens repeat a prefix another session stored first: only a router that knows where prefixes are cached can share them", pct(cross))
			if r.Sessions == 0 {
				st, text = Low, text+" (the log has no session ids, so every reuse counts as cross-session: it may be within conversations)"
			}
			out = append(out, Reason{Rule: "cross-session-reuse", Verdict: KVAwareRouter, Strength: st, Evidence: []string{"requests.cross"}, Text: text})
		}
	}
	if s := d.in.Stream; s != nil && s.DuplicateFraction != nil && *s.DuplicateFraction >= th.DuplicatePrefill {
		out = append(out, Reason{Rule: "duplicated-prefill", Verdict: KVAwareRouter, Strength: Medium, Evidence: []string{"tap.duplicate"},
			Text: fmt.Sprintf("%s of the tokens the replicas stored had been prefilled on another replica already: prefill a KV-aware router would save (a lower bound: events never show hits)", pct(*s.DuplicateFraction))})
	}
	if s := d.in.Simulation; s != nil && s.PrefixInfo {
		b, kv, sess := s.best(""), s.best(FamilyKV), s.best(FamilySession)
		if kv != nil && b != nil && kv.PrefillSaved >= th.MinGain && kv.PrefillSaved >= b.PrefillSaved-0.005 {
			sessGain := 0.0
			if sess != nil {
				sessGain = sess.PrefillSaved
			}
			margin := kv.PrefillSaved - sessGain
			switch {
			case margin >= th.MinGain && kv.LoadMaxOverMean <= th.MaxImbalance:
				out = append(out, Reason{Rule: "kv-routing-wins", Verdict: KVAwareRouter, Strength: Medium, Evidence: []string{"simulate.kv", "simulate.session", "simulate.round_robin"},
					Text: fmt.Sprintf("simulated %s saves %+.1f%% of round-robin's prefill, %.1f points more than the best session affinity, with load max/mean %.2f", kv.Name, kv.PrefillSaved*100, margin*100, kv.LoadMaxOverMean)})
			case kv.LoadMaxOverMean > th.MaxImbalance:
				out = append(out, Reason{Rule: "kv-routing-wins-unbalanced", Verdict: KVAwareRouter, Strength: Low, Evidence: []string{"simulate.kv"},
					Text: fmt.Sprintf("simulated %s saves the most prefill (%+.1f%%) but spreads load unevenly (max/mean %.2f above %.2f): only with a load-aware scorer", kv.Name, kv.PrefillSaved*100, kv.LoadMaxOverMean, th.MaxImbalance)})
			default:
				out = append(out, Reason{Rule: "kv-routing-wins-narrowly", Verdict: KVAwareRouter, Strength: Low, Evidence: []string{"simulate.kv", "simulate.session"},
					Text: fmt.Sprintf("simulated %s saves the most prefill (%+.1f%%) but only %.1f points more than session affinity: not clearly worth an index of every cache", kv.Name, kv.PrefillSaved*100, margin*100)})
			}
		}
		if s.KVTokens > 0 && len(out) > 0 {
			if s.WorkingSetTokens > s.KVTokens {
				out = append(out, Reason{Rule: "working-set-exceeds-replica", Verdict: KVAwareRouter, Strength: Medium, Evidence: []string{"simulate.working_set"},
					Text: fmt.Sprintf("the trace's working set is %.1fx one replica's KV cache: no single replica holds every prefix, which is where KV-aware routing pays (SPEC §7)", float64(s.WorkingSetTokens)/float64(s.KVTokens))})
			} else {
				out = append(out, Reason{Rule: "working-set-fits-replica", Verdict: KVAwareRouter, Strength: Medium, Against: true, Evidence: []string{"simulate.working_set"},
					Text: "the trace's whole working set fits in one replica's KV cache: every replica can warm up on its own, so gains from KV-aware routing stay small"})
			}
		}
	}
	return d.citeKnown(out)
}

// citeKnown drops evidence IDs that were not recorded (a policy family absent from the run).
func (d *decision) citeKnown(rs []Reason) []Reason {
	for i := range rs {
		var ids []string
		for _, id := range rs[i].Evidence {
			if d.has(id) {
				ids = append(ids, id)
			}
		}
		rs[i].Evidence = ids
		if rs[i].Evidence == nil {
			rs[i].Evidence = []string{}
		}
	}
	return rs
}

// requestStrength grades the request audit: exact tokens over many requests are strong.
func requestStrength(r *Requests) Level {
	switch {
	case r.Requests < 100:
		return Low
	case r.Estimated:
		return Medium
	}
	return High
}

// fixFirst is rule 1: it records every fix and returns one reason per blocker that applies.
// Hash parity blocks only an exact KV-aware router, so it is an error only when the evidence
// points there.
func (d *decision) fixFirst(route Verdict) []Reason {
	var out []Reason
	th := d.th
	block := func(rule string, st Level, text string, ev ...string) {
		out = append(out, Reason{Rule: rule, Verdict: FixFirst, Strength: st, Text: text, Evidence: ev})
	}
	if m := d.in.Metrics; m != nil {
		d.passOn(m.Warnings)
		var off []string
		for _, r := range m.Replicas {
			if r.PrefixCaching != nil && !*r.PrefixCaching {
				off = append(off, r.Name)
				d.fix(finding.Finding{Severity: finding.Error, Code: "prefix-caching-off", Subject: r.Name,
					Message: "prefix caching is off (vllm:cache_config_info enable_prefix_caching=False): nothing is cached, whatever the router", Source: "hitrate", Fix: "remove --no-enable-prefix-caching from this replica's vLLM command line"})
			}
		}
		if len(off) > 0 {
			block("prefix-caching-off", High, fmt.Sprintf("prefix caching is off on %s: no router can produce hits there", shortList(off)), "hitrate.caching")
		}
		st := High
		if m.Mode != "rate" {
			st = Medium // lifetime totals or the engine's own window
		}
		var thrash []string
		for _, r := range m.Replicas {
			sev, why := thrashing(r, th)
			if why == "" {
				continue
			}
			if sev == finding.Error {
				thrash = append(thrash, r.Name)
			}
			d.fix(finding.Finding{Severity: sev, Code: "thrashing", Subject: r.Name,
				Message: why + ": the hit rate may count re-prefill after eviction rather than reuse" + versionNote(r.Version) + ", and a router adds little while the cache cannot hold what it is sent", Source: "hitrate", Fix: "give the replica more KV cache (lower --max-num-seqs, raise --gpu-memory-utilization, a larger GPU) or add replicas, then measure again"})
		}
		if len(thrash) > 0 {
			block("fleet-thrashes", st, fmt.Sprintf("the KV cache thrashes on %s (at least %.0f preemptions per 1k requests or %s full): fix capacity before judging reuse, since the hit rate may be re-prefill", shortList(thrash), th.ThrashPreemptionsPer1k, pct(th.ThrashKVUsage)), "hitrate.preemptions", "hitrate.kv_usage")
		}
	}
	if t := d.in.Templates; t != nil {
		n := d.passOn(t.Findings)
		if n > 0 {
			block("template-breaker", Medium, fmt.Sprintf("%s: a value that changes per call or per user sits in block 0, so every prefix differs from the first block and no router can repair that (SPEC §5)", count(n, "template error")), "templates.breakers")
		}
	}
	if r := d.in.Requests; r != nil {
		if n := d.passOn(r.Findings); n > 0 {
			block("request-breaker", requestStrength(r), fmt.Sprintf("%s on real traffic: prompts diverge at their start, so their prefixes are not shared", count(n, "request-log error")), "requests.unique_first", "requests.shareable")
		}
	}
	if s := d.in.Stream; s != nil {
		d.passOn(s.Findings)
		sev := finding.Warning
		if route == KVAwareRouter {
			sev = finding.Error
		}
		parity := 0
		if s.Consistent != nil && !*s.Consistent {
			parity++
			d.fix(finding.Finding{Severity: sev, Code: "hash-inconsistent", Subject: "fleet",
				Message: "identical content carries different block hashes on different replicas: an exact KV-aware router never matches a prefix across replicas", Source: "tap", Fix: "set the same PYTHONHASHSEED on every replica (and the same --prefix-caching-hash-algo)"})
		}
		if s.SeedKnown && s.Reproducible != nil && !*s.Reproducible {
			parity++
			d.fix(finding.Finding{Severity: sev, Code: "hash-not-reproducible", Subject: "fleet",
				Message: "the engines' block hashes do not match sha256_cbor with the given seed: a router that computes hashes itself will not find them", Source: "tap", Fix: "run the replicas with --prefix-caching-hash-algo sha256_cbor and the PYTHONHASHSEED the router is given"})
		}
		if parity > 0 && sev == finding.Error {
			block("hash-parity", High, "the KV-event hashes fail the parity check an exact KV-aware router depends on", "tap.parity")
		}
		if s.LostBatches > 0 {
			d.fix(finding.Finding{Severity: finding.Warning, Code: "events-lost", Subject: "fleet",
				Message: fmt.Sprintf("%d event batches were lost and not recovered: a router on this stream has a wrong view of the caches", s.LostBatches), Source: "tap", Fix: "raise the publisher's hwm in --kv-events-config, give it a replay_endpoint, and check the collector keeps up"})
		}
		if s.RestoreFraction != nil && *s.RestoreFraction >= 0.1 {
			d.fix(finding.Finding{Severity: finding.Warning, Code: "eviction-churn", Subject: "fleet",
				Message: fmt.Sprintf("%s of stored blocks were stored again after eviction on the same replica: the KV cache is too small for the working set", pct(*s.RestoreFraction)), Source: "tap", Fix: "more KV cache per replica, or more replicas with affinity so each holds a part of the working set"})
		}
		if s.FirstBlockStores >= 20 && float64(s.FirstBlocksDistinct) >= 0.9*float64(s.FirstBlockStores) {
			d.fix(finding.Finding{Severity: finding.Error, Code: "block-zero-breaker", Subject: "fleet",
				Message: fmt.Sprintf("%d of %d first blocks stored were distinct: something in the first block differs on every request", s.FirstBlocksDistinct, s.FirstBlockStores), Source: "tap", Fix: "find the changing value with kvcheck audit (templates, or --requests) and move it after the shared text"})
			block("stream-breaker", High, "the live KV-event stream shows a new first block on almost every request: the chain breaks at block 0", "tap.first_blocks")
		}
	}
	return out
}

// passOn records the findings that deserve action (errors and warnings) and returns how many
// are errors.
func (d *decision) passOn(fs []finding.Finding) int {
	n := 0
	for _, f := range fs {
		if f.Severity < finding.Warning {
			continue
		}
		d.fix(f)
		if f.Severity == finding.Error {
			n++
		}
	}
	return n
}

// thrashing grades one replica's pressure: an error at the thrash thresholds, a warning at the
// warning ones.
func thrashing(r Replica, th Thresholds) (finding.Severity, string) {
	sev, why := finding.Info, ""
	if p := r.PreemptionsPer1k; p != nil && *p >= th.WarnPreemptionsPer1k {
		why = fmt.Sprintf("%.0f preemptions per 1k requests", *p)
		sev = finding.Warning
		if *p >= th.ThrashPreemptionsPer1k {
			sev = finding.Error
		}
	}
	if u := r.KVUsage; u != nil && *u >= th.WarnKVUsage {
		if why != "" {
			why += " and "
		}
		why += "KV cache " + pct(*u) + " full"
		if *u >= th.ThrashKVUsage {
			sev = finding.Error
		} else {
			sev = max(sev, finding.Warning)
		}
	}
	return sev, why
}

// count writes n and the noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// versionNote says how the replica's vLLM version counts lookups under pressure (SPEC §3.2):
// before 0.11 (PR #25787) the tokens a preempted request recomputed were counted as hits.
func versionNote(v string) string {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return " (before vLLM 0.11 a preempted request's recomputed tokens counted as hits; since, a request retried under KV pressure can still be counted again)"
	}
	if major == 0 && minor < 11 {
		return " (vLLM " + v + " counts a preempted request's recomputed tokens as hits; fixed in 0.11 by PR #25787)"
	}
	return " (vLLM " + v + " leaves preempted lookups out, but counts a request retried under KV pressure again, issue #43736)"
}

// Sampled reports whether the metrics came from dumps or logs the user picked, which need not
// cover the whole fleet, rather than from a scrape of the targets or a Prometheus query.
func (m *Metrics) Sampled() bool { return m.Source == "file" || m.Source == "log" }
