package kthena

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// chartConfigMap is the Helm chart's kthena-router-config (testdata/chart_kthena-router-config.yaml,
// volcano-sh/kthena@3cc0572 charts/kthena/charts/networking/templates/kthena-router/component/
// configmap.yaml), a Helm template whose namespace the chart fills in.
func chartConfigMap(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/chart_kthena-router-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfigRules: each rule on the chart's ConfigMap changed by hand, worked from the lines the
// rule cites: the weight an int defaulting to 0 (conf.go:55-58) and a negative one set to 0
// (factory.go:116-121); the registry's names (factory.go:65-95) and the skip of others
// (100-104, 122-124); random removed beside others (conf.go:135-155); least-latency's factor
// validated to a finite 0-1 with a fatal exit (least_latency.go:56-75, scheduler_impl.go:87-89);
// prefix-cache's arguments at 0 or below back at their defaults, and a set that does not parse
// replaced whole (prefix_cache.go:125-147). The chart's own ConfigMap has no finding.
func TestConfigRules(t *testing.T) {
	chart := chartConfigMap(t)
	edit := func(old, new string) string {
		if !strings.Contains(chart, old) {
			t.Fatalf("chart has no %q", old)
		}
		return strings.Replace(chart, old, new, 1)
	}
	const prefixScore = "            - name: prefix-cache\n              weight: 1\n"
	tests := []struct {
		name, src string
		want      []string
		at        string // the text on the line of the first finding
	}{
		{"negative: the chart's ConfigMap", chart, nil, ""},
		{"prefix-cache left out", edit(prefixScore, ""), []string{codePrefixCacheOff}, "            - name: least-request\n              weight"},
		{"negative: kvcache-aware instead", edit(prefixScore, "            - name: kvcache-aware\n              weight: 2\n"), nil, ""},
		{"prefix-cache without a weight", edit(prefixScore, "            - name: prefix-cache\n"), []string{codeZeroWeight}, "            - name: prefix-cache\n"},
		{"prefix-cache weight -1", edit(prefixScore, "            - name: prefix-cache\n              weight: -1\n"), []string{codeZeroWeight}, "weight: -1"},
		{"least-latency weight 0", edit("            - name: least-latency\n              weight: 1\n", "            - name: least-latency\n              weight: 0\n"), []string{codeZeroWeight}, "weight: 0"},
		{"score plugin typo", edit("            - name: gpu-usage\n", "            - name: gpu-usge\n"), []string{codeUnknownPlugin}, "gpu-usge"},
		{"filter plugin unknown", edit("          enabled:\n            - least-request\n", "          enabled:\n            - prefix-cache\n"), []string{codeUnknownPlugin}, "- prefix-cache\n          disabled"},
		{"random beside others", edit(prefixScore, prefixScore+"            - name: random\n              weight: 1\n"), []string{codeRandomDropped}, "- name: random"},
		{"least-latency factor 2", edit("TTFTTPOTWeightFactor: 0.5", "TTFTTPOTWeightFactor: 2"), []string{codeLatencyRefused}, "TTFTTPOTWeightFactor: 2"},
		{"least-latency factor .nan", edit("TTFTTPOTWeightFactor: 0.5", "TTFTTPOTWeightFactor: .nan"), []string{codeLatencyRefused}, "TTFTTPOTWeightFactor: .nan"},
		{"negative: least-latency factor 1", edit("TTFTTPOTWeightFactor: 0.5", "TTFTTPOTWeightFactor: 1"), nil, ""},
		{"blockSizeToHash 0", edit("blockSizeToHash: 64", "blockSizeToHash: 0"), []string{codeArgDefault}, "blockSizeToHash: 0"},
		{"maxHashCacheSize 50k", edit("maxHashCacheSize: 50000", "maxHashCacheSize: 50k"), []string{codeArgDefault}, "maxHashCacheSize: 50k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := configtest.Findings(t, []config.Checker{Router{}}, "kthena-router-config.yaml", tt.src)
			var got []string
			for _, f := range fs {
				if strings.HasPrefix(f.Code, ID+"/") {
					got = append(got, f.Code)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("findings %v, want %v (all: %v)", got, tt.want, fs)
			}
			if tt.at == "" {
				return
			}
			// The findings point into the literal block, at the line of the value.
			line := strings.Count(tt.src[:strings.Index(tt.src, tt.at)], "\n") + 1
			if f := fs[slices.IndexFunc(fs, func(f *config.Finding) bool { return f.Code == tt.want[0] })]; f.Line != line {
				t.Errorf("finding at line %d, want %d (%q)", f.Line, line, tt.at)
			}
		})
	}
}
