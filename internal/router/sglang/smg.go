package sglang

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/chartree"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// smgPolicy is cache_aware as smg-project/smg has it @04def28 (model_gateway/src/policies/
// cache_aware.rs, CA below), over kv_index's string and token trees (smg@f8daa88
// crates/kv_index/src/string_tree.rs, ST) and LeastLoadPolicy's expected-wait selector
// (smg@11b1fe0 model_gateway/src/policies/least_load.rs, LL), with the settings of
// Config.Routers.SGLang. For each request, with load the requests the gateway has sent a replica
// and not seen finish (Worker::load) and avg the mean load:
//
//  1. Loads: every LoadIntervalSecs (--load-monitor-interval, 10 s) the gateway polls each
//     worker's load report; the report and a tally of what was sent since are what the
//     expected-wait selector reads (LL, update_loads resets the tally).
//  2. With CacheIndex "hash": smgPolicy.hashRoute (CA select_worker_hash). Otherwise, if the KV
//     triggers fire (the hottest replica's KV usage above OverloadTokenUsage, or hottest minus
//     coldest above BalanceTokenUsage; both off at 1.0), the expected-wait replica takes it
//     and the tree records it (CA is_kv_imbalanced, select_worker_fallback).
//  3. The mode the connection selects (CA select_worker): HTTP, a tree of the request's
//     characters (sglangText); GRPC, a tree of its token pages of BlockSize tokens; with
//     GRPCEvents, overlap with what the engines report holding once they have reported
//     anything (has_event_indexer), the token tree before.
//  4. Tree: one match, then one insert for the replica chosen (ST match_and_insert_with). The
//     match rate is the units matched over the request's, a namespace marker left out of both,
//     in float32. Above CacheThreshold the candidates are the holders of the node the match
//     ends in, at most 8 in their map's order (MATCHED_TENANTS_CAP), each scored 1
//     (select_matched_candidate); otherwise none.
//  5. Events: the candidates are the replicas holding a run of the request's whole blocks from
//     block 0, scored by its length in blocks (overlap_candidates); none: the expected-wait
//     replica.
//  6. Scores are divided by 1 + OverlapDecay x (the candidate's waiting uncached tokens above
//     the least of the candidates', in blocks, over the request's blocks) (apply_overlap_decay);
//     the group of the best score (or, with SelectionTemperature, of a softmax draw) goes on.
//  7. The spill gate (select_final_from_affinity, candidate_requires_spill): a candidate whose
//     load is above avg x BalanceRelThreshold and above avg + BalanceAbsThreshold is passed
//     over. Among the candidates left, the expected-wait replica; when every candidate is
//     gated, the expected-wait replica among the replicas not gated (all of them if none);
//     with no candidate at all, the expected-wait replica of the fleet.
//  8. Expected wait (LL select_min_expected_wait_with_freshness): the replica with the least
//     (queued tokens + tokens sent since the poll) / throughput + 0.15 x k / (1 - k), k its
//     KV usage; queued tokens are the report's waiting uncached tokens, else waiting requests
//     x 1,024; throughput the report's, else 2,000 tokens/s; ties drawn uniformly (smg PR
//     #2096). The winner is credited with the request's tokens (gRPC) or 1,024 (HTTP).
//  9. Every EvictionIntervalSecs the tree loses its least recently used leaves, across
//     replicas, until it holds at most MaxTreeSize units in all (ST evict_tenant_by_size).
//
// What the simulator's fleet stands in for: a load report is read from the replica at the
// first request at or after each poll time (the gateway polls on its own clock): its waiting
// requests (routed, prefill not started), their prompt tokens not in the replica's cache now,
// its KV usage (blocks of requests in flight over its capacity) and its throughput (requests
// decoding / the model's decode time per token). Token pages are made of the trace's blocks:
// exact when BlockSize is a multiple of the trace's block size, otherwise a page is keyed by
// the trace block holding its last token and counts as different whenever that block does.
// The events of a replica are its cache now (the real index lags by the events' latency).
// The tree's epochs count as in the fork (sglangPolicy): the 1-in-8 stamp and the last
// tenant are kept, though they no longer choose the replica. Tenant maps list their holders
// in a pseudo-random order of Config.Seed and the node (sglangFirst).
//
// Checked against the source: steps 1-9 above (CA@04def28 select_worker,
// select_worker_with_text, select_worker_with_tokens, select_worker_event_driven,
// select_worker_hash, select_final_from_affinity, candidate_requires_spill,
// select_matched_candidate, apply_overlap_decay, sample_by_temperature, is_kv_imbalanced,
// live_holder_candidates, record_placement; LL select_min_expected_wait_with_freshness, score,
// queued_tokens, request_tokens; ST match_and_insert_with, finish_match_and_insert,
// matched_tenants, evict_tenant_by_size; cache_namespace.rs@4e80904 text_marker,
// prefixed_tokens, unpartitioned_text), the CLI's defaults (smg@f8daa88
// model_gateway/src/main.rs:238-372, 518-520) and what ConfigValidator refuses (sglangCheck).
// bruteSMG, the second model, is written from the same functions.
//
// Left out:
//   - worker overload vetoes (--worker-overload-*, off by default), max_waiting_requests (0),
//     mesh sync, the PD router, circuit breakers, retries, several models;
//   - the event index keyed by the partition's seed (cache_namespace.rs@4e80904 event_seed):
//     04def28's cache_aware.rs says the event-driven mode is unpartitioned, which is followed;
//   - a batch of prompts is routed as its first (smg joins them with a space).
type smgPolicy struct {
	s         Settings
	seed      uint64
	rng       *rand.Rand
	traceBS   int
	tree      chartree.Tree
	epoch     uint64
	workers   int
	nextEvict float64
	load      smgLoad
	place     map[smgHead][]smgHolder
	keyBuf    []byte
	affinity  []int // the candidates of the last route, for its reason
	cands     []smgCandidate
	group     []int
	tmp       []int
}

