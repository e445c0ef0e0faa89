package report

import (
	"cmp"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
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
	Physical *sarifPhysical `json:"physicalLocation,omitempty"`
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

func init() {
	register(writer{format: FormatSARIF, order: 2, findingsOnly: true, write: writeSARIF})
}

// sarifURI writes a path or URL as the URI an artifact location holds (RFC 3986): a URL as it
// is; an absolute path as a file:// URI, which GitHub maps onto the checkout; a relative path
// percent-encoded (a space, "#" or "%" in a file name would otherwise be an invalid URI or cut
// it at a fragment), with "./" before a first segment holding a colon, which would read as a
// scheme.
func sarifURI(p string) string {
	if u, err := url.Parse(p); err == nil && len(u.Scheme) > 1 && strings.HasPrefix(p, u.Scheme+"://") {
		return p
	}
	slashed := filepath.ToSlash(p)
	if filepath.IsAbs(p) {
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // a Windows drive: file:///C:/...
		}
		return (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	return (&url.URL{Path: slashed}).String()
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

// writeSARIF writes the findings as a SARIF 2.1.0 log for code-scanning upload. A finding in a
// file points at its line and column (paths are written as given: relative paths stay relative
// to the checkout, as GitHub expects) and at its JSON pointer as a logical location; a finding
// about something else (a replica, a publisher, the fleet) names its subject as a logical
// location. The rule list holds the result's rules in their order, then one named after each
// other code found, sorted.
func writeSARIF(w io.Writer, r Result, o Options) error {
	toolVersion := o.Version
	rules := slices.Clone(r.Rules)
	known := map[string]int{}
	for i, x := range rules {
		known[x.Code] = i
	}
	for _, f := range r.Findings {
		if i, ok := known[f.Code]; ok {
			if i >= len(r.Rules) {
				rules[i].Level = max(rules[i].Level, f.Severity)
			}
			continue
		}
		known[f.Code] = len(rules)
		rules = append(rules, Rule{Code: f.Code, Description: f.Code, Level: f.Severity})
	}
	slices.SortStableFunc(rules[len(r.Rules):], func(a, b Rule) int { return strings.Compare(a.Code, b.Code) })
	driver := sarifDriver{Name: "kvcheck", Version: toolVersion,
		InformationURI: "https://github.com/kvcheck/kvcheck", Rules: []sarifRule{}}
	for _, x := range rules {
		driver.Rules = append(driver.Rules, sarifRule{ID: x.Code, ShortDescription: sarifMessage{x.Description},
			DefaultConfig: sarifConfig{sarifLevel(x.Level)}})
	}
	results := []sarifResult{}
	for _, f := range r.Findings {
		var loc sarifLocation
		if f.File != "" {
			loc.Physical = &sarifPhysical{
				Artifact: sarifArtifact{URI: sarifURI(f.File)},
				Region:   sarifRegion{StartLine: max(f.Line, 1), StartColumn: max(f.Column, 1)},
			}
			if f.Pointer != "" {
				loc.Logical = []sarifLogical{{FullyQualifiedName: f.Pointer, Kind: "element"}}
			}
		} else {
			// GitHub refuses the whole file for one result without a physical location: a
			// finding about a replica or a publisher is shown at the run's input.
			loc.Physical = &sarifPhysical{Artifact: sarifArtifact{URI: sarifURI(cmp.Or(r.Artifact, "kvcheck"))},
				Region: sarifRegion{StartLine: 1, StartColumn: 1}}
			if f.Subject != "" {
				loc.Logical = []sarifLogical{{FullyQualifiedName: f.Subject, Kind: "resource"}}
			}
		}
		locs := []sarifLocation{loc}
		var props map[string]any
		if len(f.Properties) > 0 || f.Rule != "" || f.Fix != "" || f.Source != "" {
			props = map[string]any{}
			for k, v := range f.Properties {
				props[k] = v
			}
			if f.Rule != "" {
				props["rule"] = f.Rule
			}
			if f.Fix != "" {
				props["fix"] = f.Fix
			}
			if f.Source != "" {
				props["source"] = f.Source
			}
		}
		results = append(results, sarifResult{RuleID: f.Code, Level: sarifLevel(f.Severity),
			Message: sarifMessage{f.Message}, Locations: locs, Properties: props})
	}
	return JSON(w, sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}
