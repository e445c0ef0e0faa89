package ray

import (
	"slices"
	"strconv"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestConfigRules: Ray Serve's rules, each case worked from the rule's source (ROUTERS.md's rule table).
func TestConfigRules(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// Ray
		{"RY-01/02 no kwargs", map[string]string{"serve.yaml": "deployment_config:\n  request_router_config:\n    request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n"}, []string{"ray/imbalanced-threshold", "ray/no-eviction"}},
		{"RY negative: kwargs set", map[string]string{"serve.yaml": "deployment_config:\n  request_router_config:\n    request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n    request_router_kwargs:\n      imbalanced_threshold: 5\n      do_eviction: true\n"}, nil},
	}
	for _, tt := range tests {
		configtest.Expect(t, tt.name, checkers, tt.files, tt.want)
	}
}

// TestTextDetection: a text file is a Ray Serve application when Python sets
// PrefixCacheAffinityRouter as its request_router_class (a dict key or a keyword argument) or
// imports it from ray; a text that only names the class is not (kvcheck lint read the corpus's
// MANIFEST.tsv, whose notes name the class, as a Ray Serve config: issue 24).
func TestTextDetection(t *testing.T) {
	checkers := []config.Checker{Router{}}
	tests := []struct {
		name, src string
		want      config.Format
		findings  []string
	}{
		{"manifest row", "file\tsource_repo\tnote\n" +
			"configs/ray/serve.yaml\tray-project/ray\tRay Serve LLMConfig YAML: 2 replicas, request_router_class PrefixCacheAffinityRouter with no request_router_kwargs.\n" +
			"configs/ray/app.py\tray-project/ray\tPython: request_router_class: PrefixCacheAffinityRouter, imbalanced_threshold 5\n", "", nil},
		{"prose", "Routing notes\n\nRay Serve's PrefixCacheAffinityRouter routes by prefix; set request_router_class: PrefixCacheAffinityRouter in the deployment config.\n", "", nil},
		{"python import in prose", "Write from ray.serve.llm import X; the router is PrefixCacheAffinityRouter.\n", "", nil},
		// No kwargs: imbalanced_threshold defaults to infinity (RY-01) and do_eviction to
		// False (RY-02), both reported at the class's line.
		{"keyword argument", "from ray.serve.llm import LLMConfig\nfrom ray.serve.llm.request_router import PrefixCacheAffinityRouter\n\n" +
			"cfg = LLMConfig(deployment_config=dict(request_router_config=RequestRouterConfig(\n    request_router_class=PrefixCacheAffinityRouter,\n)))\n",
			FormatServe, []string{"5:ray/imbalanced-threshold", "5:ray/no-eviction"}},
		// Both kwargs set: nothing to say.
		{"import path string", "llm_config = LLMConfig(deployment_config={\"request_router_config\": {\n" +
			"    \"request_router_class\": \"ray.serve.llm.request_router.PrefixCacheAffinityRouter\",\n" +
			"    \"request_router_kwargs\": {\"imbalanced_threshold\": 5, \"do_eviction\": True},\n}})\n", FormatServe, nil},
		// Imported (in parentheses) and passed through a variable: a Ray application whose
		// class kvcheck cannot follow, so no finding.
		{"imported only", "from ray.serve.llm.request_router import (\n    PrefixCacheAffinityRouter,\n)\n\nrouter = PrefixCacheAffinityRouter\nconfig = {\"request_router_class\": router}\n", FormatServe, nil},
	}
	for _, tt := range tests {
		r := configtest.Lint(t, checkers, map[string]string{"f": tt.src})["f"]
		if len(r.Formats) != 1 || r.Formats[0] != tt.want {
			t.Errorf("%s: formats %q, want [%q]", tt.name, r.Formats, tt.want)
		}
		var got []string
		for _, f := range r.Findings {
			got = append(got, strconv.Itoa(f.Line)+":"+f.Code)
		}
		if !slices.Equal(got, tt.findings) {
			t.Errorf("%s: findings %q, want %q", tt.name, got, tt.findings)
		}
	}
}
