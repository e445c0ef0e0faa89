package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"fmt"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// golden compares got with testdata/name, or writes it there under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// render writes a result in a format, as kvcheck does, without colour.
func render(t *testing.T, format Format, r Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, r, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Findings with no file are annotated on the run with their subject; a finding in a file points
// at its line. Both are worked out by hand from GitHub's workflow-command syntax.
func TestGitHubAnnotations(t *testing.T) {
	r := Result{Findings: []finding.Finding{
		{Severity: finding.Warning, Code: "replica-cold", Subject: "10.0.0.2:8000", Message: "hit rate 10%, 50% fleet"},
		{Severity: finding.Error, Code: "audit/breaker", Subject: "a.py", File: "a.py", Line: 41, Message: "clock in block 0"},
		{Severity: finding.Info, Code: "lifetime-totals", Message: "one dump"},
	}}
	want := "::warning title=kvcheck replica-cold::10.0.0.2:8000: hit rate 10%25, 50%25 fleet\n" +
		"::error file=a.py,line=41,col=1,title=kvcheck audit/breaker::clock in block 0\n" +
		"::notice title=kvcheck lifetime-totals::one dump\n"
	if got := string(render(t, FormatGitHub, r)); got != want {
		t.Errorf("annotations:\n%s\nwant:\n%s", got, want)
	}
}

// A result without a document (a command that failed before it had one) cannot be written as
// JSON; the error says so instead of writing null.
func TestWriteJSONWithoutDocument(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, FormatJSON, Result{}, Options{}); err == nil || b.Len() > 0 {
		t.Errorf("Write(json, no document) = %v, wrote %q; want an error and nothing written", err, b.String())
	}
}

func TestParseFormat(t *testing.T) {
	if _, err := ParseFormat("sarif", Formats(false)); err == nil {
		t.Error("sarif accepted for a command without findings")
	}
	if f, err := ParseFormat("GitHub", Formats(true)); err != nil || f != FormatGitHub {
		t.Errorf("ParseFormat(GitHub) = %v, %v", f, err)
	}
}

// Every command offers text and JSON; one with findings also SARIF, annotations and Code Quality, listed in
// this order in --output's usage error.
func TestFormats(t *testing.T) {
	if got, want := fmt.Sprint(Formats(false)), "[text json]"; got != want {
		t.Errorf("Formats(false) = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(Formats(true)), "[text json sarif github codeclimate]"; got != want {
		t.Errorf("Formats(true) = %s, want %s", got, want)
	}
}

// TestTextControlCharacters: a replica's label can hold a newline or an escape sequence (the
// exposition format escapes \n, and a label value is any text). A finding stays one line, so a
// label cannot forge another finding ("evil\nWARNING fake-finding x: all good" read as a
// warning of its own), and no ESC byte reaches the terminal, from a finding or a table cell.
func TestTextControlCharacters(t *testing.T) {
	evil := "evil\nWARNING fake-finding x: all good\x1b[2J"
	res := Result{Findings: []finding.Finding{{Severity: finding.Info, Code: "single-replica", Subject: evil, Message: "only one " + evil}},
		Text: func(tx *Text) error {
			if err := tx.Table([]string{"REPLICA", "HIT"}, [][]string{{evil, "1.0%"}}); err != nil {
				return err
			}
			for _, f := range []finding.Finding{{Severity: finding.Info, Code: "single-replica", Subject: evil, Message: "only one " + evil}} {
				tx.Finding(f)
			}
			return nil
		}}
	out := string(render(t, FormatText, res))
	if strings.Contains(out, "\x1b") {
		t.Errorf("an ESC byte reached the output:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "WARNING fake-finding") {
			t.Errorf("a label forged a finding line:\n%s", out)
		}
	}
	if !strings.Contains(out, `INFO single-replica evil\nWARNING fake-finding x: all good\x1b[2J: only one evil\n`) {
		t.Errorf("finding not written on one line with its escapes shown:\n%s", out)
	}
}
