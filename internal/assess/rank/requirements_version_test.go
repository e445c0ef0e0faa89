package rank

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// The vLLM version requirement is met only by a release the catalog describes; a tag that
// names no version, or a release newer than the catalog's newest, leaves it unknown.
func TestVersionRequirementEdges(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	newer := catalog.Version{Major: cat.Newest.Major, Minor: cat.Newest.Minor + 13, Patch: 1}.String()
	c := Candidate{Policy: "prodstack-kvaware", Product: ProdStack}
	for _, tc := range []struct {
		image, version, want string
	}{
		{"vllm/vllm-openai:" + cat.Newest.String(), cat.Newest.String(), Met},
		{"vllm/vllm-openai:v" + newer, newer, Unknown},
		{"vllm/vllm-openai:latest", "", Unknown},
		{"vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", Unknown},
		{"", "", Unknown},
	} {
		f := &Files{Kinds: map[string]string{}, Systems: map[string]string{},
			Engines: []Engine{{Where: "values.yaml:4 m", Image: tc.image, Version: tc.version, LMCache: true, LMCacheController: true}}}
		var got *Requirement
		for _, r := range requirements(c, Traffic{}, f) {
			if r.Name == ReqVLLMVersion {
				got = &r
			}
		}
		if got == nil {
			t.Fatalf("%q: no %s requirement", tc.image, ReqVLLMVersion)
		}
		if got.Status != tc.want {
			t.Errorf("%q: %s %s (%s), want %s", tc.image, ReqVLLMVersion, got.Status, got.Detail, tc.want)
		}
	}
}
