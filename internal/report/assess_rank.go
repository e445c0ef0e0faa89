package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/units"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// rankingDocument is the JSON of assess's router ranking: the whole ranking, every row with its
// figures, changes and requirements, the emulations that could not run, why the first wins and
// the configuration to apply.
type rankingDocument struct {
	Rule                    string          `json:"rule"`
	Rules                   rankRulesDoc    `json:"rules"`
	Stack                   *rankStackDoc   `json:"stack"`
	Answer                  string          `json:"answer"`
	AnswerGain              float64         `json:"answer_gain,omitempty"`
	FirstBy                 string          `json:"first_by,omitempty"`
	Displaced               string          `json:"displaced,omitempty"`
	Traffic                 string          `json:"traffic,omitempty"`
	Today                   string          `json:"today"`
	TodayConfiguredIn       string          `json:"today_configured_in,omitempty"`
	TodayNotes              []string        `json:"today_notes"`
	TodayHitRate            float64         `json:"today_hit_rate"`
	Replicas                int             `json:"replicas"`
	KVBlocks                int             `json:"kv_blocks"`
	BlockSize               int             `json:"block_size"`
	AddReplicaAtSeconds     *float64        `json:"add_replica_at_seconds"`
	HotSpotLoadMaxOverMean  float64         `json:"hot_spot_load_max_over_mean"`
	Rows                    []rankRowDoc    `json:"rows"`
	CannotRun               []cannotRunDoc  `json:"cannot_run"`
	NotSimulated            []notSimDoc     `json:"not_simulated"`
	NoWinner                string          `json:"no_winner"`
	Why                     []string        `json:"why"`
	Snippet                 *rankSnippetDoc `json:"snippet"`
	RequirementStatusValues []string        `json:"requirement_statuses"`
}

// rankRulesDoc are the ranking rule's numbers (rank.Rules).
type rankRulesDoc struct {
	ConcentrationLoadMaxOverMean float64 `json:"concentration_load_max_over_mean"`
	BalancedMarginPoints         int     `json:"balanced_margin_points"`
	StackMargin                  float64 `json:"stack_margin"`
	SessionMargin                float64 `json:"session_margin"`
	MinGain                      float64 `json:"min_gain"`
}

// rankStackDoc is the router product the user runs, and what showed it.
type rankStackDoc struct {
	Product string `json:"product"`
	From    string `json:"from"`
}

type rankRowDoc struct {
	Rank            int              `json:"rank"`
	Excluded        string           `json:"excluded,omitempty"`
	Policy          string           `json:"policy"`
	Product         string           `json:"product"`
	Family          string           `json:"family"`
	Concentrates    bool             `json:"concentrates"`
	Variant         string           `json:"variant"`
	Label           string           `json:"label,omitempty"`
	HitRate         float64          `json:"hit_rate"`
	PrefillSaved    float64          `json:"prefill_saved"`
	LoadMaxOverMean float64          `json:"load_max_over_mean"`
	TTFTP50         float64          `json:"ttft_p50_seconds"`
	TTFTP99         float64          `json:"ttft_p99_seconds"`
	FreshShare      *float64         `json:"added_replica_share"`
	FairShare       *float64         `json:"fair_share"`
	Starves         bool             `json:"starves_added_replica"`
	Changes         []rankChangeDoc  `json:"changes"`
	Requirements    []requirementDoc `json:"requirements"`
	Notes           []string         `json:"notes"`
	// Seeds, for a router that places requests by a seeded draw, says over which seeds the
	// row was judged (rank.SeedSpread); null for a router replayed once.
	Seeds *rankSeedsDoc `json:"seeds"`
}

// rankSeedsDoc is rank.SeedSpread: the seeds replayed, the one whose load the row has, the
// first requests they were replayed on (0: the whole traffic, where the row's figures are the
// seeds' medians), each figure's least and greatest, and how many seeds made a hot spot.
type rankSeedsDoc struct {
	Seeds           []uint64    `json:"seeds"`
	MedianSeed      uint64      `json:"median_seed,omitempty"`
	SampleRequests  int         `json:"sample_requests"`
	HitRate         [2]float64  `json:"hit_rate_min_max"`
	PrefillSaved    *[2]float64 `json:"prefill_saved_min_max"`
	LoadMaxOverMean [2]float64  `json:"load_max_over_mean_min_max"`
	HotSpots        int         `json:"hot_spots"`
}

