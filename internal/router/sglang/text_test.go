package sglang

import (
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestText: one chat body read as SGLang's gateway reads it (openai-protocol 1.0.0
// chat.rs:599-656), worked out by hand:
//
//	simtest.MixedChat:
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
	v := simtest.View(t, simtest.MixedChat)
	if got := sglangText(v); got != "Sys a b why T q" {
		t.Errorf("SGLang reads %q", got)
	}
	v = simtest.View(t, `{"messages":[{"role":"user","content":"only"}]}`)
	if unsafe.StringData(sglangText(v)) != unsafe.StringData(v.Text) {
		t.Error("a single string content is copied")
	}
}

// FuzzText: the text the router reads is built from any request the log reader takes without a
// panic, and is valid UTF-8.
func FuzzText(f *testing.F) {
	for _, s := range simtest.TextSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, v := range simtest.Views(data) {
			if s := sglangText(v); !utf8.ValidString(s) {
				t.Fatalf("request %d: text %q is not valid UTF-8", i, s)
			}
		}
	})
}