func newSMGPolicy(s Settings, c sim.Config, traceBS int) *smgPolicy {
	p := &smgPolicy{s: s, seed: c.Seed, rng: rand.New(rand.NewPCG(c.Seed, 0x736d67)), traceBS: traceBS,
		nextEvict: s.EvictionIntervalSecs, load: smgLoad{interval: s.LoadIntervalSecs}}
	p.tree.StampEnd = true
	if s.Connection == GRPC || s.Connection == GRPCEvents {
		p.tree.Unit = chartree.PageUnit
	}
	if s.CacheIndex == "hash" {
		p.place = map[smgHead][]smgHolder{}
	}
	return p
}

// smgCandidate is a replica and its affinity score.
type smgCandidate struct {
	rep   int
	score float64
}

// The constants of LeastLoadPolicy::new() (least_load.rs: DEFAULT_KV_PRESSURE_WEIGHT,
// DEFAULT_MEAN_PREFILL_TOKENS, DEFAULT_THROUGHPUT) and kv_index's MATCHED_TENANTS_CAP.
const (
	smgKVPressure      = 0.15
	smgMeanPrefill     = 1024
	smgThroughput      = 2000.0
	smgMatchedTenants  = 8
	smgTextMarkerChars = 18 // "\x01" + 16 hex digits + "\x01" (cache_namespace.rs TEXT_MARKER_LEN)
	smgPlacementHolder = 3  // PLACEMENT_HOLDER_CAP
)

func (p *smgPolicy) next() float64 {
	e := p.epoch
	p.epoch++
	return float64(e)
}

func (p *smgPolicy) grpc() bool {
	return p.s.Connection == GRPC || p.s.Connection == GRPCEvents
}

