package rank

import (
	"math"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// A value that is not the kind its setting takes keeps the shipped value and says so on the
// row, naming the setting, the value and where it was set; it is never dropped in silence.
func TestConfiguredUnreadableValues(t *testing.T) {
	shipped := struct {
		LLMD   llmd.Settings
		Dynamo dynamo.Settings
	}{llmd.Shipped(), dynamo.Shipped()}
	for _, tc := range []struct {
		kind, key, val string
		read           func(product.Settings) any
		want           any
	}{
		{llmd.ID, "prefix-cache-scorer", `"abc"`, func(s product.Settings) any { return s.(llmd.Settings).PrefixWeight }, shipped.LLMD.PrefixWeight},
		{llmd.ID, "prefix-cache-scorer", ".nan", func(s product.Settings) any { return s.(llmd.Settings).PrefixWeight }, shipped.LLMD.PrefixWeight},
		{llmd.ID, "blockSizeTokens", "16k", func(s product.Settings) any { return s.(llmd.Settings).BlockSizeTokens }, shipped.LLMD.BlockSizeTokens},
		{llmd.ID, "autoTune", "maybe", func(s product.Settings) any { return s.(llmd.Settings).AutoTune }, shipped.LLMD.AutoTune},
		// The precise producer's block size: an unreadable blockSizeTokens was passed over for
		// the deprecated blockSize (or the default) without a word.
		{llmd.ID, "tokenProcessorConfig.blockSizeTokens", "16k", func(s product.Settings) any { return s.(llmd.Settings).PreciseBlockSizeTokens }, shipped.LLMD.PreciseBlockSizeTokens},
		// Dynamo's deprecated overlap weight: an unreadable one fell back to the prefill load
		// scale without a note; the deprecated --load-aware (DYN_ROUTER_LOAD_AWARE) likewise.
		{dynamo.ID, "--router-kv-overlap-score-weight", "high", func(s product.Settings) any { return s.(dynamo.Settings).OverlapWeight }, shipped.Dynamo.OverlapWeight},
		{dynamo.ID, "--load-aware", "yes please", func(s product.Settings) any { return s.(dynamo.Settings).KVEvents }, shipped.Dynamo.KVEvents},
	} {
		r := lint.RouterFacts{Kind: tc.kind, File: "epc.yaml", Line: 7, Values: map[string]string{tc.key: tc.val}}
		rows := configured(r, "epc.yaml:7")
		if len(rows) != 1 {
			t.Fatalf("%s=%s: %d rows, want 1", tc.key, tc.val, len(rows))
		}
		if got := tc.read(rows[0].Settings); got != tc.want {
			t.Errorf("%s=%s: simulated with %v, want the shipped %v", tc.key, tc.val, got, tc.want)
		}
		if len(rows[0].Changes) != 0 {
			t.Errorf("%s=%s: changes %v, want none", tc.key, tc.val, rows[0].Changes)
		}
		if len(rows[0].Notes) != 1 || !strings.Contains(rows[0].Notes[0], tc.key+" ") ||
			!strings.Contains(rows[0].Notes[0], "epc.yaml:7") || !strings.Contains(rows[0].Notes[0], "shipped") {
			t.Errorf("%s=%s: notes %q, want one naming the setting, epc.yaml:7 and the shipped value", tc.key, tc.val, rows[0].Notes)
		}
	}
}

// parseFloat keeps the sign of an infinity and refuses NaN and text that merely contains "inf".
func TestParseFloatEdges(t *testing.T) {
	for v, want := range map[string]float64{
		"1.5": 1.5, `"2"`: 2, "inf": math.Inf(1), ".inf": math.Inf(1), `float("inf")`: math.Inf(1),
		"-inf": math.Inf(-1), "-.inf": math.Inf(-1), `float('-inf')`: math.Inf(-1),
	} {
		if got, err := product.ParseFloat(v); err != nil || got != want {
			t.Errorf("product.ParseFloat(%s) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"nan", ".nan", "NaN", "info", "abc", ""} {
		if got, err := product.ParseFloat(v); err == nil {
			t.Errorf("product.ParseFloat(%q) = %v, want an error", v, got)
		}
	}
}

// An EndpointPickerConfig with several scheduling profiles: the row runs the first profile's
// weights and says so, naming every profile, instead of passing the first for the whole config.
func TestConfiguredSeveralProfiles(t *testing.T) {
	f := filesOf(t, map[string]string{"epc.yaml": `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
- type: queue-scorer
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefix-cache-scorer
    weight: 9
- name: decode
  plugins:
  - pluginRef: queue-scorer
`})
	if len(f.Routers) != 1 {
		t.Fatalf("%d routers, want 1", len(f.Routers))
	}
	r := f.Routers[0]
	if r.Settings.(llmd.Settings).PrefixWeight != 9 || r.Settings.(llmd.Settings).QueueWeight != 0 {
		t.Errorf("weights prefix %v queue %v, want the first profile's 9 and 0", r.Settings.(llmd.Settings).PrefixWeight, r.Settings.(llmd.Settings).QueueWeight)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "2 scheduling profiles (prefill, decode)") || !strings.Contains(r.Notes[0], "epc.yaml:1") {
		t.Errorf("notes %q, want one naming both profiles and epc.yaml:1", r.Notes)
	}
}
