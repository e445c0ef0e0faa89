package report

import (
	"io"
	"path/filepath"
	"slices"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/lint"
)

// SARIF 2.1.0 (OASIS), the subset GitHub code scanning reads.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
	DefaultConfig    sarifConfig  `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	Physical sarifPhysical  `json:"physicalLocation"`
	Logical  []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	Artifact sarifArtifact `json:"artifactLocation"`
	Region   sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind,omitempty"`
}

// lintRules describes each finding code for code-scanning's rule list.
var lintRules = map[string]struct {
	text  string
	level finding.Severity
}{
	lint.CodeRemoved:    {"A vLLM metric that was removed at the target version", finding.Error},
	lint.CodeHidden:     {"A vLLM metric hidden at the target version (only shown with --show-hidden-metrics-for-version)", finding.Error},
	lint.CodeDeprecated: {"A deprecated vLLM metric", finding.Warning},
	lint.CodeUnknown:    {"A vllm: name no publisher exposes (a typo, a counter without _total, a newer metric)", finding.Warning},
	lint.CodeLabelDrift: {"A label vLLM does not set on the metric (model instead of model_name)", finding.Warning},
	lint.CodeUnparsed:   {"A query that does not parse and was not checked", finding.Warning},
	lint.CodeSkipped:    {"A file that could only be partly checked", finding.Info},
	lint.CodeYAMLBomb:   {"A file whose YAML aliases expand past kvcheck's bound (a YAML bomb): refused", finding.Error},
	lint.CodeAbsent:     {"A referenced metric with no series on the Prometheus server within the lookback", finding.Warning},
	lint.CodeStale:      {"A referenced metric whose series stopped within the lookback", finding.Warning},
}

func sarifLevel(s finding.Severity) string {
	switch s {
	case finding.Error:
		return "error"
	case finding.Warning:
		return "warning"
	}
	return "note"
}

// LintSARIF writes the run as a SARIF 2.1.0 log for code-scanning upload. File paths are
// written as given (relative paths stay relative to the checkout, as GitHub expects).
func LintSARIF(w io.Writer, run LintRun, toolVersion string) error {
	codes := make([]string, 0, len(lintRules))
	for c := range lintRules {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	driver := sarifDriver{Name: "kvcheck", Version: toolVersion,
		InformationURI: "https://github.com/kvcheck/kvcheck", Rules: []sarifRule{}}
	for _, c := range codes {
		r := lintRules[c]
		driver.Rules = append(driver.Rules, sarifRule{ID: c, ShortDescription: sarifMessage{r.text},
			DefaultConfig: sarifConfig{sarifLevel(r.level)}})
	}
	for _, r := range lint.Rules() {
		driver.Rules = append(driver.Rules, sarifRule{ID: r.Code, ShortDescription: sarifMessage{r.Summary},
			DefaultConfig: sarifConfig{sarifLevel(r.Severity)}})
	}
	results := []sarifResult{}
	for _, f := range run.Files {
		for _, x := range f.Findings {
			loc := sarifLocation{Physical: sarifPhysical{
				Artifact: sarifArtifact{URI: filepath.ToSlash(x.File)},
				Region:   sarifRegion{StartLine: max(x.Line, 1), StartColumn: max(x.Column, 1)},
			}}
			if x.Pointer != "" {
				loc.Logical = []sarifLogical{{FullyQualifiedName: x.Pointer, Kind: "element"}}
			}
			props := map[string]any{"status": x.Status}
			if x.Status == lint.StatusConfig {
				if x.Rule != "" {
					props["rule"] = x.Rule
				}
				if x.Fix != "" {
					props["fix"] = x.Fix
				}
			} else {
				props["metric"], props["target_version"] = x.Metric, run.Target
			}
			if x.Since != "" {
				props["since"] = x.Since
			}
			if x.Replacement != "" {
				props["replacement"] = x.Replacement
			}
			if x.Location != "" {
				props["location"] = x.Location
			}
			results = append(results, sarifResult{RuleID: x.Code, Level: sarifLevel(x.Severity),
				Message: sarifMessage{x.Message}, Locations: []sarifLocation{loc}, Properties: props})
		}
	}
	return JSON(w, sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}
