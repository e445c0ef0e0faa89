package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what one policy gave on one fleet.
type Result struct {
	Policy   string
	Replicas int
	KVBlocks int
	// Requests counts routed requests, siblings included.
	Requests int
	// InputTokens, HitTokens: prompt tokens, and those found in the prefix cache.
	InputTokens int64
	HitTokens   int64
	// SteadyInputTokens and SteadyHitTokens count only requests arriving at or after
	// Config.MeasureFrom and from Config.MeasureFromRequest on, once the caches have warmed up:
	// cold misses that a longer run would amortise (every replica computing a shared prompt
	// once) fall before it.
	SteadyInputTokens, SteadyHitTokens int64
	// HitRate is HitTokens/InputTokens, what vllm:prefix_cache_hits/queries would show.
	HitRate float64
	// BlockRefs and HitBlocks count blocks; BlockHitRate compares with the trace's ceiling.
	BlockRefs    int64
	HitBlocks    int64
	BlockHitRate float64
	// PrefillSaved is the fraction of round-robin's prefill tokens this policy did not compute
	// (negative when it computed more).
	PrefillSaved float64
	// PerReplica is the number of requests each replica received.
	PerReplica []int
	// LoadMaxOverMean and LoadCV describe how unevenly requests were spread.
	LoadMaxOverMean float64
	LoadCV          float64
	// HotWaited is the share of the busiest replica's requests (most routed; of those tied,
	// the highest share) that could not start their prefill on arrival in the service model:
	// for random arrivals, the share of time that replica is busy (arrivals see time
	// averages). A request that waited only for its twins (siblings, or the same prompt sent
	// again, while the first of them computes it) is not counted. It is
	// what HotSpot asks of an imbalance before calling it a hot spot.
	HotWaited float64
	// QueueMean and QueueMax: requests ahead of an arriving request at its replica.
	QueueMean float64
	QueueMax  int
	// Makespan is the time from the first arrival to the last request's end, in seconds: the
	// requests over it are the throughput a fleet kept up (under overload, the rate its
	// replicas could serve).
	Makespan float64
	// TTFTP50 and TTFTP99 are the TTFT proxy (queueing plus uncached prefill), in seconds.
	TTFTP50 float64
	TTFTP99 float64
	// DuplicateBlocks is the number of extra copies of blocks held by more than one replica at
	// the end of the run; DuplicateFraction relates it to all cached blocks.
	DuplicateBlocks   int64
	DuplicateFraction float64
	// Evictions counts blocks evicted from replica caches.
	Evictions int64
	// Uncacheable counts computed blocks that could not be cached because every slot was pinned.
	Uncacheable int64
	// FreshShare is the share of requests the added replica received after it joined, when
	// Config.AddReplicaAt is set; a fair share is 1/(Replicas+1).
	FreshShare *float64
}

// Simulate replays the trace through one fleet under one policy: an idealised one (Policies)
// or one of emulations (the router emulations the caller may name; internal/router lists them).
func Simulate(t *Trace, c Config, policyName string, emulations ...PolicyInfo) (Result, error) {
	info, err := lookup(policyName, emulations)
	if err != nil {
		return Result{}, err
	}
	res, _, err := simulateInfo(t, c, info, false, nil)
	return res, err
}

// SimulatePolicy replays the trace through one fleet under the policy info describes (a router
// emulation with its settings), stopping with ctx's error when ctx ends, looking at it every few
// thousand requests: a replay of millions of requests takes minutes.
func SimulatePolicy(ctx context.Context, t *Trace, c Config, info PolicyInfo) (Result, error) {
	res, _, err := simulateInfo(t, c, info, false, &watch{ctx: ctx, routed: new(atomic.Int64)})
	return res, err
}

