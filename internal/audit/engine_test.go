package audit

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
)

// engineContexts are the conversations every chat template is rendered with in the engine
// test: with tools and a system message, and a plain exchange.
var engineContexts = []struct {
	Name string          `json:"name"`
	Vars json.RawMessage `json:"vars"`
}{
	{"tools", json.RawMessage(`{"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
	  "messages": [{"role": "system", "content": "You are a support assistant for ACME."},
	               {"role": "user", "content": "What is the weather in Paris?"},
	               {"role": "assistant", "content": "Let me check."},
	               {"role": "user", "content": "And in Rome?"}],
	  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}, "required": ["city"]}}},
	            {"type": "function", "function": {"name": "get_time", "description": "Local time, a float like 1.5e-05 or 2.0", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}`)},
	{"plain", json.RawMessage(`{"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
	  "messages": [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "Tell me a joke."}]}`)},
}

var engineNow = time.Date(2024, 7, 26, 10, 0, 7, 123456000, time.UTC)

// engineTemplates are the chat templates the engine test renders: the corpus's, kvcheck's
// fixtures, and every template in KVCHECK_JINJA_DIR when it is set (the wider comparison the
// README reports).
func engineTemplates(t *testing.T) []string {
	var files []string
	add := func(pattern string) {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if dir := os.Getenv("KVCHECK_CORPUS"); dir != "" {
		add(filepath.Join(dir, "templates", "*.jinja"))
	}
	add("../../testdata/audit/templates/jinja/*.jinja")
	add("../../testdata/audit/templates/public/*.jinja")
	add("../../testdata/audit/templates/public/*tokenizer_config.json")
	add("../../testdata/audit/templates/*tokenizer_config.json")
	if dir := os.Getenv("KVCHECK_JINJA_DIR"); dir != "" {
		add(filepath.Join(dir, "*"))
	}
	sort.Strings(files)
	return files
}

// TestEngineMatchesJinja2 renders chat templates with kvcheck's engine and with Python's
// jinja2 set up as transformers sets it up, and wants the same text, byte for byte, or an
// error from both (a template's raise_exception). Templates the engine is known to render
// differently are listed in engineKnownDiffs (and in the README) and must still differ: a fix
// upstream shows up here.
func TestEngineMatchesJinja2(t *testing.T) {
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import jinja2").CombinedOutput(); err != nil {
		t.Fatalf("the reference needs Debian's python3-jinja2 (scripts/install-deps.sh installs it): %v: %s", err, out)
	}
	files := engineTemplates(t)
	spec := map[string]any{"now": engineNow.Format("2006-01-02T15:04:05.000000"), "contexts": engineContexts}
	specFile := filepath.Join(t.TempDir(), "contexts.json")
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(specFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, append([]string{"testdata/render/jinja2_render.py", specFile}, files...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jinja2_render.py: %v", err)
	}
	var ref map[string]struct {
		Text  *string `json:"text"`
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("jinja2_render.py output: %v", err)
	}
	var failed []string
	for _, f := range files {
		src, err := chatTemplateSource(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		ct, cerr := compileChat(src)
		for _, c := range engineContexts {
			key := name + "|" + c.Name
			r, ok := ref[key]
			if !ok {
				t.Fatalf("no reference render for %s", key)
			}
			var got string
			err := cerr
			if err == nil {
				var vars map[string]jinja.Value
				vars, err = contextValues(c.Vars)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err = ct.render(renderInput{vars: vars, now: engineNow})
			}
			var problem string
			switch {
			case r.Error != nil && err != nil:
			case r.Error != nil:
				problem = "jinja2 fails (" + *r.Error + "), the engine renders"
			case err != nil:
				problem = "the engine fails: " + err.Error()
			case got != *r.Text:
				at := firstDiffString(got, *r.Text)
				problem = "renders differ from byte " + strconv.Itoa(at) + ": engine " + quoteAround(got, at) + ", jinja2 " + quoteAround(*r.Text, at)
			}
			known := engineKnownDiffs[key]
			switch {
			case problem != "" && known == "":
				t.Errorf("%s: %s", key, problem)
				failed = append(failed, key)
			case problem != "":
				t.Logf("%s (known: %s): %s", key, known, problem)
			case known != "" && os.Getenv("KVCHECK_JINJA_DIR") == "":
				t.Errorf("%s: renders as jinja2 does now; take it off engineKnownDiffs (%s) and the README", key, known)
			}
		}
	}
	t.Logf("%d templates, %d contexts each; %d renders differ from jinja2 outside the known list", len(files), len(engineContexts), len(failed))
}

// engineKnownDiffs are the renders the engine is known to get wrong, with the reason.
var engineKnownDiffs = map[string]string{
	// '...' + tool['name'] of an OpenAI tool ({type, function}): jinja2's Undefined raises in
	// +, the engine adds nothing. kvcheck renders a conversation the server refuses.
	"sglang_tool_chat_template_deepseekr1.jinja|tools": "an undefined value in + is empty, where jinja2 raises",
}

func contextValues(raw json.RawMessage) (map[string]jinja.Value, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := map[string]jinja.Value{}
	for k, v := range m {
		jv, err := jsonValue(v)
		if err != nil {
			return nil, err
		}
		out[k] = jv
	}
	return out, nil
}

func chatTemplateSource(path string) (string, error) {
	src, err := readTemplate(path)
	if err != nil || !strings.HasSuffix(path, ".json") {
		return src, err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal([]byte(src), &cfg); err != nil {
		return "", err
	}
	var one string
	if json.Unmarshal(cfg.ChatTemplate, &one) == nil {
		return one, nil
	}
	var named []struct{ Template string }
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil || len(named) == 0 {
		return "", err
	}
	return named[0].Template, nil
}

func quoteAround(s string, at int) string {
	lo, hi := max(0, at-10), min(len(s), at+40)
	b, _ := json.Marshal(s[lo:hi])
	return string(b)
}
