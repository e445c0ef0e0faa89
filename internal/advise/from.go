package advise

import (
	"math"
	"slices"
	"strconv"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// FromHitrate takes the hitrate report. KVBlocks and KVBlockSize are the smallest replica's
// num_gpu_blocks and block_size when the report has them (scrapes and dumps); with
// --prometheus, whose queries aggregate num_gpu_blocks away, callers set them.
func FromHitrate(rep promql.Report) *Metrics {
	m := &Metrics{Source: string(rep.Source), Inputs: slices.Clone(rep.Inputs), Mode: string(rep.Mode), HitRate: rep.Fleet.HitRate, Queries: rep.Fleet.Queries, Down: len(rep.Down)}
	var requests float64
	for _, r := range rep.Replicas {
		if r.Requests == nil {
			requests = math.NaN()
		} else {
			requests += *r.Requests
		}
	}
	if len(rep.Replicas) > 0 && !math.IsNaN(requests) {
		m.Requests = &requests
	}
	for _, r := range rep.Replicas {
		x := Replica{Name: r.Replica, Version: r.Version, PrefixCaching: r.PrefixCaching, HitRate: r.HitRate,
			PreemptionsPer1k: r.PreemptionsPer1k, KVUsage: r.KVUsage}
		if r.BlockSize != nil {
			x.BlockSize = *r.BlockSize
			if n := r.NumGPUBlocks; n != nil && (m.KVBlocks == 0 || *n**r.BlockSize < m.KVBlocks*m.KVBlockSize) {
				m.KVBlocks, m.KVBlockSize = *n, *r.BlockSize
			}
		}
		m.Replicas = append(m.Replicas, x)
	}
	for _, f := range rep.Findings {
		for i := range m.Replicas {
			if m.Replicas[i].Name != f.Subject {
				continue
			}
			switch f.Code {
			case "replica-cold":
				m.Replicas[i].Cold = true
			case "no-prefix-metrics", "no-queries":
				m.Replicas[i].NoPrefixMetrics = true
			}
		}
	}
	for _, f := range rep.Findings {
		if f.Code != "server-warning" {
			continue
		}
		m.Warnings = append(m.Warnings, finding.Finding{Severity: f.Severity, Code: f.Code, Subject: m.Source, Message: f.Message, Source: "hitrate", Fix: "query again when every store answers, or give --scrape of the replicas themselves; until then treat the metrics' figures as a lower bound"})
	}
	return m
}

// FromTemplates takes the static template audit of inputs.
func FromTemplates(tr audit.TemplateReport, inputs []string) *Templates {
	t := &Templates{Inputs: slices.Clone(inputs), Verdicts: map[string]int{}}
	for _, x := range tr.Templates {
		t.Verdicts[string(x.Verdict)]++
	}
	t.Findings = fromAudit("templates", tr.Findings)
	for i := range t.Findings {
		// An unsettled variable carries its worst case for audit's gate; to the
		// recommendation it is a question, not evidence of a breaker.
		if t.Findings[i].Code == "audit/check" {
			t.Findings[i].Severity = finding.Info
		}
	}
	return t
}

// FromRequests takes the request audit of the log named input.
func FromRequests(s audit.Summary, input string) *Requests {
	return &Requests{
		Input: input, Estimated: !s.Exact, Requests: s.Requests, Sessions: s.Sessions,
		RepeatedSessions: s.RepeatedSessions, InSessions: s.RepeatedSessions + s.FollowUps,
		WithBlock: s.Requests - s.Short, UniqueFirstBlock: s.UniqueFirstBlock,
		PromptTokens: s.PromptTokens, CacheableTokens: s.CacheableTokens,
		CrossSessionTokens: s.CrossSessionTokens, WithinSessionTokens: s.WithinSessionTokens,
		Findings: fromAudit("requests", s.Findings(input)),
	}
}

func fromAudit(source string, fs []audit.Finding) []finding.Finding {
	out := make([]finding.Finding, 0, len(fs))
	for _, f := range fs {
		x := f.Finding
		x.Source = source
		if x.Subject == "" {
			x.Subject = f.File
		}
		if f.Line > 0 && f.File != "" {
			x.Subject = f.File + ":" + strconv.Itoa(f.Line)
		}
		out = append(out, x)
	}
	return out
}

// FromTap takes the analysis of KV-event recordings.
func FromTap(r *events.Report, inputs []string, seedKnown bool) *Stream {
	a := r.Analysis
	s := &Stream{
		Inputs: slices.Clone(inputs), Publishers: len(r.Publishers), StoredBlocks: a.StoredBlocks,
		SeedKnown: seedKnown, Reproducible: a.HashParity.Reproducible, Consistent: a.HashParity.ConsistentAcrossReplicas,
		DuplicateFraction: a.DuplicateTokenFraction, RestoreFraction: a.RestoreFraction,
		FirstBlockStores: a.FirstBlockStores, FirstBlocksDistinct: a.FirstBlocksDistinct,
	}
	for _, p := range r.Publishers {
		s.LostBatches += p.UnrecoverableBatches
	}
	for _, f := range r.Findings {
		if f.Severity >= finding.Warning && !slices.Contains(tapRestated, f.Code) {
			f.Source = "tap"
			s.Findings = append(s.Findings, f)
		}
	}
	return s
}

// tapRestated are tap's finding codes the rules turn into fixes or reasons of their own.
var tapRestated = []string{"hash-inconsistent", "hash-not-reproducible", "batches-lost", "eviction-churn", "block-zero-breaker", "duplicate-prefill"}

// ReplayShape says what FromReplay cannot read from the report: where the traffic came from,
// where the fleet's shape came from, today's policy and the warm-up.
type ReplayShape struct {
	Source               string
	ReplicasFrom, KVFrom string
	Today                string
	SessionsKnown        bool
	WarmupSeconds        float64
	WarmupRequests       int
	HotSpot              float64
}

// FromReplay takes the first fleet of a replay (sim.Run and sim.NewReport over one fleet).
func FromReplay(rep sim.Report, sh ReplayShape) *Replay {
	t := rep.Trace
	s := &Replay{
		Input: t.Name, Source: sh.Source, Requests: rep.Stats.Requests, BlockSize: t.BlockSize, PrefixInfo: t.PrefixInfo,
		Estimated: t.Tokens == "estimated", LowerBound: t.LowerBound, SessionsKnown: sh.SessionsKnown,
		Ceiling: rep.Stats.Ceiling, WorkingSetTokens: rep.Stats.DistinctBlocks * int64(t.BlockSize),
		ReplicasFrom: sh.ReplicasFrom, KVFrom: sh.KVFrom, Today: sh.Today, WarmupSeconds: sh.WarmupSeconds,
		WarmupRequests: sh.WarmupRequests, SyntheticArrivals: t.SyntheticArrivals,
	}
	if n := len(t.Requests); n > 0 {
		s.Duration = t.Requests[n-1].Arrival - t.Requests[0].Arrival
	}
	if len(rep.Fleets) == 0 {
		return s
	}
	f := rep.Fleets[0]
	s.Replicas = f.Replicas
	s.KVTokens = int64(f.KVBlocks) * int64(t.BlockSize)
	s.Overloaded = f.Overloaded
	for _, r := range f.Results {
		if r.Policy == sh.Today {
			s.PromptTokens, s.SteadyTokens = r.InputTokens, r.SteadyInputTokens
		}
		p := Policy{Name: r.Policy, Family: PolicyFamily(r.Policy), LoadMaxOverMean: r.LoadMaxOverMean, TTFTP99: r.TTFTP99,
			HotSpot: sim.LoadOf(r, t).HotSpot(sh.HotSpot), Idle: sim.LoadOf(r, t).Idle(sh.HotSpot), HotWaited: r.HotWaited}
		if r.InputTokens > 0 {
			p.HitRate = float64(r.HitTokens) / float64(r.InputTokens)
		}
		if r.SteadyInputTokens > 0 {
			p.SteadyHitRate = float64(r.SteadyHitTokens) / float64(r.SteadyInputTokens)
		}
		s.Policies = append(s.Policies, p)
	}
	return s
}

// PolicyFamily classifies a simulator policy, or a router emulation (which --today may name),
// by what a team would deploy for it (sim.PolicyInfo.Family, the emulations' from their
// products).
func PolicyFamily(name string) Family {
	return sim.FamilyOf(name, router.Shipped())
}
