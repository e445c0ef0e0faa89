package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

func init() {
	register(writer{format: FormatGitHub, order: 3, findingsOnly: true, write: writeGitHub})
}

// writeGitHub writes GitHub Actions workflow commands, one annotation per finding: at the file,
// line and column when the finding is in a file, else on the run, with its rule id and subject
// before the message and its fix on a line after it.
func writeGitHub(w io.Writer, r Result, _ Options) error {
	for _, f := range r.Findings {
		level := "notice"
		switch f.Severity {
		case finding.Error:
			level = "error"
		case finding.Warning:
			level = "warning"
		}
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
		if _, err := fmt.Fprintf(w, "::%s %stitle=%s::%s\n", level, props, ghProperty("kvcheck "+f.Code), ghData(msg)); err != nil {
			return fmt.Errorf("write annotations: %w", err)
		}
	}
	return nil
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
