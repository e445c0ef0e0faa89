package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/units"
)

// assessDoc is the part of assess's JSON the tests read.
type assessDoc struct {
	SchemaVersion int    `json:"schema_version"`
	Verdict       string `json:"verdict"`
	Then          string `json:"then"`
	Confidence    string `json:"confidence"`
	Reasons       []struct {
		Rule    string `json:"rule"`
		Against bool   `json:"against"`
	} `json:"reasons"`
	Evidence []struct {
		ID     string `json:"id"`
		Figure string `json:"figure"`
	} `json:"evidence"`
	Fixes []struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
	} `json:"fixes"`
	NextSteps []struct {
		Measure string `json:"measure"`
	} `json:"next_steps"`
}

func (d assessDoc) rules() string {
	var out []string
	for _, r := range d.Reasons {
		if !r.Against {
			out = append(out, r.Rule)
		}
	}
	return strings.Join(out, ",")
}

func (d assessDoc) figure(id string) string {
	for _, e := range d.Evidence {
		if e.ID == id {
			return e.Figure
		}
	}
	return ""
}

func runAssessJSON(t *testing.T, args ...string) (assessDoc, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"assess", "-o", "json"}, args...), streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
	var doc assessDoc
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
		}
	}
	return doc, code, errOut.String()
}