// SimulateRoutes is SimulatePolicy that also returns every request's route, in the order the
// requests were sent (siblings next to each other), for tests and small traces: it keeps 64
// bytes a request sent (RouteSpool keeps them on disk instead).
func SimulateRoutes(ctx context.Context, t *Trace, c Config, info PolicyInfo) (Result, []Route, error) {
	res, jobs, err := simulateInfo(t, c, info, true, &watch{ctx: ctx, routed: new(atomic.Int64)})
	if err != nil {
		return Result{}, nil, err
	}
	routes := make([]Route, len(jobs))
	for k := range jobs {
		j := &jobs[k]
		routes[k] = Route{Request: t.Input(j.index), Sibling: j.sibling, Replica: j.rep, PromptTokens: j.req.InputTokens, CachedTokens: j.hit * t.BlockSize, Reason: j.reason}
	}
	return res, routes, nil
}

// simulate is Simulate that also returns every job, for tests to check routes and hits.
func simulate(t *Trace, c Config, policyName string, emulations ...PolicyInfo) (Result, []Job, error) {
	info, err := lookup(policyName, emulations)
	if err != nil {
		return Result{}, nil, err
	}
	return simulateInfo(t, c, info, true, nil)
}

// watch lets a sweep follow and stop a simulation: routed counts requests routed across the
// sweep's simulations, and ctx ends one early.
type watch struct {
	ctx    context.Context
	routed *atomic.Int64
}

// watchEvery is how many requests a simulation routes between looks at its watch.
const watchEvery = 1 << 12

// lookup finds the policy or emulation named, or says what to name instead.
func lookup(name string, emulations []PolicyInfo) (PolicyInfo, error) {
	info, ok := lookupIn(name, emulations)
	if !ok {
		return PolicyInfo{}, fmt.Errorf("unknown policy %q: use one of %s", name, strings.Join(everyName(emulations), ", "))
	}
	return info, nil
}

// simulateInfo replays the trace under the policy info describes; tests give it policies of
// their own (second models of an emulation) that no list holds.
func simulateInfo(t *Trace, c Config, info PolicyInfo, record bool, w *watch) (Result, []Job, error) {
	return simulateWith(t, c, info, record, w, nil)
}

