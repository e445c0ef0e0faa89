package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// TestResolveTargets: --target-version sets vLLM's target, --target any family's, both for
// vLLM is a usage error, and a release past the catalog's newest is judged with a warning.
func TestResolveTargets(t *testing.T) {
	c := mustLoad(t)
	var warned []string
	warn := func(format string, args ...any) { warned = append(warned, fmt.Sprintf(format, args...)) }
	got, err := c.ResolveTargets("0.11", "llm-d=0.9", warn)
	if err != nil {
		t.Fatal(err)
	}
	if got[VLLM] != (Version{Major: 0, Minor: 11}) || got["llm-d"] != (Version{Major: 0, Minor: 9}) || len(warned) != 0 {
		t.Errorf("targets %v, warnings %q; want vllm 0.11, llm-d 0.9, none", got, warned)
	}
	for _, c2 := range []struct{ version, spec, want string }{
		{"0.11", "vllm=0.12", "give vLLM's release once"},
		{"zero", "", "--target-version: "},
		{"", "nosuch=1.0", "--target: "},
	} {
		if _, err := c.ResolveTargets(c2.version, c2.spec, warn); err == nil || !strings.Contains(err.Error(), c2.want) || !usage.Is(err) {
			t.Errorf("ResolveTargets(%q, %q) = %v, want a usage error containing %q", c2.version, c2.spec, err, c2.want)
		}
	}
	next := c.Family(VLLM).Newest
	next.Minor++
	if _, err := c.ResolveTargets(next.String(), "", warn); err != nil || len(warned) != 1 || !strings.Contains(warned[0], next.String()) {
		t.Errorf("a release past the newest: %v, warnings %q; want it judged with one warning naming %s", err, warned, next)
	}
}

func TestCheckView(t *testing.T) {
	c := mustLoad(t)
	if err := c.CheckView([]string{"vllm", "llm-d"}, "deprecated"); err != nil {
		t.Errorf("known family and status: %v", err)
	}
	if err := c.CheckView([]string{"nosuch"}, ""); err == nil || !strings.Contains(err.Error(), `--family "nosuch"`) || !usage.Is(err) {
		t.Errorf("unknown family: %v", err)
	}
	if err := c.CheckView(nil, "gone"); err == nil || !strings.Contains(err.Error(), `--status "gone"`) || !usage.Is(err) {
		t.Errorf("unknown status: %v", err)
	}
}
