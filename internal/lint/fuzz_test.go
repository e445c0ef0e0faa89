package lint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSubstituteVariables checks that placeholders never panic and that every offset of the
// substituted text maps back inside the original.
func FuzzSubstituteVariables(f *testing.F) {
	for _, s := range []string{
		`rate(vllm:x{a="$v"}[$__rate_interval])`, `topk($n, [[m]]{j="${j:csv}"})`, `x offset $__interval`,
		`"unterminated $x`, `[[`, `${`, `$`, `x[5m:$__interval] / $__range_s`, "`raw $x`",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, q string, numeric bool) {
		s := substituteVariables(q, numeric)
		for i := 0; i <= len(s.text); i++ {
			if o := s.orig(i); o < 0 || o > len(q) {
				t.Fatalf("orig(%d) = %d outside [0, %d] for %q -> %q", i, o, len(q), q, s.text)
			}
		}
		if len(s.subs) == 0 && s.text != q {
			t.Fatalf("no substitutions but the text changed: %q -> %q", q, s.text)
		}
	})
}

// FuzzParseJSON compares the offset-keeping parser with encoding/json on validity, and
// checks that every string node's offsets cover its quoted source.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1, "a\"b", {"k": null}]`, `{"a":`, `"\u00e9"`, `[1e5, -0.5, true]`, "\"\xff\"", `{"a" 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseJSON(b)
		if (err == nil) != json.Valid(b) {
			t.Fatalf("parseJSON error %v, but json.Valid = %v for %q", err, json.Valid(b), b)
		}
		if err != nil {
			return
		}
		var walk func(*jsonNode)
		walk = func(n *jsonNode) {
			if n.start < 0 || n.end > len(b) || n.start >= n.end {
				t.Fatalf("node range [%d,%d) outside input of %d bytes", n.start, n.end, len(b))
			}
			if n.kind == 's' {
				var want string
				if err := json.Unmarshal(b[n.start:n.end], &want); err != nil || want != n.str {
					t.Fatalf("string node %q: source %q decodes to %q (%v)", n.str, b[n.start:n.end], want, err)
				}
			}
			for _, k := range n.kids {
				walk(k)
			}
		}
		walk(n)
	})
}

