package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
)

// rankingFixture is a ranking as assess builds it, written by hand: five rows (one not ranked,
// a hot spot), one emulation that cannot run, an added replica, and a snippet.
func rankingFixture() *rank.Ranking {
	unknown := func(name string) product.Requirement {
		return product.Requirement{Name: name, Status: product.Unknown, Detail: "no --config files given"}
	}
	return &rank.Ranking{Today: "round-robin", TodayHitRate: 0.083, Replicas: 8, KVBlocks: 2048, BlockSize: 512, AddReplicaAt: 1800, HotSpot: 2,
		Rule: "the rule", Rules: rank.DefaultRules(), Answer: rank.FamilyKV, Stack: rank.Stack{Product: dynamo.ID, From: "--today dynamo-round-robin"},
		Rows: []rank.Row{
			{Candidate: rank.Candidate{Policy: "llmd-precise", Product: llmd.ID, Variant: rank.Tuned, Family: rank.FamilyKV,
				Changes:      []product.Change{{Setting: "token-producer", Value: "vllm", Why: "the estimate tokenizer's keys never match"}},
				Requirements: []product.Requirement{unknown(product.ReqKubernetes), unknown(llmd.ReqGatewayPool), unknown(product.ReqKVEvents)}},
				Rank: 1, HitRate: 0.278, PrefillSaved: 0.212, LoadMaxOverMean: 1.04, TTFTP50: 0.51, TTFTP99: 9.19, FreshShare: fp(0.1), FairShare: 1.0 / 9},
			{Candidate: rank.Candidate{Policy: "dynamo-kv", Product: dynamo.ID, Variant: rank.Tuned, Family: rank.FamilyKV,
				Changes:      []product.Change{{Setting: "--router-kv-overlap-score-credit-decay", Value: "0.5", Why: "a replica is added"}},
				Requirements: []product.Requirement{unknown(dynamo.ReqFrontend), unknown(product.ReqKVEvents)}},
				Rank: 2, HitRate: 0.26, PrefillSaved: 0.193, LoadMaxOverMean: 1.1, TTFTP50: 0.4, TTFTP99: 8.7, FreshShare: fp(0.09), FairShare: 1.0 / 9},
			{Candidate: rank.Candidate{Policy: "llmd-approx", Product: llmd.ID, Variant: rank.Shipped, Family: rank.FamilyKV,
				Requirements: []product.Requirement{unknown(product.ReqKubernetes), unknown(llmd.ReqGatewayPool)}},
				Rank: 3, HitRate: 0.25, PrefillSaved: 0.182, LoadMaxOverMean: 1.07, TTFTP50: 0.45, TTFTP99: 9.15, FreshShare: fp(0.11), FairShare: 1.0 / 9},
			{Candidate: rank.Candidate{Policy: "dynamo-round-robin", Product: dynamo.ID, Variant: rank.Shipped, Family: rank.FamilyBalance,
				Requirements: []product.Requirement{unknown(dynamo.ReqFrontend)}},
				Rank: 4, HitRate: 0.083, PrefillSaved: 0, LoadMaxOverMean: 1, TTFTP50: 0.6, TTFTP99: 12.2, FreshShare: fp(0.11), FairShare: 1.0 / 9},
			{Candidate: rank.Candidate{Policy: "dynamo-kv", Product: dynamo.ID, Variant: rank.Shipped, Family: rank.FamilyKV,
				Requirements: []product.Requirement{unknown(dynamo.ReqFrontend), unknown(product.ReqKVEvents)}},
				Excluded: "starves the added replica: 0.0% of the requests after it joined, under half its fair share 11.1%",
				HitRate:  0.27, PrefillSaved: 0.2, LoadMaxOverMean: 1.12, TTFTP50: 0.4, TTFTP99: 8.9, FreshShare: fp(0), FairShare: 1.0 / 9, Starves: true},
		},
		// Two with one reason share a line of the text.
		CannotRun: []rank.CannotRun{{Policy: "sglang-cache-aware", Product: sglang.ID, Variant: rank.Shipped, Label: "CLI defaults",
			Reason: "it routes on the request's text and headers, and this mooncake trace holds only block hashes; give the request log (--requests) instead"},
			{Policy: "prodstack-prefixaware", Product: prodstack.ID, Variant: rank.Shipped,
				Reason: "it routes on the request's text and headers, and this mooncake trace holds only block hashes; give the request log (--requests) instead"}},
		Why: []string{"llmd-precise (tuned) saves 21.2% of today's prefill (round-robin) after the warm-up, with load max/mean 1.04 and TTFT p99 9.19 s",
			"ahead of dynamo-kv (tuned) by 2 points of prefill saved (19.3%)"},
		Snippet: &product.Snippet{Product: llmd.ID, Format: "EndpointPickerConfig", File: "epp-config.yaml", Where: "the EPP's --config-file",
			Text: "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\n"},
	}
}

