package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// sarifSchema compiles the OASIS SARIF 2.1.0 schema kept in testdata (its source is in
// testdata/sarif/SOURCE.md), with format assertions on: a uri that is not a URI fails.
//
// The validator is santhosh-tekuri/jsonschema (test-only): it implements draft-04, the draft
// the schema is written in, with $ref, additionalProperties, uniqueItems, minimum, pattern
// and formats, and a hand-written validator would have to be trusted on all of them.
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sarif", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validSARIF runs kvcheck with args, wants the exit code, and validates what it printed against
// the schema.
func validSARIF(t *testing.T, schema *jsonschema.Schema, exit int, args ...string) *bytes.Buffer {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, streams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut}, nil); code != exit {
		t.Fatalf("%v: exit %d, want %d\n%s", args, code, exit, errOut.String())
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("SARIF does not validate against the OASIS schema: %v\n%s", err, out.String())
	}
	return &out
}

// TestSARIFSchema validates the SARIF of every command that writes it against the OASIS
// schema, and checks what code scanning reads beyond it: rules with help and a help URI, and
// fixes where --fix has an exact rewrite.
func TestSARIFSchema(t *testing.T) {
	schema := sarifSchema(t)
	// The validator refuses what the schema forbids: a result without a message, a region
	// starting at line 0, a property the schema does not define.
	for _, bad := range []string{
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "k"}}, "results": [{"ruleId": "x"}]}]}`,
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "k"}}, "results": [{"message": {"text": "m"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a"}, "region": {"startLine": 0}}}]}]}]}`,
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "k", "helpText": "x"}}}]}`,
	} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(bad)))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(doc) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
	dir := t.TempDir()
	dash := filepath.Join(dir, "dash.json")
	if err := os.WriteFile(dash, []byte(`{"panels": [{"title": "KV", "targets": [{"expr": "vllm:gpu_cache_usage_perc + vllm:gpu_prefix_cache_hits_total", "refId": "A"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte("servingEngineSpec:\n  modelSpec:\n  - name: m\n    vllmConfig:\n      maxModelLen: 4096\nrouterSpec:\n  routingLogik: session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		fixes bool // some result carries a fix
	}{
		{"lint", []string{"lint", dash, values}, true},
		{"hitrate", []string{"hitrate", "--file", "../../testdata/hitrate/caching-off.prom"}, false},
		{"audit", []string{"audit", "../../testdata/audit/templates/jinja/early_date.jinja"}, false},
		{"audit requests", []string{"audit", "--requests", "../../testdata/audit/requests/agent_timestamp.jsonl"}, false},
		{"tap", []string{"tap", "--from", "../../testdata/tap/demo.kvtap"}, false},
		{"simulate", []string{"simulate", "--trace", "../../testdata/sim/tiny10.jsonl", "--replicas", "2"}, false},
		{"assess", []string{"assess", "--file", "../../testdata/assess/caching_off.prom"}, false},
	}
	// A run that stops before checking anything still writes SARIF: no results, and the
	// failed invocation with the error.
	t.Run("failed run", func(t *testing.T) {
		out := validSARIF(t, schema, exitRuntime, "lint", "--baseline", filepath.Join(dir, "missing.json"), "-o", "sarif", dash)
		var log struct {
			Runs []struct {
				Invocations []struct {
					ExecutionSuccessful bool
					Notes               []struct{ Message struct{ Text string } } `json:"toolExecutionNotifications"`
				}
				Results []json.RawMessage
			}
		}
		if err := json.Unmarshal(out.Bytes(), &log); err != nil {
			t.Fatal(err)
		}
		if len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 || log.Runs[0].Invocations[0].ExecutionSuccessful ||
			len(log.Runs[0].Invocations[0].Notes) != 1 || len(log.Runs[0].Results) != 0 {
			t.Fatalf("want one run, no results, one failed invocation with one notification:\n%s", out.String())
		}
		if msg := log.Runs[0].Invocations[0].Notes[0].Message.Text; !strings.Contains(msg, "missing.json") {
			t.Errorf("notification %q does not name the missing baseline", msg)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := validSARIF(t, schema, exitOK, append(append([]string{}, tt.args...), "-o", "sarif", "--fail-on", "never")...)
			var log struct {
				Runs []struct {
					Tool struct {
						Driver struct {
							Rules []struct {
								ID   string
								Help struct{ Text, Markdown string }
								URI  string `json:"helpUri"`
							}
						}
					}
					Results []struct {
						RuleID string
						Fixes  []json.RawMessage
					}
				}
			}
			if err := json.Unmarshal(out.Bytes(), &log); err != nil {
				t.Fatal(err)
			}
			run := log.Runs[0]
			if len(run.Results) == 0 {
				t.Fatalf("no results: the case should have findings\n%s", out.String())
			}
			for _, r := range run.Tool.Driver.Rules {
				if r.Help.Text == "" || r.Help.Markdown == "" || r.URI == "" {
					t.Errorf("rule %s: help %+v, helpUri %q; want both", r.ID, r.Help, r.URI)
				}
			}
			fixes := 0
			for _, r := range run.Results {
				fixes += len(r.Fixes)
			}
			if tt.fixes && fixes == 0 {
				t.Errorf("no result carries a fix, want the exact rewrites")
			}
		})
	}
}
