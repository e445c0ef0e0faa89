package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The demo's JSON is one document: a command's own JSON stays JSON, other output (a diff)
// becomes a string, and nothing is null.
func TestDemoJSON(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, FormatJSON, Demo([]DemoSection{
		{Name: "lint", Runs: []DemoRun{
			{Command: []string{"lint", "d.json"}, ExitCode: 3, Output: []byte(`{"schema_version": 1, "files": []}`)},
			{Command: []string{"lint", "--diff", "d.json"}, ExitCode: 3, Output: []byte("--- a/d.json\n+++ b/d.json\n")},
		}},
		{Name: "tap", Runs: []DemoRun{{Output: nil}}},
		{Name: "empty"},
	}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	want := map[string]any{
		"schema_version": 1.0,
		"sections": []any{
			map[string]any{"name": "lint", "runs": []any{
				map[string]any{"command": []any{"lint", "d.json"}, "exit_code": 3.0, "output": map[string]any{"schema_version": 1.0, "files": []any{}}},
				map[string]any{"command": []any{"lint", "--diff", "d.json"}, "exit_code": 3.0, "output": "--- a/d.json\n+++ b/d.json\n"},
			}},
			map[string]any{"name": "tap", "runs": []any{map[string]any{"command": []any{}, "exit_code": 0.0, "output": ""}}},
			map[string]any{"name": "empty", "runs": []any{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
}
