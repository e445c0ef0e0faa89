package audit_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/audit/golden")

// TestGolden renders the audit of fixture templates and request logs as text and JSON and
// compares with the golden files (go test -run Golden -update rewrites them).
func TestGolden(t *testing.T) {
	const root = "../../testdata/audit"
	tests := []struct {
		name      string
		templates []string
		requests  string
	}{
		{name: "templates", templates: []string{root + "/templates/jinja", root + "/templates/unit"}},
		{name: "agent_timestamp", requests: root + "/requests/agent_timestamp.jsonl"},
		{name: "gateway_export", requests: root + "/requests/gateway_export.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := report.Audit{BlockSize: 16, Templates: []audit.Template{}, Findings: []audit.Finding{}}
			if len(tt.templates) > 0 {
				tr, err := audit.AuditTemplates(tt.templates, 16)
				if err != nil {
					t.Fatal(err)
				}
				res.Templates, res.Findings = tr.Templates, tr.Findings
			}
			if tt.requests != "" {
				f, err := os.Open(tt.requests)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = f.Close() }()
				sum, err := audit.AuditRequests(context.Background(), f, audit.RequestOptions{})
				if err != nil {
					t.Fatal(err)
				}
				res.Requests, res.RequestsSource = &sum, filepath.Base(tt.requests)
				res.Findings = append(res.Findings, sum.Findings(res.RequestsSource)...)
			}
			var text, js bytes.Buffer
			if err := report.NewText(&text, false).Audit(res); err != nil {
				t.Fatal(err)
			}
			if err := report.AuditJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(root, "golden", tt.name+".txt"), text.Bytes())
			golden(t, filepath.Join(root, "golden", tt.name+".json"), js.Bytes())
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; run with -update if the change is intended):\n%s", path, diff)
	}
}
