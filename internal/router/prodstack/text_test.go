package prodstack

import (
	"context"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestPrompt: one chat body read as production-stack's prefixaware router reads it
// (routing_logic.py@a6c01db:476-500), worked out by hand:
//
//	system:    "Sys"
//	user:      [text "a", image, input_text "in", text "", text "b"]
//	assistant: null content, tool calls, reasoning_content "why"
//	tool:      "T"
//	assistant: no content
//	user:      "q"
//
// one line per message but the null one, a list's "text" parts joined with " " ("a" + " " + ""
// + " " + "b" = "a  b"), the missing content an empty line: "Sys\na  b\nT\n\nq".
func TestPrompt(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"Sys"},` +
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"in"},{"type":"text","text":""},{"type":"text","text":"b"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"why"},` +
		`{"role":"tool","tool_call_id":"c","content":"T"},{"role":"assistant"},{"role":"user","content":"q"}]}`
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(body), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(prodStackPrompt(tr.Requests[0].View, nil)); got != "Sys\na  b\nT\n\nq" {
		t.Errorf("production-stack reads %q", got)
	}
}

// FuzzText: the prompt the router reads is built from any request the log reader takes without
// a panic, and holds every byte of the view's text it reads at most once.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hello"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"é"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"r"},{"role":"user"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := sim.ReadRequests(context.Background(), strings.NewReader(string(data)), "f.jsonl", sim.RequestLogOptions{MaxLine: 4096})
		if err != nil {
			return
		}
		for i, r := range tr.Requests {
			v := r.View
			if s := prodStackPrompt(v, nil); len(s) > len(v.Text)+len(v.Pieces) {
				t.Fatalf("request %d: prompt of %d bytes from %d of text in %d pieces", i, len(s), len(v.Text), len(v.Pieces))
			}
		}
	})
}
