package events

import "testing"

// TestNoneConnected: a live tap measured nothing only when it had publishers, none of which
// connected or sent a message; recordings (Connected nil) always measured something.
func TestNoneConnected(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		pubs []Publisher
		want bool
	}{
		{"no publishers", nil, false},
		{"none connected", []Publisher{{Connected: &no}, {Connected: &no}}, true},
		{"one connected", []Publisher{{Connected: &no}, {Connected: &yes}}, false},
		{"messages without a connect event", []Publisher{{Connected: &no, Messages: 1}}, false},
		{"a recording", []Publisher{{}}, false},
	}
	for _, tt := range tests {
		if got := (&Report{Publishers: tt.pubs}).NoneConnected(); got != tt.want {
			t.Errorf("%s: NoneConnected = %v, want %v", tt.name, got, tt.want)
		}
	}
}
