package audit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addFixtureSeeds(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(pattern)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
}

// FuzzJinja: the chat-template scanner never panics and keeps its positions consistent.
func FuzzJinja(f *testing.F) {
	addFixtureSeeds(f, "../../testdata/audit/templates/jinja/*.jinja")
	for _, s := range []string{"{{", "{%", "{% if %}", "{% for %}{% endfor", "{{ a + }}", `{{ "x\`, "{%- set x = strftime_now('%S') -%}{{ x }}", "{% macro m() %}{{ now() }}", "{{ (a if b else strftime_now('%H')) ~ 'x' }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, fd := range scanJinja("fuzz.jinja", src, 16) {
			if fd.TokensBefore < 0 || fd.Block != fd.TokensBefore/16 || fd.Line < 1 {
				t.Fatalf("inconsistent finding %+v", fd)
			}
		}
	})
}

// FuzzPython: the prompt-module scanner and the placeholder finder never panic.
func FuzzPython(f *testing.F) {
	addFixtureSeeds(f, "../../testdata/audit/templates/*/*.py")
	for _, s := range []string{`x = f"{`, `P = """`, `PROMPT = "{a}" % {"a": time.time(`, "def f(:\n  '''doc", `t = rb'\'`, `S = "$x ${y} %(z)s {{ w }}"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prompts, fillers := pyScan("fuzz.py", src)
		for _, p := range prompts {
			for _, h := range p.holds {
				if h.before < 0 || h.after < 0 {
					t.Fatalf("negative static count in %+v", h)
				}
			}
		}
		promptFindings(prompts, fillers, 16)
		placeholders(src, 1, false)
		placeholders(src, 1, true)
	})
}

// FuzzRequestReader: the JSONL reader returns requests or line errors, never panics, and every
// request renders and estimates.
func FuzzRequestReader(f *testing.F) {
	// The first lines of the fixtures: whole files make each execution slow under coverage.
	paths, _ := filepath.Glob("../../testdata/audit/requests/*.jsonl")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			lines := bytes.SplitN(b, []byte("\n"), 3)
			f.Add(bytes.Join(lines[:min(2, len(lines))], []byte("\n")))
		}
	}
	for _, s := range []string{`{"messages":[]}`, `{"prompt":null}`, `{"a":{"b":{"messages":[{"role":"u","content":[{"type":"x"}]}]}}}`, `{"body":"{\"prompt\":\"p\"}"}`, "{\n{", `{"messages":[{"content":{"a":1}}]}`,
		`{"prompt":[1,2,3]}`, `{"prompt":[[4294967295],[0]]}`, `{"prompt":[-1]}`,
		`{"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":{"x":1}}` + "\n" + `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := NewRequestReader(bytes.NewReader(data), 4096)
		rr.KeepRaw = len(data)%2 == 0
		a := NewAnalysis(16, 1000, false)
		for range 10000 {
			req, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var le *LineError
			if errors.As(err, &le) {
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error type: %v", err)
			}
			a.Add(req, Tokens{})
		}
		s := a.Summary()
		if s.CacheableTokens > s.PromptTokens || s.CrossSessionTokens+s.WithinSessionTokens != s.CacheableTokens {
			t.Fatalf("inconsistent summary %+v", s)
		}
	})
}

// FuzzTokenizerConfig: tokenizer_config.json parsing never panics.
func FuzzTokenizerConfig(f *testing.F) {
	addFixtureSeeds(f, "../../testdata/audit/templates/*tokenizer_config.json")
	f.Add(`{"chat_template":[{"name":1}]}`)
	f.Fuzz(func(t *testing.T, src string) {
		_, _ = tokenizerTemplates("fuzz_tokenizer_config.json", src)
	})
}

// FuzzConfigTemplates: reading the chat templates of any YAML or JSON never panics, and every
// template found is a string with a chat tag, placed on a line of the file.
func FuzzConfigTemplates(f *testing.F) {
	addFixtureSeeds(f, "../../testdata/audit/templates/config/*")
	f.Add("a: &x \"{{ messages }}\"\nb: *x\nc: [*x, {d: *x}]\n")
	f.Add("k: |-\n  {% for m in messages %}\n---\n- \"{{ messages\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		named, err := configTemplates("fuzz.yaml", src)
		if err != nil {
			return
		}
		lines := strings.Count(src, "\n") + 1
		for _, n := range named {
			if !reChatTag.MatchString(n.src) || n.at < 1 || n.at > lines+1 {
				t.Fatalf("template %q at line %d of %d: %q", n.name, n.at, lines, n.src)
			}
		}
	})
}

// FuzzRenderChat: rewriting and rendering any chat template never panics, and a template
// that renders renders the same twice (the clock and the inputs are kvcheck's).
func FuzzRenderChat(f *testing.F) {
	addFixtureSeeds(f, "../../testdata/audit/templates/jinja/*.jinja")
	addFixtureSeeds(f, "../../testdata/audit/templates/public/*.jinja")
	f.Add(`{{ "a" "b" }}{% raw %}{{ x }}{% endraw %}{#- c -#} {{- x | tojson(indent=2) -}}`)
	f.Add(`{% if x %}{{ '\u00e9\x41' }}{% endif %}{{ {'a': {'b': 1}} }}`)
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<14 {
			return
		}
		a := renderChatTemplate(t.Context(), src, freeVariables(src), 16, nil)
		b := renderChatTemplate(t.Context(), src, freeVariables(src), 16, nil)
		if (a.Err == nil) != (b.Err == nil) || len(a.Divergences) != len(b.Divergences) {
			t.Fatalf("two runs differ: %v/%d against %v/%d", a.Err, len(a.Divergences), b.Err, len(b.Divergences))
		}
	})
}
