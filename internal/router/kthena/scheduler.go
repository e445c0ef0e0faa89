package kthena

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// schedulerInfo is kthena-router with settings s.
func schedulerInfo(s Settings) sim.PolicyInfo {
	var parts []string
	for _, p := range s.Score {
		parts = append(parts, fmt.Sprintf("%s x%d", p.Name, p.Weight))
	}
	return sim.PolicyInfo{
		Name: "kthena-router",
		About: fmt.Sprintf("Kthena router's scheduler as configured: pods with fewer than %d waiting requests, the highest sum of %s (prefix-cache: %d-byte blocks of a ChatML rendering, top %d pods); ties at random",
			s.MaxWaiting, strings.Join(parts, " + "), s.BlockSize, s.TopK),
		Family:    sim.FamilyKV,
		Product:   display,
		Source:    "volcano-sh/kthena@3cc0572 pkg/kthena-router/scheduler/scheduler_impl.go:119-294, plugins/{least_request,gpu,least_latency,prefix_cache,random}.go, plugins/cache/prefix_store.go, datastore/store.go:50-100,600-640, backend/metrics/metrics.go:68-96, router/router.go:300-330,845-890, utils/utils.go:45-195",
		NeedsText: true,
		Reasons:   []string{"prefix-match", "load-over-prefix", "no-match", "all-filtered"},
		// The random plugin adds a draw to every pod's score; without it the draw only breaks ties.
		Draws: slices.ContainsFunc(s.Score, func(p Plugin) bool { return p.Name == "random" && p.Weight > 0 }),
		Check: check(s),
		New: func(c sim.Config, _ int) sim.Policy {
			return &scheduler{s: s, decode: c.Model.DecodePerToken, draws: rand.New(rand.NewPCG(c.Seed, drawStream)),
				store: newPrefixStore(s.CacheSize), pending: map[int]pendingAdd{}, tick: -1,
				seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
		},
	}
}

// drawStream is the PCG stream of the scheduler's random draws (Go's map order and math/rand
// upstream), so that a second model can draw the same numbers in the same order.
const drawStream = 0x6b7468656e61 // "kthena"

// check refuses what the router refuses: a completion whose prompt is not a string (ParsePrompt
// answers 404, utils.go:45-53; router.go:318-323), settings the router does not start with
// (least-latency's weight factor outside [0, 1], conf.go:177-183), and a scheduler with no
// score plugin: every request then finds no pod and gets 503 (scheduler_impl.go:275-294,
// router.go:890).
func check(s Settings) func(sim.Config, *sim.Trace) error {
	return func(_ sim.Config, t *sim.Trace) error {
		refuse := func(why string) error {
			return &sim.CannotRunError{Policy: "kthena-router", Trace: t.Name, Reason: why}
		}
		if len(s.Score) == 0 {
			return refuse("no score plugin is enabled: the scheduler ranks no pod and every request gets 503")
		}
		if !(s.TTFTWeight >= 0 && s.TTFTWeight <= 1) {
			return refuse(fmt.Sprintf("least-latency TTFTTPOTWeightFactor %v: the router refuses to start (want 0 to 1)", s.TTFTWeight))
		}
		if s.BlockSize < 1 || s.MaxBlocks < 1 || s.CacheSize < 1 || s.TopK < 1 || !(s.ScrapeSecs > 0) {
			return refuse("prefix-cache's blockSizeToHash, maxBlocksToMatch, maxHashCacheSize and topKMatches, and the scrape interval, must be above 0")
		}
		lists := 0
		for i := range t.Requests {
			if v := t.Requests[i].View; v != nil && !v.Chat && (v.PromptIDs > 0 || v.BatchLeft > 0) {
				lists++
			}
		}
		if lists > 0 {
			return refuse(fmt.Sprintf("%d of %d requests are completions whose prompt is a list (token ids or a batch): the router reads prompt as a string and answers them 404; simulate the log without them", lists, len(t.Requests)))
		}
		return nil
	}
}

// prompt is the string the prefix-cache plugin hashes (GetPromptString, utils.go:183-195): a
// completion's prompt; for a chat, each message rendered "<|im_start|><role>\n<content>
// <|im_end|>\n", its content the string, or a list's text parts (type text, input_text,
// output_text or none) joined with newlines; a message whose content is null, missing or a list
// without text is left out (ParsePrompt, utils.go:55-94, 150-181).
func prompt(v *sim.View) string {
	if !v.Chat {
		return v.Text
	}
	var b strings.Builder
	msg, start := -1, 0
	var content []string
	keep := false
	flush := func() {
		if keep && msg < len(v.Roles) {
			b.WriteString("<|im_start|>" + v.Roles[msg] + "\n" + strings.Join(content, "\n") + "<|im_end|>\n")
		}
	}
	for _, p := range v.Pieces {
		run := v.Text[start:p.End]
		start = int(p.End)
		switch p.Kind {
		case sim.PieceString, sim.PieceList, sim.PieceNull, sim.PieceAbsent:
			if msg >= 0 {
				flush()
			}
			msg++
			content, keep = content[:0], p.Kind == sim.PieceString
			if keep {
				content = append(content, run)
			}
		case sim.PiecePartText, sim.PiecePartOther:
			content, keep = append(content, run), true
		}
	}
	if msg >= 0 {
		flush()
	}
	return b.String()
}

// blockKeys are hashPrompt's blocks (prefix_cache.go:227-279): the prompt in blocks of size
// bytes, the last one partial, at most max of them; block i's key stands for the prompt up to
// the block's end (upstream chains xxhash over the model name, the previous key in base 10 and
// the block). Only equality matters to routing, so kvcheck keys the text up to the block's end
// by two 64-bit hashes of independent seeds (seeds): two different prefixes share a key with a
// chance of 2^-128, where upstream's one 64-bit chain has 2^-64. A key holds no part of the
// prompt, which is garbage once routed.
func blockKeys(p string, size, max int, seeds *[2]maphash.Seed) []blockKey {
	if p == "" {
		return nil
	}
	var h [2]maphash.Hash
	h[0].SetSeed(seeds[0])
	h[1].SetSeed(seeds[1])
	var out []blockKey
	for from, end := 0, size; len(out) < max; from, end = end, end+size {
		b := p[from:min(end, len(p))]
		h[0].WriteString(b)
		h[1].WriteString(b)
		out = append(out, blockKey{h[0].Sum64(), h[1].Sum64()})
		if end >= len(p) {
			break
		}
	}
	return out
}

// blockKey stands for a prompt up to a block's end (blockKeys).
type blockKey [2]uint64

// scheduler is Kthena's router scheduling a request for a model server whose pods are the
// replicas (SchedulerImpl.Schedule, scheduler_impl.go:119-203, and the proxy loop,
// router.go:845-890). For each request:
//
//  1. The pods' metrics as the router last scraped them: every METRICS_SCRAPE_INTERVAL (1 s),
//     from t = 0, each pod's vllm:num_requests_waiting, num_requests_running and
//     kv_cache_usage_perc, and its TTFT and TPOT as the mean of the histogram's observations
//     since the scrape before (LastPeriodAvg; a period without any keeps the last value; the
//     first scrape reads none). kvcheck samples the gauges at the first request at or after a
//     scrape's tick; a TTFT observation is a request's first token, a TPOT one each token after
//     it (the model's decode time per token).
//  2. Filter (least-request, least_request.go:66-70): pods with fewer than maxWaitingRequests
//     waiting. None left: the router answers 400; kvcheck sends the request to the pod with the
//     fewest waiting (the lowest first) so that the run goes on, and names it all-filtered.
//  3. Scores, each 0-100 and summed with the plugins' weights (RunScorePlugins,
//     scheduler_impl.go:225-267):
//     - least-request (least_request.go:72-95): base = in flight + 100 x max(in flight -
//     running, 0), in flight being the router's own count (live), running the scrape;
//     score (max base - base) / max base x 100, 100 when every base is 0;
//     - gpu-usage (gpu.go): (1 - KV usage) x 100;
//     - least-latency (least_latency.go): 50 for a pod without both TTFT and TPOT yet; else
//     TTFTTPOTWeightFactor x 100 (max TTFT - TTFT) / (max - min) + the rest x the same of
//     TPOT (100 when all equal), over the pods that have both;
//     - prefix-cache (prefix_cache.go:172-207; prefix_store.go:139-193): for each pod among
//     the first topKMatches found walking the prompt's blocks from the last back, the
//     blocks up to the deepest it holds over the prompt's blocks x 100; none for an empty
//     prompt;
//     - random (random.go): Intn(101) for each pod.
//     Each score is truncated to a whole number.
//  4. The pod with the highest sum (TopNPodInfos sorts by score; ties fall in map order:
//     kvcheck draws among them).
//  5. When the request ends, the prompt's blocks are added for that pod (PostSchedule runs
//     after the proxy returns, router.go:883-888): a pod's blocks sit in its own LRU of
//     maxHashCacheSize, added last block first; a block leaving a pod's LRU leaves the pod's
//     set for that block.
//
// Random draws (the policy's PCG): the random plugin's scores, pod by pod; when more pods hold a
// block than the topK left, a Fisher-Yates shuffle of them (in replica order, from the last,
// IntN(i+1)) and the first ones; one IntN among the pods tied for the highest sum (in replica
// order). Plugins score in the order the configuration lists them. Memory: each pod's LRU of at
// most maxHashCacheSize blocks (16 bytes of key each, at most about 100 bytes with the LRU's
// node and map entry), the keys of the requests in flight (at most maxBlocksToMatch each), and
// the TTFT observations of the current scrape period; no prompt outlives its route.
//
// Reasons: prefix-match (the pod chosen matches as much as any), load-over-prefix (another pod
// matched more), no-match (no pod matched or no prefix-cache plugin), all-filtered.
type scheduler struct {
	s      Settings
	decode float64
	draws  *rand.Rand
	store  *prefixStore
	seeds  [2]maphash.Seed // blockKeys'

	tick                    int // the last scrape tick processed
	waiting, running, usage []float64
	ttft, tpot              []float64
	obs                     []observation // TTFT and TPOT observations not yet scraped
	pending                 map[int]pendingAdd
	score, prefix, base     []float64
	cands                   []int
}

// observation is what a pod's histograms gain at a time: count TTFT or TPOT samples summing to
// sum.
type observation struct {
	rep   int
	at    float64
	tpot  bool
	sum   float64
	count int
}

type pendingAdd struct {
	keys []blockKey
	rep  int
}

// grow gives a replica that joined zero metrics, as a pod the router has not scraped yet.
func (p *scheduler) grow(n int) {
	for len(p.waiting) < n {
		p.waiting = append(p.waiting, 0)
		p.running = append(p.running, 0)
		p.usage = append(p.usage, 0)
		p.ttft = append(p.ttft, 0)
		p.tpot = append(p.tpot, 0)
	}
}

// scrape runs the scrapes whose ticks have come by now: the gauges as they are now, and each
// pod's TTFT and TPOT from its observations in the latest scrape period that had any (a period
// ends at its tick; the first scrape, at t = 0, takes none).
func (p *scheduler) scrape(f *sim.Pool, now float64) {
	k := int(math.Floor(now / p.s.ScrapeSecs))
	if k <= p.tick {
		return
	}
	p.tick = k
	for i := range f.Size() {
		p.waiting[i] = float64(f.Waiting(i))
		p.running[i] = float64(f.InFlight(i) - f.Waiting(i))
		p.usage[i] = f.Usage(i)
	}
	type period struct {
		tick       int
		sum        float64
		count      int
		tpot, seen bool
	}
	last := map[[2]int]period{} // (rep, tpot) -> its latest period's totals
	rest := p.obs[:0]
	for _, o := range p.obs {
		t := int(math.Ceil(o.at / p.s.ScrapeSecs))
		if t > k {
			rest = append(rest, o)
			continue
		}
		if t == 0 {
			continue
		}
		key := [2]int{o.rep, 0}
		if o.tpot {
			key[1] = 1
		}
		q := last[key]
		if !q.seen || t > q.tick {
			q = period{tick: t, seen: true}
		}
		if t == q.tick {
			q.sum += o.sum
			q.count += o.count
		}
		last[key] = q
	}
	p.obs = rest
	for key, q := range last {
		if key[1] == 1 {
			p.tpot[key[0]] = q.sum / float64(q.count)
		} else {
			p.ttft[key[0]] = q.sum / float64(q.count)
		}
	}
}

// Route implements sim.Policy.
func (p *scheduler) Route(f *sim.Pool, j *sim.Job) (int, string) {
	n := f.Size()
	p.grow(n)
	p.scrape(f, j.Arrival())
	p.cands = p.cands[:0]
	for i := range n {
		if !p.s.filters() || p.waiting[i] < float64(p.s.MaxWaiting) {
			p.cands = append(p.cands, i)
		}
	}
	if len(p.cands) == 0 {
		best := 0
		for i := range n {
			if p.waiting[i] < p.waiting[best] {
				best = i
			}
		}
		return best, "all-filtered"
	}
	p.score = resize(p.score, n)
	p.prefix = resize(p.prefix, n)
	var keys []blockKey
	for _, pl := range p.s.Score {
		w := float64(pl.Weight)
		switch pl.Name {
		case "least-request":
			p.leastRequest(f, w)
		case "gpu-usage":
			for _, i := range p.cands {
				p.score[i] += w * math.Trunc((1-p.usage[i])*100)
			}
		case "least-latency":
			p.leastLatency(w)
		case "prefix-cache":
			keys = blockKeys(prompt(j.Request().View), p.s.BlockSize, p.s.MaxBlocks, &p.seeds)
			if len(keys) > 0 {
				p.matchPrefix(keys, w)
			}
		case "random":
			for _, i := range p.cands {
				p.score[i] += w * float64(p.draws.IntN(101))
			}
		}
	}
	top := math.Inf(-1)
	for _, i := range p.cands {
		top = max(top, p.score[i])
	}
	var tied []int
	for _, i := range p.cands {
		if p.score[i] == top {
			tied = append(tied, i)
		}
	}
	pick := tied[0]
	if len(tied) > 1 {
		pick = tied[p.draws.IntN(len(tied))]
	}
	if len(keys) > 0 {
		p.pending[j.Seq()] = pendingAdd{keys: keys, rep: pick}
	}
	best := 0.0
	for _, i := range p.cands {
		best = max(best, p.prefix[i])
	}
	switch {
	case best == 0:
		return pick, "no-match"
	case p.prefix[pick] == best:
		return pick, "prefix-match"
	}
	return pick, "load-over-prefix"
}

func resize(s []float64, n int) []float64 {
	s = s[:0]
	for range n {
		s = append(s, 0)
	}
	return s
}

// leastRequest adds least-request's scores of the candidates, weighted by w.
func (p *scheduler) leastRequest(f *sim.Pool, w float64) {
	p.base = resize(p.base, f.Size())
	top := 0.0
	for _, i := range p.cands {
		in := float64(f.InFlight(i))
		p.base[i] = in + 100*math.Max(in-p.running[i], 0)
		top = max(top, p.base[i])
	}
	for _, i := range p.cands {
		sc := 100.0
		if top > 0 {
			sc = math.Trunc((top - p.base[i]) / top * 100)
		}
		p.score[i] += w * sc
	}
}

// leastLatency adds least-latency's scores of the candidates, weighted.
func (p *scheduler) leastLatency(w float64) {
	minT, maxT, minP, maxP := math.MaxFloat64, 0.0, math.MaxFloat64, 0.0
	for _, i := range p.cands {
		if p.ttft[i] <= 0 || p.tpot[i] <= 0 {
			continue
		}
		minT, maxT = min(minT, p.ttft[i]), max(maxT, p.ttft[i])
		minP, maxP = min(minP, p.tpot[i]), max(maxP, p.tpot[i])
	}
	for _, i := range p.cands {
		sc := 50.0
		if p.ttft[i] > 0 && p.tpot[i] > 0 {
			st, sp := 100.0, 100.0
			if maxT > minT {
				st = 100 * (maxT - p.ttft[i]) / (maxT - minT)
			}
			if maxP > minP {
				sp = 100 * (maxP - p.tpot[i]) / (maxP - minP)
			}
			sc = math.Trunc(st*p.s.TTFTWeight + sp*(1-p.s.TTFTWeight))
		}
		p.score[i] += w * sc
	}
}

// matchPrefix sets p.prefix to prefix-cache's scores of the candidates and adds them, weighted
// by w.
func (p *scheduler) matchPrefix(keys []blockKey, w float64) {
	matched := 0
	found := make(map[int]bool, p.s.TopK)
	for b := len(keys) - 1; b >= 0 && matched < p.s.TopK; b-- {
		var holders []int
		for _, i := range p.cands {
			if !found[i] && p.store.holds(keys[b], i) {
				holders = append(holders, i)
			}
		}
		if left := p.s.TopK - matched; len(holders) > left {
			for k := len(holders) - 1; k > 0; k-- {
				r := p.draws.IntN(k + 1)
				holders[k], holders[r] = holders[r], holders[k]
			}
			holders = holders[:left]
		}
		for _, i := range holders {
			found[i] = true
			p.prefix[i] = math.Trunc(float64(b+1) / float64(len(keys)) * 100)
			matched++
		}
	}
	for _, i := range p.cands {
		p.score[i] += w * p.prefix[i]
	}
}

// Prefilled implements sim.Observer: the first token is a TTFT observation, and each token
// after it a TPOT one of the model's decode time per token (vLLM observes each gap as its token
// comes; they are all that long here, so they are recorded together at the second token).
func (p *scheduler) Prefilled(j *sim.Job) {
	at := j.Arrival() + j.TTFT()
	p.obs = append(p.obs, observation{rep: j.Replica(), at: at, sum: j.TTFT(), count: 1})
	if out := j.Request().OutputTokens; out >= 2 {
		p.obs = append(p.obs, observation{rep: j.Replica(), at: at + p.decode, tpot: true, sum: p.decode * float64(out-1), count: out - 1})
	}
}

// Finished implements sim.Observer: the prompt's blocks are added for the pod that served it.
func (p *scheduler) Finished(j *sim.Job) {
	if a, ok := p.pending[j.Seq()]; ok {
		p.store.add(a.keys, a.rep)
		delete(p.pending, j.Seq())
	}
}

// prefixStore is ModelPrefixStore (prefix_store.go) for one model: each block's pods, and each
// pod's LRU of its blocks; a block leaving a pod's LRU leaves the block's pods. A pod holds a
// block exactly while the block is in the pod's LRU, so the LRUs alone answer which pods hold
// it (upstream keeps a map of each block's pods beside them).
type prefixStore struct {
	cap int
	lru []*blockLRU
}

type blockLRU struct {
	at         map[blockKey]*lruNode
	head, tail *lruNode // head the most recently added
}

type lruNode struct {
	key        blockKey
	prev, next *lruNode
}

func newPrefixStore(cap int) *prefixStore {
	return &prefixStore{cap: cap}
}

func (s *prefixStore) holds(key blockKey, rep int) bool {
	return rep < len(s.lru) && s.lru[rep].at[key] != nil
}

// add is ModelPrefixStore.Add: the blocks from the last to the first, each into the block's
// pods and to the front of the pod's LRU; past its capacity the pod's least recent block goes.
func (s *prefixStore) add(keys []blockKey, rep int) {
	for len(s.lru) <= rep {
		s.lru = append(s.lru, &blockLRU{at: map[blockKey]*lruNode{}})
	}
	l := s.lru[rep]
	for b := len(keys) - 1; b >= 0; b-- {
		k := keys[b]
		if nd := l.at[k]; nd != nil {
			l.unlink(nd)
			l.front(nd)
			continue
		}
		nd := &lruNode{key: k}
		l.at[k] = nd
		l.front(nd)
		if len(l.at) > s.cap {
			old := l.tail
			l.unlink(old)
			delete(l.at, old.key)
		}
	}
}

func (l *blockLRU) unlink(nd *lruNode) {
	if nd.prev != nil {
		nd.prev.next = nd.next
	} else {
		l.head = nd.next
	}
	if nd.next != nil {
		nd.next.prev = nd.prev
	} else {
		l.tail = nd.prev
	}
	nd.prev, nd.next = nil, nil
}

func (l *blockLRU) front(nd *lruNode) {
	nd.next = l.head
	if l.head != nil {
		l.head.prev = nd
	}
	l.head = nd
	if l.tail == nil {
		l.tail = nd
	}
}
