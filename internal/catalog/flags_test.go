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

// TestResolveTargetsAsReleasesWriteThem: what `vllm --version`, an image tag or a pip pin
// prints is a release: a post release (0.10.1.1, SGLang's 0.5.6.post2), a local build
// (0.11.0+cu128), a release candidate (0.11.0rc1) carry the metric names of their X.Y.Z.
// Text that is no release is still refused.
func TestResolveTargetsAsReleasesWriteThem(t *testing.T) {
	c := mustLoad(t)
	for in, want := range map[string]Version{
		"0.10.1.1":      {0, 10, 1},
		"v0.11.0+cu128": {0, 11, 0},
		"0.11.0rc1":     {0, 11, 0},
		"0.9.2.post1":   {0, 9, 2},
		"0.12":          {0, 12, 0},
	} {
		got, err := c.ResolveTargets(in, "sglang=0.5.6.post2", nil)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got[VLLM] != want || got["sglang"] != (Version{0, 5, 6}) {
			t.Errorf("%q: vllm %v, sglang %v; want %v and 0.5.6", in, got[VLLM], got["sglang"], want)
		}
	}
	for _, in := range []string{"0.10.x", "latest", "0.10.1.1.1", "0..1", "0.10+"} {
		if _, err := c.ResolveTargets(in, "", nil); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
