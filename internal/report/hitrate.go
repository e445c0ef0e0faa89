package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/promql"
)

// Hitrate is the result of kvcheck hitrate: a finding's subject is its replica.
func Hitrate(r promql.Report) Result {
	res := Result{Findings: nonNilFindings(r.Findings), Document: newHitrateDoc(r), Text: func(t *Text) error { return t.hitrate(r) }}
	if len(r.Inputs) > 0 {
		res.Artifact = r.Inputs[len(r.Inputs)-1] // the later dump, the server, a target
	}
	return res
}

// hitrate writes the hitrate report for people: a table per replica, a fleet line and the
// findings (targets that were down are target-down findings).
func (t *Text) hitrate(r promql.Report) error {
	t.Heading("Prefix-cache hit rate per replica")
	t.Muted("%s", hitrateProvenance(r))
	if err := hitrateTable(t, r, nil); err != nil {
		return err
	}
	hitrateFleet(t, r)
	return nil
}

// hitrateTable writes the per-replica table; with changes (a watch refresh), a state column
// and the differences since the previous refresh come next to the figures.
func hitrateTable(t *Text, r promql.Report, changes []promql.Change) error {
	volume := "QUERIED TOK/S"
	if r.Mode == promql.ModeLifetime {
		volume = "QUERIED TOKENS"
	}
	if r.Mode == promql.ModeLog {
		volume = "PROMPT TOK/S"
	}
	// On a narrow terminal the configuration columns (block size, caching, metric names,
	// model) go first: on call, the rates and the queue are what matter.
	cols := []Column{
		{Name: "REPLICA", Wrap: true},
		{Name: "MODEL", Wrap: true, Drop: 4},
		{Name: "HIT RATE", Short: "HIT", Number: true},
		{Name: volume, Short: "TOK/S", Number: true},
		{Name: "EXT HIT", Number: true, Drop: 3},
		{Name: "PREEMPT/S", Short: "PRE/S", Number: true},
		{Name: "PREEMPT/1K REQ", Short: "PRE/1K", Number: true, Drop: 3},
		{Name: "KV USAGE", Short: "KV", Number: true},
		{Name: "RUNNING", Short: "RUN", Number: true},
		{Name: "WAITING", Short: "WAIT", Number: true},
		{Name: "BLOCK", Number: true, Drop: 6},
		{Name: "CACHING", Drop: 5},
		{Name: "METRICS", Drop: 5},
	}
	rows := make([][]string, 0, len(r.Replicas))
	for _, x := range r.Replicas {
		vol := num(x.QueriesPerSec, 1)
		switch r.Mode {
		case promql.ModeLifetime:
			vol = num(x.Queries, 0)
		case promql.ModeLog:
			vol = num(x.PromptTokensPerSec, 1)
		}
		hit := Ratio(x.HitRate)
		if x.HitRateFrom == "v0_gauge" && x.HitRate != nil {
			hit += " (v0 gauge)"
		}
		ext := Ratio(x.ExternalHitRate)
		if x.ExternalHitRate == nil && x.CPUHitRate != nil {
			ext = "cpu " + Ratio(x.CPUHitRate) // V0's CPU tier
		}
		rows = append(rows, []string{
			x.Replica, dash(x.Model), hit, vol, ext,
			num(x.PreemptionsPerSec, 3), num(x.PreemptionsPer1k, 1), Ratio(x.KVUsage),
			num(x.Running, 0), num(x.Waiting, 0), intOrDash(x.BlockSize), onOff(x.PrefixCaching), generation(x.Generation),
		})
	}
	if changes != nil {
		cols, rows = withChanges(cols, rows, changes)
	}
	return t.Grid(cols, rows)
}