// TestAssessInputs runs assess over the fixtures under testdata/assess, the audit's request
// logs and, when KVCHECK_CORPUS is set, the real templates, dumps and the Mooncake trace.
func TestAssessInputs(t *testing.T) {
	td := "../../testdata/"
	corpus := os.Getenv("KVCHECK_CORPUS")
	tests := []struct {
		name       string
		args       []string
		corpus     bool
		code       int
		verdict    string
		then       string
		rules      string
		fixes      []string
		evidence   map[string]string // id -> regexp on the figure
		confidence string
	}{
		{name: "caching off", args: []string{"--file", td + "assess/caching_off.prom"}, code: exitOK,
			verdict: "fix-first", then: "undetermined", rules: "prefix-caching-off,metrics-cannot-tell", fixes: []string{"error prefix-caching-off"},
			evidence: map[string]string{"hitrate.caching": `^on in 2 of 3 replicas; off in 10.0.0.2:8000$`, "hitrate.kv_capacity": `^2048 blocks x 16 = 32768 tokens$`}},
		{name: "caching off fails the gate", args: []string{"--file", td + "assess/caching_off.prom", "--fail-on", "error"}, code: exitFindings,
			verdict: "fix-first", then: "undetermined"},
		{name: "thrashing", args: []string{"--file", td + "assess/thrashing.prom"}, code: exitOK,
			verdict: "fix-first", then: "undetermined", rules: "fleet-thrashes,metrics-cannot-tell", fixes: []string{"error thrashing", "warning thrashing"}, confidence: "medium"},
		// One dump is one replica's view, not the fleet's size, and metrics alone cannot say
		// whether a router would help (issue 9, failure 7): cannot tell yet.
		{name: "single replica", args: []string{"--file", td + "assess/single.prom", "--fail-on", "info"}, code: exitOK,
			verdict: "undetermined", rules: "metrics-cannot-tell", confidence: "low"},
		// Each conversation keeps its account number in its system prompt and its turns on
		// consecutive lines, so round-robin never puts two turns of one conversation on one
		// replica (0% after warm-up); session affinity keeps them (+57 points), a KV router
		// adds nothing to that. Replacing the account number costs routing almost nothing.
		{name: "within-session chat log", args: []string{"--requests", td + "assess/chat_sessions.jsonl", "--file", td + "assess/healthy.prom"}, code: exitOK,
			// The requests carry metadata.session_id, but the log has no timestamps: replayed at
			// --rate, an imbalance is a hot spot on its own. LiteLLM's session_affinity draws
			// each conversation's replica: judged over 5 seeds, it is one only when 3 of them
			// are (rank.Seeds), and these are not, so it is named (no router-unnamed).
			verdict: "session-affinity", rules: "session-affinity-saves,breaker-cheap",
			evidence: map[string]string{"requests.within": `^5\d\.\d% of prompt tokens`, "replay.fleet": `^4 replicas \(metrics\) x 32768 tokens of KV \(metrics\)$`}},
		// One system prompt shared by every request, a working set that fits in every replica:
		// round-robin already hits it after the warm-up (issue 9, failure 1).
		{name: "shared system prompt log", args: []string{"--requests", td + "assess/shared_prompt.jsonl"}, code: exitOK,
			verdict: "nothing", rules: "no-option-pays,sessions-unknown,hot-spots"},
		{name: "shared system prompt log, stated fleet", args: []string{"--requests", td + "assess/shared_prompt.jsonl", "--replicas", "4", "--kv-tokens", "65536"}, code: exitOK,
			verdict: "nothing", evidence: map[string]string{"replay.fleet": `^4 replicas \(flag\) x 65536 tokens of KV \(flag\)$`}},
		// --replicas without --trace states the fleet (issue 9, failure 6).
		{name: "a request log on a stated fleet of one", args: []string{"--requests", td + "assess/chat_sessions.jsonl", "--file", td + "assess/single.prom", "--replicas", "1"}, code: exitOK,
			verdict: "nothing", rules: "single-replica,breaker-cheap", confidence: "high"},
		// The time in the system prompt breaks every prefix: fix first (the breaker costs tens of
		// points). Once fixed, the 36 requests leave 18 after the warm-up, each on average 5.6%
		// of the tokens the gains count, over the 5-point threshold: one request could decide
		// what follows, so then cannot tell yet (a longer log).
		{name: "timestamp in the first message", args: []string{"--requests", td + "audit/requests/agent_timestamp.jsonl", "--fail-on", "warning"}, code: exitFindings,
			verdict: "fix-first", then: "undetermined", rules: "breaker-costs,too-little-traffic", fixes: []string{"error audit/early-divergence"}, confidence: "medium"},
		{name: "corpus templates", corpus: true, args: []string{"--templates", "templates"}, code: exitOK,
			verdict: "fix-first", then: "undetermined", rules: "template-breaker,no-traffic", fixes: []string{"error audit/breaker", "error audit/breaker", "warning audit/breaker", "warning audit/breaker", "warning audit/early"},
			evidence: map[string]string{"templates.verdicts": `^7: 4 breaker, 1 early, 2 clean$`}},
		// 2048 blocks of 16 tokens hold about four Mooncake prompts: nothing keeps a prefix
		// until it comes back, so no policy gains; the trace's 22,601,728 shared tokens are 172x
		// the fleet's 4 x 32,768, which the report names as capacity.
		{name: "corpus Mooncake trace on the healthy fleet's shape", corpus: true,
			args: []string{"--trace", "traces/mooncake_conversation_trace.jsonl", "--file", "HEALTHY"}, code: exitOK,
			verdict: "nothing", rules: "no-option-pays,capacity-bound,sessions-unknown",
			evidence: map[string]string{"replay.fleet": `^4 replicas \(metrics\) x 32768 tokens of KV \(metrics\)$`,
				"replay.ceiling": `^36\.6%$`}},
		{name: "corpus Mooncake trace, 8 replicas", corpus: true,
			args: []string{"--trace", "traces/mooncake_conversation_trace.jsonl", "--replicas", "8"}, code: exitOK,
			verdict: "kv-aware-router", rules: "kv-router-saves,working-set-exceeds-replica",
			// The best KV-aware option is an idealised policy or a ranked router (a row's name).
			evidence: map[string]string{"replay.kv": `^(kv-[a-z]+|[a-z]+(-[a-z]+)+ \((shipped|configured|tuned)[^)]*\)): hit 2\d\.\d% after warm-up`, "replay.fleet": `^8 replicas \(flag\) x 1\.0M tokens of KV \(assumed\)$`}},
		// Lengths only: reuse cannot be shown either way (issue 9, failure 8).
		{name: "corpus Azure trace has no prefixes", corpus: true,
			args: []string{"--trace", "traces/azure_llm_inference_trace_2023_conv.csv", "--replicas", "4"}, code: exitOK,
			verdict: "undetermined", rules: "lengths-only", confidence: "low"},
		{name: "corpus V0 engine dump without prefix caching", corpus: true,
			args: []string{"--file", "metrics/vllm-v0engine-aibrix-runtime-docs.prom"}, code: exitOK,
			verdict: "fix-first", then: "undetermined", rules: "prefix-caching-off,metrics-cannot-tell", fixes: []string{"error prefix-caching-off"}},
		{name: "corpus V1 0.10.0 dump excerpt: one replica", corpus: true,
			args: []string{"--file", "metrics/vllm-0.10.0-v1-production-stack-issue-617-excerpt.prom"}, code: exitOK,
			verdict: "undetermined", rules: "metrics-cannot-tell", confidence: "low"},
		{name: "corpus saturated engine log", corpus: true,
			args: []string{"--log", "logs/issue_vllm-43295_vllm-v1_kv-saturated_queue.log"}, code: exitOK,
			verdict: "fix-first", then: "undetermined", rules: "fleet-thrashes,metrics-cannot-tell", fixes: []string{"error thrashing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.corpus {
				if corpus == "" {
					t.Skip("KVCHECK_CORPUS is not set")
				}
				args = nil
				abs, err := filepath.Abs(td + "assess/healthy.prom")
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range tt.args {
					switch {
					case a == "HEALTHY":
						a = abs
					case i > 0 && strings.HasPrefix(tt.args[i-1], "--") && tt.args[i-1] != "--replicas":
						a = filepath.Join(corpus, a)
					}
					args = append(args, a)
				}
			}
			doc, code, stderr := runAssessJSON(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if doc.SchemaVersion != 1 || doc.Verdict != tt.verdict || doc.Then != tt.then {
				t.Errorf("schema %d verdict %q then %q, want 1, %q, %q", doc.SchemaVersion, doc.Verdict, doc.Then, tt.verdict, tt.then)
			}
			if tt.rules != "" && doc.rules() != tt.rules {
				t.Errorf("rules = %s, want %s", doc.rules(), tt.rules)
			}
			if tt.confidence != "" && doc.Confidence != tt.confidence {
				t.Errorf("confidence = %s, want %s", doc.Confidence, tt.confidence)
			}
			if tt.fixes != nil {
				var got []string
				for _, f := range doc.Fixes {
					got = append(got, f.Severity+" "+f.Code)
				}
				if strings.Join(got, ",") != strings.Join(tt.fixes, ",") {
					t.Errorf("fixes = %v, want %v", got, tt.fixes)
				}
			}
			for id, re := range tt.evidence {
				if fig := doc.figure(id); !regexp.MustCompile(re).MatchString(fig) {
					t.Errorf("evidence %s = %q, want it to match %s", id, fig, re)
				}
			}
		})
	}
}

