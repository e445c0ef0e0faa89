package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// TestRuleTable checks each rule's code is system/name and each table id is one ROUTERS.md
// uses.
func TestRuleTable(t *testing.T) {
	for code := range defeats {
		if _, ok := ruleByCode[code]; !ok {
			t.Errorf("defeats names %s, which is not a rule", code)
		}
	}
	idRE := regexp.MustCompile(`^(LL|LD|PS|DY|SG|RY|VL|AB|GI)-\d\d$`)
	for _, r := range Rules() {
		if !strings.Contains(r.Code, "/") || r.Summary == "" || r.Versions == "" || r.Source == "" {
			t.Errorf("rule %+v: want a system/name code, a summary, versions and a source", r)
		}
		if r.Defeats() != "" && r.Severity != finding.Error {
			t.Errorf("rule %s defeats %s but is not an error: assess blocks only on errors", r.Code, r.Defeats())
		}
		if r.ID != "" && !idRE.MatchString(r.ID) {
			t.Errorf("rule %s: id %q is not a table id", r.Code, r.ID)
		}
	}
}