// Route implements Policy. Reasons: prefix-match (a candidate of the match, the events or the
// hash index got it), spill (every candidate was passed over for load: step 7), expected-wait
// (no candidate: a miss, a short or untokenized request), kv-pressure (step 2's triggers).
func (p *smgPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	now := j.Arrival()
	for ; p.workers < f.Size(); p.workers++ {
		if p.place == nil {
			p.next() // add_worker: insert_text("", url)
		}
	}
	if p.s.EvictionIntervalSecs > 0 && now >= p.nextEvict {
		if p.place != nil {
			p.sweep(now)
		} else {
			p.tree.EvictTotal(p.s.MaxTreeSize)
		}
		p.nextEvict = (math.Floor(now/p.s.EvictionIntervalSecs) + 1) * p.s.EvictionIntervalSecs
	}
	p.load.poll(f, now)
	avg := 0.0
	for i := range f.Size() {
		avg += float64(f.InFlight(i))
	}
	avg /= float64(f.Size())
	if p.place != nil {
		return p.why(p.hashRoute(f, j, avg))
	}
	if p.kvImbalanced(f) {
		rep := p.expectedWait(f, j, p.all(f))
		key, _ := p.treeKey(j)
		p.tree.Insert(key, rep, p.next())
		return rep, reasonKVPressure
	}
	if p.s.Connection == GRPCEvents && p.load.anyCached(f) {
		return p.why(p.eventRoute(f, j, avg))
	}
	return p.why(p.treeRoute(f, j, avg))
}

// The reasons of smg's cache_aware besides prefix-match (Route says when each is given).
const (
	reasonSpill        = "spill"
	reasonExpectedWait = "expected-wait"
	reasonKVPressure   = "kv-pressure"
)

// why names the branch of a route: the affinity group it was chosen from (p.affinity) holds
// it, or passed it over, or there was none.
func (p *smgPolicy) why(rep int) (int, string) {
	switch {
	case len(p.affinity) == 0:
		return rep, reasonExpectedWait
	case slices.Contains(p.affinity, rep):
		return rep, sim.ReasonPrefixMatch
	}
	return rep, reasonSpill
}

// treeRoute is select_worker_with_text and select_worker_with_tokens.
func (p *smgPolicy) treeRoute(f *sim.Pool, j *sim.Job, avg float64) int {
	p.affinity = p.affinity[:0]
	key, marker := p.treeKey(j)
	n, matchedBytes := p.tree.Match(key)
	tenant := p.tenant(n)
	if e := p.next(); tenant >= 0 && uint64(e)&7 == 0 {
		n.Stamp(tenant, e)
	}
	// Units matched and in the request, the marker left out (a token tree counts the tokens
	// of whole pages matched against all of the request's tokens).
	matched, input := p.tree.Count(key[:matchedBytes]), p.tree.Count(key)
	if p.grpc() {
		matched, input, marker = matched*p.s.BlockSize, j.Request().InputTokens+marker*p.s.BlockSize, marker*p.s.BlockSize
	}
	matched, input = max(matched-marker, 0), max(input-marker, 0)
	rate := float32(0)
	if input > 0 {
		rate = float32(matched) / float32(input)
	}
	var rep int
	if rate > float32(p.s.CacheThreshold) && matched > 0 {
		p.cands = p.cands[:0]
		for _, h := range p.mapOrder(n) {
			p.cands = append(p.cands, smgCandidate{rep: h, score: 1})
		}
		rep = p.fromAffinity(f, j, avg, input)
	} else {
		rep = p.final(f, j, avg, nil)
	}
	p.tree.Insert(key, rep, p.next())
	return rep
}

// eventRoute is select_worker_event_driven.
func (p *smgPolicy) eventRoute(f *sim.Pool, j *sim.Job, avg float64) int {
	p.affinity = p.affinity[:0]
	bs := f.BlockSize()
	blocks := min(j.Request().InputTokens/bs, len(j.IDs()))
	p.cands = p.cands[:0]
	if blocks > 0 {
		for i := range f.Size() {
			if run := f.CachedRun(i, j.IDs()[:blocks]); run > 0 {
				p.cands = append(p.cands, smgCandidate{rep: i, score: float64(run)})
			}
		}
	}
	if len(p.cands) == 0 {
		return p.expectedWait(f, j, p.all(f))
	}
	p.decay(bs, max(blocks, 1))
	return p.final(f, j, avg, p.scoreGroup())
}

