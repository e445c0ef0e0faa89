package audit

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestFixer checks the values assess replaces to replay traffic as it would be once fixed:
// each generated value in the site's message becomes a constant, so two requests that differed
// only there render the same.
func TestFixer(t *testing.T) {
	site := func(cause string, offset int) Site {
		return Site{Message: 0, Role: "system", Block: 0, Cause: cause, Offset: offset, Count: 10}
	}
	tests := []struct {
		cause  string
		offset int
		a, b   string
	}{
		{"date/time", 0, "System time: 2026-11-30T10:00:16.414002+00:00\nUse the tools.", "System time: 2026-12-01T09:59:59.000001Z\nUse the tools."},
		{"date/time", 0, "Today is 30 November 2026, 10:05.", "Today is 1 December 2026, 23:59."},
		{"date/time", 0, "Now: 1764496860 (unix)", "Now: 1764496999 (unix)"},
		{"uuid", 0, "Request 3f2b6c1e-9a4d-4e2f-8b1a-0c9d8e7f6a5b: help", "Request 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d: help"},
		{"id", 0, "trace req_8f3a2b1c9d: be brief", "trace req_77aa31bc02: be brief"},
		{"number", 0, "Ticket 1042 of queue 7.", "Ticket 99 of queue 12."},
		{"text", 10, "Customer: Avery Abbott\nPolicy text.", "Customer: Quinn Foster\nPolicy text."},
	}
	for _, tt := range tests {
		t.Run(tt.cause+" "+tt.a, func(t *testing.T) {
			f := NewFixer(Summary{Requests: 10, Sites: []Site{site(tt.cause, tt.offset)}})
			if f == nil {
				t.Fatal("no fixer for a system-message site of 100% of requests")
			}
			ra := &Request{Chat: true, Messages: []Message{{"system", tt.a}, {"user", "q"}}, RawMessages: []byte(`[]`)}
			rb := &Request{Chat: true, Messages: []Message{{"system", tt.b}, {"user", "q"}}}
			if !f.Apply(ra) || !f.Apply(rb) {
				t.Fatalf("nothing replaced in %q or %q", tt.a, tt.b)
			}
			if ra.Messages[0].Content != rb.Messages[0].Content {
				t.Errorf("still different once fixed:\n%q\n%q", ra.Messages[0].Content, rb.Messages[0].Content)
			}
			if ra.RawMessages != nil {
				t.Error("raw messages kept: an exact tokenizer would send the unfixed text")
			}
			if ra.Messages[1].Content != "q" {
				t.Errorf("the user's message changed: %q", ra.Messages[1].Content)
			}
		})
	}
	// The user's own message, a site of few requests, and a late block are not replaced.
	for _, st := range []Site{
		{Message: 1, Role: "user", Cause: "number", Count: 10},
		{Message: 0, Role: "system", Cause: "date/time", Count: 0},
		{Message: 0, Role: "system", Cause: "date/time", Block: MaxFixBlock + 1, Count: 10},
	} {
		if f := NewFixer(Summary{Requests: 10, Sites: []Site{st}}); f != nil {
			t.Errorf("a fixer for %+v", st)
		}
	}
}

// TestFixerRouterTexts: the routers' texts of a fixed message are fixed with it. The system
// message is a list: "Now 2026-11-30 " (15 bytes at 0), an image (its placeholder
// "<image_url:...>" is 20 bytes), then "Customer: Avery Abbott" at 35. A free-text site at
// offset 45 (Content's "Avery") falls in the second part at 45-35 = 10: that part becomes
// "Customer: VALUE", the first is left alone.
// A date site at 0 fixes the date in the first part and, read from the request line, the
// string content of the user message is not touched.
func TestFixerRouterTexts(t *testing.T) {
	line := `{"messages":[{"role":"system","content":[{"type":"text","text":"Now 2026-11-30 "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"Customer: Avery Abbott"}]},{"role":"user","content":"q 2026-11-30"}]}`
	read := func() *Request {
		reqs, errs, _ := readAll(t, line, 0)
		if len(errs) > 0 || len(reqs) != 1 {
			t.Fatalf("read %d requests, errors %v", len(reqs), errs)
		}
		return reqs[0]
	}
	texts := func(r *Request) []string {
		var out []string
		for _, p := range r.Texts[0].Parts {
			out = append(out, p.Text)
		}
		return out
	}
	r := read()
	if got := r.Messages[0].Content[45:50]; got != "Avery" {
		t.Fatalf("Content[45:50] = %q: the offsets assume another placeholder", got)
	}
	f := NewFixer(Summary{Requests: 10, Sites: []Site{{Message: 0, Role: "system", Cause: "text", Offset: 45, Count: 10}}})
	if !f.Apply(r) {
		t.Fatal("nothing fixed")
	}
	if got, want := texts(r), []string{"Now 2026-11-30 ", "Customer: VALUE"}; !slices.Equal(got, want) {
		t.Errorf("free-text site: router texts %q, want %q", got, want)
	}
	r = read()
	f = NewFixer(Summary{Requests: 10, Sites: []Site{{Message: 0, Role: "system", Cause: "date/time", Offset: 4, Count: 10}}})
	if !f.Apply(r) {
		t.Fatal("nothing fixed")
	}
	if got, want := texts(r), []string{"Now DATE ", "Customer: Avery Abbott"}; !slices.Equal(got, want) {
		t.Errorf("date site: router texts %q, want %q", got, want)
	}
	if got := r.Texts[1].Parts[0].Text; got != "q 2026-11-30" {
		t.Errorf("the user's message changed: %q", got)
	}
}

