package report

import (
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/audit"
)

// TestAuditSessionsCapped: a session count that reached the table's bound is printed as a
// lower bound, and the JSON says so, instead of the bound standing as the count.
func TestAuditSessionsCapped(t *testing.T) {
	for _, capped := range []bool{false, true} {
		s := &audit.Summary{BlockSize: 16, Requests: 9, Completion: 9, Sessions: 3, SessionsCapped: capped, UntrackedRequests: 6}
		r := Audit(AuditRun{BlockSize: 16, RequestsSource: "r.jsonl", Requests: s})
		text := string(render(t, FormatText, r))
		js := string(render(t, FormatJSON, r))
		wantText, wantJSON := "sessions 3\n", `"sessions_capped": false`
		if capped {
			wantText, wantJSON = "sessions at least 3 (the session table's bound, --max-blocks)\n", `"sessions_capped": true`
		}
		if !strings.Contains(text, wantText) {
			t.Errorf("capped %v: text lacks %q:\n%s", capped, wantText, text)
		}
		if !strings.Contains(js, wantJSON) {
			t.Errorf("capped %v: JSON lacks %s", capped, wantJSON)
		}
	}
}
