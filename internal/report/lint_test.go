package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/lint"
)

const lintFixtures = "../../testdata/lint"

// lintRun lints two fixtures with paths as a user would give them.
func lintRun(t *testing.T) LintRun {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := lint.New(cat, lint.Options{})
	var files []lint.FileResult
	for _, name := range []string{"keda.yaml", "grafana_rows.json", "clean_grafana.json"} {
		src, err := os.ReadFile(filepath.Join(lintFixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, l.File("testdata/lint/"+name, src))
	}
	return LintRun{Target: l.Target().String(), Targets: l.JudgedAgainst(files), Files: files}
}

// TestLintSummaryNamesEveryFamily: a run over a vLLM rule file and an llm-d dashboard says it
// judged against both targets, in text and JSON; before, the line named vLLM's alone.
func TestLintSummaryNamesEveryFamily(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	targets, err := cat.ParseTargets("llm-d=0.9")
	if err != nil {
		t.Fatal(err)
	}
	l := lint.New(cat, lint.Options{Targets: targets})
	var files []lint.FileResult
	for _, name := range []string{"rules.yaml", "llmd_router_dashboard_v0.9.0.json"} {
		src, err := os.ReadFile(filepath.Join(lintFixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, l.File(name, src))
	}
	run := LintRun{Target: l.Target().String(), Targets: l.JudgedAgainst(files), Files: files}
	text := string(render(t, FormatText, Lint(run)))
	want := "judged against vLLM " + cat.Newest.String() + ", llm-d-router 0.9.0."
	if !strings.Contains(text, want) {
		t.Errorf("summary does not say %q:\n%s", want, text)
	}
	var doc struct {
		Targets map[string]string `json:"targets"`
	}
	if err := json.Unmarshal(render(t, FormatJSON, Lint(run)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Targets) != 2 || doc.Targets["vllm"] != cat.Newest.String() || doc.Targets["llm-d"] != "0.9.0" {
		t.Errorf("JSON targets %v", doc.Targets)
	}
}

func TestLintOutputs(t *testing.T) {
	run := lintRun(t)
	tests := []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"lint.txt", func(b *bytes.Buffer) error { return Write(b, FormatText, Lint(run), Options{Version: "test"}) }},
		{"lint.json", func(b *bytes.Buffer) error { return Write(b, FormatJSON, Lint(run), Options{Version: "test"}) }},
		{"lint.sarif", func(b *bytes.Buffer) error { return Write(b, FormatSARIF, Lint(run), Options{Version: "test"}) }},
		{"lint.github", func(b *bytes.Buffer) error { return Write(b, FormatGitHub, Lint(run), Options{Version: "test"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, "lint/"+tt.name, b.Bytes())
		})
	}
}

// TestLintSARIFShape checks the fields code scanning requires of a SARIF 2.1.0 log.
func TestLintSARIFShape(t *testing.T) {
	b := bytes.NewBuffer(render(t, FormatSARIF, Lint(lintRun(t))))
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID  string `json:"ruleId"`
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "kvcheck" {
		t.Fatalf("header: version %q, %d runs", log.Version, len(log.Runs))
	}
	rules := map[string]bool{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		rules[r.ID] = true
	}
	if len(log.Runs[0].Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range log.Runs[0].Results {
		if !rules[r.RuleID] {
			t.Errorf("result rule %q is not declared in the driver's rules", r.RuleID)
		}
		if r.Message.Text == "" || len(r.Locations) != 1 || r.Locations[0].Physical.Artifact.URI == "" || r.Locations[0].Physical.Region.StartLine < 1 {
			t.Errorf("incomplete result: %+v", r)
		}
		switch r.Level {
		case "error", "warning", "note":
		default:
			t.Errorf("level %q", r.Level)
		}
	}
}

func TestGitHubEscaping(t *testing.T) {
	if got, want := ghData("50% done\nnext"), "50%25 done%0Anext"; got != want {
		t.Errorf("ghData = %q, want %q", got, want)
	}
	if got, want := ghProperty("a:b,c"), "a%3Ab%2Cc"; got != want {
		t.Errorf("ghProperty = %q, want %q", got, want)
	}
}

func TestLintJSONEmptyLists(t *testing.T) {
	b := bytes.NewBuffer(render(t, FormatJSON, Lint(LintRun{Target: "0.26.0"})))
	if !bytes.Contains(b.Bytes(), []byte(`"files": []`)) || !bytes.Contains(b.Bytes(), []byte(`"findings": []`)) {
		t.Errorf("empty run renders lists as null:\n%s", b.String())
	}
}

func TestMetricsOutputs(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := catalog.ParseVersion("0.11")
	view := MetricsView{Targets: catalog.Targets{catalog.VLLM: v}}
	golden(t, "lint/metrics-0.11.txt", render(t, FormatText, Metrics(cat, view)))
	b := bytes.NewBuffer(render(t, FormatJSON, Metrics(cat, view)))
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Metrics       []struct {
			Name   string   `json:"name"`
			Status string   `json:"status"`
			Labels []string `json:"labels"`
			Family string   `json:"family"`
			Refs   []string `json:"refs"`
		} `json:"metrics"`
		Families []struct {
			Name   string `json:"name"`
			Target string `json:"target_version"`
		} `json:"families"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != SchemaVersion || len(doc.Metrics) != len(cat.Metrics) {
		t.Fatalf("schema %d, %d metrics; want %d, %d", doc.SchemaVersion, len(doc.Metrics), SchemaVersion, len(cat.Metrics))
	}
	for _, m := range doc.Metrics {
		if m.Labels == nil {
			t.Errorf("%s: labels is null", m.Name)
		}
		if m.Name == "vllm:gpu_cache_usage_perc" && m.Status != "hidden" {
			t.Errorf("gpu_cache_usage_perc at 0.11: %s, want hidden", m.Status)
		}
		if m.Family == "" || len(m.Refs) == 0 {
			t.Errorf("%s: family %q, refs %v: every entry names its family and sources", m.Name, m.Family, m.Refs)
		}
	}
	if len(doc.Families) != len(cat.Families) || doc.Families[0].Target != "0.11.0" {
		t.Errorf("families %+v: want all %d, vllm at 0.11.0", doc.Families, len(cat.Families))
	}
}

// TestMetricsJSONGolden pins the JSON names of the catalog's entries and families: the
// prefix-cache names carry unit changes and an expression rewrite, Dynamo's router names
// before 1.0.0 are unreleased, and each family has its prefixes and target.
func TestMetricsJSONGolden(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := catalog.ParseVersion("0.11")
	golden(t, "metrics/prefix_cache.json", render(t, FormatJSON, Metrics(cat, MetricsView{Targets: catalog.Targets{catalog.VLLM: v}, Name: "prefix_cache"})))
	golden(t, "metrics/dynamo_router.json", render(t, FormatJSON, Metrics(cat, MetricsView{Families: []string{"dynamo"}, Name: "dynamo_router"})))
}

// TestMetricsFilters: a family, a status and a name part each narrow the listing, and the
// other families keep their newest release as target.
func TestMetricsFilters(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	view := MetricsView{Families: []string{"llm-d"}, Status: "deprecated", Name: "kvcache_index"}
	b := bytes.NewBuffer(render(t, FormatJSON, Metrics(cat, view)))
	var doc struct {
		Metrics []struct {
			Name, Family, Status string
		} `json:"metrics"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// llm-d-router v0.10.0 keeps the six kvcache_index_* names as deprecated aliases.
	if len(doc.Metrics) != 6 {
		t.Fatalf("got %d metrics, want the 6 kvcache_index_* aliases: %+v", len(doc.Metrics), doc.Metrics)
	}
	for _, m := range doc.Metrics {
		if m.Family != "llm-d" || m.Status != "deprecated" || !strings.HasPrefix(m.Name, "kvcache_index_") {
			t.Errorf("%+v passed the filter", m)
		}
	}
	if txt := string(render(t, FormatText, Metrics(cat, MetricsView{Name: "no-such-metric"}))); !strings.Contains(txt, "No metric matches") {
		t.Errorf("empty listing says nothing:\n%s", txt)
	}
}

// TestREADMELintCodes keeps the README's list of the metric checks' codes equal to lintRules.
// Run with KVCHECK_UPDATE_README=1 to rewrite the list.
func TestREADMELintCodes(t *testing.T) {
	const begin, end = "<!-- lint-codes:begin -->\n", "<!-- lint-codes:end -->"
	path := filepath.Join("..", "..", "README.md")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q section", begin, end)
	}
	got, want := s[i+len(begin):j], LintCodesMarkdown()
	if got == want {
		return
	}
	if os.Getenv("KVCHECK_UPDATE_README") != "" {
		if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's lint codes differ from lintRules; run KVCHECK_UPDATE_README=1 go test ./internal/report -run TestREADMELintCodes\n(-readme +table):\n%s", cmp.Diff(got, want))
}
