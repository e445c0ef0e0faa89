package sglang

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/chartree"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// cacheAware is sglang-cache-aware with settings s.
func cacheAware(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:    "sglang-cache-aware",
		About:   "SGLang model gateway cache_aware (smg; the older sglang gateway with --sglang-defaults fork): radix tree of the text (HTTP) or token pages (gRPC), or KV events (gRPC); above the cache threshold the least expected wait among the replicas holding the match, unless overloaded against the mean; else the least expected wait",
		Family:  sim.FamilyKV,
		Reasons: reasons(s),
		// smg above selection temperature 0 draws among the candidates by their scores; otherwise
		// the seed only orders replicas that tie.
		Draws:     s.Gateway != Fork && s.SelectionTemperature > 0,
		Product:   display,
		Source:    "smg-project/smg@04def28 model_gateway/src/policies/cache_aware.rs, least_load.rs, cache_namespace.rs, crates/kv_index (string_tree.rs, token_tree.rs), main.rs; the older gateway from modal-projects/sglang (fork of sgl-project/sglang) @8905cbd sgl-model-gateway/src/policies/cache_aware.rs and tree.rs; routing text from smg's openai-protocol 1.0.0 protocols/src/chat.rs; ROUTERS.md §5 and its corrections, SPEC.md §6",
		NeedsText: true,
		KeepsText: true,
		Check:     func(_ sim.Config, t *sim.Trace) error { return refused(s, t) },
		New: func(c sim.Config, blockSize int) sim.Policy {
			if s.Gateway == Fork {
				return &sglangPolicy{c: chartree.CacheAware{Threshold: s.CacheThreshold, AbsThreshold: s.BalanceAbsThreshold, RelThreshold: s.BalanceRelThreshold,
					EvictionSecs: s.EvictionIntervalSecs, MaxTreeSize: s.MaxTreeSize, Rank: func(salt uint64, rep int) uint64 { return sglangFirst(salt, c.Seed, rep) }}}
			}
			return newSMGPolicy(s, c, blockSize)
		},
	}
}

