package ray

import (
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestText: one chat body read as Ray's router reads it (prefix_aware_router.py@06c16f2,
// _coerce_to_text), worked out by hand:
//
//	simtest.MixedChat:
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
	v := simtest.View(t, simtest.MixedChat)
	// Built without the reasoning, so not the view's text as it is.
	if got, asIs := rayText(v); got != "SysainbTq" || asIs {
		t.Errorf("Ray reads %q (as the view has it: %v), want SysainbTq, built", got, asIs)
	}
	v = simtest.View(t, `{"messages":[{"role":"user","content":"only"}]}`)
	if unsafe.StringData(first(rayText(v))) != unsafe.StringData(v.Text) {
		t.Error("a single string content is copied")
	}
	if _, asIs := rayText(v); !asIs {
		t.Error("a single string content is not said to be the view's text as it is")
	}
}

// first is rayText's text.
func first(s string, _ bool) string { return s }

// FuzzText: the text the router reads is built from any request the log reader takes without a
// panic, and is valid UTF-8; said to be the view's text as it is, it is.
func FuzzText(f *testing.F) {
	for _, s := range simtest.TextSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, v := range simtest.Views(data) {
			if s, asIs := rayText(v); !utf8.ValidString(s) || asIs && s != v.Text {
				t.Fatalf("request %d: text %q is not valid UTF-8", i, s)
			}
		}
	})
}
