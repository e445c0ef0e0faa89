package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

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
			res := report.AuditRun{BlockSize: 16, Templates: []audit.Template{}, Findings: []audit.Finding{}}
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
			for ext, format := range map[string]report.Format{"txt": report.FormatText, "json": report.FormatJSON,
				"sarif": report.FormatSARIF, "github": report.FormatGitHub} {
				var b bytes.Buffer
				if err := report.Write(&b, format, report.Audit(res), report.Options{Version: "test"}); err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, filepath.Join(root, "golden", tt.name+"."+ext), b.Bytes())
			}
		})
	}
}
