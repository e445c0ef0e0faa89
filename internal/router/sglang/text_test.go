package sglang

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestText: one chat body read as SGLang's gateway reads it (openai-protocol 1.0.0
// chat.rs:599-656), worked out by hand:
//
//	system:    "Sys"
//	user:      [text "a", image, input_text "in", text "", text "b"]
//	assistant: null content, tool calls, reasoning_content "why"
//	tool:      "T"
//	assistant: no content
//	user:      "q"
//
// every non-empty text joined with one space, the reasoning after its (null) content:
// "Sys a b why T q". One string content is View.Text itself, not a copy.
func TestText(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"Sys"},` +
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"in"},{"type":"text","text":""},{"type":"text","text":"b"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"why"},` +
		`{"role":"tool","tool_call_id":"c","content":"T"},{"role":"assistant"},{"role":"user","content":"q"}]}`
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(body), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sglangText(tr.Requests[0].View); got != "Sys a b why T q" {
		t.Errorf("SGLang reads %q", got)
	}
	tr, err = sim.ReadRequests(context.Background(), strings.NewReader(`{"messages":[{"role":"user","content":"only"}]}`), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := tr.Requests[0].View; unsafe.StringData(sglangText(v)) != unsafe.StringData(v.Text) {
		t.Error("a single string content is copied")
	}
}

// FuzzText: the text the router reads is built from any request the log reader takes without a
// panic, and is valid UTF-8.
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
			if s := sglangText(v); !utf8.ValidString(s) {
				t.Fatalf("request %d: text %q is not valid UTF-8", i, s)
			}
		}
	})
}