// withChanges adds a watch refresh's state column and deltas to the hitrate table, and a row
// for each replica that is gone.
func withChanges(cols []Column, rows [][]string, changes []promql.Change) ([]Column, [][]string) {
	byName := map[string]promql.Change{}
	for _, c := range changes {
		byName[c.Replica] = c
	}
	out := make([][]string, 0, len(changes))
	for _, r := range rows {
		c := byName[r[0]]
		row := append([]string{r[0], dash(c.State)}, r[1:3]...)
		row = append(row, signed(c.HitRateDelta, 100, 1, "pp"))
		row = append(row, r[3])
		row = append(row, signed(c.QueriesPerSecDelta, 1, 1, ""))
		out = append(out, append(row, r[4:]...))
	}
	for _, c := range changes {
		if c.State == promql.StateGone {
			row := []string{c.Replica, c.State}
			for range len(cols) + 1 {
				row = append(row, "-")
			}
			out = append(out, row)
		}
	}
	nc := append([]Column{cols[0], {Name: "STATE"}}, cols[1:3]...)
	nc = append(nc, Column{Name: "Δ HIT", Number: true})
	nc = append(nc, cols[3])
	nc = append(nc, Column{Name: "Δ TOK/S", Number: true, Drop: 2})
	return append(nc, cols[4:]...), out
}

// signed formats a difference times scale with a sign and a unit, "-" when unknown.
func signed(v *float64, scale float64, prec int, unit string) string {
	if v == nil {
		return "-"
	}
	x := *v * scale
	sign := ""
	if x >= 0 {
		sign = "+"
	}
	return sign + strconv.FormatFloat(x, 'f', prec, 64) + unit
}

// hitrateFleet writes the fleet line and the findings.
func hitrateFleet(t *Text, r promql.Report) {
	f := r.Fleet
	plural := "s"
	if f.Replicas == 1 {
		plural = ""
	}
	line := fmt.Sprintf("Fleet: %d replica%s, hit rate %s", f.Replicas, plural, Ratio(f.HitRate))
	switch f.HitRateWeighting {
	case "tokens":
		line += " (token-weighted)"
	case "unweighted":
		line += " (mean of replicas)"
	}
	if f.MinHitRate != nil && f.Replicas > 1 {
		line += fmt.Sprintf(", spread %s to %s", Ratio(f.MinHitRate), Ratio(f.MaxHitRate))
		if f.HitRateCV != nil {
			line += fmt.Sprintf(" (CV %.2f)", *f.HitRateCV)
		}
	}
	if f.QueriesPerSec != nil {
		line += fmt.Sprintf(", %s queried tok/s", num(f.QueriesPerSec, 1))
	} else if f.Queries != nil {
		line += fmt.Sprintf(", %s queried tokens", num(f.Queries, 0))
	}
	if f.PreemptionsPerSec != nil {
		line += fmt.Sprintf(", %s preemptions/s", num(f.PreemptionsPerSec, 3))
	}
	t.Line("%s", line)
	if len(r.Findings) > 0 {
		t.Line("")
		t.Heading("Findings")
		for _, x := range r.Findings {
			t.Finding(x)
		}
	}
}

func hitrateProvenance(r promql.Report) string {
	var what string
	switch r.Source {
	case promql.SourcePrometheus:
		what = "Prometheus " + strings.Join(r.Inputs, ", ")
		if len(r.Queries) > 0 {
			what += fmt.Sprintf(" (%d queries)", len(r.Queries))
		}
	case promql.SourceScrape:
		what = fmt.Sprintf("direct scrape of %d targets", len(r.Inputs))
	case promql.SourceFile:
		what = "dump " + strings.Join(r.Inputs, " then ")
	case promql.SourceLog:
		what = "engine log " + strings.Join(r.Inputs, ", ")
	}
	switch r.Mode {
	case promql.ModeRate:
		if r.WindowSeconds != nil {
			what += fmt.Sprintf("; rates over %s", windowLength(*r.WindowSeconds))
		}
	case promql.ModeLifetime:
		what += "; lifetime totals since each replica started (one dump)"
	case promql.ModeLog:
		what += "; every figure from each engine's latest stat line (throughput since the line before, hit rate over vLLM's recent requests)"
	}
	return "source: " + what
}

func windowLength(s float64) string {
	if s >= 120 {
		return strconv.FormatFloat(s/60, 'f', -1, 64) + "m"
	}
	return strconv.FormatFloat(float64(int64(s*10+0.5))/10, 'f', -1, 64) + "s"
}

func num(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func intOrDash(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func onOff(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "on"
	}
	return "off"
}

func generation(g promql.Generation) string {
	if g == "" {
		return "-"
	}
	return string(g)
}
