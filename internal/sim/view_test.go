package sim

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/audit"
)

// TestRequestViews reads a small log and checks each request's view against what a router
// reading the body would see, worked out from the lines themselves.
func TestRequestViews(t *testing.T) {
	lines := []string{
		// A completion: its prompt as it is; no headers, no key.
		`{"prompt":"hello world"}`,
		// A chat in a gateway export: the contents back to back ("S"+"q1" = "Sq1", two string
		// contents ending at 1 and 3), the record's headers lower-cased, the body's
		// metadata.session_id.
		`{"headers":{"X-Session-Id":"abc","X-Litellm-Trace-Id":"trace-0001"},"body":{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q1"}],"metadata":{"session_id":"meta-0001"}}}`,
		// A marker on the system prompt: LiteLLM's prefix is message 0 alone.
		`{"messages":[{"role":"system","content":"S","cache_control":{"type":"ephemeral"}},{"role":"user","content":"q2"}]}`,
		// The same system prompt marked, another question: the same key.
		`{"messages":[{"role":"system","content":"S","cache_control":{"type":"ephemeral"}},{"role":"user","content":"other"}]}`,
		// The marker on the last message: the prefix is the whole request.
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q2","cache_control":{"type":"ephemeral"}}]}`,
		// session_params.session_id (vLLM Router's chat key) and a list content, kept as sent.
		`{"session_params":{"session_id":"conv-7"},"messages":[{"role":"user","content":[ {"type":"text","text":"hi"} ]}]}`,
		// Token ids: their count; a batch of three prompts: the two after the first.
		`{"prompt":[1,2,3]}`,
		`{"prompt":["a","b","c"]}`,
	}
	tr, err := ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "v.jsonl", RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []View
	for _, r := range tr.Requests {
		if r.View == nil {
			t.Fatalf("request at %v has no view", r.Arrival)
		}
		v := *r.View
		v.CacheKey = 0 // keys are compared below
		got = append(got, v)
	}
	roles := []string{"system", "user"}
	want := []View{
		{Text: "hello world"},
		{Chat: true, Text: "Sq1", Pieces: strings2(1, 3), Headers: map[string]string{"x-session-id": "abc", "x-litellm-trace-id": "trace-0001"}, MetadataSession: "meta-0001", Roles: roles},
		{Chat: true, Text: "Sq2", Pieces: strings2(1, 3), CacheTokens: 1, Roles: roles},
		{Chat: true, Text: "Sother", Pieces: strings2(1, 6), CacheTokens: 1, Roles: roles},
		// "S"+"q2" is 3 bytes, 1 token at 4 bytes a token (rounded up).
		{Chat: true, Text: "Sq2", Pieces: strings2(1, 3), CacheTokens: 1, Roles: roles},
		{Chat: true, Text: "hi", Pieces: []Piece{{End: 0, Kind: PieceList}, {End: 2, Kind: PiecePartText}}, SessionParams: "conv-7",
			Roles: []string{"user"}, Lists: []string{`[ {"type":"text","text":"hi"} ]`}},
		{PromptIDs: 3},
		{Text: "a", BatchLeft: 2},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("views (-want +got):\n%s", d)
	}
	keys := make([]uint64, len(tr.Requests))
	for i, r := range tr.Requests {
		keys[i] = r.View.CacheKey
	}
	if keys[0] != 0 || keys[1] != 0 {
		t.Errorf("requests without a marker have keys %x, %x; want 0", keys[0], keys[1])
	}
	if keys[2] == 0 || keys[2] != keys[3] {
		t.Errorf("the same marked system prompt gives keys %x and %x; want one non-zero key", keys[2], keys[3])
	}
	if keys[4] == 0 || keys[4] == keys[2] {
		t.Errorf("the marker on the last message gives key %x; want a key of its own (not %x)", keys[4], keys[2])
	}
}

