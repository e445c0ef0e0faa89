package report

import (
	"cmp"
	"fmt"
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
	Tool sarifTool `json:"tool"`
	// OriginalURIBaseIDs says where %SRCROOT%, the base of the relative artifact URIs, was
	// on the machine that ran kvcheck: the git work tree's top level.
	OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds,omitempty"`
	// ColumnKind says columns count Unicode code points, as kvcheck's columns do.
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
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
	ID               string        `json:"id"`
	ShortDescription sarifMessage  `json:"shortDescription"`
	FullDescription  sarifMessage  `json:"fullDescription"`
	Help             sarifMarkdown `json:"help"`
	HelpURI          string        `json:"helpUri,omitempty"`
	DefaultConfig    sarifConfig   `json:"defaultConfiguration"`
}

type sarifMarkdown struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
	// BaselineState is new or unchanged against lint --baseline; absent without one.
	BaselineState string         `json:"baselineState,omitempty"`
	Fixes         []sarifFix     `json:"fixes,omitempty"`
	Properties    map[string]any `json:"properties,omitempty"`
}

type sarifFix struct {
	Description     sarifMessage          `json:"description"`
	ArtifactChanges []sarifArtifactChange `json:"artifactChanges"`
}

type sarifArtifactChange struct {
	Artifact     sarifArtifact      `json:"artifactLocation"`
	Replacements []sarifReplacement `json:"replacements"`
}

type sarifReplacement struct {
	Deleted  sarifEditRegion `json:"deletedRegion"`
	Inserted *sarifContent   `json:"insertedContent,omitempty"`
}

type sarifEditRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn"`
	ByteOffset  int `json:"byteOffset"`
	ByteLength  int `json:"byteLength"`
}

type sarifContent struct {
	Text string `json:"text"`
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
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
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

// sarifLocator writes a finding's file as an artifact location: relative to %SRCROOT% (the git
// work tree's top level, Options.SrcRoot) when the file is inside it, so that code scanning
// places it whichever directory kvcheck ran in; else an absolute file:// URI, or the path as
// given when the run knows no source root.
type sarifLocator struct{ root, wd string }

func (l sarifLocator) artifact(p string) sarifArtifact {
	if l.root == "" || isURL(p) {
		return sarifArtifact{URI: sarifURI(p)}
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(l.wd, p)
	}
	rel, err := filepath.Rel(l.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sarifArtifact{URI: sarifURI(abs)}
	}
	return sarifArtifact{URI: sarifURI(rel), URIBaseID: srcRoot}
}

// srcRoot is the uriBaseId of paths in the checkout, as GitHub's and other SARIF tools name it.
const srcRoot = "%SRCROOT%"

func isURL(p string) bool {
	u, err := url.Parse(p)
	return err == nil && len(u.Scheme) > 1 && strings.HasPrefix(p, u.Scheme+"://")
}

// rootURI is the source root as originalUriBaseIds gives it: a file:// URI ending in a slash.
func rootURI(root string) string {
	u := sarifURI(root)
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// writeSARIF writes the findings as a SARIF 2.1.0 log for code-scanning upload. A finding in a
// file points at its line and column, relative to %SRCROOT% (see sarifLocator), and at its JSON
// pointer as a logical location; a finding about something else (a replica, a publisher, the
// fleet) names its subject as a logical location. The rule list holds the result's rules in
// their order, then one named after each other code found, sorted; each rule has its short and
// full description, Markdown help and the README's anchor for it. A finding with an exact
// rewrite carries it as a fix; with a baseline, each result says whether it is new.
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
		driver.Rules = append(driver.Rules, x.sarif(r.Command))
	}
	loc := sarifLocator{root: o.SrcRoot, wd: o.WorkDir}
	results := []sarifResult{}
	for _, f := range r.Findings {
		var l sarifLocation
		if f.File != "" {
			l.Physical = &sarifPhysical{
				Artifact: loc.artifact(f.File),
				Region:   sarifRegion{StartLine: max(f.Line, 1), StartColumn: max(f.Column, 1)},
			}
			if f.Pointer != "" {
				l.Logical = []sarifLogical{{FullyQualifiedName: f.Pointer, Kind: "element"}}
			}
		} else {
			// GitHub refuses the whole file for one result without a physical location: a
			// finding about a replica or a publisher is shown at the run's input.
			l.Physical = &sarifPhysical{Artifact: loc.artifact(cmp.Or(r.Artifact, "kvcheck")),
				Region: sarifRegion{StartLine: 1, StartColumn: 1}}
			if f.Subject != "" {
				l.Logical = []sarifLogical{{FullyQualifiedName: f.Subject, Kind: "resource"}}
			}
		}
		locs := []sarifLocation{l}
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
		res := sarifResult{RuleID: f.Code, Level: sarifLevel(f.Severity), Message: sarifMessage{f.Message},
			Locations: locs, BaselineState: f.Baseline, Properties: props}
		if len(f.Edits) > 0 && f.File != "" {
			res.Fixes = []sarifFix{sarifFixOf(f, loc.artifact(f.File))}
		}
		results = append(results, res)
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, ColumnKind: "unicodeCodePoints", Results: results}
	if o.SrcRoot != "" {
		run.OriginalURIBaseIDs = map[string]sarifArtifact{srcRoot: {URI: rootURI(o.SrcRoot)}}
	}
	return JSON(w, sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{run},
	})
}

