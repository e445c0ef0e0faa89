package assess

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestTodayWithoutEngineEvents: --today names a router that reads the engines' KV events, and
// the files show an engine that publishes none. Its ranked rows were already simulated as the
// product then behaves (Dynamo's KV router load-only, llm-d's precise producer with no prefix
// match), but today's routing itself still ran with the events, so the ranking compared every
// row with a today that could not happen. Today now runs as its own shipped (or configured) row
// does, and says so: on oneSharedBlock its hit rate is that row's, to the token, in the ranking
// and in the verdict's evidence alike. With events shown published, nothing changes.
func TestTodayWithoutEngineEvents(t *testing.T) {
	noEvents := []product.Engine{{Where: "dgd.yaml:15 VllmWorker"}}
	publishing := []product.Engine{{Where: "dgd.yaml:15 VllmWorker", KVEvents: true}}
	precise := llmd.Shipped()
	precise.Tokenizer = "vllm"
	for _, c := range []struct {
		name, today string
		files       *product.Files
		notes       []string // prefixes of today's notes, in order
		from        string
	}{
		{"dynamo-kv shipped", "dynamo-kv", &product.Files{Engines: noEvents}, []string{"simulated without engine KV events: the files show an engine without KV events (dgd.yaml:15 VllmWorker"}, ""},
		{"llmd-precise configured", "llmd-precise", &product.Files{Engines: noEvents, Routers: []product.Configured{
			{Policy: "llmd-precise", Where: "epc.yaml:1", Settings: precise, Notes: []string{"blockSizeTokens \"16k\" in epc.yaml:1 is not a whole number"}}}},
			[]string{"blockSizeTokens \"16k\" in epc.yaml:1", "simulated without engine KV events"}, "epc.yaml:1"},
		{"dynamo-kv, events published", "dynamo-kv", &product.Files{Engines: publishing}, nil, ""},
	} {
		o := Options{Today: c.today, Replicas: 8, KVTokens: 16000, Thresholds: advise.DefaultThresholds(), Routers: []sim.PolicyInfo{{Name: c.today}}}
		rec, rk, err := assessRanked(context.Background(), Inputs{Trace: oneSharedBlock(), Files: c.files}, o, true)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rk == nil || rk.TodayFrom != c.from || len(rk.TodayNotes) != len(c.notes) {
			t.Fatalf("%s: ranking %+v, want today from %q with %d note(s)", c.name, rk, c.from, len(c.notes))
		}
		for i, n := range c.notes {
			if !strings.HasPrefix(rk.TodayNotes[i], n) {
				t.Errorf("%s: today's note %d %q, want it to start %q", c.name, i, rk.TodayNotes[i], n)
			}
		}
		// Today's own row (shipped, or configured from the same file) on the same traffic.
		var row *rank.Row
		for i, r := range rk.Rows {
			if r.Policy == c.today && (c.from == "" && r.Variant == rank.Shipped || r.Label == c.from) {
				row = &rk.Rows[i]
			}
		}
		if row == nil {
			t.Fatalf("%s: no row of today's router in %+v", c.name, rk.Rows)
		}
		if rk.TodayHitRate != row.HitRate || row.PrefillSaved != 0 {
			t.Errorf("%s: today's hit %v, its own row's %v saving %v: want the same router replayed alike", c.name, rk.TodayHitRate, row.HitRate, row.PrefillSaved)
		}
		for _, e := range rec.Evidence {
			if strings.HasSuffix(e.ID, ".today") && !strings.Contains(e.Figure, fmt.Sprintf("hit %.1f%% after warm-up", 100*rk.TodayHitRate)) {
				t.Errorf("%s: the verdict's today %q, the ranking's %v", c.name, e.Figure, rk.TodayHitRate)
			}
		}
	}
}
