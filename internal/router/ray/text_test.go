package ray

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestText: one chat body read as Ray's router reads it (prefix_aware_router.py@06c16f2,
// _coerce_to_text), worked out by hand:
//
//	system:    "Sys"
//	user:      [text "a", image, input_text "in", text "", text "b"]
//	assistant: null content, tool calls, reasoning_content "why"
//	tool:      "T"
//	assistant: no content
//	user:      "q"
//
// every text member concatenated, input_text too, no reasoning: "Sysainb" + "T" + "q" =
// "SysainbTq". One string content is View.Text itself, not a copy.
func TestText(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"Sys"},` +
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"in"},{"type":"text","text":""},{"type":"text","text":"b"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c"}],"reasoning_content":"why"},` +
		`{"role":"tool","tool_call_id":"c","content":"T"},{"role":"assistant"},{"role":"user","content":"q"}]}`
	tr, err := sim.ReadRequests(context.Background(), strings.NewReader(body), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Built without the reasoning, so not the view's text as it is.
	if got, asIs := rayText(tr.Requests[0].View); got != "SysainbTq" || asIs {
		t.Errorf("Ray reads %q (as the view has it: %v), want SysainbTq, built", got, asIs)
	}
	tr, err = sim.ReadRequests(context.Background(), strings.NewReader(`{"messages":[{"role":"user","content":"only"}]}`), "t.jsonl", sim.RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := tr.Requests[0].View; unsafe.StringData(first(rayText(v))) != unsafe.StringData(v.Text) {
		t.Error("a single string content is copied")
	}
	if _, asIs := rayText(tr.Requests[0].View); !asIs {
		t.Error("a single string content is not said to be the view's text as it is")
	}
}

// first is rayText's text.
func first(s string, _ bool) string { return s }

// FuzzText: the text the router reads is built from any request the log reader takes without a
// panic, and is valid UTF-8; said to be the view's text as it is, it is.
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
			if s, asIs := rayText(v); !utf8.ValidString(s) || asIs && s != v.Text {
				t.Fatalf("request %d: text %q is not valid UTF-8", i, s)
			}
		}
	})
}
