package events

import (
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// TestTapRunCheck holds kvcheck tap's usage errors, each naming the flag at fault.
func TestTapRunCheck(t *testing.T) {
	live := func(f func(*TapRun)) TapRun {
		r := TapRun{Endpoints: Endpoints{Dial: []string{"tcp://127.0.0.1:5557"}, Ranks: 1}, Duration: time.Second,
			MaxMessage: DefaultMaxMessage, Options: Options{MaxBlocks: DefaultMaxBlocks}}
		f(&r)
		return r
	}
	tests := []struct {
		name string
		r    TapRun
		want string // "" passes
	}{
		{"live", live(func(*TapRun) {}), ""},
		{"recordings", live(func(r *TapRun) { r.Endpoints.Dial, r.From = nil, []string{"a.kvtap"} }), ""},
		{"listen and record", live(func(r *TapRun) {
			r.Endpoints.Dial, r.Endpoints.Listen, r.Record = nil, []string{"tcp://*:5557"}, "x.kvtap"
		}), ""},
		{"both", live(func(r *TapRun) { r.From = []string{"a.kvtap"} }), "give endpoints or --from recordings, not both"},
		{"neither", live(func(r *TapRun) { r.Endpoints.Dial = nil }), "give at least one ENDPOINT"},
		{"ranks", live(func(r *TapRun) { r.Endpoints.Ranks = 0 }), "--dp-ranks must be at least 1, got 0"},
		{"duration", live(func(r *TapRun) { r.Duration = 0 }), "--duration must be positive, got 0s"},
		{"max blocks", live(func(r *TapRun) { r.Options.MaxBlocks = 0 }), "--max-blocks must be positive, got 0"},
		{"max message", live(func(r *TapRun) { r.MaxMessage = 1023 }), "--max-message must be at least 1024 bytes, got 1023"},
		{"record from recordings", live(func(r *TapRun) { r.Endpoints.Dial, r.From, r.Record = nil, []string{"a.kvtap"}, "b.kvtap" }), "--record needs endpoints to tap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tt.want == "":
			case err == nil || !strings.Contains(err.Error(), tt.want) || !usage.Is(err):
				t.Fatalf("Check: %v, want a usage error containing %q", err, tt.want)
			}
		})
	}
}
