package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/promql"
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
			verdict: "fix-first", rules: "prefix-caching-off", fixes: []string{"error prefix-caching-off"},
			evidence: map[string]string{"hitrate.caching": `on in 2 of 3; off in 10.0.0.2:8000`, "hitrate.kv_capacity": `^2048 blocks x 16 = 32768 tokens$`}},
		{name: "caching off fails the gate", args: []string{"--file", td + "assess/caching_off.prom", "--fail-on", "error"}, code: exitFindings,
			verdict: "fix-first"},
		{name: "thrashing", args: []string{"--file", td + "assess/thrashing.prom"}, code: exitOK,
			verdict: "fix-first", rules: "fleet-thrashes", fixes: []string{"error thrashing", "warning thrashing"}, confidence: "medium"},
		// One dump is one replica's view, not the fleet's size: it decides nothing on its own.
		{name: "single replica", args: []string{"--file", td + "assess/single.prom", "--fail-on", "info"}, code: exitOK,
			verdict: "nothing", rules: "no-reuse-measured", confidence: "low"},
		{name: "within-session chat log", args: []string{"--requests", td + "assess/chat_sessions.jsonl", "--file", td + "assess/healthy.prom"}, code: exitOK,
			verdict: "session-affinity", rules: "reuse-within-sessions",
			evidence: map[string]string{"requests.within": `^5\d\.\d% of prompt tokens`}},
		{name: "shared system prompt log", args: []string{"--requests", td + "assess/shared_prompt.jsonl"}, code: exitOK,
			verdict: "kv-aware-router", rules: "cross-session-reuse"},
		{name: "timestamp in the first message", args: []string{"--requests", td + "audit/requests/agent_timestamp.jsonl", "--fail-on", "warning"}, code: exitFindings,
			// audit joins the agent's turns into sessions although each turn's timestamp differs
			// (the system message is set aside for that), so the reuse left is within sessions.
			verdict: "fix-first", then: "session-affinity", rules: "request-breaker,reuse-within-sessions", fixes: []string{"error audit/early-divergence"}, confidence: "low"},
		{name: "corpus templates", corpus: true, args: []string{"--templates", "templates"}, code: exitOK,
			verdict: "fix-first", rules: "template-breaker", fixes: []string{"error audit/breaker", "error audit/breaker", "warning audit/breaker", "warning audit/breaker", "warning audit/early"},
			evidence: map[string]string{"templates.verdicts": `^7: 4 breaker, 1 early, 2 clean$`}},
		// 2048 blocks of 16 tokens hold about four Mooncake prompts: nothing keeps a prefix
		// until it comes back, so no policy gains.
		{name: "corpus Mooncake trace on the healthy fleet's shape", corpus: true,
			args: []string{"--trace", "traces/mooncake_conversation_trace.jsonl", "--file", "HEALTHY"}, code: exitOK,
			verdict: "nothing", rules: "small-simulated-gain",
			evidence: map[string]string{"simulate.fleet": `^4 replicas \(the metrics' replica count\) x 32768 tokens of KV \(num_gpu_blocks from the metrics\)$`,
				"simulate.ceiling": `^36\.6% of 12031 requests$`}},
		{name: "corpus Mooncake trace, 8 replicas", corpus: true,
			args: []string{"--trace", "traces/mooncake_conversation_trace.jsonl", "--replicas", "8"}, code: exitOK,
			verdict: "kv-aware-router", rules: "kv-routing-wins,working-set-exceeds-replica",
			evidence: map[string]string{"simulate.kv": `prefill saved \+20\.3%`, "simulate.fleet": `^8 replicas \(--replicas\) x 1048576 tokens of KV \(default\)$`}},
		{name: "corpus Azure trace has no prefixes", corpus: true,
			args: []string{"--trace", "traces/azure_llm_inference_trace_2023_conv.csv", "--replicas", "4"}, code: exitOK,
			verdict: "nothing", rules: "no-reuse-measured", confidence: "low"},
		{name: "corpus V0 engine dump without prefix caching", corpus: true,
			args: []string{"--file", "metrics/vllm-v0engine-aibrix-runtime-docs.prom"}, code: exitOK,
			verdict: "fix-first", rules: "prefix-caching-off", fixes: []string{"error prefix-caching-off"}},
		{name: "corpus V1 0.10.0 dump excerpt: one replica", corpus: true,
			args: []string{"--file", "metrics/vllm-0.10.0-v1-production-stack-issue-617-excerpt.prom"}, code: exitOK,
			verdict: "nothing", rules: "no-reuse-measured", confidence: "low"},
		{name: "corpus saturated engine log", corpus: true,
			args: []string{"--log", "logs/issue_vllm-43295_vllm-v1_kv-saturated_queue.log"}, code: exitOK,
			verdict: "fix-first", rules: "fleet-thrashes", fixes: []string{"error thrashing"}},
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
	o := &assessOptions{embedded: demoChatTrace(1), tok: defaultTokenize}
	o.metrics = promql.Spec{Scrape: targets, Window: 300 * time.Millisecond, WindowSet: true, ScrapeTimeout: 5 * time.Second}
	o.th = advise.DefaultThresholds()
	g := &globalOptions{Output: "json"}
	if err := runAssess(ctx, streams{Out: &out, ErrOut: &errOut}, g, o); err != nil {
		t.Fatalf("runAssess: %v\n%s", err, errOut.String())
	}
	var doc assessDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != "fix-first" || !strings.HasPrefix(doc.rules(), "prefix-caching-off") {
		t.Errorf("verdict %s, rules %s; want fix-first starting with prefix-caching-off", doc.Verdict, doc.rules())
	}
	for id, want := range map[string]string{
		"hitrate.replicas":    "3",
		"hitrate.caching":     "on in 2 of 3; off in replica-2",
		"hitrate.kv_capacity": "1536 blocks x 32 = 49152 tokens",
		"simulate.fleet":      "3 replicas (the metrics' replica count) x 49152 tokens of KV (num_gpu_blocks from the metrics)",
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
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		queries = append(queries, q)
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
	if len(queries) != 5 {
		t.Errorf("%d queries, want hitrate's 5 and no more:\n%s", len(queries), strings.Join(queries, "\n"))
	}
	if got, want := doc.figure("hitrate.kv_capacity"), "3000 blocks x 16 = 48000 tokens"; got != want {
		t.Errorf("kv capacity = %q, want %q", got, want)
	}
	if got := doc.figure("hitrate.replicas"); got != "2" {
		t.Errorf("replicas = %q, want 2", got)
	}
}

// TestDemoAssess runs the function kvcheck demo calls against four emulated replicas.
func TestDemoAssess(t *testing.T) {
	targets := startFleet(t, fleet.Options{Replicas: fleet.Uniform(4, fleet.Config{WarmupSteps: 500}), Tick: 5 * time.Millisecond, StepsPerTick: 5}).Targets()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	g := &globalOptions{Output: "text", environ: []string{"NO_COLOR=1"}}
	if err := demoAssess(ctx, streams{Out: &out, ErrOut: &errOut}, g, targets); err != nil {
		t.Fatalf("demoAssess: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"Demo: kvcheck assess against 4 emulated vLLM replicas", "Recommendation: session affinity", "Evidence", "Next steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
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
	if doc.Verdict != "fix-first" || doc.Then != "kv-aware-router" || len(doc.Fixes) == 0 || doc.Fixes[0].Code != "prefix-caching-off" {
		t.Errorf("verdict %s then %s fixes %v; want fix-first, then kv-aware-router, prefix-caching-off first", doc.Verdict, doc.Then, doc.Fixes)
	}
	if got := doc.figure("requests.count"); strings.Contains(got, "estimated") || !strings.HasPrefix(got, "120 in 120 sessions") {
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
