package audit

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func readAll(t *testing.T, in string, maxLine int) ([]*Request, []error, string) {
	t.Helper()
	rr := NewRequestReader(strings.NewReader(in), maxLine)
	var reqs []*Request
	var errs []error
	for {
		req, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return reqs, errs, rr.BodyKey()
		}
		var le *LineError
		if errors.As(err, &le) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		reqs = append(reqs, req)
	}
}

func TestRequestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Request
		wantKey string
	}{
		{
			name: "chat body",
			in:   `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}],"user":"u1"}`,
			want: []Request{{Line: 1, Model: "m", Chat: true, Messages: []Message{{"system", "S"}, {"user", "a<image_url:fcf5501a>b"}}}},
		},
		{
			name: "completion, list prompt, blank lines",
			in:   "\n{\"prompt\":\"hello\"}\n\n{\"prompt\":[\"first\",\"second\"]}\n",
			want: []Request{{Line: 2, Prompt: "hello"}, {Line: 4, Prompt: "first", BatchLeft: 1}},
		},
		{
			name:    "export with body object and session",
			in:      `{"id":"r1","session_id":"s-1","request":{"model":"m","messages":[{"role":"user","content":"q"}]}}`,
			want:    []Request{{Line: 1, Model: "m", Chat: true, Messages: []Message{{"user", "q"}}, Session: "s-1"}},
			wantKey: "request",
		},
		{
			name:    "export with body as a JSON string and header session",
			in:      `{"headers":{"x-litellm-session-id":"abc"},"body":"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}"}`,
			want:    []Request{{Line: 1, Chat: true, Messages: []Message{{"user", "q"}}, Session: "abc", Headers: map[string]string{"x-litellm-session-id": "abc"}}},
			wantKey: "body",
		},
		{
			name:    "an x-vendor-session-id header in a gateway export; user is not a session",
			in:      `{"request_headers":{"X-Acme-Session-Id":"conv-9"},"body":{"messages":[{"role":"user","content":"q"}],"user":"u1"}}`,
			want:    []Request{{Line: 1, Chat: true, Messages: []Message{{"user", "q"}}, Session: "conv-9", Headers: map[string]string{"x-acme-session-id": "conv-9"}}},
			wantKey: "body",
		},
		{
			name: "the OpenAI user field is an end user, not a session",
			in:   `{"model":"m","messages":[{"role":"user","content":"q"}],"user":"alice","metadata":{"user_id":"alice"}}`,
			want: []Request{{Line: 1, Model: "m", Chat: true, Messages: []Message{{"user", "q"}}}},
		},
		{
			name: "metadata session_id",
			in:   `{"messages":[{"role":"user","content":"q"}],"user":"alice","metadata":{"session_id":"s-7"}}`,
			want: []Request{{Line: 1, Chat: true, Messages: []Message{{"user", "q"}}, Session: "s-7", MetadataSession: "s-7"}},
		},
		{
			name:    "export nested two levels",
			in:      `{"log":{"payload":{"messages":[{"role":"user","content":"q"}],"metadata":{"conversation_id":7}}}}`,
			want:    []Request{{Line: 1, Chat: true, Messages: []Message{{"user", "q"}}, Session: "7"}},
			wantKey: "log.payload",
		},
		{
			name: "cache_control on the last message",
			in:   `{"messages":[{"role":"system","content":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"q","cache_control":{"type":"ephemeral"}}]}`,
			want: []Request{{Line: 1, Chat: true, Messages: []Message{{"system", "S"}, {"user", "q"}}, CacheControl: 2, CacheControlLast: true, CacheMessages: 2}},
		},
		{
			// LiteLLM's prefix ends at the last ephemeral marker: message 1's second part
			// ("bb", after "a"), so the cut is len("a"+"bb") = 3. The marker of another type
			// on message 2 counts for the audit's cache_control figures, not for the prefix.
			name: "cache_control on a part before the last, and of another type",
			in:   `{"messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"bb","cache_control":{"type":"ephemeral"}},{"type":"text","text":"ccc"}]},{"role":"user","content":"q","cache_control":{"type":"persistent"}}]}`,
			want: []Request{{Line: 1, Chat: true, Messages: []Message{{"system", "S"}, {"user", "abbccc"}, {"user", "q"}}, CacheControl: 2, CacheControlLast: true, CacheMessages: 2, CacheCut: 3}},
		},
		{
			// Header names are lower-cased; a list value keeps its first element, a number is
			// read as text; the body's metadata.session_id is kept as it is (it also is the
			// session, since the body has no session_id of its own).
			name:    "headers from proxy_server_request and the body's metadata",
			in:      `{"proxy_server_request":{"headers":{"X-Session-Key":["k1","k2"],"X-Num":7},"body":{"messages":[{"role":"user","content":"q"}],"metadata":{"session_id":"meta-12345"}}}}`,
			want:    []Request{{Line: 1, Chat: true, Messages: []Message{{"user", "q"}}, Session: "meta-12345", MetadataSession: "meta-12345", Headers: map[string]string{"x-session-key": "k1", "x-num": "7"}}},
			wantKey: "proxy_server_request.body",
		},
		{
			name: "headers in a plain body",
			in:   `{"headers":{"X-User":"u"},"prompt":"p"}`,
			want: []Request{{Line: 1, Prompt: "p", Headers: map[string]string{"x-user": "u"}}},
		},
		{
			name: "tools and tool calls are part of the prefix",
			in:   `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}],"tools":[ {"type":"function"} ]}`,
			want: []Request{{Line: 1, Chat: true, Messages: []Message{{"assistant", `[{"id":"c1"}]`}}, Tools: `[{"type":"function"}]`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, errs, key := readAll(t, tt.in, 0)
			if len(errs) > 0 {
				t.Fatalf("line errors: %v", errs)
			}
			got := make([]Request, len(reqs))
			for i, r := range reqs {
				got[i] = *r
			}
			// The routers' texts are checked by TestMessageTexts.
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Request{}, "Texts")); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if key != tt.wantKey {
				t.Errorf("body key = %q, want %q", key, tt.wantKey)
			}
		})
	}
}

