package events

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEndpointsSources(t *testing.T) {
	tests := []struct {
		name string
		e    Endpoints
		want []Source
		err  bool // an *EndpointError
	}{
		{"one rank", Endpoints{Dial: []string{"tcp://10.0.0.5:5557"}, Ranks: 1}, []Source{{Endpoint: "tcp://10.0.0.5:5557"}}, false},
		{"two endpoints, three ranks", Endpoints{Dial: []string{"tcp://10.0.0.5:5557", "tcp://[::1]:6000"}, Ranks: 3}, []Source{
			{Endpoint: "tcp://10.0.0.5:5557"}, {Endpoint: "tcp://10.0.0.5:5558"}, {Endpoint: "tcp://10.0.0.5:5559"},
			{Endpoint: "tcp://[::1]:6000"}, {Endpoint: "tcp://[::1]:6001"}, {Endpoint: "tcp://[::1]:6002"}}, false},
		{"replay per publisher, none for the second", Endpoints{Dial: []string{"tcp://a:7000", "tcp://b:7000"}, Replay: []string{"tcp://a:7100", "-"}, Ranks: 2}, []Source{
			{Endpoint: "tcp://a:7000", Replay: "tcp://a:7100"}, {Endpoint: "tcp://a:7001", Replay: "tcp://a:7101"},
			{Endpoint: "tcp://b:7000"}, {Endpoint: "tcp://b:7001"}}, false},
		{"listen", Endpoints{Dial: []string{"tcp://a:1"}, Listen: []string{"tcp://*:5557"}, Ranks: 1}, []Source{
			{Endpoint: "tcp://a:1"}, {Endpoint: "tcp://*:5557", Listen: true}}, false},
		{"ipc cannot be expanded", Endpoints{Dial: []string{"ipc:///tmp/kv"}, Ranks: 2}, nil, true},
		{"no port", Endpoints{Dial: []string{"tcp://10.0.0.5"}, Ranks: 2}, nil, true},
		{"replays do not pair", Endpoints{Dial: []string{"tcp://a:1", "tcp://b:1"}, Replay: []string{"tcp://a:2"}, Ranks: 1}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Sources()
			var ee *EndpointError
			if tt.err != errors.As(err, &ee) {
				t.Fatalf("Sources error = %v, want an EndpointError %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEndpointsCollisions(t *testing.T) {
	got := Endpoints{Dial: []string{"tcp://10.0.0.5:5557"}, Replay: []string{"tcp://10.0.0.5:5558"}, Ranks: 2}.Collisions()
	if len(got) != 1 || got[0].Code != "port-collision" || got[0].Subject != "tcp://10.0.0.5:5558" {
		t.Errorf("adjacent base ports with 2 ranks: got %+v, want one port-collision on :5558", got)
	}
	if got := (Endpoints{Dial: []string{"tcp://10.0.0.5:5557"}, Replay: []string{"tcp://10.0.0.5:5560"}, Ranks: 2}).Collisions(); len(got) != 0 {
		t.Errorf("distant ports: got %+v, want none", got)
	}
}
