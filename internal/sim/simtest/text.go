package simtest

import (
	"context"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// MixedChat is one chat body with every kind of content a router's text extraction must decide
// on, for each product's hand-worked text test:
//
//	system:    "Sys"
//	user:      [text "a", image, input_text "in", text "", text "b"]
//	assistant: null content, tool calls, reasoning_content "why"
//	tool:      "T"
//	assistant: no content
//	user:      "q"
const MixedChat = `{"messages":[{"role":"system","content":"Sys"},` +
	`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"in"},{"type":"text","text":""},{"type":"text","text":"b"}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"why"},` +
	`{"role":"tool","tool_call_id":"c","content":"T"},{"role":"assistant"},{"role":"user","content":"q"}]}`

// TextSeeds are the seeds of the products' text-extraction fuzz targets: a completion, a
// multi-part chat with an image, a null content beside tool calls and reasoning.
var TextSeeds = []string{
	`{"prompt":"hello"}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"é"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"r"},{"role":"user"}]}`,
}

// View reads body, one request log line, as the request log reader does and returns its view.
func View(t testing.TB, body string) *sim.View {
	t.Helper()
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(body), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Requests[0].View
}

// Views are the views of the requests the log reader takes from data (lines of at most 4 KiB),
// nil when it refuses data: what a text-extraction fuzz target runs over.
func Views(data []byte) []*sim.View {
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(string(data)), "f.jsonl", sim.RequestLogOptions{MaxLine: 4096})
	if err != nil {
		return nil
	}
	out := make([]*sim.View, len(tr.Requests))
	for i, r := range tr.Requests {
		out[i] = r.View
	}
	return out
}
