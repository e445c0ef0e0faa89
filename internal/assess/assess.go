// Package assess is kvcheck assess's pipeline: it turns the sources one run read into the
// evidence advise decides on. The traffic (a request log, a trace or tap recordings) becomes one
// trace, replayed with internal/sim on the fleet's shape under today's routing, session
// affinity (when sessions are known) and the load-aware KV policies; with a request log whose
// prompts diverge early, the traffic is replayed a second time with the divergence replaced by a
// constant, which is what "then" is judged on. advise stays pure: it receives the figures.
package assess

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// The fleet assumed when neither the metrics nor the flags say; the report says it was
// assumed and the confidence drops.
const (
	AssumedReplicas = 8
	AssumedKVTokens = 1 << 20
)

// DefaultToday is the policy that stands for today's routing unless the user names one: a
// gateway's default spreads requests blindly.
const DefaultToday = "round-robin"

// OptionPolicies are the options replayed against today's routing: session affinity (plain,
// and consistent hashing with bounded load; only when sessions are known) and the load-aware
// KV policies a team can deploy (llm-d approximate and exact, Dynamo, a load-weighted scorer).
var OptionPolicies = []string{"session", "chash-bounded", "approx-prefix", "kv-llmd", "kv-cost", "kv-load"}

// Inputs are the sources one run read. Every part is optional.
type Inputs struct {
	// Metrics is hitrate's analysis of the metrics source; KVBlocks and KVBlockSize, when set,
	// are num_gpu_blocks and block_size read apart (--prometheus aggregates them away).
	Metrics               *promql.Report
	KVBlocks, KVBlockSize int

	Templates      *audit.TemplateReport
	TemplateInputs []string

	Requests *RequestLog

	// Trace is a trace file (Mooncake, lengths-only CSV) or a built-in trace.
	Trace *sim.Trace

	// Tap is the analysis of KV-event recordings, Recordings the same recordings as a trace.
	Tap        *events.Report
	TapInputs  []string
	SeedKnown  bool
	Recordings *sim.Trace

	// Config is what the router and engine configuration checks found (assess --config);
	// Files what the same files show of the deployment and its routers, for the ranking.
	Config *advise.Config
	Files  *product.Files
}

// RequestLog is a request log to audit and replay. Open is called once per pass (the audit,
// the replay, and the replay once fixed), so it must give the same content each time.
type RequestLog struct {
	Name      string
	Open      func() (io.ReadCloser, error)
	Tokenizer audit.Tokenizer
	BlockSize int
	// MaxBlockRefs bounds the block references the log may expand to (0: sim.MaxBlockRefs),
	// MaxTraceRequests its requests (0: sim.MaxRequests).
	MaxBlockRefs, MaxTraceRequests int
	// Findings are passed on with the audit's (the tokenize server's caching setting, ...).
	Findings []finding.Finding
}

// Options are the decision's knobs.
type Options struct {
	Thresholds advise.Thresholds
	// Replicas and KVTokens state the fleet's shape; 0 takes it from the metrics, else the
	// assumed fleet.
	Replicas int
	KVTokens int64
	// KVBlocks states each replica's KV cache in blocks of the traffic's block size (512 tokens
	// for a Mooncake trace), as kvcheck simulate's --kv-blocks; KVTokens wins when both are set.
	KVBlocks int
	// Today names the policy that stands for today's routing (DefaultToday when empty): an
	// idealised policy (sim.Policies) or a router emulation (internal/router).
	Today string
	// TodayRouters are the settings today's emulation runs with, TodayFrom the file and line
	// they were read from; nil runs it as shipped. assess sets them from the first router of
	// that emulation the --config files show.
	TodayRouters product.Settings
	TodayFrom    string
	// TodayNotes say where today's routing is replayed otherwise than its settings alone say
	// (engines the files show publish no KV events, a configured value it could not read);
	// assess sets them with TodayRouters (rank.Today).
	TodayNotes []string
	// Progress, when set, is called as the replays run.
	Progress func(done, total int)
	// AddReplica adds one empty replica at AddReplicaAt seconds into the traffic in the
	// ranking's replays, to show which routers starve it (--add-replica-at).
	AddReplica   bool
	AddReplicaAt float64
	// Routers are the router emulations the ranking replays; nil means every one as shipped
	// (router.Shipped).
	Routers []sim.PolicyInfo
	// Plot, when set, is the file the command writes the ranking's chart to (--plot): Check
	// refuses it without traffic to rank.
	Plot string
	// Routes, when set, is given the routes of every replay of the ranking (--routes):
	// rank.Setup.Routes.
	Routes sim.RouteWriter
	// rankTraffic says what the ranking replays when not the traffic as given.
	rankTraffic string
	// stack is the router product the inputs show the user runs (stackSeen), for the ranking
	// when Today names no product.
	stack rank.Stack
}

