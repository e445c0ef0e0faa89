package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// sentAsSiblings reports whether some request was sent as several copies (--n, or the trace's
// own n), so that the trace figures count copies.
func sentAsSiblings(r sim.Report) bool {
	if r.Sweep.Base.Siblings > 1 {
		return true
	}
	for i := range r.Trace.Requests {
		if r.Trace.Requests[i].N > 1 {
			return true
		}
	}
	return false
}

// Simulation writes the results of `kvcheck simulate` as text: the trace and its ceiling, one
// table per fleet with its winner, a summary across the sweep, and the findings.
func (t *Text) simulation(r sim.Report) error {
	tr, st := r.Trace, r.Stats
	kind := fmt.Sprintf("%s, %d-token blocks", tr.Format, tr.BlockSize)
	if tr.Tokens != "" {
		kind += ", " + tr.Tokens + " tokens"
	}
	t.Heading(fmt.Sprintf("Trace %s (%s)", tr.Name, kind))
	refs := "block references"
	if sentAsSiblings(r) {
		refs = "block references (every sibling copy counted)"
	}
	t.Line("  %d %s over %s; %d %s, %d distinct, %d repeats",
		st.Requests, plural(st.Requests, "request"), seconds(st.Duration), st.BlockRefs, refs, st.DistinctBlocks, st.Repeats)
	t.Line("  ceiling: %s of block references repeat an earlier one (what one unbounded cache could hit)", pct(st.Ceiling))
	for _, n := range tr.Notes {
		t.Muted("  note: %s", n)
	}
	labels := traceLabels(tr)
	if tr.Tokens == "estimated" {
		t.Line("  estimated: tokens are audit's byte estimate, so every hit rate and token figure below is an estimate")
	}
	if tr.LowerBound {
		t.Line("  lower bound: requests that hit fully store no block and are not in the recording, so every hit rate below is a lower bound")
	}
	m, b := r.Sweep.Base.Model, r.Sweep.Base
	t.Muted("Model: prefill %s per uncached token, decode %s per output token, %d running per replica; seed %d",
		dur(m.PrefillPerToken), dur(m.DecodePerToken), m.MaxRunning, b.Seed)
	if b.Siblings > 1 {
		t.Muted("Each request sent as %d siblings at once (n > 1)", b.Siblings)
	}
	fresh := b.AddReplicaAt >= 0
	for _, f := range r.Fleets {
		t.Line("")
		title := fmt.Sprintf("%d %s x %d blocks (%d tokens) each", f.Replicas, plural(f.Replicas, "replica"), f.KVBlocks, f.KVBlocks*tr.BlockSize)
		if fresh {
			title += fmt.Sprintf(", one more added at %s", seconds(b.AddReplicaAt))
		}
		if len(labels) > 0 {
			title += " (" + strings.Join(labels, "; ") + ")"
		}
		t.Heading(title)
		header := []string{"policy", "token hit", "block hit", "prefill saved", "load max/mean", "load cv", "queue mean", "queue max", "ttft p50", "ttft p99", "dup blocks", "evictions"}
		if fresh {
			header = append(header, "new replica share")
		}
		rows := make([][]string, 0, len(f.Results))
		for _, x := range f.Results {
			row := []string{
				x.Policy, pct(x.HitRate), pct(x.BlockHitRate), signedPct(x.PrefillSaved),
				fmt.Sprintf("%.2f", x.LoadMaxOverMean), fmt.Sprintf("%.2f", x.LoadCV),
				fmt.Sprintf("%.1f", x.QueueMean), strconv.Itoa(x.QueueMax),
				seconds(x.TTFTP50), seconds(x.TTFTP99), pct(x.DuplicateFraction), strconv.FormatInt(x.Evictions, 10),
			}
			if fresh {
				row = append(row, Ratio(x.FreshShare))
			}
			rows = append(rows, row)
		}
		// On a narrow terminal the hit rates, the balance and TTFT p99 stay.
		cols := dropping(Columns(header, rows), map[string]int{
			"evictions": 5, "dup blocks": 4, "block hit": 4, "queue mean": 3, "queue max": 3, "load cv": 2, "ttft p50": 1,
		})
		if err := t.Grid(cols, rows); err != nil {
			return err
		}
		verdict := fleetVerdict(f)
		if len(labels) > 0 {
			verdict = strings.TrimSuffix(verdict, ".") + " (" + strings.Join(labels, "; ") + ")."
		}
		t.Verdict(verdict)
	}
	if len(r.Fleets) > 1 {
		t.Line("")
		heading := "Across the sweep"
		if len(labels) > 0 {
			heading += " (" + strings.Join(labels, "; ") + ")"
		}
		t.Heading(heading)
		header := []string{"replicas", "kv blocks", "best", "token hit", "round-robin hit", "prefill saved", "load max/mean", "ttft p99", "round-robin ttft p99", "hot spots"}
		rows := make([][]string, 0, len(r.Fleets))
		for _, f := range r.Fleets {
			best, base := bestResult(f), f.Baseline
			row := []string{strconv.Itoa(f.Replicas), strconv.Itoa(f.KVBlocks), "-", "-", "-", "-", "-", "-", "-", strconv.Itoa(len(f.HotSpots))}
			if best != nil {
				row[2], row[3], row[5], row[6], row[7] = best.Policy, pct(best.HitRate), signedPct(best.PrefillSaved), fmt.Sprintf("%.2f", best.LoadMaxOverMean), seconds(best.TTFTP99)
			}
			if base != nil {
				row[4], row[8] = pct(base.HitRate), seconds(base.TTFTP99)
			}
			rows = append(rows, row)
		}
		if err := t.Table(header, rows); err != nil {
			return err
		}
	}
	if len(r.Findings) > 0 {
		t.Line("")
		t.Heading("Findings")
		for _, f := range r.Findings {
			t.Finding(f)
		}
	}
	t.Line("")
	t.Muted("token hit: prompt tokens served from the prefix cache; prefill saved: against round-robin on the same fleet;")
	t.Muted("ttft: TTFT proxy (queueing + uncached prefill); dup blocks: cached copies beyond the first, at the end of the run")
	return nil
}