// TestAssessScrapeFleet scrapes an emulated fleet in which one replica runs without prefix
// caching and each has 1536 blocks of 32 tokens: the verdict is fix-first, and the built-in
// chat trace is simulated on the fleet's own shape.
func TestAssessScrapeFleet(t *testing.T) {
	off := false
	cfgs := fleet.Uniform(3, fleet.Config{WarmupSteps: 200, KVBlocks: 1536, BlockSize: 32})
	cfgs[2].PrefixCaching = &off
	targets := startFleet(t, fleet.Options{Replicas: cfgs, Tick: time.Millisecond}).Targets()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	src := assess.Sources{
		Embedded: demo.ChatTrace(1), Tokenize: audit.DefaultTokenize,
		Metrics: promql.Spec{Scrape: targets, Window: 300 * time.Millisecond, WindowSet: true, ScrapeTimeout: 5 * time.Second},
	}
	rec, rk, err := assess.Run(ctx, report.NewStatus(&errOut), src, assess.Options{Thresholds: advise.DefaultThresholds()})
	if err != nil {
		t.Fatalf("assess.Run: %v\n%s", err, errOut.String())
	}
	res := report.AssessRanked(rec, rk)
	if err := report.Write(&out, report.FormatJSON, res, report.Options{}); err != nil {
		t.Fatal(err)
	}
	var doc assessDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != "fix-first" || !strings.HasPrefix(doc.rules(), "prefix-caching-off") {
		t.Errorf("verdict %s, rules %s; want fix-first starting with prefix-caching-off", doc.Verdict, doc.rules())
	}
	for id, want := range map[string]string{
		"hitrate.replicas":    "3 replicas",
		"hitrate.caching":     "on in 2 of 3 replicas; off in replica-2",
		"hitrate.kv_capacity": "1536 blocks x 32 = 49152 tokens",
		"replay.fleet":        "3 replicas (metrics) x 49152 tokens of KV (metrics)",
	} {
		if got := doc.figure(id); got != want {
			t.Errorf("evidence %s = %q, want %q", id, got, want)
		}
	}
}