// Assess gathers the evidence and decides, without the router ranking (Run adds it).
func Assess(ctx context.Context, in Inputs, o Options) (advise.Recommendation, error) {
	rec, _, err := assessRanked(ctx, in, o, false)
	return rec, err
}

// assessRanked gathers the evidence, decides, and with ranked ranks the routers on the traffic
// (nil without traffic).
func assessRanked(ctx context.Context, in Inputs, o Options, ranked bool) (advise.Recommendation, *rank.Ranking, error) {
	var ev advise.Input
	o.Today = cmp.Or(sim.Canonical(o.Today), DefaultToday)
	if o.TodayRouters == nil && in.Files != nil {
		for _, rc := range in.Files.Routers {
			if rc.Policy == o.Today {
				o.TodayRouters, o.TodayFrom, o.TodayNotes = rc.Settings, rc.Where, rc.Notes
				break
			}
		}
	}
	// Today's routing runs as the files show the deployment behaves, as the ranked rows do.
	o.TodayRouters, o.TodayNotes = rank.Today(o.Today, o.TodayRouters, o.TodayNotes, in.Files)
	o.stack = stackSeen(in)
	if in.Metrics != nil {
		ev.Metrics = advise.FromHitrate(*in.Metrics)
		if ev.Metrics.KVBlocks == 0 && in.KVBlocks > 0 {
			ev.Metrics.KVBlocks, ev.Metrics.KVBlockSize = in.KVBlocks, in.KVBlockSize
		}
	}
	if in.Templates != nil {
		ev.Templates = advise.FromTemplates(*in.Templates, in.TemplateInputs)
	}
	ev.Config = in.Config
	if in.Tap != nil {
		ev.Stream = advise.FromTap(in.Tap, in.TapInputs, in.SeedKnown)
	}
	traffic, source := in.Trace, "trace"
	var fixed *sim.Trace
	if rl := in.Requests; rl != nil {
		sum, err := auditLog(ctx, rl)
		if err != nil {
			return advise.Recommendation{}, nil, err
		}
		ev.Requests = advise.FromRequests(sum, rl.Name)
		ev.Requests.Findings = append(append([]finding.Finding{}, rl.Findings...), ev.Requests.Findings...)
		if traffic, err = readLog(ctx, rl, nil); err != nil {
			return advise.Recommendation{}, nil, err
		}
		source = "requests"
		if fx := audit.NewFixer(sum); fx != nil {
			if fixed, err = readLog(ctx, rl, fx.Apply); err != nil {
				return advise.Recommendation{}, nil, err
			}
			// The same input: its evidence says "replay once fixed" as its source.
			fixed.Name = rl.Name
			ev.FixedHow = fx.Describe()
		}
	}
	if traffic == nil && in.Recordings != nil {
		traffic, source = in.Recordings, "recording"
	}
	var unused []string
	if in.Trace != nil && traffic != in.Trace {
		unused = append(unused, "trace "+in.Trace.Name)
	}
	if in.Recordings != nil && traffic != in.Recordings {
		unused = append(unused, "recordings "+in.Recordings.Name)
	}
	if traffic == nil {
		return advise.Decide(ev, o.Thresholds), nil, nil
	}
	if o.KVTokens == 0 && o.KVBlocks > 0 {
		o.KVTokens = int64(o.KVBlocks) * int64(traffic.BlockSize)
	}
	shape, err := fleetShape(ev.Metrics, o)
	if err != nil {
		return advise.Recommendation{}, nil, err
	}
	if shape.ReplicasFrom == advise.ShapeAssumed && in.Tap != nil && len(in.Tap.Publishers) > 1 {
		// Each publisher is one engine: the recordings saw that many replicas.
		shape.Replicas, shape.ReplicasFrom = min(len(in.Tap.Publishers), sim.MaxReplicas), advise.ShapeRecordings
	}
	if ev.Replay, err = Replay(ctx, traffic, source, shape, o); err != nil {
		return advise.Recommendation{}, nil, err
	}
	ev.Replay.Unused = unused
	if fixed != nil {
		if ev.Fixed, err = Replay(ctx, fixed, source, shape, o); err != nil {
			return advise.Recommendation{}, nil, err
		}
	}
	rec := advise.Decide(ev, o.Thresholds)
	if !ranked {
		return rec, nil, nil
	}
	// The routers are ranked on the traffic the answer is about: once fixed after a fix-first
	// the replay once fixed measured, else as it is. Their rows are then options the verdict
	// weighs beside the idealised policies (a router ranked first at the threshold's gain is
	// never "nothing"), and the ranking's first agrees with the verdict's kind (rank.Agree).
	on, onReplay := traffic, ev.Replay
	if rec.Verdict == advise.FixFirst && fixed != nil {
		on, onReplay = fixed, ev.Fixed
		o.rankTraffic = "the traffic once fixed (" + ev.FixedHow + ")"
	}
	rk, err := Rank(ctx, on, shape, o, in.Files)
	if err != nil {
		return advise.Recommendation{}, nil, err
	}
	if rk != nil {
		onReplay.Routers = routerOptions(rk, onReplay)
		rec = advise.Decide(ev, o.Thresholds)
		agree(&rec, rk, onReplay, sessionIDs(on))
	}
	return rec, rk, nil
}