// simulateWith is simulateInfo that writes every route to routes, when not nil.
func simulateWith(t *Trace, c Config, info PolicyInfo, record bool, w *watch, routes *routeLog) (Result, []Job, error) {
	if err := c.validate(); err != nil {
		return Result{}, nil, err
	}
	policyName := info.Name
	if err := needsView(info, t); err != nil {
		return Result{}, nil, err
	}
	if info.Check != nil {
		if err := info.Check(c, t); err != nil {
			return Result{}, nil, err
		}
	}
	if t.BlockSize <= 0 {
		return Result{}, nil, fmt.Errorf("trace %s: block size %d", t.Name, t.BlockSize)
	}
	t.intern()
	n := 0
	for i := range t.Requests {
		n += siblings(&t.Requests[i], c)
	}
	if limit := cmp.Or(t.maxRequests, MaxRequests); n > limit {
		// Every request sent keeps its TTFT (8 bytes) to the end of the run. --n is named only
		// when it was given: assess, which has no such flag, sends the requests' own n.
		whose, lower := "the requests' own n", ""
		if c.Siblings > 1 {
			whose, lower = "--n, and the requests' own n", "lower --n, "
		}
		return Result{}, nil, fmt.Errorf("trace %s: %d requests with their siblings (%s), more than the %d a simulation sends: raise the limit with --max-trace-requests if the machine has the memory (8 bytes a request sent, about 100 a request waiting), %sor simulate a part of the trace", t.Name, n, whose, limit, lower)
	}
	f := newPool(c, t.BlockSize, t.distinct, info.ReadsIndex)
	p := info.New(c, t.BlockSize)
	if o, ok := p.(Observer); ok {
		f.obs = o
	}
	f.tally.ttft = make([]float64, 0, n)
	if record {
		f.tally.records = make([]Job, n)
	}
	f.routes = routes
	added := c.AddReplicaAt < 0
	freshFrom, afterAdd, sent := 0, 0, 0
	var (
		loaded     Request
		loadedView View
		textBuf    []byte
	)
	for i := range t.Requests {
		r := &t.Requests[i]
		for sib := range siblings(r, c) {
			if !added && r.Arrival >= c.AddReplicaAt {
				f.advance(c.AddReplicaAt)
				f.addReplica()
				added = true
				freshFrom = len(f.reps) - 1
			}
			f.advance(r.Arrival)
			j := f.pool.get()
			*j = Job{seq: sent, index: i, sibling: sib, req: r, ids: t.blockIDs(i), arrival: r.Arrival, steady: r.Arrival >= c.MeasureFrom && i >= c.MeasureFromRequest}
			sent++
			if info.NeedsText && r.View != nil && r.View.Stored != nil {
				// The text the router reads, back from the log's text file for this
				// route only: the router keeps what it needs of it (its tree copies).
				v, err := r.View.withText(&loadedView, &textBuf)
				if err != nil {
					return Result{}, nil, fmt.Errorf("trace %s: %w", t.Name, err)
				}
				loaded = *r
				loaded.View = v
				j.req = &loaded
			}
			j.rep, j.reason = p.Route(f, j)
			j.req = r
			if f.err != nil {
				return Result{}, nil, fmt.Errorf("trace %s: policy %s: %w", t.Name, policyName, f.err)
			}
			if j.rep < 0 || j.rep >= f.Size() {
				return Result{}, nil, fmt.Errorf("policy %s routed to replica %d of %d", policyName, j.rep, f.Size())
			}
			if added && c.AddReplicaAt >= 0 {
				afterAdd++
			}
			f.arrive(j, r.Arrival)
			if w != nil && sent%watchEvery == 0 {
				w.routed.Add(watchEvery)
				if err := w.ctx.Err(); err != nil {
					return Result{}, nil, err
				}
			}
		}
	}
	if w != nil {
		w.routed.Add(int64(sent % watchEvery))
	}
	f.advance(math.Inf(1))
	if routes != nil {
		routes.sent = sent
	}

	s := &f.tally
	res := Result{Policy: policyName, Replicas: c.Replicas, KVBlocks: c.KVBlocks, Requests: s.jobs}
	res.InputTokens = s.inputTokens
	res.HitTokens = s.hitBlocks * int64(t.BlockSize)
	res.BlockRefs = s.blockRefs
	res.HitBlocks = s.hitBlocks
	res.SteadyInputTokens = s.steadyInputTokens
	res.SteadyHitTokens = s.steadyHitBlocks * int64(t.BlockSize)
	res.QueueMax = s.queueMax
	if len(t.Requests) > 0 && s.jobs > 0 {
		res.Makespan = s.lastDone - t.Requests[0].Arrival
	}
	if res.InputTokens > 0 {
		res.HitRate = float64(res.HitTokens) / float64(res.InputTokens)
	}
	if res.BlockRefs > 0 {
		res.BlockHitRate = float64(res.HitBlocks) / float64(res.BlockRefs)
	}
	if s.jobs > 0 {
		res.QueueMean = float64(s.queueSum) / float64(s.jobs)
	}
	slices.Sort(s.ttft)
	res.TTFTP50, res.TTFTP99 = quantile(s.ttft, 0.50), quantile(s.ttft, 0.99)

	res.PerReplica = make([]int, f.Size())
	var cached int64
	for i := range f.reps {
		res.PerReplica[i] = f.reps[i].routed
		res.Evictions += f.reps[i].cache.evicted
		cached += int64(f.reps[i].cache.used)
	}
	res.LoadMaxOverMean, res.LoadCV = spread(res.PerReplica)
	most := 0
	for i := range f.reps {
		r := &f.reps[i]
		if r.routed == 0 || r.routed < most {
			continue
		}
		share := float64(r.waited) / float64(r.routed)
		if r.routed > most {
			most, res.HotWaited = r.routed, share
		} else {
			res.HotWaited = max(res.HotWaited, share)
		}
	}
	res.DuplicateBlocks = f.duplicates()
	if cached > 0 {
		res.DuplicateFraction = float64(res.DuplicateBlocks) / float64(cached)
	}
	res.Uncacheable = f.uncacheable
	if c.AddReplicaAt >= 0 && added && afterAdd > 0 {
		s := float64(f.reps[freshFrom].routed) / float64(afterAdd)
		res.FreshShare = &s
	}
	return res, s.records, nil
}

