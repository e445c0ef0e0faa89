package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/secret"
)

func init() {
	register(writer{format: FormatGitHub, order: 3, findingsOnly: true, write: writeGitHub})
}

// writeGitHub writes GitHub Actions workflow commands, one annotation per finding: at the file,
// line and column when the finding is in a file, else on the run, with its rule id and subject
// before the message and its fix on a line after it.
//
// GitHub shows only the first ten annotations of each level a step writes; past that a first
// notice says how many there are and where all of them are.
func writeGitHub(w io.Writer, r Result, _ Options) error {
	counts := map[string]int{}
	var shown []finding.Finding
	for _, f := range r.Findings {
		if f.Baseline == "unchanged" {
			continue // accepted in the baseline: the annotations are for what is new
		}
		shown = append(shown, f)
		counts[ghLevel(f.Severity)]++
	}
	if counts["error"] > githubShown || counts["warning"] > githubShown || counts["notice"] > githubShown {
		msg := fmt.Sprintf("%s, %s and %s in all: GitHub shows the first %d of each kind a step writes; the job's step summary (kvcheck writes every finding to $GITHUB_STEP_SUMMARY) and a SARIF log (-o sarif=FILE) have all of them",
			quantity(counts["error"], "error"), quantity(counts["warning"], "warning"), quantity(counts["notice"], "notice"), githubShown)
		if _, err := fmt.Fprintf(w, "::notice title=%s::%s\n", ghProperty("kvcheck"), ghData(msg)); err != nil {
			return fmt.Errorf("write annotations: %w", err)
		}
	}
	for _, f := range shown {
		level := ghLevel(f.Severity)
		msg := f.Message
		if f.Subject != "" && f.Subject != f.File {
			msg = f.Subject + ": " + msg
		}
		if f.Rule != "" {
			msg = f.Rule + " " + msg
		}
		if f.Fix != "" {
			msg += "\nfix: " + f.Fix
		}
		props := ""
		if f.File != "" {
			props = fmt.Sprintf("file=%s,line=%d,col=%d,", ghProperty(filepath.ToSlash(f.File)), max(f.Line, 1), max(f.Column, 1))
		}
		if _, err := fmt.Fprintf(w, "::%s %stitle=%s::%s\n", level, props, ghProperty("kvcheck "+f.Code), ghData(secret.Mask(msg))); err != nil {
			return fmt.Errorf("write annotations: %w", err)
		}
	}
	return nil
}

// ghLevel is the workflow command of a severity.
func ghLevel(s finding.Severity) string {
	switch s {
	case finding.Error:
		return "error"
	case finding.Warning:
		return "warning"
	}
	return "notice"
}

// githubShown is how many annotations of one level GitHub shows for a step.
const githubShown = 10

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
