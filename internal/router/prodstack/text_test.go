package prodstack

import (
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestPrompt: one chat body read as production-stack's prefixaware router reads it
// (routing_logic.py@a6c01db:476-500), worked out by hand:
//
//	simtest.MixedChat:
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
	v := simtest.View(t, simtest.MixedChat)
	if got := string(prodStackPrompt(v, nil)); got != "Sys\na  b\nT\n\nq" {
		t.Errorf("production-stack reads %q", got)
	}
}

// FuzzText: the prompt the router reads is built from any request the log reader takes without
// a panic, and holds every byte of the view's text it reads at most once.
func FuzzText(f *testing.F) {
	for _, s := range simtest.TextSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, v := range simtest.Views(data) {
			if s := prodStackPrompt(v, nil); len(s) > len(v.Text)+len(v.Pieces) {
				t.Fatalf("request %d: prompt of %d bytes from %d of text in %d pieces", i, len(s), len(v.Text), len(v.Pieces))
			}
		}
	})
}