// fromAffinity is select_matched_candidate: units is the request's size the decay compares
// backlogs with (characters over the block size on the text path, as the source does).
func (p *smgPolicy) fromAffinity(f *sim.Pool, j *sim.Job, avg float64, units int) int {
	p.decay(p.s.BlockSize, max(units/p.s.BlockSize, 1))
	return p.final(f, j, avg, p.scoreGroup())
}

// decay is apply_overlap_decay over p.cands.
func (p *smgPolicy) decay(bs, requestBlocks int) {
	if p.s.OverlapDecay <= 0 || !p.load.polled || len(p.cands) == 0 {
		return
	}
	least := int64(math.MaxInt64)
	for _, c := range p.cands {
		if p.load.reports(c.rep) {
			least = min(least, max(p.load.snap[c.rep].waitingUncached, 0))
		}
	}
	if least == math.MaxInt64 {
		return
	}
	for k, c := range p.cands {
		if !p.load.reports(c.rep) { // no data: never decayed
			continue
		}
		excess := float64(max(p.load.snap[c.rep].waitingUncached, 0)-least) / float64(bs)
		p.cands[k].score /= 1 + p.s.OverlapDecay*excess/float64(requestBlocks)
	}
}

// scoreGroup is affinity_score_group: the candidates of the best score, or of the score a
// softmax draw picks at a temperature above 0.
func (p *smgPolicy) scoreGroup() []int {
	p.group = p.group[:0]
	if len(p.cands) == 0 {
		return p.group
	}
	var pick float64
	if t := p.s.SelectionTemperature; t > 0 {
		pick = p.cands[p.sample(t)].score
	} else {
		pick = p.cands[0].score
		for _, c := range p.cands[1:] {
			pick = max(pick, c.score)
		}
	}
	for _, c := range p.cands {
		if c.score == pick {
			p.group = append(p.group, c.rep)
		}
	}
	return p.group
}

// sample is sample_by_temperature: a draw over min-max normalised scores, weights
// exp((normalised - 1) / t); all equal: a uniform draw. It returns an index into p.cands.
func (p *smgPolicy) sample(t float64) int {
	lo, hi := p.cands[0].score, p.cands[0].score
	for _, c := range p.cands {
		lo, hi = min(lo, c.score), max(hi, c.score)
	}
	if hi-lo <= 0 {
		return p.rng.IntN(len(p.cands))
	}
	total := 0.0
	for _, c := range p.cands {
		total += math.Exp(((c.score-lo)/(hi-lo) - 1) / t)
	}
	draw := p.rng.Float64() * total
	cum := 0.0
	for k, c := range p.cands {
		cum += math.Exp(((c.score-lo)/(hi-lo) - 1) / t)
		if cum >= draw {
			return k
		}
	}
	return len(p.cands) - 1
}

// spills is candidate_requires_spill.
func (p *smgPolicy) spills(f *sim.Pool, rep int, avg float64) bool {
	load := float64(f.InFlight(rep))
	return load > avg*float64(float32(p.s.BalanceRelThreshold)) && load > avg+p.s.BalanceAbsThreshold
}

// final is select_final_from_affinity. It keeps the candidates in p.affinity, for why.
func (p *smgPolicy) final(f *sim.Pool, j *sim.Job, avg float64, affinity []int) int {
	p.affinity = append(p.affinity[:0], affinity...)
	p.tmp = p.tmp[:0]
	for _, r := range affinity {
		if !p.spills(f, r, avg) {
			p.tmp = append(p.tmp, r)
		}
	}
	if len(p.tmp) > 0 {
		return p.expectedWait(f, j, p.tmp)
	}
	if len(affinity) == 0 {
		return p.expectedWait(f, j, p.all(f))
	}
	for r := range f.Size() {
		if !p.spills(f, r, avg) {
			p.tmp = append(p.tmp, r)
		}
	}
	if len(p.tmp) == 0 {
		return p.expectedWait(f, j, p.all(f))
	}
	return p.expectedWait(f, j, p.tmp)
}

