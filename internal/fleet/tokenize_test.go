package fleet

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type tokTestResp struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
	Error       *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func tokPost(t *testing.T, url, body string) (int, tokTestResp) {
	t.Helper()
	resp, err := http.Post(url+"/tokenize", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out tokTestResp
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return resp.StatusCode, out
}

func tokServer(t *testing.T, opts TokenizeOptions) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/tokenize", TokenizeHandler(opts))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestTokenizePrompt(t *testing.T) {
	srv := tokServer(t, TokenizeOptions{MaxModelLen: 4096})
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"default adds bos", `{"prompt":"Hello world 12345"}`, []string{"<|begin_of_text|>", "Hello", " world", " ", "123", "45"}},
		{"no special tokens", `{"prompt":"a\n\nb","add_special_tokens":false}`, []string{"a", "\n\n", "b"}},
		{"punctuation", `{"prompt":"x: y.","add_special_tokens":false}`, []string{"x", ":", " y", "."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := tokPost(t, srv.URL, tt.body)
			if status != http.StatusOK {
				t.Fatalf("status = %d, want 200 (error %+v)", status, got.Error)
			}
			if diff := cmp.Diff(tt.want, got.TokenStrs); diff != "" {
				t.Errorf("token_strs (-want +got):\n%s", diff)
			}
			if got.Count != len(tt.want) || len(got.Tokens) != len(tt.want) {
				t.Errorf("count = %d, tokens = %d, want %d", got.Count, len(got.Tokens), len(tt.want))
			}
			if got.MaxModelLen != 4096 {
				t.Errorf("max_model_len = %d, want 4096", got.MaxModelLen)
			}
		})
	}
}

func TestTokenizeDeterministic(t *testing.T) {
	srv := tokServer(t, TokenizeOptions{})
	body := `{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	_, a := tokPost(t, srv.URL, body)
	_, b := tokPost(t, srv.URL, body)
	if diff := cmp.Diff(a.Tokens, b.Tokens); diff != "" {
		t.Errorf("same body, different ids (-first +second):\n%s", diff)
	}
	if a.Tokens[0] != tokSpecialBase {
		t.Errorf("first id = %d, want bos %d", a.Tokens[0], tokSpecialBase)
	}
	wantText := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if got := strings.Join(a.TokenStrs, ""); got != wantText {
		t.Errorf("rendered text = %q, want %q", got, wantText)
	}
}

// TestTokenizeDateLine shows the date line moving with the injected clock and with
// chat_template_kwargs, and where the first differing token lands.
func TestTokenizeDateLine(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	srv := tokServer(t, TokenizeOptions{DateLine: true, Now: clock})
	body := `{"messages":[{"role":"system","content":"You are a support agent for ACME."},{"role":"user","content":"hi"}]}`
	_, day1 := tokPost(t, srv.URL, body)
	now = now.Add(24 * time.Hour)
	_, day2 := tokPost(t, srv.URL, body)
	first := -1
	for i := range min(len(day1.Tokens), len(day2.Tokens)) {
		if day1.Tokens[i] != day2.Tokens[i] {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("token ids identical across days, want the date line to differ")
	}
	if got := strings.Join(day1.TokenStrs, ""); !strings.Contains(got, "Today Date: 30 Nov 2026\n") {
		t.Errorf("day 1 text lacks the date line: %q", got)
	}
	// The Llama 3.1 header puts the date near token 18 (block 1 at block size 16).
	if first < 12 || first > 24 {
		t.Errorf("first differing token = %d, want near 18", first)
	}
	_, fixed := tokPost(t, srv.URL, `{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"date_string":"01 Jan 2000"}}`)
	if got := strings.Join(fixed.TokenStrs, ""); !strings.Contains(got, "Today Date: 01 Jan 2000\n") {
		t.Errorf("date_string kwarg ignored: %q", got)
	}
	_, gen := tokPost(t, srv.URL, `{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}`)
	if got := strings.Join(gen.TokenStrs, ""); strings.HasSuffix(got, "assistant<|end_header_id|>\n\n") {
		t.Errorf("add_generation_prompt=false still ends with the assistant header: %q", got)
	}
}

func TestTokenizeErrors(t *testing.T) {
	srv := tokServer(t, TokenizeOptions{Model: "toy", MaxModelLen: 8})
	tests := []struct {
		name       string
		method     string
		body       string
		wantStatus int
		wantMsg    string
	}{
		{"get", http.MethodGet, "", http.StatusMethodNotAllowed, "use POST"},
		{"bad json", http.MethodPost, `{"prompt":`, http.StatusBadRequest, "invalid JSON"},
		{"neither", http.MethodPost, `{}`, http.StatusBadRequest, "missing field"},
		{"both", http.MethodPost, `{"prompt":"a","messages":[]}`, http.StatusBadRequest, "not both"},
		{"wrong model", http.MethodPost, `{"model":"other","prompt":"a"}`, http.StatusNotFound, "does not exist"},
		{"too long", http.MethodPost, `{"prompt":"one two three four five six seven eight nine"}`, http.StatusBadRequest, "maximum context length is 8"},
		{"bad content", http.MethodPost, `{"messages":[{"role":"user","content":5}]}`, http.StatusBadRequest, "messages[0].content"},
		{"missing role", http.MethodPost, `{"messages":[{"role":"system","content":"s"},{"content":"x"}]}`, http.StatusBadRequest, "missing role"},
		{"chat template", http.MethodPost, `{"messages":[],"chat_template":"{{x}}"}`, http.StatusBadRequest, "chat_template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+"/tokenize", bytes.NewBufferString(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var got tokTestResp
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decode error body: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got.Error == nil || !strings.Contains(got.Error.Message, tt.wantMsg) || got.Error.Code != tt.wantStatus || got.Error.Type == "" {
				t.Errorf("error = %+v, want code %d and message containing %q", got.Error, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

// TestTokenizeToolCalls: an assistant's tool calls are part of what the engine hashes; the toy
// template renders them the Llama 3.1 way, arguments unquoted.
func TestTokenizeToolCalls(t *testing.T) {
	srv := tokServer(t, TokenizeOptions{})
	body := `{"messages":[{"role":"user","content":"find x"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\": \"x\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"found"}],"add_generation_prompt":false}`
	status, out := tokPost(t, srv.URL, body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %+v", status, out.Error)
	}
	got := strings.Join(out.TokenStrs, "")
	want := `<|start_header_id|>assistant<|end_header_id|>` + "\n\n" + `{"name": "search", "parameters": {"q": "x"}}<|eot_id|><|start_header_id|>tool<|end_header_id|>` + "\n\nfound<|eot_id|>"
	if !strings.HasSuffix(got, want) {
		t.Errorf("rendered %q, want it to end with %q", got, want)
	}
}