type rankChangeDoc struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	Why     string `json:"why"`
}

type requirementDoc struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

type cannotRunDoc struct {
	Policy  string `json:"policy"`
	Product string `json:"product"`
	Variant string `json:"variant"`
	Label   string `json:"label,omitempty"`
	Reason  string `json:"reason"`
}

// notSimDoc is a router the --config files set up that gets no row, and why.
type notSimDoc struct {
	Product      string `json:"product"`
	ConfiguredIn string `json:"configured_in"`
	Reason       string `json:"reason"`
	// Notes name the router's values kvcheck could not read.
	Notes []string `json:"notes"`
}

type rankSnippetDoc struct {
	Product string `json:"product"`
	Format  string `json:"format"`
	File    string `json:"file"`
	Where   string `json:"where"`
	Text    string `json:"text"`
}

func rankingDoc(rk *rank.Ranking) *rankingDocument {
	if rk == nil {
		return nil
	}
	d := &rankingDocument{Rule: rk.Rule, Today: rk.Today, TodayConfiguredIn: rk.TodayFrom, TodayHitRate: rk.TodayHitRate, Replicas: rk.Replicas, KVBlocks: rk.KVBlocks,
		BlockSize: rk.BlockSize, HotSpotLoadMaxOverMean: rk.HotSpot, Rows: []rankRowDoc{}, CannotRun: []cannotRunDoc{}, NotSimulated: []notSimDoc{}, Why: []string{},
		RequirementStatusValues: []string{product.Met, product.Missing, product.Unknown}, TodayNotes: append([]string{}, rk.TodayNotes...),
		Rules:  rankRulesDoc{rk.Rules.Concentration, rk.Rules.BalancedMargin, rk.Rules.StackMargin, rk.Rules.SessionMargin, rk.Rules.MinGain},
		Answer: rk.Answer, AnswerGain: rk.AnswerGain, FirstBy: rk.FirstBy, Displaced: rk.Displaced, Traffic: rk.Traffic}
	if rk.Stack.Product != "" {
		d.Stack = &rankStackDoc{rk.Stack.Product, rk.Stack.From}
	}
	if rk.AddReplicaAt >= 0 {
		at := rk.AddReplicaAt
		d.AddReplicaAtSeconds = &at
	}
	for _, r := range rk.Rows {
		row := rankRowDoc{Rank: r.Rank, Excluded: r.Excluded, Policy: r.Policy, Product: r.Product, Family: r.Family, Concentrates: r.Concentrates, Variant: r.Variant, Label: r.Label,
			HitRate: r.HitRate, PrefillSaved: r.PrefillSaved, LoadMaxOverMean: r.LoadMaxOverMean, TTFTP50: r.TTFTP50, TTFTP99: r.TTFTP99,
			FreshShare: r.FreshShare, Starves: r.Starves, Changes: []rankChangeDoc{}, Requirements: []requirementDoc{},
			Notes: append([]string{}, r.Notes...)}
		if rk.AddReplicaAt >= 0 {
			fair := r.FairShare
			row.FairShare = &fair
		}
		if sp := r.Seeds; sp != nil {
			row.Seeds = &rankSeedsDoc{Seeds: append([]uint64{}, sp.Seeds...), MedianSeed: sp.Median, SampleRequests: sp.Sample,
				HitRate: [2]float64{sp.HitMin, sp.HitMax}, LoadMaxOverMean: [2]float64{sp.LoadMin, sp.LoadMax}, HotSpots: sp.HotSpots}
			if sp.Sample == 0 {
				row.Seeds.PrefillSaved = &[2]float64{sp.SavedMin, sp.SavedMax}
			}
		}
		for _, c := range r.Changes {
			row.Changes = append(row.Changes, rankChangeDoc{c.Setting, c.Value, c.Why})
		}
		for _, q := range r.Requirements {
			row.Requirements = append(row.Requirements, requirementDoc{q.Name, q.Status, q.Detail})
		}
		d.Rows = append(d.Rows, row)
	}
	for _, c := range rk.CannotRun {
		d.CannotRun = append(d.CannotRun, cannotRunDoc{c.Policy, c.Product, c.Variant, c.Label, c.Reason})
	}
	for _, n := range rk.NotSimulated {
		d.NotSimulated = append(d.NotSimulated, notSimDoc{n.Product, n.Where, n.Reason, append([]string{}, n.Notes...)})
	}
	d.NoWinner = rk.NoWinner
	d.Why = append(d.Why, rk.Why...)
	if s := rk.Snippet; s != nil {
		d.Snippet = &rankSnippetDoc{s.Product, s.Format, s.File, s.Where, s.Text}
	}
	return d
}