// traceLabels are the caveats every figure of the trace carries, so that no table, verdict or
// chart is quoted without them.
func traceLabels(tr *sim.Trace) []string {
	var labels []string
	if tr.Tokens == "estimated" {
		labels = append(labels, "estimated tokens")
	}
	if tr.LowerBound {
		labels = append(labels, "hit rates are lower bounds")
	}
	return labels
}

func bestResult(f sim.Fleet) *sim.Result {
	for i := range f.Results {
		if f.Results[i].Policy == f.Best {
			return &f.Results[i]
		}
	}
	return nil
}

// fleetVerdict says which policy won on a fleet, by how much, and at what cost in balance.
func fleetVerdict(f sim.Fleet) string {
	best, base := bestResult(f), f.Baseline
	switch {
	case best == nil && anyStarved(f):
		return "No policy avoided both a hot spot and starving the added replica on this fleet."
	case best == nil:
		return "No policy avoided a hot spot on this fleet."
	case base == nil:
		return fmt.Sprintf("Best: %s, token hit rate %s, load max/mean %.2f, TTFT p99 %s.", best.Policy, pct(best.HitRate), best.LoadMaxOverMean, seconds(best.TTFTP99))
	case best == base && anyStarved(f):
		return "Round-robin is as good as any policy that neither makes a hot spot nor starves the added replica here: prefix-aware routing does not pay on this fleet."
	case best == base:
		return "Round-robin is as good as any policy without a hot spot here: prefix-aware routing does not pay on this fleet."
	case best.PrefillSaved <= 0.01:
		return fmt.Sprintf("No policy saves more than 1%% of prefill over round-robin here (best %s: %s); prefix-aware routing does not pay on this fleet.", best.Policy, signedPct(best.PrefillSaved))
	}
	return fmt.Sprintf("Best: %s: %s of prompt tokens from cache vs %s with round-robin (%s fewer prefill tokens), load max/mean %.2f vs %.2f, TTFT p99 %s vs %s.",
		best.Policy, pct(best.HitRate), pct(base.HitRate), pct(best.PrefillSaved), best.LoadMaxOverMean, base.LoadMaxOverMean, seconds(best.TTFTP99), seconds(base.TTFTP99))
}