func (p *smgPolicy) all(f *sim.Pool) []int {
	p.tmp = p.tmp[:0]
	for i := range f.Size() {
		p.tmp = append(p.tmp, i)
	}
	return p.tmp
}

// expectedWait is LeastLoadPolicy's select_min_expected_wait over cands (indices in order):
// the least expected wait (smgLoad.score), ties drawn uniformly (reservoir sampling); the
// winner is credited with the request's tokens. A replica without a report (one added since
// the last poll) scores as the best reporting candidate plus its load x 1,024 tokens at the
// reporting candidates' mean throughput; with none reporting, by its load alone.
func (p *smgPolicy) expectedWait(f *sim.Pool, j *sim.Job, cands []int) int {
	l := &p.load
	reporting, thrSum, thrN := 0, 0.0, 0
	for _, r := range cands {
		if l.reports(r) {
			reporting++
			if t := l.snap[r].throughput; t > 0 {
				thrSum, thrN = thrSum+t, thrN+1
			}
		}
	}
	nominal, baseline := smgThroughput, math.Inf(1)
	if thrN > 0 {
		nominal = thrSum / float64(thrN)
	}
	if reporting < len(cands) {
		for _, r := range cands {
			if l.reports(r) {
				baseline = min(baseline, l.score(r))
			}
		}
	}
	score := func(r int) float64 {
		switch {
		case l.reports(r):
			return l.score(r)
		case reporting > 0:
			return baseline + float64(f.InFlight(r))*smgMeanPrefill/nominal
		}
		return float64(f.InFlight(r))
	}
	best, bestScore, tied := cands[0], score(cands[0]), 1
	for _, r := range cands[1:] {
		s := score(r)
		switch {
		case s < bestScore:
			best, bestScore, tied = r, s, 1
		case s == bestScore:
			tied++
			if p.rng.IntN(tied) == 0 {
				best = r
			}
		}
	}
	tokens := int64(smgMeanPrefill)
	if p.grpc() {
		tokens = int64(j.Request().InputTokens)
	}
	l.credit(best, tokens)
	return best
}