// rankShown is how many ranked rows the text shows by default; --evidence all and JSON show
// them all.
const rankShown = 3

// briefRows is the brief view's rows: the first rankShown ranked rows, passing over a row that
// is a shown row's router under other settings with the same figures in every column (SGLang's
// CLI and policy-hint defaults can route one trace alike): it would say nothing the row above
// does not, on a screen with room for three. --evidence all shows every row.
func briefRows(ranked []rank.Row) []rank.Row {
	var shown []rank.Row
	for _, r := range ranked {
		if len(shown) == rankShown {
			break
		}
		if !slices.ContainsFunc(shown, func(s rank.Row) bool { return sameFigures(s, r) }) {
			shown = append(shown, r)
		}
	}
	return shown
}

// sameFigures: a and b are one router whose table columns, but for the variant, read alike.
func sameFigures(a, b rank.Row) bool {
	return a.Policy == b.Policy && pct(a.HitRate) == pct(b.HitRate) && signedPct(a.PrefillSaved) == signedPct(b.PrefillSaved) &&
		fmt.Sprintf("%.2f", a.LoadMaxOverMean) == fmt.Sprintf("%.2f", b.LoadMaxOverMean) &&
		units.Duration(a.TTFTP50) == units.Duration(b.TTFTP50) && units.Duration(a.TTFTP99) == units.Duration(b.TTFTP99) &&
		Ratio(a.FreshShare) == Ratio(b.FreshShare) && requirementCounts(a.Requirements) == requirementCounts(b.Requirements)
}

