package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// jsonText writes a YAML node as JSON, keys in order, indented as kubectl get -o json does.
func jsonText(t *testing.T, n *yaml.Node) []byte {
	t.Helper()
	var b bytes.Buffer
	var write func(n *yaml.Node)
	write = func(n *yaml.Node) {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.DocumentNode:
			write(n.Content[0])
		case yaml.MappingNode:
			b.WriteByte('{')
			for i := 0; i+1 < len(n.Content); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(n.Content[i].Value)
				b.Write(k)
				b.WriteByte(':')
				write(n.Content[i+1])
			}
			b.WriteByte('}')
		case yaml.SequenceNode:
			b.WriteByte('[')
			for i, c := range n.Content {
				if i > 0 {
					b.WriteByte(',')
				}
				write(c)
			}
			b.WriteByte(']')
		default:
			var v any = n.Value
			if n.ShortTag() != "!!str" {
				if err := n.Decode(&v); err != nil {
					t.Fatalf("line %d: %v", n.Line, err)
				}
			}
			j, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("line %d: %v", n.Line, err)
			}
			b.Write(j)
		}
	}
	write(n)
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "    "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// positionRE matches what differs between a YAML file and its JSON rendering: line and column
// numbers.
var positionRE = regexp.MustCompile(`(line |:)\d+(:\d+)?`)

// comparable is what a finding says, without where it says it.
func comparable(r FileResult) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s %s", f.Severity, f.Code, f.Status, positionRE.ReplaceAllString(f.Message, "$1N")))
	}
	slices.Sort(out)
	return out
}

// TestJSONConfigSameAsYAML lints every YAML document of the real configs and autoscalers in the
// corpus, and of kvcheck's YAML fixtures, twice, as YAML and as the JSON kubectl get -o json would print, and wants the same
// findings from both: a manifest written as JSON got no config check at all (issue 23, item 1,
// "passes silently"), and a KEDA or HPA object in JSON no metric check.
func TestJSONConfigSameAsYAML(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	var files []string
	for _, dir := range []string{"configs", "autoscaling"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// kvcheck's own fixtures add the formats the corpus has no real file of (rule files,
	// Perses, adapter rules, dashboards in ConfigMaps).
	own, err := filepath.Glob(filepath.Join("..", "..", "testdata", "lint", "*.yaml"))
	if err != nil || len(own) == 0 {
		t.Fatalf("testdata/lint/*.yaml: %v %v", own, err)
	}
	files = append(files, own...)
	l := newLinter(t, "")
	withFindings := 0
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseYAML(src)
		if err != nil {
			continue // a Helm template: not YAML, and so no JSON either
		}
		for i, d := range docs {
			if len(d.Content) == 0 || d.Content[0].Kind != yaml.MappingNode {
				continue
			}
			name := fmt.Sprintf("%s#%d", filepath.Base(p), i+1)
			t.Run(name, func(t *testing.T) {
				y := src
				if len(docs) > 1 {
					if y, err = yaml.Marshal(d.Content[0]); err != nil {
						t.Fatal(err)
					}
				}
				j := jsonText(t, d)
				fromYAML := l.Finish([]FileResult{l.File("in", y)})[0]
				fromJSON := l.Finish([]FileResult{l.File("in", j)})[0]
				if diff := cmp.Diff(comparable(fromYAML), comparable(fromJSON)); diff != "" {
					t.Errorf("findings (-yaml +json):\n%s\nJSON:\n%s", diff, j)
				}
				if len(fromYAML.Findings) > 0 {
					withFindings++
				}
				if fromJSON.Fixed != nil && !json.Valid(fromJSON.Fixed) {
					t.Errorf("--fix made invalid JSON:\n%s", fromJSON.Fixed)
				}
			})
		}
	}
	// The comparison means something only where the YAML has findings to lose.
	if withFindings < 10 {
		t.Errorf("%d corpus documents with findings, want at least 10", withFindings)
	}
}

// TestJSONConfigFix rewrites findings of JSON configs in place and in JSON: a config value
// (a plain scalar, replaced where it stands) and a metric name in a KEDA query (a JSON string,
// written in JSON's escaping), and the result lints clean of them.
func TestJSONConfigFix(t *testing.T) {
	for _, tc := range []struct {
		name, src, code, want string
	}{
		{"production-stack values", `{"servingEngineSpec": {"modelSpec": [{"name": "qwen", "vllmConfig": {"enablePrefixCaching": false}}]},
 "routerSpec": {"routingLogic": "roundrobin"}}
`, "production-stack/prefix-caching-off", `"enablePrefixCaching": true`},
		{"KEDA ScaledObject", `{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "vllm"},
 "spec": {"triggers": [{"type": "prometheus", "metadata": {"query": "sum(vllm:gpu_cache_usage_perc{model_name=\"q\"})", "threshold": "0.8"}}]}}
`, CodeRemoved, `"query": "sum(vllm:kv_cache_usage_perc{model_name=\"q\"})"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLinter(t, "")
			r := l.Finish([]FileResult{l.File("in.json", []byte(tc.src))})[0]
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Code)
			}
			if !slices.Contains(got, tc.code) {
				t.Fatalf("codes %v, want %s", got, tc.code)
			}
			if r.Fixed == nil {
				t.Fatalf("no rewrite")
			}
			if !json.Valid(r.Fixed) || !strings.Contains(string(r.Fixed), tc.want) {
				t.Fatalf("rewrite:\n%s\nwant valid JSON holding %s", r.Fixed, tc.want)
			}
			again := l.Finish([]FileResult{l.File("in.json", r.Fixed)})[0]
			for _, f := range again.Findings {
				if f.Code == tc.code {
					t.Errorf("after the rewrite still %s: %s", f.Code, f.Message)
				}
			}
		})
	}
}
