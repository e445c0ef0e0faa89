package advise

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

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
				f := vllm.CachingOff(r.Name) // as hitrate reports it
				f.Source = "hitrate"
				d.fix(f)
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
		// With a request log the breaker is measured on real traffic (below); a template the
		// log does not show diverging is not what this traffic runs.
		if n > 0 && d.in.Requests == nil {
			block("template-breaker", Medium, fmt.Sprintf("%s: a value that changes per call or per user sits in block 0, so every prefix differs from the first block and no router can repair that (SPEC §5)", count(n, "template error")), "templates.breakers")
		}
	}
	if r := d.in.Requests; r != nil {
		n := d.passOn(r.Findings)
		for _, f := range r.Findings {
			if f.Code == "prefix-caching-off" && f.Severity == finding.Error {
				// The --tokenize server's setting, not a prompt that diverges.
				n--
				block("prefix-caching-off", High, "prefix caching is off on "+f.Subject+", the server the request log was tokenized with: no router can produce hits there", "requests.count")
			}
		}
		if c, ok := breakerCost(d.in.Replay, d.in.Fixed); ok {
			if c >= th.MinGain {
				block("breaker-costs", requestStrength(r), fmt.Sprintf("the divergence at the start of the prompts costs %s of all prompt tokens: replayed with it replaced by a constant (%s), the best option serves that much more from cache than the best option can on the traffic as it is (threshold %.0f points)", points(c), d.in.FixedHow, th.MinGain*100), "fixed.cost", "requests.unique_first")
			}
		} else if n > 0 {
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
	return append(out, d.configBlockers(route)...)
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