func TestRequestReaderBadLines(t *testing.T) {
	in := strings.Join([]string{
		`not json`,
		`{"messages":`,
		`{"other":1}`,
		`{"messages":[{"role":"user","content":5}]}`,
		`{"prompt":{"text":"not a prompt"}}`,
		`{"prompt":"` + strings.Repeat("x", 200) + `"}`,
		`{"prompt":"ok"}`,
		`[1,2]`,
		`{"model":"m","messages":[]}`,
	}, "\n")
	reqs, errs, _ := readAll(t, in, 100)
	if len(reqs) != 1 || reqs[0].Prompt != "ok" || reqs[0].Line != 7 {
		t.Errorf("requests = %+v, want only line 7", reqs)
	}
	wants := []string{
		"line 1: not a JSON object",
		"line 2: invalid JSON",
		"line 3: no request body",
		"line 4: messages[0].content",
		"line 5: prompt: want a string",
		"line 6: line longer than the limit",
		"line 8: not a JSON object",
		"line 9: messages: an empty list, which the server refuses",
	}
	if len(errs) != len(wants) {
		t.Fatalf("errors = %v, want %d", errs, len(wants))
	}
	for i, w := range wants {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
		}
	}
	if !errors.Is(errs[5], ErrLineTooLong) {
		t.Errorf("overlong line error %v does not wrap ErrLineTooLong", errs[5])
	}
}