// Shape is the fleet a replay runs on, and where each figure came from (advise.ShapeMetrics,
// ShapeFlag, ShapeAssumed).
type Shape struct {
	Replicas             int
	KVTokens             int64
	ReplicasFrom, KVFrom string
}

// fleetShape takes the fleet's size from the flags, else the metrics, else assumes it. One
// replica in a dump or a log the user picked is a sample, not the fleet's size.
func fleetShape(m *advise.Metrics, o Options) (Shape, error) {
	s := Shape{Replicas: AssumedReplicas, KVTokens: AssumedKVTokens, ReplicasFrom: advise.ShapeAssumed, KVFrom: advise.ShapeAssumed}
	kv, seen := m.KVCapacity()
	switch {
	case o.Replicas > 0:
		s.Replicas, s.ReplicasFrom = o.Replicas, advise.ShapeFlag
	case seen > 1 || seen == 1 && !m.Sampled() && m.Down == 0 && len(m.Warnings) == 0:
		s.Replicas, s.ReplicasFrom = min(seen, sim.MaxReplicas), advise.ShapeMetrics
	}
	switch {
	case o.KVTokens > 0:
		s.KVTokens, s.KVFrom = o.KVTokens, advise.ShapeFlag
	case kv > 0:
		s.KVTokens, s.KVFrom = kv, advise.ShapeMetrics
	}
	if s.Replicas > sim.MaxReplicas {
		return s, fmt.Errorf("--replicas %d: the replay models at most %d replicas", s.Replicas, sim.MaxReplicas)
	}
	return s, nil
}

// Replay runs the traffic on the fleet under today's routing and the options (session
// affinity only when the traffic carries sessions), with the steady figures counted after the
// first half of the requests, and returns the figures advise decides on. The policy figures
// are kvcheck simulate's for the same trace and fleet.
func Replay(ctx context.Context, t *sim.Trace, source string, sh Shape, o Options) (*advise.Replay, error) {
	o.Today = cmp.Or(sim.Canonical(o.Today), DefaultToday)
	kv := sh.KVTokens / int64(t.BlockSize)
	if kv < 1 {
		return nil, fmt.Errorf("the KV cache per replica (%d tokens) is less than one %d-token block of %s: give --kv-tokens", sh.KVTokens, t.BlockSize, t.Name)
	}
	known := SessionsKnown(t)
	policies := []string{o.Today}
	for _, p := range OptionPolicies {
		if p == o.Today || (!known && advise.PolicyFamily(p) == advise.FamilySession) {
			continue
		}
		policies = append(policies, p)
	}
	warm, half := 0.0, len(t.Requests)/2
	if len(t.Requests) > 0 {
		warm = t.Requests[half].Arrival
	}
	base := Base(half)
	sweep := sim.Sweep{Replicas: []int{sh.Replicas}, KVBlocks: []int{int(min(kv, int64(^uint32(0)>>1)))}, Policies: policies, Base: base}
	// Only today's routing can be an emulation, with the settings the files give it: the
	// options are idealised policies.
	if e, ok := router.Emulation(o.Today, o.TodayRouters); ok {
		sweep.Emulations = []sim.PolicyInfo{e}
	}
	results, err := sim.Run(ctx, t, sweep, o.Progress)
	var cannot *sim.CannotRunError
	if errors.As(err, &cannot) {
		return nil, usage.Errorf("--today %s%s cannot stand for today's routing on %s: %s; or name today's routing by an idealised policy (%s)",
			o.Today, todayFrom(o), t.Name, cannot.Reason, strings.Join(sim.PolicyNames(), ", "))
	}
	if err != nil {
		return nil, err
	}
	th := o.Thresholds
	if th.HotSpot == 0 {
		th.HotSpot = sim.HotSpotRatio
	}
	rp := advise.FromReplay(sim.NewReport(t, sim.Stats(t), sweep, results), advise.ReplayShape{
		Source: source, ReplicasFrom: sh.ReplicasFrom, KVFrom: sh.KVFrom, Today: o.Today,
		SessionsKnown: known, WarmupSeconds: warm, WarmupRequests: half, HotSpot: th.HotSpot,
	})
	rp.SharedTokens, rp.LateSharedTokens = sharedTokens(t)
	tw := sim.TwinsApart(t, base.Model)
	rp.TwinRequests, rp.TwinTokens = tw.Requests, tw.Tokens
	return rp, nil
}