// kvImbalanced is is_kv_imbalanced.
func (p *smgPolicy) kvImbalanced(f *sim.Pool) bool {
	if (p.s.BalanceTokenUsage >= 1 && p.s.OverloadTokenUsage >= 1) || !p.load.polled {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range min(f.Size(), p.load.reported) {
		lo, hi = min(lo, p.load.snap[i].usage), max(hi, p.load.snap[i].usage)
	}
	return hi > float64(float32(p.s.OverloadTokenUsage)) || hi-lo > float64(float32(p.s.BalanceTokenUsage))
}

// tenant is the tenant a match names (last_tenant, or the first holder in map order once it is
// stale), -1 at the root.
func (p *smgPolicy) tenant(n *chartree.Node) int {
	return n.Tenant(func(salt uint64, rep int) uint64 { return sglangFirst(salt, p.seed, rep) })
}

// mapOrder lists n's holders in its map's order (sglangFirst), at most smgMatchedTenants.
func (p *smgPolicy) mapOrder(n *chartree.Node) []int {
	p.group = n.Holders(p.group[:0])
	salt := n.Salt()
	slices.SortFunc(p.group, func(a, b int) int {
		ra, rb := sglangFirst(salt, p.seed, a), sglangFirst(salt, p.seed, b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	if len(p.group) > smgMatchedTenants {
		p.group = p.group[:smgMatchedTenants]
	}
	return p.group
}

// treeKey is the request's key in the tree and the units of its namespace marker: the text
// (HTTP) or its whole token pages, each 8 bytes (gRPC), with a marker of its cache namespace
// at its head (CA select_worker_with_text and _with_tokens; cache_namespace.rs).
func (p *smgPolicy) treeKey(j *sim.Job) (string, int) {
	ns := j.Request().View.Partition
	if !p.grpc() {
		text := strings.TrimLeft(sglangText(j.Request().View), "\x01")
		if ns == "" {
			return text, 0
		}
		return fmt.Sprintf("\x01%016x\x01", partitionHash(ns)) + text, smgTextMarkerChars
	}
	p.keyBuf = p.keyBuf[:0]
	marker := 0
	if ns != "" {
		p.keyBuf = binary.LittleEndian.AppendUint64(p.keyBuf, partitionHash(ns)|1<<63)
		marker = 1
	}
	pages := min(j.Request().InputTokens, len(j.IDs())*p.traceBS) / p.s.BlockSize
	for k := range pages {
		p.keyBuf = binary.LittleEndian.AppendUint64(p.keyBuf, tokenKey(j.IDs(), p.traceBS, (k+1)*p.s.BlockSize)&^(1<<63))
	}
	return string(p.keyBuf), marker
}

// tokenKey keys the request's first end tokens with the trace block holding token end-1 and
// end: the same key for the same first end tokens whenever end ends a trace block (the blocks'
// keys are chains), and different ones whenever that block differs.
func tokenKey(ids []int32, traceBS, end int) uint64 {
	return uint64(uint32(ids[(end-1)/traceBS]))<<32 | uint64(uint32(end))
}

// partitionHash is a 64-bit hash of a request's cache partition (View.Partition).
func partitionHash(ns string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(ns))
	return h.Sum64()
}

// smgHead is a hash-index key: a boundary and the request's head up to it.
type smgHead struct {
	boundary int
	head     uint64
}

// smgHolder is a replica that was sent a head, and when (PlacementHolder).
type smgHolder struct {
	rep int
	at  float64
}

// hashRoute is select_worker_hash: the request's token heads at the configured boundaries,
// deepest first, in a map to the replicas last sent each (at most 3, each live for
// CacheTTLSecs). HTTP requests carry no tokens: always the expected-wait replica.
func (p *smgPolicy) hashRoute(f *sim.Pool, j *sim.Job, avg float64) int {
	p.affinity = p.affinity[:0]
	now := j.Arrival()
	tokens := min(j.Request().InputTokens, len(j.IDs())*p.traceBS)
	if !p.grpc() || tokens == 0 {
		return p.expectedWait(f, j, p.all(f))
	}
	applicable := 0
	for applicable < len(p.s.CacheBoundaries) && p.s.CacheBoundaries[applicable] <= tokens {
		applicable++
	}
	bounds := p.s.CacheBoundaries[:applicable]
	if len(bounds) == 0 {
		return p.expectedWait(f, j, p.all(f))
	}
	ns := uint64(0)
	if j.Request().View != nil && j.Request().View.Partition != "" {
		ns = partitionHash(j.Request().View.Partition)
	}
	head := func(b int) smgHead { return smgHead{b, sim.Mix64(tokenKey(j.IDs(), p.traceBS, b) ^ ns)} }
	if !p.kvImbalanced(f) {
		for k := len(bounds) - 1; k >= 0; k-- {
			hs := p.live(head(bounds[k]), now)
			var live []int
			for _, h := range hs {
				if h.rep < f.Size() {
					live = append(live, h.rep)
				}
			}
			if len(live) == 0 {
				continue
			}
			rep := p.final(f, j, avg, live)
			p.record(bounds, head, rep, now)
			return rep
		}
	}
	rep := p.expectedWait(f, j, p.all(f))
	p.record(bounds, head, rep, now)
	return rep
}

// live is live_holder_candidates: the key's holders sent it within the TTL, the others
// pruned.
func (p *smgPolicy) live(k smgHead, now float64) []smgHolder {
	hs, ok := p.place[k]
	if !ok {
		return nil
	}
	hs = slices.DeleteFunc(hs, func(h smgHolder) bool { return now-h.at > p.s.CacheTTLSecs })
	p.place[k] = hs
	return hs
}

// record is record_placement: at every applicable boundary, rep is touched, or added, the
// stalest of 3 holders making room (swap_remove).
func (p *smgPolicy) record(bounds []int, head func(int) smgHead, rep int, now float64) {
	for _, b := range bounds {
		k := head(b)
		hs := slices.DeleteFunc(p.place[k], func(h smgHolder) bool { return now-h.at > p.s.CacheTTLSecs })
		if i := slices.IndexFunc(hs, func(h smgHolder) bool { return h.rep == rep }); i >= 0 {
			hs[i].at = now
			p.place[k] = hs
			continue
		}
		if len(hs) >= smgPlacementHolder {
			stalest := 0
			for i, h := range hs {
				if h.at < hs[stalest].at {
					stalest = i
				}
			}
			hs[stalest] = hs[len(hs)-1]
			hs = hs[:len(hs)-1]
		}
		p.place[k] = append(hs, smgHolder{rep: rep, at: now})
	}
}

// sweep is sweep_placement_index: expired holders and emptied keys go (it bounds memory; the
// routes do not change, as reads prune too).
func (p *smgPolicy) sweep(now float64) {
	for k, hs := range p.place {
		hs = slices.DeleteFunc(hs, func(h smgHolder) bool { return now-h.at > p.s.CacheTTLSecs })
		if len(hs) == 0 {
			delete(p.place, k)
		} else {
			p.place[k] = hs
		}
	}
}

// smgLoad is the gateway's view of the workers' loads: the last report of each and what it
// has sent each since (LeastLoadPolicy's cached_loads and inflight_tokens).
type smgLoad struct {
	interval float64
	next     float64
	polled   bool
	snap     []smgReport
	reported int     // replicas in the last poll
	sent     []int64 // tokens credited since the report
	cached   bool    // some replica reported a cached block (the event index is not empty)
}

// smgReport is one worker's load report as the fleet stands in for it.
type smgReport struct {
	waitingReqs     int
	waitingUncached int64
	usage           float64
	throughput      float64
}

// poll reads every replica's report when a poll is due.
func (l *smgLoad) poll(f *sim.Pool, now float64) {
	if l.polled && now < l.next {
		for len(l.sent) < f.Size() { // a replica added since reports at the next poll
			l.sent = append(l.sent, 0)
		}
		return
	}
	l.polled = true
	if l.interval > 0 {
		l.next = (math.Floor(now/l.interval) + 1) * l.interval
	}
	l.snap, l.sent = l.snap[:0], l.sent[:0]
	decode := f.Model().DecodePerToken
	for i := range f.Size() {
		rep := smgReport{waitingReqs: f.Queued(i), waitingUncached: f.QueuedUncached(i), usage: f.Usage(i)}
		if decoding := f.Decoding(i); decoding > 0 && decode > 0 {
			rep.throughput = float64(decoding) / decode
		}
		l.snap = append(l.snap, rep)
		l.sent = append(l.sent, 0)
	}
	l.reported = f.Size()
}

// anyCached reports whether any replica holds a block (the event indexer has data).
func (l *smgLoad) anyCached(f *sim.Pool) bool {
	if !l.cached {
		for i := range f.Size() {
			if f.Cached(i) > 0 {
				l.cached = true
				break
			}
		}
	}
	return l.cached
}

// reports reports whether replica i has a report (it joined before the last poll).
func (l *smgLoad) reports(i int) bool { return l.polled && i < l.reported }

// score is LeastLoadPolicy::score for a replica with a report.
func (l *smgLoad) score(i int) float64 {
	r := l.snap[i]
	queued := float64(r.waitingUncached)
	if r.waitingUncached <= 0 {
		queued = float64(max(r.waitingReqs, 0)) * smgMeanPrefill
	}
	thr := r.throughput
	if thr <= 0 {
		thr = smgThroughput
	}
	k := min(max(r.usage, 0), 0.999)
	return (queued+float64(l.sent[i]))/thr + smgKVPressure*k/(1-k)
}

func (l *smgLoad) credit(i int, tokens int64) {
	if i < len(l.sent) {
		l.sent[i] += tokens
	}
}