func siblings(r *Request, c Config) int {
	return max(1, r.N, c.Siblings)
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// spread returns max/mean and the coefficient of variation of per-replica counts.
func spread(xs []int) (maxOverMean, cv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var sum, mx float64
	for _, x := range xs {
		sum += float64(x)
		mx = max(mx, float64(x))
	}
	mean := sum / float64(len(xs))
	if mean == 0 {
		return 0, 0
	}
	var ss float64
	for _, x := range xs {
		d := float64(x) - mean
		ss += d * d
	}
	return mx / mean, math.Sqrt(ss/float64(len(xs))) / mean
}

// Sweep is a grid of fleets and policies to simulate on one trace.
type Sweep struct {
	Replicas []int
	KVBlocks []int
	Policies []string
	// Emulations are the router emulations Policies may name besides the idealised policies,
	// each with the settings it runs with, in the order results are shown (internal/router
	// builds them).
	Emulations []PolicyInfo
	// Base holds everything but Replicas and KVBlocks.
	Base Config
	// Watch, when not nil, is called from one goroutine of Run's about every Tick (a second
	// when 0) while the sweep runs, and once at the end, with how far it has got.
	Watch func(Progress)
	Tick  time.Duration
	// Routes, when not nil, is given every replay's routes once the sweep has run, in the
	// order of the results (simulate --routes); a replay that cannot run gives none.
	Routes RouteWriter
}

// Progress is how far a sweep has got. Requests count every request routed, siblings included,
// over all of the sweep's simulations: the figure an ETA comes from, since simulations of one
// sweep differ in cost (a larger fleet costs more per request for prefix-aware policies).
type Progress struct {
	Simulations, SimulationsDone int
	Requests, RequestsRouted     int64
	Elapsed                      time.Duration
}

// Run simulates every point of the sweep, in parallel, and returns results ordered by kv
// blocks, replicas, then policy in the order of Policies. The baseline policy (round-robin) is
// always simulated and returned, asked for or not: savings and hot spots are measured against
// it. progress, when not nil, is called after each simulation with the number done and
// the total. An emulation that cannot run on the trace makes Run return its *CannotRunError;
// RunReport reports it instead and shows the rest.
func Run(ctx context.Context, t *Trace, s Sweep, progress func(done, total int)) ([]Result, error) {
	results, cannot, err := run(ctx, t, s, progress)
	if err == nil && len(cannot) > 0 {
		return nil, cannot[0]
	}
	return results, err
}

// run is Run that leaves out the policies that cannot run on the trace (an emulation reading
// the request's text on a trace of block hashes, a router refusing its settings) and returns
// why, once per policy and reason, in the order of the sweep's policies.
func run(ctx context.Context, t *Trace, s Sweep, progress func(done, total int)) ([]Result, []*CannotRunError, error) {
	baseline := ""
	for _, p := range Policies() {
		if p.Baseline {
			baseline = p.Name
		}
	}
	t.intern() // once, before the workers share the trace
	policies := slices.Clone(s.Policies)
	if !slices.Contains(policies, baseline) {
		policies = append(policies, baseline)
	}
	order := everyName(s.Emulations)
	slices.SortStableFunc(policies, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	infos := make([]PolicyInfo, len(policies))
	for k, name := range policies {
		info, err := lookup(name, s.Emulations)
		if err != nil {
			return nil, nil, err
		}
		infos[k] = info
	}
	type point struct{ replicas, kv, pol int }
	var points []point
	for ki := range s.KVBlocks {
		for ri := range s.Replicas {
			for pi := range policies {
				points = append(points, point{ri, ki, pi})
			}
		}
	}
	results := make([]Result, len(points))
	errs := make([]error, len(points))
	// Larger fleets first: with one worker per core, the long simulations start early and the
	// short ones fill in at the end.
	feed := make([]int, len(points))
	for k := range feed {
		feed[k] = k
	}
	slices.SortStableFunc(feed, func(a, b int) int {
		return s.Replicas[points[b].replicas] - s.Replicas[points[a].replicas]
	})
	perSim := int64(0)
	for i := range t.Requests {
		perSim += int64(siblings(&t.Requests[i], s.Base))
	}
	w := &watch{ctx: ctx, routed: new(atomic.Int64)}
	var finished atomic.Int64
	start := time.Now()
	stopWatch := make(chan struct{})
	var watcher sync.WaitGroup
	if s.Watch != nil {
		tick := s.Tick
		if tick <= 0 {
			tick = time.Second
		}
		watcher.Go(func() {
			tk := time.NewTicker(tick)
			defer tk.Stop()
			for {
				select {
				case <-tk.C:
					s.Watch(Progress{Simulations: len(points), SimulationsDone: int(finished.Load()),
						Requests: perSim * int64(len(points)), RequestsRouted: w.routed.Load(), Elapsed: time.Since(start)})
				case <-stopWatch:
					return
				}
			}
		})
	}
	var spool *RouteSpool
	var logs []*routeLog
	if s.Routes != nil {
		var err error
		if spool, err = NewRouteSpool(t, s.Base); err != nil {
			return nil, nil, err
		}
		defer spool.Close()
		logs = make([]*routeLog, len(points))
		for k := range logs {
			logs[k] = spool.log(t, k)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(runtime.GOMAXPROCS(0), len(points)) {
		wg.Go(func() {
			for k := range work {
				pt := points[k]
				c := s.Base
				c.Replicas, c.KVBlocks = s.Replicas[pt.replicas], s.KVBlocks[pt.kv]
				if logs == nil {
					results[k], _, errs[k] = simulateInfo(t, c, infos[pt.pol], false, w)
				} else if results[k], _, errs[k] = simulateWith(t, c, infos[pt.pol], false, w, logs[k]); errs[k] == nil {
					errs[k] = logs[k].close()
				}
				finished.Add(1)
				if progress != nil {
					mu.Lock()
					done++
					progress(done, len(points))
					mu.Unlock()
				}
			}
		})
	}
next:
	for _, k := range feed {
		select {
		case work <- k:
		case <-ctx.Done():
			break next
		}
	}
	close(work)
	wg.Wait()
	close(stopWatch)
	watcher.Wait()
	if s.Watch != nil {
		s.Watch(Progress{Simulations: len(points), SimulationsDone: int(finished.Load()),
			Requests: perSim * int64(len(points)), RequestsRouted: w.routed.Load(), Elapsed: time.Since(start)})
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("simulation interrupted: %w", err)
	}
	var cannot []*CannotRunError
	skip := make([]bool, len(points))
	for k, err := range errs {
		var ce *CannotRunError
		switch {
		case errors.As(err, &ce):
			skip[k] = true
			if !slices.ContainsFunc(cannot, func(c *CannotRunError) bool { return *c == *ce }) {
				cannot = append(cannot, ce)
			}
		case err != nil:
			return nil, nil, err
		}
	}
	slices.SortStableFunc(cannot, func(a, b *CannotRunError) int {
		return slices.Index(policies, a.Policy) - slices.Index(policies, b.Policy)
	})
	// Fill in savings against the baseline of the same fleet.
	base := map[[2]int]int64{}
	for _, r := range results {
		if r.Policy == baseline {
			base[[2]int{r.Replicas, r.KVBlocks}] = r.InputTokens - r.HitTokens
		}
	}
	out := make([]Result, 0, len(results))
	for k, r := range results {
		if skip[k] {
			continue
		}
		if b := base[[2]int{r.Replicas, r.KVBlocks}]; b > 0 {
			r.PrefillSaved = float64(b-(r.InputTokens-r.HitTokens)) / float64(b)
		}
		out = append(out, r)
		if s.Routes != nil {
			run := logs[k].run(r.Policy, Config{Replicas: r.Replicas, KVBlocks: r.KVBlocks})
			run.Variant, run.Label = infos[points[k].pol].variant()
			if err := s.Routes.WriteRun(run); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, cannot, nil
}