// TestAssessPrometheus reads the metrics through the Prometheus API (a stand-in server
// answering the hitrate queries), num_gpu_blocks included: the hitrate config query keeps the
// label, so no query of its own is needed. The stand-in answers as Prometheus would: a label
// the aggregation does not keep is not in the answer.
func TestAssessPrometheus(t *testing.T) {
	var mu sync.Mutex // the queries arrive concurrently
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		mu.Lock()
		queries = append(queries, q)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(q, "vllm:cache_config_info") && strings.Contains(q, "num_gpu_blocks") && strings.Contains(q, `namespace="prod"`):
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[
				{"metric":{"pod":"p0","block_size":"16","num_gpu_blocks":"4096","enable_prefix_caching":"True"},"value":[1764496860,"1"]},
				{"metric":{"pod":"p1","block_size":"16","num_gpu_blocks":"3000","enable_prefix_caching":"True"},"value":[1764496860,"1"]}]}}`)
		case strings.Contains(q, "vllm:cache_config_info"):
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[
				{"metric":{"pod":"p0","block_size":"16","enable_prefix_caching":"True"},"value":[1764496860,"1"]},
				{"metric":{"pod":"p1","block_size":"16","enable_prefix_caching":"True"},"value":[1764496860,"1"]}]}}`)
		default:
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	}))
	defer srv.Close()
	doc, code, stderr := runAssessJSON(t, "--prometheus", srv.URL, "--selector", `namespace="prod"`)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	mu.Lock()
	asked := slices.Clone(queries)
	mu.Unlock()
	if len(asked) != 6 {
		t.Errorf("%d queries, want hitrate's 6 and no more:\n%s", len(asked), strings.Join(asked, "\n"))
	}
	if got, want := doc.figure("hitrate.kv_capacity"), "3000 blocks x 16 = 48000 tokens"; got != want {
		t.Errorf("kv capacity = %q, want %q", got, want)
	}
	if got := doc.figure("hitrate.replicas"); got != "2 replicas" {
		t.Errorf("replicas = %q, want 2", got)
	}
}

// TestAssessTokenize audits the request log with exact tokens from an emulated replica's
// /tokenize; that replica runs without prefix caching, which the server's /metrics says.
func TestAssessTokenize(t *testing.T) {
	off := false
	f, err := fleet.New(fleet.Options{Replicas: []fleet.Config{{PrefixCaching: &off, BlockSize: 32}}})
	if err != nil {
		t.Fatal(err)
	}
	f.Replicas()[0].Handle("POST /tokenize", fleet.TokenizeHandler(fleet.TokenizeOptions{}))
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close the fleet: %v", err)
		}
	})
	doc, code, stderr := runAssessJSON(t, "--requests", "../../testdata/assess/shared_prompt.jsonl", "--tokenize", f.URLs()[0], "--fail-on", "error")
	if code != exitFindings {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFindings, stderr)
	}
	// One system prompt shared by every request fits in every replica: once caching is on,
	// round-robin finds it as well as any router.
	if doc.Verdict != "fix-first" || doc.Then != "nothing" || len(doc.Fixes) == 0 || doc.Fixes[0].Code != "prefix-caching-off" {
		t.Errorf("verdict %s then %s fixes %v; want fix-first, then nothing, prefix-caching-off first", doc.Verdict, doc.Then, doc.Fixes)
	}
	if got := doc.figure("requests.count"); strings.Contains(got, "estimated") || !strings.HasPrefix(got, "120 requests, ") || strings.Contains(got, "session") {
		t.Errorf("requests.count = %q, want 120 requests with exact tokens", got)
	}
	for _, n := range doc.NextSteps {
		if strings.Contains(n.Measure, "--tokenize") {
			t.Errorf("next steps ask for --tokenize, which was given: %q", n.Measure)
		}
	}
}