// sarifFixOf is a finding's exact rewrite as a SARIF fix: its edits of the file as read.
func sarifFixOf(f finding.Finding, a sarifArtifact) sarifFix {
	desc := "kvcheck lint --fix's rewrite"
	if r := f.Properties["replacement"]; r != "" {
		desc = "replace " + f.Properties["metric"] + " with " + r
	} else if f.Fix != "" {
		desc = f.Fix
	}
	ch := sarifArtifactChange{Artifact: a}
	for _, e := range f.Edits {
		rep := sarifReplacement{Deleted: sarifEditRegion{StartLine: e.StartLine, StartColumn: e.StartColumn,
			EndLine: e.EndLine, EndColumn: e.EndColumn, ByteOffset: e.Start, ByteLength: e.End - e.Start}}
		if e.Text != "" {
			rep.Inserted = &sarifContent{Text: e.Text}
		}
		ch.Replacements = append(ch.Replacements, rep)
	}
	return sarifFix{Description: sarifMessage{desc}, ArtifactChanges: []sarifArtifactChange{ch}}
}

// sarif is the rule as SARIF's reportingDescriptor: a code without a description of its own
// is described by its name and the README section of the command that reports it.
func (x Rule) sarif(command string) sarifRule {
	full := cmp.Or(x.Full, x.Description)
	help := cmp.Or(x.Help, full)
	uri := x.HelpURI
	if uri == "" {
		uri = ReadmeURL + "#" + readmeAnchor(command)
	}
	if x.Description == x.Code {
		full = fmt.Sprintf("%s: a finding of %s; the README lists what it means and what to do", x.Code, cmp.Or(command, "kvcheck"))
		help = full
	}
	return sarifRule{ID: x.Code, ShortDescription: sarifMessage{x.Description}, FullDescription: sarifMessage{full},
		Help:    sarifMarkdown{Text: help, Markdown: help + "\n\n[Documentation](" + uri + ")"},
		HelpURI: uri, DefaultConfig: sarifConfig{sarifLevel(x.Level)}}
}

// ReadmeURL is where the README is read on the web, for SARIF rules' help links.
const ReadmeURL = "https://github.com/kvcheck/kvcheck/blob/main/README.md"

// readmeAnchor is the README heading of a command ("kvcheck lint" -> kvcheck-lint), as
// GitHub makes heading anchors.
func readmeAnchor(command string) string {
	if command == "" {
		return "subcommands"
	}
	return strings.ReplaceAll(strings.ToLower(command), " ", "-")
}