// TestCacheKeyCut: a marker on a content part before the last cuts the prefix there, so two
// requests that differ only after the marked part share the key, and two that differ before
// it do not.
func TestCacheKeyCut(t *testing.T) {
	read := func(parts string) uint64 {
		t.Helper()
		line := `{"messages":[{"role":"user","content":[` + parts + `]}]}`
		tr, err := ReadRequests(context.Background(), strings.NewReader(line), "c.jsonl", RequestLogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Requests[0].View.CacheKey
	}
	marked := `{"type":"text","text":"doc","cache_control":{"type":"ephemeral"}}`
	a := read(marked + `,{"type":"text","text":"question one"}`)
	b := read(marked + `,{"type":"text","text":"question two"}`)
	c := read(`{"type":"text","text":"doc2","cache_control":{"type":"ephemeral"}},{"type":"text","text":"question one"}`)
	if a == 0 || a != b {
		t.Errorf("keys %x, %x: want one key for the same marked document", a, b)
	}
	if c == a {
		t.Errorf("a different marked document has the same key %x", c)
	}
}

// TestViewRewrite: the view is taken after RequestLogOptions.Rewrite, so a router sees the
// traffic as rewritten.
func TestViewRewrite(t *testing.T) {
	opts := RequestLogOptions{Rewrite: func(r *audit.Request) { r.Messages[0].Content, r.Texts = "fixed", nil }}
	tr, err := ReadRequests(context.Background(), strings.NewReader(`{"messages":[{"role":"system","content":"Today is 2026-12-01"}]}`), "r.jsonl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Requests[0].View.Text; got != "fixed" {
		t.Errorf("view text %q, want the rewritten %q", got, "fixed")
	}
}

// TestViewBound: past the bound every view is dropped, and an emulation that reads text says
// why it cannot run rather than routing on part of the log.
func TestViewBound(t *testing.T) {
	lines := strings.Repeat(`{"prompt":"`+strings.Repeat("x", 100)+`"}`+"\n", 3)
	// Each view costs viewOverhead + 100 bytes; the bound lets two in and not three.
	opts := RequestLogOptions{maxViewBytes: 2*(viewOverhead+100) + 1}
	tr, err := ReadRequests(context.Background(), strings.NewReader(lines), "big.jsonl", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range tr.Requests {
		if r.View != nil {
			t.Errorf("request %d kept its view past the bound", i)
		}
	}
	err = needsView(PolicyInfo{Name: "text-router", NeedsText: true}, tr)
	var cr *CannotRunError
	if !errors.As(err, &cr) || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "--max-requests") {
		t.Errorf("needsView = %v; want a CannotRunError naming line 3 and --max-requests", err)
	}
	// Under the bound the same log keeps its views.
	tr, err = ReadRequests(context.Background(), strings.NewReader(lines), "big.jsonl", RequestLogOptions{maxViewBytes: 3 * (viewOverhead + 100)})
	if err != nil {
		t.Fatal(err)
	}
	if err := needsView(PolicyInfo{Name: "text-router", NeedsText: true}, tr); err != nil {
		t.Errorf("needsView under the bound: %v", err)
	}
}

// FuzzRequestViews: whatever the log, reading it never panics, and every view is consistent: a
// chat's message ends ascend within its text, a completion has none, and a request has a
// prompt_caching key exactly when it carries an ephemeral marker (CacheTokens > 0 implies a key).
func FuzzRequestViews(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hello"}`,
		`{"headers":{"X-A":"1"},"body":{"messages":[{"role":"user","content":"q","cache_control":{"type":"ephemeral"}}],"metadata":{"session_id":"s"}}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"é","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"x"}}]}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"cache_control":{"type":"ephemeral"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadRequests(context.Background(), strings.NewReader(string(data)), "f.jsonl", RequestLogOptions{MaxLine: 4096})
		if err != nil {
			return
		}
		for i, r := range tr.Requests {
			v := r.View
			if v == nil {
				t.Fatalf("request %d has no view", i)
			}
			if !v.Chat && v.Pieces != nil {
				t.Fatalf("completion %d has pieces %v", i, v.Pieces)
			}
			prev := int32(0)
			for k, p := range v.Pieces {
				if p.End < prev || int(p.End) > len(v.Text) || (k == 0) != (k == 0 && p.Kind.opens()) || p.Kind > PieceReasoning {
					t.Fatalf("request %d: pieces %v over text of %d bytes", i, v.Pieces, len(v.Text))
				}
				if !p.Kind.opens() && p.Kind != PieceReasoning && p.End > prev && k > 0 && v.Pieces[k-1].Kind == PieceString {
					t.Fatalf("request %d: a part after a string content: %v", i, v.Pieces)
				}
				prev = p.End
			}
			if v.Chat && int(prev) != len(v.Text) {
				t.Fatalf("request %d: pieces %v end at %d of %d bytes", i, v.Pieces, prev, len(v.Text))
			}
			if v.CacheTokens > 0 && v.CacheKey == 0 {
				t.Fatalf("request %d: %d cacheable tokens and no key", i, v.CacheTokens)
			}
		}
	})
}

// strings2 is the pieces of two string contents ending at a and b.
func strings2(a, b int32) []Piece {
	return []Piece{{End: a, Kind: PieceString}, {End: b, Kind: PieceString}}
}

// TestViewTextNoTempDir: where no temporary file can be made the texts stay in memory, every
// one of them, rather than being dropped.
func TestViewTextNoTempDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	lines := strings.Repeat(`{"prompt":"`+strings.Repeat("x", 100)+`"}`+"\n", 3)
	tr, err := ReadRequests(context.Background(), strings.NewReader(lines), "t.jsonl", RequestLogOptions{memViewBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range tr.Requests {
		if r.View == nil || r.View.Stored != nil || r.View.Text != strings.Repeat("x", 100) {
			t.Errorf("request %d: view %+v, want its text in memory", i, r.View)
		}
	}
}
