package assess

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Rank replays every router emulation (o.Routers, else router.Shipped()) on the traffic and
// fleet the assessment replays, as shipped, as the files configure it and as kvcheck would tune
// it, and ranks them (package rank states the rule). The warm-up is the replay's (the first
// half of the requests); with no emulation to replay there is no ranking; with o.AddReplica every replay, today's included, adds one empty
// replica at o.AddReplicaAt. A trace of lengths only gives no ranking: it cannot show reuse.
func Rank(ctx context.Context, t *sim.Trace, sh Shape, o Options, files *product.Files) (*rank.Ranking, error) {
	if !t.PrefixInfo || len(t.Requests) == 0 {
		return nil, nil
	}
	o.Today = cmp.Or(sim.Canonical(o.Today), DefaultToday)
	routers := o.Routers
	if routers == nil {
		routers = router.Shipped()
	}
	base := Base(len(t.Requests) / 2)
	base.Replicas = sh.Replicas
	base.KVBlocks = int(min(sh.KVTokens/int64(t.BlockSize), int64(^uint32(0)>>1)))
	if o.AddReplica {
		if after, last := t.AfterEnd(time.Duration(o.AddReplicaAt * float64(time.Second))); after {
			return nil, usage.Errorf("--add-replica-at %s is after the traffic's last request (at %s): no replica would be added; give a time up to %s",
				time.Duration(o.AddReplicaAt*float64(time.Second)), last, last)
		}
		base.AddReplicaAt = o.AddReplicaAt
	}
	tr := product.TrafficOf(t, sh.Replicas, sh.KVTokens, o.AddReplica)
	cands := rank.Candidates(routers, tr, files)
	if len(cands) == 0 {
		return nil, nil
	}
	for i := range cands {
		cands[i].Family = string(advise.PolicyFamily(cands[i].Policy))
	}
	hot := o.Thresholds.HotSpot
	rules := rank.DefaultRules()
	if g := o.Thresholds.MinGain; g > 0 {
		// A change of product, or a KV-aware router over session affinity, must bring what
		// the verdict asks of a dearer option, and a router named for a verdict what the
		// verdict asks of any option.
		rules.StackMargin, rules.SessionMargin, rules.MinGain = g, g, g
	}
	rk, err := rank.Run(ctx, t, rank.Setup{Base: base, Today: o.Today, TodayRouters: o.TodayRouters, TodayFrom: o.TodayFrom, TodayNotes: o.TodayNotes,
		NotSimulated: files.NotSimulatedRouters(), HotSpot: hot, Progress: o.Progress, Rules: rules, Stack: stackOf(o), Traffic: o.rankTraffic, Routes: o.Routes}, cands)
	if err != nil {
		return nil, err
	}
	return rk, nil
}

// stackOf is the router product the user runs today, as far as the inputs show it: the
// product of the emulation --today names, else what the files or the metrics show (stackSeen).
func stackOf(o Options) rank.Stack {
	if p, ok := router.Of(o.Today); ok {
		return rank.Stack{Product: p.Name().ID, From: "--today " + o.Today}
	}
	return o.stack
}

// stackSeen is the router product the inputs show the user runs: the first router the
// --config files configure (with its file and line), else one the files set up, else one
// whose own metric families the metrics hold (promql.Report.Stacks); several are taken in
// router.StackOrder (the routers that pick the replica before a proxy in front of them:
// LiteLLM in front of llm-d's inference gateway routes to the gateway, which picks the
// replica). Zero when none shows.
func stackSeen(in Inputs) rank.Stack {
	first := func(has func(id string) (string, bool)) rank.Stack {
		for _, id := range router.StackOrder() {
			if from, ok := has(id); ok {
				return rank.Stack{Product: id, From: from}
			}
		}
		return rank.Stack{}
	}
	if f := in.Files; f != nil {
		s := first(func(id string) (string, bool) {
			for _, rc := range f.Routers {
				if p, ok := router.Of(rc.Policy); ok && p.Name().ID == id {
					return "configured in " + rc.Where, true
				}
			}
			return "", false
		})
		if s.Product == "" {
			s = first(func(id string) (string, bool) {
				where, ok := f.Systems[id]
				return "set up in " + where, ok
			})
		}
		if s.Product != "" {
			return s
		}
	}
	if m := in.Metrics; m != nil {
		return first(func(id string) (string, bool) {
			for _, st := range m.Stacks {
				if st.Product == id {
					return "the metrics hold " + st.Family, true
				}
			}
			return "", false
		})
	}
	return rank.Stack{}
}

