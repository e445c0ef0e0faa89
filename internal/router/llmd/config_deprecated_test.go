package llmd

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
)

// TestGuideActiveActiveValues: llm-d's own precise-prefix-cache-routing guide values
// (testdata, from llm-d/llm-d@076e65d) run the deprecated precise-prefix-cache-scorer with no
// precise-prefix-cache-producer beside it, so the scorer runs a producer of its own
// (precise_prefix_cache.go PluginFactory), configured by its parameters: pod discovery on 5556
// and no replaySocketPort. Worked by hand from the file:
//   - line 24, the tokenizer plugin: LD-10 (the type is deprecated);
//   - line 34, the precise-prefix-cache-scorer: LD-10, and LD-09 (its producer has no replay
//     port), both at the type's value, column 19 (the literal block's content starts at column
//     9, and "tokenizer" / "precise-prefix-cache-scorer" at column 11 of it);
//   - no LD-01: the tokenizer plugin has udsTokenizerConfig (the model's tokenizer), and the
//     scorer has indexerConfig.tokenizersPoolConfig (legacy_producer.go tokenizes itself);
//   - no parameter finding: the scorer's parameters are the producer's.
//
// Before the scorer was judged as the producer it runs, only the two LD-10 warnings came.
func TestGuideActiveActiveValues(t *testing.T) {
	src, err := os.ReadFile("testdata/precise-prefix-cache-routing.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := configtest.Lint(t, []config.Checker{Router{}}, map[string]string{"values.yaml": string(src)})["values.yaml"]
	var got []string
	for _, f := range r.Findings {
		got = append(got, fmt.Sprintf("%d:%d %s %s", f.Line, f.Column, f.Rule, f.Code))
	}
	want := []string{
		"24:19 LD-10 llm-d/deprecated-plugin",
		"34:19 LD-10 llm-d/deprecated-plugin",
		"34:19 LD-09 llm-d/no-replay",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if !slices.Equal(r.Formats, []config.Format{FormatValues}) {
		t.Errorf("formats %v, want %v", r.Formats, []config.Format{FormatValues})
	}
}

// deprecatedEPC is an EndpointPickerConfig whose only precise plugin is the deprecated scorer,
// with params as its parameters (indented under parameters:), then extra plugins.
func deprecatedEPC(params, extra string) string {
	s := "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: precise-prefix-cache-scorer\n"
	if params != "" {
		s += "    parameters:\n" + configtest.Indent(params, "      ")
	}
	return s + extra
}

// TestDeprecatedScorerIsProducerAndScorer: the deprecated precise-prefix-cache-scorer is judged
// as the producer and the scorer it composes (precise_prefix_cache.go @ the composing version;
// legacy_producer.go @20111f1a). Alone, it runs a producer of its own from its parameters, so
// the producer's rules apply to it: LD-01 unless it tokenizes itself
// (indexerConfig.tokenizersPoolConfig) or a token-producer is there, LD-09 without a replay
// port, LD-02 for a plain prefix-cache-scorer beside it that names no producer, its parameters'
// names, and its subscription against the engines (LD-03/04). Beside a
// precise-prefix-cache-producer it defers to that producer and its parameters are not read: no
// rule about a producer of its own, and no subscription of its own.
func TestDeprecatedScorerIsProducerAndScorer(t *testing.T) {
	const replay = "kvEventsConfig:\n  podDiscoveryConfig:\n    replaySocketPort: 5570\n"
	const pool = "indexerConfig:\n  tokenizersPoolConfig:\n    modelName: Qwen/Qwen3-32B\n"
	const tokenProducer = "  - type: token-producer\n    parameters:\n      modelName: Qwen/Qwen3-32B\n      vllm:\n        url: http://render:8000\n"
	const producer = "  - type: precise-prefix-cache-producer\n    parameters:\n      kvEventsConfig:\n        podDiscoveryConfig:\n          replaySocketPort: 5570\n  - type: prefix-cache-scorer\n    parameters:\n      prefixMatchInfoProducerName: precise-prefix-cache-producer\n"
	// The engine publishes on 5556 under a kv@ topic; the scorer's subscription defaults to
	// port 5557 (kvevents pool defaults), so a scorer that subscribes disagrees on the port.
	engine := configtest.EngineDeployment("vllm/vllm-openai:v0.26.0", 1, configtest.GoodEvents)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"alone, no tokenizer, no replay: LD-01 and LD-09 beside LD-10",
			map[string]string{"epc.yaml": deprecatedEPC("", "")},
			[]string{"llm-d/deprecated-plugin", "llm-d/estimate-tokenizer", "llm-d/no-replay"}},
		{"its own tokenizer pool: no LD-01",
			map[string]string{"epc.yaml": deprecatedEPC(pool+replay, "")},
			[]string{"llm-d/deprecated-plugin"}},
		{"a token-producer on the vllm backend: no LD-01",
			map[string]string{"epc.yaml": deprecatedEPC(replay, tokenProducer)},
			[]string{"llm-d/deprecated-plugin"}},
		{"a plain prefix-cache-scorer beside it naming no producer: LD-02",
			map[string]string{"epc.yaml": deprecatedEPC(pool+replay, "  - type: prefix-cache-scorer\n")},
			[]string{"llm-d/deprecated-plugin", "llm-d/scorer-approximate-producer"}},
		{"a misspelt parameter of its producer",
			map[string]string{"epc.yaml": deprecatedEPC(pool+replay+"speculativeIndexng: true\n", "")},
			[]string{"llm-d/deprecated-plugin", "llm-d/key-typo"}},
		{"its subscription against an engine on another port: LD-04",
			map[string]string{"epc.yaml": deprecatedEPC(pool+replay, ""), "vllm.yaml": engine},
			[]string{"llm-d/deprecated-plugin", "llm-d/socket-port"}},
		{"beside a producer: it defers, its parameters are not read",
			map[string]string{"epc.yaml": deprecatedEPC("speculativeIndexng: true\n", tokenProducer+producer)},
			[]string{"llm-d/deprecated-plugin"}},
		// Were its own topicFilter read, the engine's kv@ topic would miss it (LD-03); the
		// producer's default port 5557 is not the engine's 5556 (LD-04).
		{"beside a producer: no subscription of its own",
			map[string]string{"epc.yaml": deprecatedEPC("kvEventsConfig:\n  topicFilter: other@\n", tokenProducer+producer), "vllm.yaml": engine},
			[]string{"llm-d/deprecated-plugin", "llm-d/socket-port"}},
	} {
		configtest.Expect(t, tc.name, []config.Checker{Router{}}, tc.files, tc.want)
	}
	// LD-02's message and hint name the scorer, whose producer publishes under its name.
	fs := configtest.Findings(t, []config.Checker{Router{}}, "epc.yaml", deprecatedEPC(pool+replay, "  - type: prefix-cache-scorer\n"))
	i := slices.IndexFunc(fs, func(f *config.Finding) bool { return f.Code == "llm-d/scorer-approximate-producer" })
	if i < 0 || !strings.Contains(fs[i].Message, "not precise-prefix-cache-scorer") || fs[i].Fix != "set parameters.prefixMatchInfoProducerName: precise-prefix-cache-scorer" {
		t.Errorf("LD-02 finding %+v", fs)
	}
}