func TestRenderLocate(t *testing.T) {
	// Tools follow a leading system message, as in most chat templates.
	req := &Request{Chat: true, Tools: `[1]`, Messages: []Message{{"system", "abc"}, {"user", "hello"}}}
	l := Render(req)
	if want := "<|system|>\nabc\n<|tools|>[1]\n<|user|>\nhello\n"; l.Text != want {
		t.Fatalf("text = %q, want %q", l.Text, want)
	}
	tests := []struct {
		off, msg, within int
	}{
		{0, -1, 0},
		{l.Starts[0] + 1, 0, 1},
		{l.ToolsStart + 2, -1, 2},
		{l.Starts[1] + 4, 1, 4},
	}
	for _, tt := range tests {
		msg, within := l.Locate(tt.off)
		if msg != tt.msg || within != tt.within {
			t.Errorf("Locate(%d) = %d, %d; want %d, %d", tt.off, msg, within, tt.msg, tt.within)
		}
	}
	// Without a system message the tools come first.
	for _, tt := range []struct {
		req  *Request
		want string
	}{
		{&Request{Chat: true, Tools: `[1]`, Messages: []Message{{"user", "hi"}}}, "<|tools|>[1]\n<|user|>\nhi\n"},
		{&Request{Chat: true, Tools: `[1]`, Messages: []Message{{"system", "s"}}}, "<|system|>\ns\n<|tools|>[1]\n"},
	} {
		if got := Render(tt.req).Text; got != tt.want {
			t.Errorf("Render = %q, want %q", got, tt.want)
		}
	}
	ids := EstimateIDs("abcdefghi", nil)
	if len(ids) != 3 || EstimateTokens(9) != 3 {
		t.Errorf("EstimateIDs gives %d ids, EstimateTokens(9) = %d; want 3 and 3", len(ids), EstimateTokens(9))
	}
	if again := EstimateIDs("abcdefghi", nil); !cmp.Equal(ids, again) {
		t.Error("the estimate is not deterministic")
	}
}

// TestMessageTexts: each message's content as the routers that read text see it, worked out
// from the body: a string is one typed part at 0; a list keeps its "text" parts (an empty one
// and one without a text member too, as ""), the non-empty texts of other types, and nothing of
// an image; null and a missing content are told apart; reasoning_content is an assistant's
// only. At is where the text sits in Content ("a" at 0, the image's placeholder
// "<image_url:fcf5501a>" is 20 bytes, so "b" at 21 and the input_text "c" at 22).
func TestMessageTexts(t *testing.T) {
	// The list is kept as the body holds it (Raw), spaces and all.
	list := `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"},{"type":"input_text","text":"c"},{"type":"text","text":""},{"type":"text"},{"type":"image_url","text":"alt"}, {"type":"input_text","text":""}]`
	in := `{"messages":[` +
		`{"role":"system","content":"S"},` +
		`{"role":"user","content":` + list + `},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}],"reasoning_content":"think"},` +
		`{"role":"user","reasoning_content":"not read"},` +
		`{"role":"assistant","content":"sure","reasoning_content":{"not":"a string"}}]}`
	reqs, errs, _ := readAll(t, in, 0)
	if len(errs) > 0 || len(reqs) != 1 {
		t.Fatalf("read %d requests, errors %v", len(reqs), errs)
	}
	want := []MessageText{
		{Form: ContentString, Parts: []TextPart{{Text: "S", Typed: true}}},
		{Form: ContentList, Parts: []TextPart{
			{Text: "a", Typed: true, At: 0}, {Text: "b", Typed: true, At: 21}, {Text: "c", At: 22},
			{Text: "", Typed: true, At: 23}, {Text: "", Typed: true, At: 23}, {Text: "alt", At: -1},
		}, Raw: list},
		{Form: ContentNull, Reasoning: "think"},
		{Form: ContentAbsent},
		{Form: ContentString, Parts: []TextPart{{Text: "sure", Typed: true}}},
	}
	if d := cmp.Diff(want, reqs[0].Texts); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if got := reqs[0].Messages[1].Content; got != "a<image_url:fcf5501a>bc<image_url>" {
		t.Errorf("content %q: the offsets above assume another placeholder", got)
	}
}
