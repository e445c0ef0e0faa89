package audit

import "testing"

// TestConversationsNeedAnAddition: a request continues an earlier one's conversation when its
// messages begin with all of that request's and add to them (turn 2 repeats turn 1's question
// and answer and asks again); the same messages again are a copy (siblings sent apart, a retry),
// not a next turn, so they start a conversation of their own (issue 22: four copies of an
// agent's prompt sent at once were one "session", and session affinity was measured on them).
func TestConversationsNeedAnAddition(t *testing.T) {
	c := NewConversations(100)
	sys := Message{Role: "system", Content: "be brief"}
	q1 := Message{Role: "user", Content: "what is a block?"}
	a1 := Message{Role: "assistant", Content: "16 tokens."}
	q2 := Message{Role: "user", Content: "and a page?"}
	turn1 := &Request{Chat: true, Messages: []Message{sys, q1}}
	if _, ok := c.Infer(turn1); ok {
		t.Fatal("the first request continues nothing")
	}
	c.Remember(turn1, 7)
	if s, ok := c.Infer(&Request{Chat: true, Messages: []Message{sys, q1}}); ok {
		t.Errorf("the same messages again continue session %d; want a conversation of their own", s)
	}
	if s, ok := c.Infer(&Request{Chat: true, Messages: []Message{sys, q1, a1, q2}}); !ok || s != 7 {
		t.Errorf("turn 2: session %d, %v; want 7", s, ok)
	}
	// Ignoring a system prompt that changes every turn (a timestamp), as before.
	if s, ok := c.Infer(&Request{Chat: true, Messages: []Message{{Role: "system", Content: "now 10:02"}, q1, a1, q2, a1, q2}}); !ok || s != 7 {
		t.Errorf("turn 3 under a new system prompt: session %d, %v; want 7", s, ok)
	}
}
