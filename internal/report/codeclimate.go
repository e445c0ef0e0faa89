package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// FormatCodeClimate is GitLab's Code Quality report: a JSON array of Code Climate issues.
const FormatCodeClimate Format = "codeclimate"

func init() {
	register(writer{format: FormatCodeClimate, order: 4, findingsOnly: true, write: writeCodeClimate})
}

// codeClimateIssue is the subset of a Code Climate issue GitLab's Code Quality reads
// (docs.gitlab.com ci/testing/code_quality: description, check_name, fingerprint, severity,
// location.path, location.lines.begin).
type codeClimateIssue struct {
	Type        string              `json:"type"`
	Description string              `json:"description"`
	CheckName   string              `json:"check_name"`
	Categories  []string            `json:"categories"`
	Fingerprint string              `json:"fingerprint"`
	Severity    string              `json:"severity"`
	Location    codeClimateLocation `json:"location"`
}

type codeClimateLocation struct {
	Path  string           `json:"path"`
	Lines codeClimateLines `json:"lines"`
}

type codeClimateLines struct {
	Begin int `json:"begin"`
}

// writeCodeClimate writes the findings as a Code Quality report, paths relative to the git
// work tree's top level as GitLab expects. The fingerprint, which GitLab uses to tell new
// issues from old ones between the branch and its target, is a hash of the code, the file, the
// subject and the properties that name what a finding is about (the metric), and its place
// among the findings of that key, not its line, so an edit above a finding does not make it new. Findings accepted in a baseline are left out.
func writeCodeClimate(w io.Writer, r Result, o Options) error {
	loc := sarifLocator{root: o.SrcRoot, wd: o.WorkDir}
	issues := []codeClimateIssue{}
	seen := map[string]int{}
	for _, f := range r.Findings {
		if f.Baseline == "unchanged" {
			continue
		}
		path, line := f.File, max(f.Line, 1)
		if path == "" {
			path, line = cmp.Or(r.Artifact, "kvcheck"), 1
		}
		if a := loc.artifact(path); a.URIBaseID != "" {
			path = a.URI
		}
		path = filepath.ToSlash(path)
		msg := f.Message
		if f.Subject != "" && f.Subject != f.File {
			msg = f.Subject + ": " + msg
		}
		if f.Fix != "" {
			msg += " (fix: " + f.Fix + ")"
		}
		key := f.Code + "\x00" + path + "\x00" + f.Subject + "\x00" + f.Properties["metric"] + "\x00" + f.Rule
		seen[key]++ // the second finding of one key is told apart by its place among them
		h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", key, seen[key])))
		issues = append(issues, codeClimateIssue{Type: "issue", Description: msg, CheckName: f.Code,
			Categories: []string{"Bug Risk"}, Fingerprint: hex.EncodeToString(h[:16]),
			Severity: codeClimateSeverity(f.Severity), Location: codeClimateLocation{Path: path, Lines: codeClimateLines{Begin: line}}})
	}
	return JSON(w, issues)
}

// codeClimateSeverity maps kvcheck's severities onto Code Climate's (info, minor, major,
// critical, blocker): an error is critical, a warning major, info info.
func codeClimateSeverity(s finding.Severity) string {
	switch s {
	case finding.Error:
		return "critical"
	case finding.Warning:
		return "major"
	}
	return "info"
}