// FuzzFile runs format detection, extraction and checking on arbitrary input: no panic, and
// a rewrite, when there is one, lints again without a further rewrite.
func FuzzFile(f *testing.F) {
	entries, _ := os.ReadDir(fixtures)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(fixtures, e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"panels":[{"targets":[{"expr":"vllm:gpu_cache_usage_perc{a=\"\\u0076\"}"}]}]}`))
	f.Add([]byte("groups:\n- rules:\n  - expr: \"vllm:gpu_prefix_cache_hit_rate{a=\\\"b\\\"}\"\n"))
	f.Add([]byte("kind: ScaledObject\nspec: {triggers: [{metadata: {query: 'vllm:num_preemptions'}}]}\n"))
	l := newLinter(f, "")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := l.File("fuzz", b)
		for _, x := range r.Findings {
			if x.Line < 1 || x.Column < 1 {
				t.Fatalf("finding without a position: %+v", x)
			}
		}
		if r.Fixed == nil {
			return
		}
		if r.Formats[0] == FormatGrafana || r.Formats[0] == FormatGCM || r.Formats[0] == FormatJSON {
			if !json.Valid(r.Fixed) {
				t.Fatalf("rewritten JSON does not parse:\n%q\n->\n%q", b, r.Fixed)
			}
		}
		again := l.File("fuzz", r.Fixed)
		if again.Fixed != nil && !strings.Contains(string(r.Fixed), "\x00") {
			t.Fatalf("a second rewrite changes the file again:\n%q\n->\n%q\n->\n%q", b, r.Fixed, again.Fixed)
		}
	})
}

// maxFuzzConfig bounds what FuzzConfigFile lints. One exec lints its input three times (as
// two files, and again after a rewrite), and under the fuzzer's coverage instrumentation
// yaml.v3 alone costs about 1 ms per KB, so a 20 KB corpus file takes 50 ms or more. The cost
// that made the target crawl (about 1 exec/s) is what comes after: a tenth of the execs find new
// coverage, mostly in yaml.v3's scanner, and the fuzzer minimises each of those by linting
// it again with one byte or chunk removed, up to -fuzzminimizetime, without counting those
// execs. Minimising a multi-KB input always runs out the clock, so whole corpus files made the
// fuzzer spend nearly all its time minimising. Inputs past the bound are not linted; the
// corpus is seeded document by document (a config's checks work on one document, or on
// several files, which the target gives it as two), and TestConfigFileCorpusProperties checks
// the same properties on every whole corpus file.
const maxFuzzConfig = 4 << 10

// FuzzConfigFile runs the config checks on arbitrary YAML shaped like router and engine files:
// no panic, every finding positioned, a config rewrite lints again without a further rewrite.
func FuzzConfigFile(f *testing.F) {
	for _, b := range corpusConfigs(f) {
		for _, doc := range yamlDocuments(b) {
			if len(doc) <= maxFuzzConfig {
				f.Add(doc)
			}
		}
	}
	for _, s := range []string{litellmShuffle, eppPrecise, prodStack("kvaware", "    vllmConfig:\n      maxModelLen: 1\n", ""),
		prodStack("roundrobin", "", "  extraArgs: [\"--routing-logic\", \"session\", \"--session-key\", \"--routing-logic=loadaware\"]\n"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kthena-router-config\ndata:\n  routerConfiguration: |\n    scheduler:\n      pluginConfig:\n      - name: least-latency\n        args: {TTFTTPOTWeightFactor: .inf}\n      - name: prefix-cache\n        args: {blockSizeToHash: 0, topKMatches: x}\n      plugins:\n        Filter: {enabled: [least-request, nope]}\n        Score:\n          enabled:\n          - name: random\n          - name: gpu-usge\n            weight: -2\n",
		"#!/bin/sh\nvllm-router --policy cache_aware --cache-threshold 1 --balance-abs-threshold 0 --balance-rel-threshold 1 --worker-urls http://a:8000 http://b:8000\npython -m vllm_router.launch_router --policy=consistant_hash --max-tree-size=0\n",
		dynamoDGD("kv", "            - --no-kv-events\n", ""), engineDeployment("vllm/vllm-openai:v0.10.2", 3, `{"enable_kv_cache_events":true}`),
		"services:\n  v:\n    image: vllm/vllm-openai:v0.6.6\n    command: >\n      --model m\n      --kv-events-config '{}'\n"} {
		f.Add([]byte(s))
	}
	l := newLinter(f, "")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxFuzzConfig {
			return
		}
		checkConfigFile(t, l, b)
	})
}

// TestConfigFileCorpusProperties checks FuzzConfigFile's properties on every whole corpus
// config, which the fuzz target sees only document by document.
func TestConfigFileCorpusProperties(t *testing.T) {
	if os.Getenv("KVCHECK_CORPUS") == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	l := newLinter(t, "")
	for _, b := range corpusConfigs(t) {
		checkConfigFile(t, l, b)
	}
}

// corpusConfigs reads every file under $KVCHECK_CORPUS/configs (none when it is not set).
func corpusConfigs(t testing.TB) [][]byte {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		return nil
	}
	var out [][]byte
	err := filepath.WalkDir(filepath.Join(root, "configs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// yamlDocuments splits b at its "---" lines and drops the comment-only lines of each document,
// which the checks never read; a file that is not YAML comes back whole.
func yamlDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for line := range bytes.Lines(b) {
		t := bytes.TrimSpace(line)
		switch {
		case bytes.Equal(t, []byte("---")):
			if len(bytes.TrimSpace(cur)) > 0 {
				docs = append(docs, cur)
			}
			cur = nil
		case bytes.HasPrefix(t, []byte("#")) && !bytes.HasPrefix(t, []byte("#!")):
		default:
			cur = append(cur, line...)
		}
	}
	if len(bytes.TrimSpace(cur)) > 0 {
		docs = append(docs, cur)
	}
	return docs
}

// checkConfigFile lints b as two files and checks FuzzConfigFile's properties.
func checkConfigFile(t *testing.T, l *Linter, b []byte) {
	t.Helper()
	rs := l.Finish([]FileResult{l.File("a.yaml", b), l.File("b.yaml", b)})
	for _, r := range rs {
		for _, x := range r.Findings {
			if x.Line < 1 || x.Column < 1 {
				t.Fatalf("finding without a position: %+v", x)
			}
		}
	}
	if rs[0].Fixed == nil {
		return
	}
	if again := l.File("a.yaml", rs[0].Fixed); again.Fixed != nil {
		t.Fatalf("a second rewrite changes the file again:\n%q\n->\n%q\n->\n%q", b, rs[0].Fixed, again.Fixed)
	}
}