// anyStarved reports whether a policy on the fleet starves an added replica (sim.Starves), and
// so was not a candidate for best.
func anyStarved(f sim.Fleet) bool {
	for _, r := range f.Results {
		if sim.Starves(r.FreshShare, r.Replicas) {
			return true
		}
	}
	return false
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

func signedPct(v float64) string { return fmt.Sprintf("%+.1f%%", v*100) }

// seconds formats a duration in seconds with precision that suits its size.
func seconds(s float64) string {
	switch {
	case s < 10:
		return fmt.Sprintf("%.2fs", s)
	case s < 1000:
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%.0fs", s)
}

func dur(s float64) string { return time.Duration(s * float64(time.Second)).String() }

// simulationJSON is the JSON document of `kvcheck simulate`.
type simulationJSON struct {
	SchemaVersion int               `json:"schema_version"`
	Trace         traceJSON         `json:"trace"`
	Model         modelJSON         `json:"model"`
	Results       []resultJSON      `json:"results"`
	Fleets        []fleetJSON       `json:"fleets"`
	Findings      []finding.Finding `json:"findings"`
}

type traceJSON struct {
	Name           string   `json:"name"`
	Format         string   `json:"format"`
	BlockSize      int      `json:"block_size"`
	PrefixInfo     bool     `json:"prefix_info"`
	Tokens         string   `json:"tokens,omitempty"`
	Estimated      bool     `json:"estimated,omitempty"`
	LowerBound     bool     `json:"lower_bound,omitempty"`
	Requests       int      `json:"requests"`
	BlockRefs      int64    `json:"block_refs"`
	DistinctBlocks int64    `json:"distinct_blocks"`
	Repeats        int64    `json:"repeats"`
	Ceiling        float64  `json:"ceiling"`
	InputTokens    int64    `json:"input_tokens"`
	OutputTokens   int64    `json:"output_tokens"`
	DurationS      float64  `json:"duration_s"`
	Notes          []string `json:"notes"`
}

type modelJSON struct {
	PrefillPerTokenS float64  `json:"prefill_per_token_s"`
	DecodePerTokenS  float64  `json:"decode_per_token_s"`
	MaxRunning       int      `json:"max_running"`
	Seed             uint64   `json:"seed"`
	Siblings         int      `json:"siblings"`
	AddReplicaAtS    *float64 `json:"add_replica_at_s,omitempty"`
	Beta             float64  `json:"beta"`
	Epsilon          float64  `json:"epsilon"`
	OverlapWeight    float64  `json:"overlap_weight"`
	CreditDecay      float64  `json:"credit_decay"`
	ApproxTokens     int      `json:"approx_tokens"`
}

type resultJSON struct {
	Policy          string  `json:"policy"`
	Replicas        int     `json:"replicas"`
	KVBlocks        int     `json:"kv_blocks"`
	Requests        int     `json:"requests"`
	InputTokens     int64   `json:"input_tokens"`
	HitTokens       int64   `json:"hit_tokens"`
	HitRate         float64 `json:"hit_rate"`
	BlockRefs       int64   `json:"block_refs"`
	HitBlocks       int64   `json:"hit_blocks"`
	BlockHitRate    float64 `json:"block_hit_rate"`
	PrefillSaved    float64 `json:"prefill_saved_vs_round_robin"`
	PerReplica      []int   `json:"per_replica"`
	LoadMaxOverMean float64 `json:"load_max_over_mean"`
	LoadCV          float64 `json:"load_cv"`
	// HotWaited is the share of the busiest replica's requests that waited (sim.Load.HotSpot).
	HotWaited         float64  `json:"busiest_replica_waited"`
	QueueMean         float64  `json:"queue_mean"`
	QueueMax          int      `json:"queue_max"`
	TTFTP50           float64  `json:"ttft_p50"`
	TTFTP99           float64  `json:"ttft_p99"`
	DuplicateBlocks   int64    `json:"duplicate_blocks"`
	DuplicateFraction float64  `json:"duplicate_fraction"`
	Evictions         int64    `json:"evictions"`
	Uncacheable       int64    `json:"uncacheable_blocks"`
	FreshShare        *float64 `json:"fresh_replica_share,omitempty"`
	// Estimated and LowerBound repeat the trace's labels on every result, so that a result
	// quoted alone keeps them.
	Estimated  bool `json:"estimated,omitempty"`
	LowerBound bool `json:"lower_bound,omitempty"`
}

type fleetJSON struct {
	Replicas int      `json:"replicas"`
	KVBlocks int      `json:"kv_blocks"`
	Best     string   `json:"best"`
	HotSpots []string `json:"hot_spots"`
}

// Simulation is the result of kvcheck simulate.
func Simulation(r sim.Report) Result {
	res := Result{Findings: nonNilFindings(r.Findings), Document: simulationDocument(r),
		Text: func(t *Text) error { return t.simulation(r) }}
	if r.Trace != nil {
		res.Artifact = r.Trace.Name
	}
	return res
}

// simulationDocument is simulate's JSON document.
func simulationDocument(r sim.Report) simulationJSON {
	b := r.Sweep.Base
	doc := simulationJSON{
		SchemaVersion: SchemaVersion,
		Trace: traceJSON{
			Name: r.Trace.Name, Format: r.Trace.Format, BlockSize: r.Trace.BlockSize, PrefixInfo: r.Trace.PrefixInfo,
			Tokens: r.Trace.Tokens, Estimated: r.Trace.Tokens == "estimated", LowerBound: r.Trace.LowerBound,
			Requests: r.Stats.Requests, BlockRefs: r.Stats.BlockRefs, DistinctBlocks: r.Stats.DistinctBlocks,
			Repeats: r.Stats.Repeats, Ceiling: r.Stats.Ceiling, InputTokens: r.Stats.InputTokens,
			OutputTokens: r.Stats.OutputTokens, DurationS: r.Stats.Duration, Notes: append([]string{}, r.Trace.Notes...),
		},
		Model: modelJSON{
			PrefillPerTokenS: b.Model.PrefillPerToken, DecodePerTokenS: b.Model.DecodePerToken, MaxRunning: b.Model.MaxRunning,
			Seed: b.Seed, Siblings: max(1, b.Siblings), Beta: b.Params.Beta, Epsilon: b.Params.Epsilon,
			OverlapWeight: b.Params.OverlapWeight, CreditDecay: b.Params.CreditDecay, ApproxTokens: b.Params.ApproxTokens,
		},
		Results:  []resultJSON{},
		Fleets:   []fleetJSON{},
		Findings: append([]finding.Finding{}, r.Findings...),
	}
	if b.AddReplicaAt >= 0 {
		at := b.AddReplicaAt
		doc.Model.AddReplicaAtS = &at
	}
	for _, f := range r.Fleets {
		doc.Fleets = append(doc.Fleets, fleetJSON{Replicas: f.Replicas, KVBlocks: f.KVBlocks, Best: f.Best, HotSpots: append([]string{}, f.HotSpots...)})
		for _, x := range f.Results {
			doc.Results = append(doc.Results, resultJSON{
				Policy: x.Policy, Replicas: x.Replicas, KVBlocks: x.KVBlocks, Requests: x.Requests,
				InputTokens: x.InputTokens, HitTokens: x.HitTokens, HitRate: x.HitRate,
				BlockRefs: x.BlockRefs, HitBlocks: x.HitBlocks, BlockHitRate: x.BlockHitRate,
				PrefillSaved: x.PrefillSaved, PerReplica: append([]int{}, x.PerReplica...),
				LoadMaxOverMean: x.LoadMaxOverMean, LoadCV: x.LoadCV, HotWaited: x.HotWaited, QueueMean: x.QueueMean, QueueMax: x.QueueMax,
				TTFTP50: x.TTFTP50, TTFTP99: x.TTFTP99, DuplicateBlocks: x.DuplicateBlocks,
				DuplicateFraction: x.DuplicateFraction, Evictions: x.Evictions, Uncacheable: x.Uncacheable, FreshShare: x.FreshShare,
				Estimated: r.Trace.Tokens == "estimated", LowerBound: r.Trace.LowerBound,
			})
		}
	}
	return doc
}