// routerOptions are the ranking's ranked rows as options for the verdict on the replay rp of
// the same traffic: each row's gain over today's routing in the ranking's replays (which add
// a replica with --add-replica-at) added to today's hit rate in rp, its family, load and TTFT.
func routerOptions(rk *rank.Ranking, rp *advise.Replay) []advise.Policy {
	if rk == nil || rp == nil {
		return nil
	}
	today := -1.0
	for _, p := range rp.Policies {
		if p.Name == rp.Today {
			today = p.SteadyHitRate
		}
	}
	if today < 0 {
		return nil
	}
	var out []advise.Policy
	for _, r := range rk.Rows {
		if r.Rank == 0 {
			continue
		}
		hit := today + r.HitRate - rk.TodayHitRate
		out = append(out, advise.Policy{Name: r.Name(), Family: advise.Family(r.Family), HitRate: hit, SteadyHitRate: hit,
			LoadMaxOverMean: r.LoadMaxOverMean, TTFTP99: r.TTFTP99})
	}
	return out
}

// agree sets the ranking against the recommendation's answer (its verdict, or then after a
// fix-first) and names the router to start from: the ranking's first row, of the answer's kind.
// idsInTraffic says whether the ranked traffic carries session ids (not only sessions told
// apart by their messages).
func agree(rec *advise.Recommendation, rk *rank.Ranking, rp *advise.Replay, idsInTraffic bool) {
	if rk == nil {
		return
	}
	route := rec.Verdict
	if route == advise.FixFirst {
		route = rec.Then
	}
	switch route {
	case advise.SessionAffinity:
		rk.AnswerGain = sessionGain(rp)
		rk.Agree(rank.FamilySession)
	case advise.KVAwareRouter:
		rk.Agree(rank.FamilyKV)
	default:
		rk.Agree(rank.AnswerNone)
		return
	}
	if rk.Answering() {
		rec.Router = rk.Rows[0].Name()
		return
	}
	// No router of the verdict's kind pays on this traffic as it is: say which of that kind
	// there are and what keeps each from it, so the answer still names where to start.
	kind := map[string]string{rank.FamilySession: "session router", rank.FamilyKV: "KV-aware router"}[rk.Answer]
	var held []string
	for _, r := range rk.Rows {
		if r.Family != rk.Answer {
			continue
		}
		var missing []string
		for _, q := range r.Requirements {
			if q.Status == product.Missing {
				missing = append(missing, q.Name+" ("+q.Detail+")")
			}
		}
		switch {
		case r.Excluded != "":
			held = append(held, r.Name()+": not ranked, "+r.Excluded)
		case len(missing) > 0:
			held = append(held, fmt.Sprintf("%s: saves %.1f%%; missing %s", r.Name(), 100*r.PrefillSaved, strings.Join(missing, "; ")))
		default:
			held = append(held, fmt.Sprintf("%s: saves %.1f%%", r.Name(), 100*r.PrefillSaved))
		}
	}
	for _, c := range rk.CannotRun {
		if string(advise.PolicyFamily(c.Policy)) == rk.Answer {
			held = append(held, c.Policy+" ("+c.Variant+"): cannot run, "+c.Reason)
		}
	}
	text := fmt.Sprintf("no %s kvcheck replays serves the %.0f-point gain on this traffic as it is, so none is named to start from", kind, 100*rk.Rules.MinGain)
	if len(held) > 0 {
		text += "; of that kind: " + strings.Join(held, "; ")
	}
	if rk.Answer == rank.FamilySession && !idsInTraffic {
		text += "; a session router keys on an id per conversation, and these requests carry none a router reads (the conversations were told apart by their messages): send one with every request (a header such as x-session-id, or metadata.session_id), then start from the session router of the gateway you run"
	}
	rec.Reasons = append(rec.Reasons, advise.Reason{Rule: "router-unnamed", Verdict: route, Strength: advise.Low, Evidence: []string{}, Text: text})
}

// sessionGain is what the session affinity a session-affinity verdict chose serves over today's
// routing in the replay rp, in points of all prompt tokens after the warm-up: the best session
// option without a hot spot, idealised or a ranked router, as the verdict weighs them.
func sessionGain(rp *advise.Replay) float64 {
	if rp == nil {
		return 0
	}
	today, best := -1.0, -1.0
	for _, list := range [][]advise.Policy{rp.Policies, rp.Routers} {
		for _, p := range list {
			switch {
			case p.Name == rp.Today:
				today = p.SteadyHitRate
			case p.Family == advise.FamilySession && !p.HotSpot:
				best = max(best, p.SteadyHitRate)
			}
		}
	}
	if today < 0 || best < 0 {
		return 0
	}
	return best - today
}

// sessionIDs reports whether some request of t carries a session id of its own, not one
// inferred from conversation continuity (sim.InferredSessionPrefix).
func sessionIDs(t *sim.Trace) bool {
	for i := range t.Requests {
		if s := t.Requests[i].Session; s != "" && !strings.HasPrefix(s, sim.InferredSessionPrefix) {
			return true
		}
	}
	return false
}