// todayFrom says where today's settings came from, for messages.
func todayFrom(o Options) string {
	if o.TodayFrom != "" {
		return " (as configured in " + o.TodayFrom + ")"
	}
	if o.TodayRouters == nil && slices.Contains(router.Names(), o.Today) {
		return " (as shipped)"
	}
	return ""
}

// sharedTokens counts the trace's shared prefixes, the warm-up model's input: distinct blocks
// that two requests (or siblings) or more reference, in tokens, and those of them first referenced in the
// second half of the requests (after the warm-up). One map entry per distinct block: the
// trace is already held whole.
func sharedTokens(t *sim.Trace) (shared, late int64) {
	type seen struct {
		late  bool
		count int32
	}
	blocks := make(map[uint64]seen)
	half := len(t.Requests) / 2
	for i := range t.Requests {
		// A request sent as n siblings references its blocks n times.
		n := int32(max(t.Requests[i].N, 1))
		for _, b := range t.Requests[i].Blocks {
			s, ok := blocks[b]
			if !ok {
				s.late = i >= half
			}
			s.count = min(s.count+n, 2)
			blocks[b] = s
		}
	}
	bs := int64(t.BlockSize)
	for _, s := range blocks {
		if s.count >= 2 {
			shared += bs
			if s.late {
				late += bs
			}
		}
	}
	return shared, late
}

// Base is the simulation every replay runs: kvcheck simulate's defaults (service model, seed
// 1, policy parameters), so the two commands give the same figures on the same trace and fleet.
// The steady figures count the requests from index warmup on (the second half): by index, not
// by arrival time, so that a burst whose requests share one instant still leaves its first half
// out.
func Base(warmup int) sim.Config {
	return sim.Config{Model: sim.DefaultModel(), Seed: 1, AddReplicaAt: -1, Siblings: 1, Params: sim.DefaultParams(), MeasureFromRequest: warmup}
}

// SessionsKnown reports whether the trace carries sessions: some session (an id, or a
// conversation that another request continued) holds two requests or more.
func SessionsKnown(t *sim.Trace) bool {
	seen := make(map[string]struct{})
	for i := range t.Requests {
		s := t.Requests[i].Session
		if s == "" {
			continue
		}
		if _, ok := seen[s]; ok {
			return true
		}
		seen[s] = struct{}{}
	}
	return false
}

func auditLog(ctx context.Context, rl *RequestLog) (audit.Summary, error) {
	r, err := rl.Open()
	if err != nil {
		return audit.Summary{}, fmt.Errorf("requests: %w", err)
	}
	defer func() { _ = r.Close() }() // read only
	sum, err := audit.AuditRequests(ctx, r, audit.RequestOptions{BlockSize: rl.BlockSize, Tokenizer: rl.Tokenizer, MaxBlocks: audit.DefaultMaxBlocks, MaxLine: audit.DefaultMaxLine, Concurrency: 8})
	if err != nil {
		return audit.Summary{}, fmt.Errorf("requests %s: %w", rl.Name, err)
	}
	return sum, nil
}

func readLog(ctx context.Context, rl *RequestLog, rewrite func(*audit.Request) bool) (*sim.Trace, error) {
	r, err := rl.Open()
	if err != nil {
		return nil, fmt.Errorf("requests: %w", err)
	}
	defer func() { _ = r.Close() }() // read only
	opts := sim.RequestLogOptions{BlockSize: rl.BlockSize, Tokenizer: rl.Tokenizer, Concurrency: 8, MaxBlockRefs: rl.MaxBlockRefs, MaxTraceRequests: rl.MaxTraceRequests,
		Part: "assess a part of it (its first N lines: head -n N)"}
	if rewrite != nil {
		opts.Rewrite = func(req *audit.Request) { rewrite(req) }
	}
	return sim.ReadRequests(ctx, r, rl.Name, opts)
}