// ranking writes the router ranking for people: the top three in a table (every row with
// --evidence all), why the first wins, its requirements, what could not run, and the
// configuration to apply. route is the recommendation's routing answer (its Then after a
// fix-first): when that is nothing or cannot tell yet, the router named first is said not to
// be advice to deploy one, since the two answer different questions (the ranking orders
// routers by whole points of today's prefill saved; the recommendation asks an option to
// clear the gain threshold in points of all prefill).
func (t *Text) ranking(rk *rank.Ranking, route advise.Verdict) error {
	fleet := fmt.Sprintf("%d %s x %d blocks of %d tokens", rk.Replicas, plural(rk.Replicas, "replica"), rk.KVBlocks, rk.BlockSize)
	if rk.AddReplicaAt >= 0 {
		fleet += fmt.Sprintf(", one more added at %s", seconds(rk.AddReplicaAt))
	}
	today := rk.Today
	if rk.TodayFrom != "" {
		today += " as configured in " + rk.TodayFrom
	}
	on := "this traffic"
	if rk.Traffic != "" {
		on = rk.Traffic
	}
	// The fleet is the replay's, which the brief view's reasons already state.
	if t.all {
		t.Heading(fmt.Sprintf("Routers on %s (%s), prefill saved against today's %s (hit %s)", on, fleet, today, pct(rk.TodayHitRate)))
	} else {
		added := ""
		if rk.AddReplicaAt >= 0 {
			added = fmt.Sprintf(" (one more added at %s)", seconds(rk.AddReplicaAt))
		}
		t.Heading(fmt.Sprintf("Routers on %s%s, against today's %s (hit %s)", on, added, today, pct(rk.TodayHitRate)))
	}
	if t.all {
		t.Muted("  rule: %s", rk.Rule)
	}
	for _, n := range rk.TodayNotes {
		t.Muted("  today's %s: %s", rk.Today, n)
	}
	ranked, excluded := 0, 0
	for _, r := range rk.Rows {
		if r.Rank > 0 {
			ranked++
		} else {
			excluded++
		}
	}
	if len(rk.Rows) == 0 {
		t.Line("  no router emulation could run on this traffic")
	}
	shown := rk.Rows
	if !t.all {
		shown = briefRows(rk.Rows[:ranked])
	}
	if len(shown) > 0 {
		header := []string{"rank", "router", "variant", "hit", "prefill saved", "load max/mean", "ttft p50", "ttft p99"}
		fresh := rk.AddReplicaAt >= 0
		if fresh {
			header = append(header, "added replica")
		}
		header = append(header, "requirements")
		var rows [][]string
		for _, r := range shown {
			variant := r.Variant
			if r.Label != "" {
				variant += " (" + r.Label + ")"
			}
			if t.all {
				for _, c := range r.Changes {
					variant += "; " + c.Setting + " " + c.Value
				}
			}
			place := strconv.Itoa(r.Rank)
			if r.Rank == 0 {
				place = "-"
			}
			row := []string{place, r.Policy, variant, pct(r.HitRate), signedPct(r.PrefillSaved),
				fmt.Sprintf("%.2f", r.LoadMaxOverMean), units.Duration(r.TTFTP50), units.Duration(r.TTFTP99)}
			if fresh {
				row = append(row, fmt.Sprintf("%s of %s", Ratio(r.FreshShare), pct(r.FairShare)))
			}
			rows = append(rows, append(row, requirementCounts(r.Requirements)))
		}
		// On a narrow terminal the router, what it saves, its balance and requirements stay;
		// the rank goes first, the rows being in its order.
		cols := dropping(Columns(header, rows), map[string]int{"rank": 5, "ttft p50": 4, "hit": 3, "ttft p99": 2})
		for i := range cols {
			cols[i].Short = map[string]string{"prefill saved": "saved", "load max/mean": "load", "requirements": "required", "added replica": "added", "ttft p50": "p50", "ttft p99": "p99"}[cols[i].Name]
			// A router's name is what a row is read by: whole, on one line.
			cols[i].Wrap = cols[i].Wrap && cols[i].Name != "router"
		}
		if err := t.Grid(cols, rows); err != nil {
			return err
		}
		for _, r := range shown {
			if r.Rank == 0 && r.Excluded != "" {
				t.Muted("  %s: not ranked: %s", r.Name(), r.Excluded)
			}
			if r.Concentrates && r.Excluded == "" {
				t.Muted("  %s: concentrates requests: load max/mean %.2f, a replica with %.1fx its fair share (no hot spot at this load, but a surge lands there)", r.Name(), r.LoadMaxOverMean, r.LoadMaxOverMean)
			}
			for _, n := range r.Notes {
				t.Muted("  %s: %s", r.Name(), n)
			}
			// The brief view has no line to spare at 80 columns: the seeds are said with
			// --evidence all and in the JSON (a hot spot's reason says them in both).
			if r.Seeds != nil && t.all {
				t.Muted("  %s: %s", r.Name(), seedsLine(r.Seeds))
			}
		}
	}
	if ranked > 0 {
		if rk.NoWinner != "" {
			t.Verdict("No router first")
			t.Line("  - %s", rk.NoWinner)
		} else {
			first := rk.Rows[0]
			switch {
			case rk.Change != "" && !t.all:
				// The brief view says the change of product on the heading, the sentence
				// with what it adds under --evidence all.
				t.Verdict("First: " + first.Name() + ", replacing " + rk.ChangeFrom)
			default:
				t.Verdict("First: " + first.Name())
			}
			if route == advise.Nothing || route == advise.Undetermined {
				t.Muted("  not advice to deploy it: the recommendation above is %s, so no configuration is given; this is the router to choose if you deploy one anyway", route.Describe())
			}
			for i, w := range rk.Why {
				switch {
				case t.all:
					t.Line("  - %s", w)
				case i > 0 && w != rk.Change:
					// The first line restates the table's figures.
					t.Line("  - %s", gist(w))
				}
			}
			// The brief view has the requirements' counts in the table.
			if len(first.Requirements) > 0 && t.all {
				t.Line("  requirements:")
				for _, q := range first.Requirements {
					t.Line("    %s: %s (%s)", q.Name, q.Status, q.Detail)
				}
			}
			for _, c := range first.Changes {
				t.Line("  %s %s: %s", c.Setting, c.Value, c.Why)
			}
		}
	}
	if !t.all {
		var more []string
		if ranked > len(shown) {
			more = append(more, fmt.Sprintf("%d more ranked", ranked-len(shown)))
		}
		if excluded > 0 {
			more = append(more, fmt.Sprintf("%d not ranked", excluded))
		}
		if n := len(rk.CannotRun); n > 0 {
			more = append(more, fmt.Sprintf("%d cannot run", n))
		}
		if s := rk.Snippet; s != nil {
			// On one screen: the configuration is a page of its own.
			more = append(more, "the configuration to apply ("+s.File+")")
		}
		if len(more) > 0 {
			t.Muted("  %s: --evidence all shows them and why", strings.Join(more, ", "))
		}
	}
	if len(rk.CannotRun) > 0 && t.all {
		// One line per reason: on a block trace every text-reading router gives the same one.
		t.Line("  cannot run on this traffic:")
		var reasons []string
		names := map[string][]string{}
		for _, c := range rk.CannotRun {
			variant := c.Variant
			if c.Label != "" {
				variant += ", " + c.Label
			}
			if _, ok := names[c.Reason]; !ok {
				reasons = append(reasons, c.Reason)
			}
			names[c.Reason] = append(names[c.Reason], c.Policy+" ("+variant+")")
		}
		for _, r := range reasons {
			t.Line("    %s: %s", strings.Join(names[r], ", "), r)
		}
	}
	if len(rk.NotSimulated) > 0 {
		t.Line("  configured, not simulated:")
		for _, n := range rk.NotSimulated {
			t.Line("    %s (%s): %s", n.Product, n.Where, n.Reason)
			for _, note := range n.Notes {
				t.Muted("      %s", note)
			}
		}
	}
	if s := rk.Snippet; s != nil {
		if !t.all {
			return nil
		}
		t.Heading(fmt.Sprintf("Configuration to apply (%s, %s)", s.Format, s.File))
		if s.Where != "" {
			t.Muted("  goes into %s", s.Where)
		}
		for _, l := range strings.Split(strings.TrimRight(s.Text, "\n"), "\n") {
			t.Pre("  %s", l)
		}
	}
	return nil
}