// refused refuses what the gateway's ConfigValidator refuses for cache_aware (the fork's
// src/config/validation.rs@0b6466f, validate_policy; smg@f8daa88
// model_gateway/src/config/validation.rs:463-566 and 674-690): a cache threshold outside 0-1, a
// relative balance threshold below 1, an eviction interval or a tree size not above 0; in smg
// also a block size or hash TTL not above 0, KV-usage thresholds not above 0, a negative or
// infinite decay or temperature, boundaries that are not positive and strictly ascending, and
// the hash index without boundaries. A negative or non-numeric absolute threshold is refused too:
// the CLI cannot parse it as a count. An unknown gateway, connection or index is a kvcheck
// setting's error, refused the same way.
func refused(s Settings, t *sim.Trace) error {
	refuse := func(format string, a ...any) error {
		return &sim.CannotRunError{Policy: "sglang-cache-aware", Trace: t.Name, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case !(s.CacheThreshold >= 0 && s.CacheThreshold <= 1):
		return refuse("cache_threshold %v: the gateway wants 0.0 to 1.0", s.CacheThreshold)
	case s.BalanceRelThreshold < 1:
		return refuse("balance_rel_threshold %v: the gateway wants at least 1.0", s.BalanceRelThreshold)
	case !(s.BalanceAbsThreshold >= 0):
		return refuse("balance_abs_threshold %v: the gateway wants a count of requests, 0 or more", s.BalanceAbsThreshold)
	case !(s.EvictionIntervalSecs > 0):
		return refuse("eviction interval %v s: the gateway wants more than 0", s.EvictionIntervalSecs)
	case s.MaxTreeSize <= 0:
		return refuse("max_tree_size %d: the gateway wants more than 0 characters", s.MaxTreeSize)
	case s.Gateway != "" && s.Gateway != SMG && s.Gateway != Fork:
		return refuse("gateway %q: kvcheck knows %s and %s", s.Gateway, SMG, Fork)
	case s.Gateway == Fork:
		return nil
	case s.Connection != "" && s.Connection != HTTP && s.Connection != GRPC && s.Connection != GRPCEvents:
		return refuse("connection %q: kvcheck knows %s, %s and %s", s.Connection, HTTP, GRPC, GRPCEvents)
	case s.CacheIndex != "" && s.CacheIndex != "tree" && s.CacheIndex != "hash":
		return refuse("cache_index %q: the gateway wants tree or hash", s.CacheIndex)
	case s.BlockSize <= 0:
		return refuse("block_size %d: the gateway wants more than 0", s.BlockSize)
	case !(s.CacheTTLSecs >= 1):
		return refuse("cache_ttl_secs %v: the gateway wants more than 0 seconds", s.CacheTTLSecs)
	case !(s.BalanceTokenUsage > 0) || !(s.OverloadTokenUsage > 0):
		return refuse("balance_token_usage_threshold %v, overload_token_usage_threshold %v: the gateway wants more than 0.0 (1.0 or more disables them)", s.BalanceTokenUsage, s.OverloadTokenUsage)
	case !(s.OverlapDecay >= 0) || math.IsInf(s.OverlapDecay, 1):
		return refuse("overlap_decay %v: the gateway wants a finite 0.0 or more", s.OverlapDecay)
	case !(s.SelectionTemperature >= 0) || math.IsInf(s.SelectionTemperature, 1):
		return refuse("selection_temperature %v: the gateway wants a finite 0.0 or more", s.SelectionTemperature)
	case s.CacheIndex == "hash" && len(s.CacheBoundaries) == 0:
		return refuse("cache_index hash: the gateway wants cache_boundaries (\"cache_index=hash requires non-empty cache_boundaries\")")
	case !(s.LoadIntervalSecs > 0):
		return refuse("load_monitor_interval %v s: the gateway wants more than 0", s.LoadIntervalSecs)
	}
	for k, b := range s.CacheBoundaries {
		if b <= 0 || (k > 0 && b <= s.CacheBoundaries[k-1]) {
			return refuse("cache_boundaries %v: the gateway wants positive, strictly ascending token positions", s.CacheBoundaries)
		}
	}
	return nil
}

// sglangPolicy is the SGLang model gateway's cache_aware policy as the modal-projects/sglang
// fork of sgl-project/sglang has it at 8905cbd (2026-07-20), sgl-model-gateway
// src/policies/cache_aware.rs select_worker (376-505) over the tree of src/policies/tree.rs,
// with its Settings (the CLI's defaults, CLIDefaults, unless told otherwise; a worker
// registered with a cache_aware policy hint gets HintDefaults). Below,
// cache_aware.rs is C and tree.rs T, both @8905cbd. For each request, with load the requests the
// gateway has sent to a replica and not seen finish (in flight, Worker::load):
//  1. The text is sglangText (extract_text_for_routing, openai-protocol 1.0.0).
//  2. Imbalanced when max load - min load > BalanceAbsThreshold and max load > min load x
//     BalanceRelThreshold in float32 (C:394-402): the least loaded replica gets the request, the
//     first of equals (C:329-332, min_by_key), and the text is inserted for it (C:335-343).
//  3. Otherwise the text is matched (T:531-619): the walk ends in the node the text leaves or
//     ends in (the root when not even its first character is in the tree). The tenant returned
//     is that node's last_tenant while it still holds the node (T:570-575); last_tenant is the
//     replica whose insert created the node as a leaf (T:409), copied to the upper half when a
//     node is split (T:449-450), and changed only when stale: when the replica no longer holds
//     the node (evicted from it), the match takes the node's first holder in its map's order
//     and keeps it as the new last_tenant (T:576-597). Inserts that pass through a node never
//     change it: a popular prefix keeps going to the replica that first sent it, as long as the
//     fleet stays balanced.
//  4. The match rate is the characters matched over the text's characters, 0 for an empty
//     text, in float32 (C:426-430). Above CacheThreshold the tenant gets the request (C:433-439);
//     otherwise the least loaded replica, the first of equals (C:440-446: min_by_key; the
//     fork's comment says "smallest tree", the code has taken the least loaded since PR #14650).
//  5. The text is inserted for the replica chosen (C:450). An insert stamps only the node it
//     ends in (the new leaf, or the node the text ends at) with the next epoch; a node it passes
//     that the replica did not hold yet gets epoch 0, one it held keeps its stamp (T:393-527).
//     A match stamps the tenant on the node reached with its epoch when the epoch is a multiple
//     of 8 (T:601-607: one match in 8, "to reduce DashMap contention"). Epochs come from one
//     counter (T:218-227) that every match and every insert advances by one.
//  6. Every EvictionIntervalSecs a background task evicts, for each replica holding more than
//     MaxTreeSize characters, its leaves of the oldest epoch first until it holds at most
//     MaxTreeSize (T:718-821, chartree.Tree.EvictLRULeaves).
//
// Reasons: imbalanced (2), prefix-match (4, the tenant above the cache threshold), least-loaded
// (4, the least loaded replica at or below it, or no match).
//
// What is kvcheck's choice where the fork leaves it open: a node's "first holder in its map's
// order" is a DashMap's iteration order, fixed for a map but arbitrary; here a pseudo-random
// order drawn from Config.Seed and the node (sglangFirst; a node split off keeps the order of
// the node it came from, as the DashMap clone keeps its hasher). The epoch counter is global to
// the gateway process and starts at 0; here it starts at the replica count (registering a
// worker inserts "" for it, one epoch each: C:167-198) and grows with each replica added, as in
// a gateway that has served nothing else. Leaves of the same epoch (epoch 0 is common) are
// evicted in the order of replica and text, where the fork's heap leaves it arbitrary. The
// eviction runs before the first request at or after each multiple of the interval, where the
// gateway's timer runs on its own clock; two runs in a row evict nothing more. Replicas are all
// healthy.
//
// Checked against the source: steps 1-6 above, at the lines cited; the second model
// (bruteSGLang) is written from the same lines over the brute-force tree. The steps run in
// chartree.CacheAware, which vLLM Router's cache_aware (forked from this one) shares.
//
// Left out:
//   - the PD router's prefill and decode trees (C:76-100), mesh sync, unhealthy workers and the
//     removal of a stale tenant (C:471-491), the prefill_backlog of later gateways;
//   - the order of a node's map and of equal epochs in the eviction heap (kvcheck's choices,
//     above).
type sglangPolicy struct{ c chartree.CacheAware }

// sglangFirst ranks replica rep among the holders of a node with salt: the holder with the lowest
// rank is the one a node lists first.
func sglangFirst(salt, seed uint64, rep int) uint64 {
	return sim.Mix64(salt ^ sim.Mix64(seed<<20^uint64(rep)))
}

// reasonImbalanced is the older gateway's reason for the least loaded worker when the load is
// imbalanced.
const reasonImbalanced = "imbalanced"

// reasons are the reasons sglang-cache-aware gives with s: the older gateway's (sglangPolicy)
// or smg's (smgPolicy).
func reasons(s Settings) []string {
	if s.Gateway == Fork {
		return []string{reasonImbalanced, sim.ReasonPrefixMatch, sim.ReasonLeastLoaded}
	}
	return []string{sim.ReasonPrefixMatch, reasonSpill, reasonExpectedWait, reasonKVPressure}
}

// forkReasons are the reasons of chartree.CacheAware's branches.
var forkReasons = map[chartree.Branch]string{chartree.Imbalanced: reasonImbalanced, chartree.Matched: sim.ReasonPrefixMatch, chartree.LeastLoaded: sim.ReasonLeastLoaded}

// Route implements sim.Policy.
func (p *sglangPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	rep, b := p.c.Route(sglangText(j.Request().View), j.Arrival(), f.Size(), f.InFlight)
	return rep, forkReasons[b]
}

// sglangText is the text SGLang's gateway routes a request on, extract_text_for_routing of
// smg-project/smg's openai-protocol crate 1.0.0 (the version the fork pins: sgl-model-gateway
// Cargo.toml:83; smg@9928acf protocols/src/chat.rs:599-656, MessageContent::append_text_to and
// has_text 96-132): a completion's prompt (completion.rs:135-140); for a chat, every non-empty
// text joined with one space: a string content, each non-empty part of type "text" (images and
// other parts skipped), and an assistant's reasoning_content after its content; an empty text
// adds no space; null contents, tool calls and roles add nothing. With one text (a single
// message, say) that is a part of View.Text, shared, not copied.
func sglangText(v *sim.View) string {
	if !v.Chat {
		return chartree.Valid(v.Text)
	}
	count, only := 0, ""
	from := int32(0)
	for _, p := range v.Pieces {
		if run := v.Text[from:p.End]; run != "" && sglangReads(p.Kind) {
			count, only = count+1, run
		}
		from = p.End
	}
	if count <= 1 {
		return chartree.Valid(only)
	}
	var sb strings.Builder
	from = 0
	for _, p := range v.Pieces {
		if run := v.Text[from:p.End]; run != "" && sglangReads(p.Kind) {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(run)
		}
		from = p.End
	}
	return chartree.Valid(sb.String())
}

// sglangReads reports whether extract_text_for_routing reads a piece of kind k.
func sglangReads(k sim.PieceKind) bool {
	return k == sim.PieceString || k == sim.PiecePartText || k == sim.PieceReasoning
}
