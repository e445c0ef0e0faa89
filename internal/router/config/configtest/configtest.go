// Package configtest lints files with the config checks alone, for the tests of the product
// packages: each product tests its rules with its own checker (and those of the products a
// case needs), without lint.
package configtest

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Result is what the checks found in one file.
type Result struct {
	Formats  []config.Format // one per YAML document (or one for a text file)
	Findings []*config.Finding
	// Fixed is the file with every exact rewrite applied; nil when nothing was rewritten.
	Fixed []byte
}

// Lint checks files (name to content) as one run, as lint hands them to the config checks: a
// file whose YAML documents hold a mapping or a sequence is read as YAML, any other as text;
// then the checks across the files run. Findings are in file order by line and column, as
// lint reports them.
func Lint(t testing.TB, checkers []config.Checker, files map[string]string) map[string]*Result {
	t.Helper()
	l := config.New(config.Options{Checkers: checkers, Rewrite: true})
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	out := map[string]*Result{}
	var facts []*config.Facts
	for _, n := range names {
		src := []byte(files[n])
		f := l.NewFile(n, src, textpos.New(src))
		r := &Result{}
		if docs, err := config.ParseYAML(src); err == nil && structured(docs) {
			r.Formats = f.Documents(docs, config.ParseYAML)
		} else {
			r.Formats = []config.Format{f.Text()}
		}
		f.Fix(false)
		r.Findings, r.Fixed = slices.Clone(f.Findings()), f.Fixed()
		out[n] = r
		facts = append(facts, f.Facts())
	}
	l.Cross(facts, func(path string, f *config.Finding) {
		out[path].Findings = append(out[path].Findings, f)
	})
	for _, r := range out {
		slices.SortStableFunc(r.Findings, func(a, b *config.Finding) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
	}
	return out
}

// structured reports whether any document is a mapping or a sequence: prose parses as YAML
// too, as one long string.
func structured(docs []*yaml.Node) bool {
	for _, d := range docs {
		if len(d.Content) > 0 && (d.Content[0].Kind == yaml.MappingNode || d.Content[0].Kind == yaml.SequenceNode) {
			return true
		}
	}
	return false
}

// Codes returns the codes of every file's findings, sorted, as one list.
func Codes(t testing.TB, checkers []config.Checker, files map[string]string) []string {
	t.Helper()
	var all []string
	for _, r := range Lint(t, checkers, files) {
		for _, f := range r.Findings {
			all = append(all, f.Code)
		}
	}
	slices.Sort(all)
	return all
}

// Indent prefixes every line of s with pre (for a config held in Helm values).
func Indent(s, pre string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "")
}

// EngineDeployment is a Kubernetes Deployment of replicas vLLM servers (vllm serve
// Qwen/Qwen3-32B) on image, with the extra arguments given, events as its --kv-events-config
// JSON ("" for none), and PYTHONHASHSEED set to "0".
func EngineDeployment(image string, replicas int, events string, extra ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: qwen\nspec:\n  replicas: ")
	b.WriteString(strconv.Itoa(replicas))
	b.WriteString("\n  template:\n    spec:\n      containers:\n        - name: vllm\n          image: " + image + "\n          command: [\"vllm\", \"serve\", \"Qwen/Qwen3-32B\"]\n          args:\n")
	for _, a := range extra {
		b.WriteString("            - " + a + "\n")
	}
	if events != "" {
		b.WriteString("            - --kv-events-config\n            - '" + events + "'\n")
	}
	b.WriteString("          env:\n            - name: PYTHONHASHSEED\n              value: \"0\"\n")
	return b.String()
}

// GoodEvents is a --kv-events-config that publishes, binds port 5556 and names the pod in its
// topic, as llm-d's guide configures vLLM (modelserver/gpu/vllm/base/patch-vllm.yaml).
const GoodEvents = `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556","topic":"kv@$(POD_IP):8000@Qwen/Qwen3-32B"}`

// LineOf returns the 1-based line of the first line of src holding s.
func LineOf(t testing.TB, src, s string) int {
	t.Helper()
	i := strings.Index(src, s)
	if i < 0 {
		t.Fatalf("%q not in the source", s)
	}
	return strings.Count(src[:i], "\n") + 1
}

// Findings returns one file's findings, linted alone with checkers.
func Findings(t testing.TB, checkers []config.Checker, file, src string) []*config.Finding {
	t.Helper()
	return Lint(t, checkers, map[string]string{file: src})[file].Findings
}

// Expect runs one case of a rule table as a subtest: the codes of the findings of files,
// linted as one run with checkers, must be want's, in any order.
func Expect(t *testing.T, name string, checkers []config.Checker, files map[string]string, want []string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		got := Codes(t, checkers, files)
		want := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("codes %v, want %v", got, want)
		}
	})
}