func TestAssessRankingGolden(t *testing.T) {
	in := assessInputs()["kv_router"]
	res := AssessRanked(advise.Decide(in, advise.DefaultThresholds()), rankingFixture())
	golden(t, "assess/ranking.txt.golden", render(t, FormatText, res))
	out := render(t, FormatJSON, res)
	golden(t, "assess/ranking.json.golden", out)
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Ranking       struct {
			Rows      []map[string]any `json:"rows"`
			CannotRun []map[string]any `json:"cannot_run"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	// JSON carries the whole ranking, the row the text leaves out included.
	if doc.SchemaVersion != SchemaVersion || len(doc.Ranking.Rows) != 5 || len(doc.Ranking.CannotRun) != 2 {
		t.Errorf("schema %d, %d rows, %d cannot run", doc.SchemaVersion, len(doc.Ranking.Rows), len(doc.Ranking.CannotRun))
	}
}

// TestAssessRankingNotes: a row simulated otherwise than its settings say (engines without KV
// events) carries its note in the JSON and, when shown, under the table.
func TestAssessRankingNotes(t *testing.T) {
	rk := rankingFixture()
	note := "simulated without engine KV events: the files show an engine without KV events (dgd.yaml:15 VllmWorker: no --kv-events-config with enable_kv_cache_events true)"
	rk.Rows[1].Notes = []string{note}
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	if text := string(render(t, FormatText, res)); !strings.Contains(text, "  dynamo-kv (tuned): "+note+"\n") {
		t.Errorf("the text does not show the note:\n%s", text)
	}
	var doc struct {
		Ranking struct {
			Rows []struct {
				Notes []string `json:"notes"`
			} `json:"rows"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	if rows := doc.Ranking.Rows; len(rows) != 5 || len(rows[0].Notes) != 0 || len(rows[1].Notes) != 1 || rows[1].Notes[0] != note {
		t.Errorf("notes in the JSON rows: %+v", rows)
	}
}

// TestAssessRankingNotAdvice: a recommendation of nothing next to a ranking that names a router
// first says the first is not advice to deploy one; a KV-aware recommendation does not.
func TestAssessRankingNotAdvice(t *testing.T) {
	const line = "not advice to deploy it: the recommendation above is nothing"
	rec := advise.Decide(assessInputs()["nothing"], advise.DefaultThresholds())
	if rec.Verdict != advise.Nothing {
		t.Fatalf("fixture verdict %s, want nothing", rec.Verdict)
	}
	if text := string(render(t, FormatText, AssessRanked(rec, rankingFixture()))); !strings.Contains(text, line) {
		t.Errorf("nothing beside a ranking with a first: no %q in\n%s", line, text)
	}
	rec = advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds())
	if text := string(render(t, FormatText, AssessRanked(rec, rankingFixture()))); strings.Contains(text, "not advice to deploy it") {
		t.Errorf("a KV-aware recommendation: the ranking's first is said not to be advice:\n%s", text)
	}
}

// TestAssessRankingSeeds: a row judged over seeds says so under the table, with the seeds, the
// median seed and each figure's spread, and carries them in the JSON; on a sample, the figures
// are the base seed's and the spread the sample's, without prefill saved.
func TestAssessRankingSeeds(t *testing.T) {
	rk := rankingFixture()
	rk.Rows[1].Seeds = &rank.SeedSpread{Seeds: []uint64{1, 2, 3, 4, 5}, Median: 4, HitMin: 0.25, HitMax: 0.27, SavedMin: 0.18, SavedMax: 0.2, LoadMin: 1.05, LoadMax: 2.93, HotSpots: 1}
	rk.Rows[2].Seeds = &rank.SeedSpread{Seeds: []uint64{1, 2, 3, 4, 5}, Sample: 1188, HitMin: 0.052, HitMax: 0.086, LoadMin: 1.06, LoadMax: 1.16}
	res := AssessRanked(advise.Decide(assessInputs()["kv_router"], advise.DefaultThresholds()), rk)
	if brief := string(render(t, FormatText, res)); strings.Contains(brief, "seeded draws") {
		t.Errorf("the brief view says the seeds:\n%s", brief)
	}
	var b bytes.Buffer
	if err := Write(&b, FormatText, res, Options{Version: "test", All: true}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"  dynamo-kv (tuned): places requests by seeded draws: judged over 5 seeds (1-5), each figure the median, the load seed 4's; hit 25.0%-27.0%, prefill saved +18.0% to +20.0%, load max/mean 1.05-2.93, a hot spot on 1 of them\n",
		"  llmd-approx (shipped): places requests by seeded draws: its figures are seed 1's; over 5 seeds (1-5) on the first 1188 requests, hit 5.2%-8.6%, load max/mean 1.06-1.16, a hot spot on 0 of them\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	var doc struct {
		Ranking struct {
			Rows []struct {
				Seeds *struct {
					Seeds  []uint64    `json:"seeds"`
					Median uint64      `json:"median_seed"`
					Sample int         `json:"sample_requests"`
					Hit    [2]float64  `json:"hit_rate_min_max"`
					Saved  *[2]float64 `json:"prefill_saved_min_max"`
					Load   [2]float64  `json:"load_max_over_mean_min_max"`
					Hot    int         `json:"hot_spots"`
				} `json:"seeds"`
			} `json:"rows"`
		} `json:"ranking"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, res), &doc); err != nil {
		t.Fatal(err)
	}
	rows := doc.Ranking.Rows
	if rows[0].Seeds != nil {
		t.Errorf("a row replayed once has seeds %+v, want null", rows[0].Seeds)
	}
	if s := rows[1].Seeds; s == nil || s.Median != 4 || s.Sample != 0 || s.Saved == nil || *s.Saved != [2]float64{0.18, 0.2} || s.Load != [2]float64{1.05, 2.93} || s.Hot != 1 || len(s.Seeds) != 5 {
		t.Errorf("whole-traffic seeds %+v", s)
	}
	if s := rows[2].Seeds; s == nil || s.Sample != 1188 || s.Saved != nil || s.Hit != [2]float64{0.052, 0.086} {
		t.Errorf("sample seeds %+v", s)
	}
}