// TestAssessServerWarning: a Thanos or Mimir partial response is a finding of hitrate's; assess
// shows it as evidence and a warning fix, and one replica seen through it decides nothing.
func TestAssessServerWarning(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		result := `[]`
		if strings.Contains(r.Form.Get("query"), "vllm:cache_config_info") {
			result = `[{"metric":{"pod":"p0","block_size":"16","enable_prefix_caching":"True"},"value":[1764496860,"1"]}]`
		}
		_, _ = io.WriteString(w, `{"status":"success","warnings":["partial response: store 10.0.0.9 unavailable"],"data":{"resultType":"vector","result":`+result+`}}`)
	}))
	defer srv.Close()
	doc, code, stderr := runAssessJSON(t, "--prometheus", srv.URL)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if got := doc.figure("hitrate.server_warnings"); !strings.Contains(got, "store 10.0.0.9 unavailable") {
		t.Errorf("evidence hitrate.server_warnings = %q, want the server's warning", got)
	}
	var codes []string
	for _, f := range doc.Fixes {
		codes = append(codes, f.Severity+" "+f.Code)
	}
	if !slices.Contains(codes, "warning server-warning") {
		t.Errorf("fixes = %v, want a warning server-warning", codes)
	}
	for _, r := range doc.Reasons {
		if r.Rule == "single-replica" {
			t.Errorf("single-replica decided on a partial response")
		}
	}
}

// TestAssessAgreesWithSimulate is issue 9's fifth failure: the same trace and the same
// --replicas and --kv-blocks gave "a KV-aware router" from simulate and "nothing" from assess,
// because --kv-blocks counted vLLM blocks in one and trace blocks in the other. Both now count
// blocks of the trace (and --kv-tokens says the same in tokens), and the replay is simulate's:
// every policy's hit rate is the same in both.
func TestAssessAgreesWithSimulate(t *testing.T) {
	// 8 tenants' 4-block prompts (512-token blocks), each request adds a unique block; 4
	// replicas of 8 blocks hold two prompts each, so where a request goes matters; ten requests a
	// second keep the load-aware scorers spreading.
	dir := t.TempDir()
	trace := filepath.Join(dir, "tenants.jsonl")
	var b strings.Builder
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 400 {
		tenant := uint64(rng.IntN(8)) * 10
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 20, "hash_ids": [%d, %d, %d, %d, %d]}`+"\n",
			i*100, 5*512-100, tenant+1, tenant+2, tenant+3, tenant+4, 1000+i)
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"simulate", "-o", "json", "--trace", trace, "--replicas", "4", "--kv-blocks", "8",
		"--policies", "round-robin,approx-prefix,kv-llmd,kv-cost,kv-load"}, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
	if code != exitOK {
		t.Fatalf("simulate exit %d: %s", code, errOut.String())
	}
	var sim struct {
		Results []struct {
			Policy          string  `json:"policy"`
			HitRate         float64 `json:"hit_rate"`
			LoadMaxOverMean float64 `json:"load_max_over_mean"`
			TTFTP99         float64 `json:"ttft_p99"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &sim); err != nil {
		t.Fatalf("simulate JSON: %v\n%s", err, out.String())
	}
	for _, flags := range [][]string{{"--kv-blocks", "8"}, {"--kv-tokens", "4096"}} {
		doc, code, stderr := runAssessJSON(t, append([]string{"--trace", trace, "--replicas", "4"}, flags...)...)
		if code != exitOK {
			t.Fatalf("assess %v exit %d: %s", flags, code, stderr)
		}
		if got := doc.figure("replay.fleet"); got != "4 replicas (flag) x 4096 tokens of KV (flag)" {
			t.Errorf("assess %v: fleet %q", flags, got)
		}
		if len(sim.Results) != 5 {
			t.Fatalf("simulate gave %d results", len(sim.Results))
		}
		for _, r := range sim.Results {
			// The same hits, balance and modelled latency: a different service model (decode
			// time alone moves TTFT, not hits) or policy parameter shows in one of them.
			want := fmt.Sprintf("hit %.2f%% over the whole replay", r.HitRate*100)
			load := fmt.Sprintf("load max/mean %.2f, TTFT p99 %s", r.LoadMaxOverMean, units.Duration(r.TTFTP99))
			if got := doc.figure("replay.policy." + r.Policy); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, load) {
				t.Errorf("assess %v, %s: %q, simulate says %s ... %s", flags, r.Policy, got, want, load)
			}
		}
		if doc.Verdict != "kv-aware-router" {
			t.Errorf("assess %v: verdict %s; 8 prompts on 4 replicas of two: want a KV-aware router", flags, doc.Verdict)
		}
	}
}
