package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/events"
)

// Tap is the result of kvcheck tap: the findings are about publishers and the fleet.
func Tap(r *events.Report) Result {
	res := Result{Findings: nonNilFindings(r.Findings), Document: tapDocument{SchemaVersion: SchemaVersion, tapReportDoc: newTapReportDoc(*r)},
		Text: func(t *Text) error { return t.tap(r) }}
	if len(r.Publishers) > 0 {
		res.Artifact = r.Publishers[0].Endpoint
	}
	return res
}

// tap writes a tap report for people.
func (t *Text) tap(r *events.Report) error {
	t.Heading(fmt.Sprintf("KV-event stream, %d publishers, %.1f s", len(r.Publishers), r.DurationSeconds))
	rows := [][]string{}
	for _, p := range r.Publishers {
		dp := "-"
		if p.DPRank != nil {
			dp = fmt.Sprint(*p.DPRank)
		}
		rows = append(rows, []string{
			p.Endpoint, p.Topic, dp,
			fmt.Sprint(p.Batches),
			fmt.Sprintf("%d/%d/%d", p.Events.BlockStored, p.Events.BlockRemoved, p.Events.AllBlocksCleared),
			bytesRate(p.BytesPerSec),
			fmt.Sprintf("%.0f", p.TokensPerSec),
			fmt.Sprint(p.LostBatches),
			fmt.Sprint(p.RecoveredBatches),
			fmt.Sprint(p.Restarts),
			fmt.Sprint(p.OwnDrops),
			fmt.Sprint(p.Malformed),
			orDash(p.WireEra), orDash(p.HashForm),
			keys(p.BlockSizes),
			offset(p.ClockOffsetSeconds),
		})
	}
	header := []string{"endpoint", "topic", "dp", "batches", "stored/removed/cleared", "payload", "tokens/s",
		"lost", "recovered", "restarts", "own drops", "malformed", "era", "hash", "block sizes", "clock offset"}
	// On a narrow terminal the loss columns stay; the stream's make-up goes first.
	cols := dropping(Columns(header, rows), map[string]int{
		"clock offset": 6, "era": 5, "hash": 5, "block sizes": 5, "dp": 4, "malformed": 3, "own drops": 3,
		"restarts": 2, "stored/removed/cleared": 2, "topic": 1,
	})
	if err := t.Grid(cols, rows); err != nil {
		return err
	}
	a := r.Analysis
	t.Heading("What the stream says about the fleet")
	t.Line("stored blocks:            %d (%d tokens)", a.StoredBlocks, a.StoredTokens)
	t.Line("duplicated prefill:       %s of stored tokens were stored again on another replica", Ratio(a.DuplicateTokenFraction))
	if len(a.DuplicateDepths) > 0 {
		t.Line("  at chain depth:         %s", depths(a.DuplicateDepths))
	}
	t.Line("re-stores after eviction: %s of stored blocks", Ratio(a.RestoreFraction))
	t.Line("first blocks:             %d distinct of %d stored (%.1f/min vs %.1f/min)", a.FirstBlocksDistinct, a.FirstBlockStores, a.FirstBlocksPerMinute, a.FirstBlockStoresPerMinute)
	if a.UnanchoredBlocks > 0 || a.UnalignedStores > 0 {
		t.Muted("  %d blocks continue chains that started before the tap, %d stores do not align tokens to hashes: left out", a.UnanchoredBlocks, a.UnalignedStores)
	}
	if a.BytesPerStoredToken != nil {
		t.Line("bytes per stored token:   %.2f", *a.BytesPerStoredToken)
	}
	if a.ExtrapolatedBytesPerSec != nil {
		t.Line("extrapolated bandwidth:   %s per publisher at %.0f stored tokens/s", bytesRate(*a.ExtrapolatedBytesPerSec), a.ExtrapolatedTokensPerSec)
	}
	hp := a.HashParity
	t.Line("hash parity:              reproducible %s (%d of %d blocks), consistent across replicas %s (%d compared)",
		yesNo(hp.Reproducible), hp.MatchedBlocks, hp.CheckedBlocks, yesNo(hp.ConsistentAcrossReplicas), hp.ComparedAcrossReplicas)
	if !hp.SeedKnown {
		t.Muted("  pass --hash-seed with the replicas' PYTHONHASHSEED to check sha256_cbor reproducibility")
	}
	t.Heading("Findings")
	if len(r.Findings) == 0 {
		t.Line("%s", t.Good("no findings: the stream is healthy"))
	}
	for _, f := range r.Findings {
		t.Finding(f)
	}
	return nil
}

func bytesRate(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB/s", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB/s", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B/s", b)
}

// offset formats the publisher's clock offset (receive time minus event time).
func offset(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3fs", *v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func keys(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}

func depths(ds []events.DepthCount) string {
	ds = slices.Clone(ds)
	slices.SortFunc(ds, func(a, b events.DepthCount) int { return a.Depth - b.Depth })
	parts := make([]string, 0, len(ds))
	for i, d := range ds {
		if i == 8 {
			parts = append(parts, "...")
			break
		}
		deeper := ""
		if d.Depth == events.MaxDuplicateDepth {
			deeper = "+"
		}
		parts = append(parts, fmt.Sprintf("%d%s:%d", d.Depth, deeper, d.Blocks))
	}
	return strings.Join(parts, " ")
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "NO"
}