// TestFixerReorderings: issue 22, failure 5 ("then" gave up after the cause was found). The same
// 3 tools in another order on every request: the audit finds the tool list's order changing
// (unstable-order) at several offsets, here 3, 4 and 3 of 10 requests (30%, 40% and 30%, each
// past block 3: the list is long), which the fixer took one by one and skipped (the tools are no
// message, and past MaxFixBlock), so "then" was cannot tell yet. Reorderings are fixed as one
// list per message and cause, at any depth: the tools come out in one order, keys sorted, and
// two requests that differed only in the order render the same. A JSON message content whose
// keys moved is written with its keys sorted (its lists kept: only the keys moved), and a
// content that is not JSON is left as it is.
func TestFixerReorderings(t *testing.T) {
	sites := []Site{
		{Message: -1, Role: "tools", Block: 40, Offset: 900, Cause: CauseToolOrder, Count: 3},
		{Message: -1, Role: "tools", Block: 55, Offset: 1500, Cause: CauseToolOrder, Count: 4},
		{Message: -1, Role: "tools", Block: 61, Offset: 1800, Cause: CauseToolOrder, Count: 3},
		{Message: 1, Role: "user", Block: 2, Offset: 3, Cause: CauseKeyOrder, Count: 5},
	}
	f := NewFixer(Summary{Requests: 10, Sites: sites})
	if f == nil {
		t.Fatal("no fixer for tool lists reordered on every request")
	}
	a := &Request{Chat: true, Tools: `[{"type":"function","function":{"name":"b","parameters":{"type":"object"}}},{"function":{"name":"a"},"type":"function"},{"type":"function","function":{"name":"c"}}]`,
		Messages: []Message{{"system", "s"}, {"user", `{"q":1,"ids":[2,1]}`}}}
	b := &Request{Chat: true, Tools: `[{"type":"function","function":{"name":"c"}},{"type":"function","function":{"name":"a"}},{"function":{"parameters":{"type":"object"},"name":"b"},"type":"function"}]`,
		Messages: []Message{{"system", "s"}, {"user", `{"ids":[2,1],"q":1}`}}}
	if !f.Apply(a) || !f.Apply(b) {
		t.Fatal("nothing replaced")
	}
	if a.Tools != b.Tools || a.Messages[1].Content != b.Messages[1].Content {
		t.Errorf("still different once fixed:\n%s\n%s\n%s\n%s", a.Tools, b.Tools, a.Messages[1].Content, b.Messages[1].Content)
	}
	if want := `{"ids":[2,1],"q":1}`; a.Messages[1].Content != want {
		t.Errorf("key order fixed to %s, want %s (keys sorted, the list kept)", a.Messages[1].Content, want)
	}
	if got := f.Describe(); got != "one fixed order (tool order: keys sorted, lists sorted) in the tools; one fixed order (key order: keys sorted) in message 1 (user)" {
		t.Errorf("describe: %q", got)
	}
	c := &Request{Chat: true, Tools: `not json`, Messages: []Message{{"system", "s"}, {"user", "plain"}}}
	if f.Apply(c) || c.Tools != "not json" {
		t.Errorf("a text that is not JSON changed: %q", c.Tools)
	}
	// Reorderings under MinFixShare in all are the odd request, not the client's doing.
	if f := NewFixer(Summary{Requests: 100, Sites: sites[:2]}); f != nil {
		t.Errorf("a fixer for 7 reordered tool lists of 100 requests")
	}
}

// FuzzCanonicalJSON: the fixer's JSON writer never panics; what it writes of a JSON text is
// JSON, and written again the same (one order, whatever order it came in).
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`[{"b":1,"a":[3,2]},"x",null,true,1.5e3]`, `{"k":{"z":[],"y":{}}}`, `"\u003c"`, `[`, `{"a":1}x`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lists := range []bool{false, true} {
			c, err := canonicalJSON(s, lists)
			if err != nil {
				continue
			}
			if !json.Valid([]byte(c)) {
				t.Fatalf("canonical form of %q is not JSON: %q", s, c)
			}
			again, err := canonicalJSON(c, lists)
			if err != nil || again != c {
				t.Fatalf("not stable: %q -> %q -> %q (%v)", s, c, again, err)
			}
		}
	})
}
