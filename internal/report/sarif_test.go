package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestSARIFURIs: an artifact location is a URI (RFC 3986), not a path. A relative path has its
// space, "#" and "%" percent-encoded ("#" would start a fragment and cut the path there); an
// absolute path is a file:// URI (GitHub maps it onto the checkout); a first segment with a
// colon gets "./" (it would read as a scheme); a URL (a Prometheus server, a publisher) is
// kept as it is.
func TestSARIFURIs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"dashboards/vllm.json", "dashboards/vllm.json"},
		{"my dash#1/kube ai%.json", "my%20dash%231/kube%20ai%25.json"},
		{"/home/runner/work/r/r/dashboards/a b.json", "file:///home/runner/work/r/r/dashboards/a%20b.json"},
		{"10.0.0.1:8000", "./10.0.0.1:8000"},
		{"http://prometheus:9090", "http://prometheus:9090"},
		{"tcp://10.0.0.5:5557", "tcp://10.0.0.5:5557"},
	} {
		if got := sarifURI(tt.in); got != tt.want {
			t.Errorf("sarifURI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSARIFEveryResultLocated: GitHub code scanning refuses a whole SARIF file when one of its
// results has no physical location ("locationFromSarifResult: expected at least one
// location", "expected artifact location"). A finding with no file of its own (a replica, a
// publisher, a recommendation) is located at the run's input, or at "kvcheck" without one.
// Every SARIF golden file is checked.
func TestSARIFEveryResultLocated(t *testing.T) {
	res := Result{Artifact: "before.prom", Findings: []finding.Finding{
		{Severity: finding.Warning, Code: "replica-cold", Subject: "10.0.0.2:8000", Message: "cold"},
		{Severity: finding.Error, Code: "metric-removed", File: "d.json", Line: 3, Column: 7, Message: "gone"},
	}}
	var doc sarifLog
	if err := json.Unmarshal(render(t, FormatSARIF, res), &doc); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range doc.Runs[0].Results {
		uris = append(uris, r.Locations[0].Physical.Artifact.URI)
	}
	if got, want := strings.Join(uris, " "), "before.prom d.json"; got != want {
		t.Errorf("artifacts %q, want %q", got, want)
	}
	res.Artifact = ""
	if err := json.Unmarshal(render(t, FormatSARIF, res), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Runs[0].Results[0].Locations[0].Physical.Artifact.URI; got != "kvcheck" {
		t.Errorf("no input: artifact %q, want kvcheck", got)
	}

	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.sarif*"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.sarif*"))
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("%d SARIF golden files, want every command's", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var log struct {
			Runs []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Locations []struct {
						Physical *struct {
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
		if err := json.Unmarshal(b, &log); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range log.Runs[0].Results {
			if len(r.Locations) == 0 || r.Locations[0].Physical == nil || r.Locations[0].Physical.Artifact.URI == "" || r.Locations[0].Physical.Region.StartLine < 1 {
				t.Errorf("%s: result %s has no physical location: GitHub refuses the file", f, r.RuleID)
			}
		}
	}
}
