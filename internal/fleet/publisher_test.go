package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/events"
)

func TestPubStoredFields(t *testing.T) {
	tests := []struct {
		version string
		fields  int
		era     events.Era
	}{
		{"0.9.0", 6, events.EraArray},
		{"0.10.2", 7, events.EraArray},
		{"0.14.1", 8, events.EraArray},
		{"0.17.0", 9, events.EraArray},
		{"0.21.0", 10, events.EraArray},
		{"0.23.4", 12, events.EraArray},
		{"0.24.0", 12, events.EraMap},
		{"0.26", 12, events.EraMap},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			f, era, err := pubStoredFields(tt.version)
			if err != nil || f != tt.fields || era != tt.era {
				t.Errorf("pubStoredFields(%q) = %d, %v, %v; want %d, %v", tt.version, f, era, err, tt.fields, tt.era)
			}
		})
	}
	for _, bad := range []string{"", "1.0.0", "0.8.0", "latest"} {
		if _, _, err := pubStoredFields(bad); err == nil {
			t.Errorf("pubStoredFields(%q) gave no error", bad)
		}
	}
}

// TestPublisherReplay asks the replay ROUTER for a range, in both reply shapes.
func TestPublisherReplay(t *testing.T) {
	// Up to 0.25.1 the reply is [seq, payload]; after it [topic, seq, payload] (SPEC §1.8).
	for _, version := range []string{"0.25.1", "0.25.2", "0.26.0"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			seed := "0"
			p, err := NewPublisher(ctx, PublisherConfig{Version: version, Seed: &seed, Replay: true, ReplayBuffer: 300, Topic: "kv@x@m"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Close() }()
			ev, err := p.Stored(make([]int64, 48), "lora-a")
			if err != nil {
				t.Fatal(err)
			}
			for range 500 {
				if err := p.PublishLost(ev); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range [][2]uint64{{450, 460}, {0, 499}} {
				ms, err := events.Replay(ctx, p.ReplayEndpoint(), r[0], r[1], time.Now)
				if err != nil {
					t.Fatal(err)
				}
				from := max(r[0], 200) // older than the buffer: gone
				if want := int(r[1] - from + 1); len(ms) != want {
					t.Fatalf("replay %d..%d returned %d batches, want %d", r[0], r[1], len(ms), want)
				}
				want := "kv@x@m"
				if version == "0.25.1" {
					want = ""
				}
				if got := string(ms[0].Message.Topic); got != want {
					t.Errorf("replay reply topic %q, want %q", got, want)
				}
			}
		})
	}
}