// requirementCounts sums a row's requirements by status: "2 met, 1 unknown".
func requirementCounts(qs []product.Requirement) string {
	if len(qs) == 0 {
		return "none"
	}
	var parts []string
	for _, st := range []string{product.Missing, product.Met, product.Unknown} {
		n := 0
		for _, q := range qs {
			if q.Status == st {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// seedsLine says over which seeds a row whose router draws was judged, and how far its figures
// spread over them.
func seedsLine(sp *rank.SeedSpread) string {
	seeds := fmt.Sprintf("%d seeds (%d-%d)", len(sp.Seeds), sp.Seeds[0], sp.Seeds[len(sp.Seeds)-1])
	hot := fmt.Sprintf("a hot spot on %d of them", sp.HotSpots)
	if sp.Sample > 0 {
		return fmt.Sprintf("places requests by seeded draws: its figures are seed %d's; over %s on the first %d requests, hit %s-%s, load max/mean %.2f-%.2f, %s",
			sp.Seeds[0], seeds, sp.Sample, pct(sp.HitMin), pct(sp.HitMax), sp.LoadMin, sp.LoadMax, hot)
	}
	return fmt.Sprintf("places requests by seeded draws: judged over %s, each figure the median, the load seed %d's; hit %s-%s, prefill saved %s to %s, load max/mean %.2f-%.2f, %s",
		seeds, sp.Median, pct(sp.HitMin), pct(sp.HitMax), signedPct(sp.SavedMin), signedPct(sp.SavedMax), sp.LoadMin, sp.LoadMax, hot)
}
