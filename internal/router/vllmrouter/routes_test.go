package vllmrouter

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// emulation is the product's emulation named, with settings s.
func emulation(t *testing.T, name string, s Settings) sim.PolicyInfo {
	t.Helper()
	for _, e := range (Router{}).Emulations(s) {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no emulation %s", name)
	return sim.PolicyInfo{}
}

// chat is a chat request whose routing text is sessionParams, with the headers given.
func chat(at float64, headers map[string]string, sessionParams string) sim.Request {
	r := simtest.ChatReq(at, 1, headers, simtest.Block, 1, 2)
	r.View.SessionParams = sessionParams
	return r
}

// TestHashRoutes: consistent_hash and rendezvous_hash on three workers with the default URLs
// http://vllm-0:8000 to http://vllm-2:8000. The owners were worked out apart from the
// emulation, with a Python transcription of hash.c's furc_hash and MurmurHash64A:
//
//	key                          fbi_hash          ring point it lands on  owner  HRW scores (0, 1, 2)
//	header:x-session-id:alice    909cd779a0a62987  90cc87b43ac26121        0      089a.. 9dec.. 8abd..  -> 1
//	header:x-session-id:bob      401b4acb28d75ad6  415bdbc8d10ffcad        2      a6a3.. 698d.. 6926..  -> 0
//	header:x-session-id:carol    82c281314698b39f  8301a804437c5e1f        1      296f.. ddb9.. 4a26..  -> 1
//	request:                     13b2f1ae12a8b5ab  1475b194b5545cd0        0      fba8.. e442.. 269f..  -> 0
//	request:s-1                  848d991fde01552a  84c53d5881058a42        1      dbf6.. 5d65.. 8339..  -> 0
//	request:hello world          849f05ecd2d5ef63  84c53d5881058a42        1      14c2.. 161c.. dfdf..  -> 2
//	header:x-user-id:u7          23d2ea4383d486b4  247107a314dcf57a        2      c190.. d3f5.. f3eb..  -> 2
//
// A chat without a header or session_params.session_id is "request:" (spec.rs:542-557 reads
// nothing else of it); the chat with session_params.session_id "s-1" reads as the text "s-1",
// in which no field is found, so "request:s-1"; the completion's prompt is its text.
func TestHashRoutes(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block,
		chat(0, map[string]string{"x-session-id": "alice"}, ""),
		chat(0.1, map[string]string{"x-session-id": "bob"}, ""),
		chat(0.2, map[string]string{"x-session-id": "carol", "x-request-id": "r9"}, ""),
		chat(0.3, nil, ""),
		chat(0.4, nil, "s-1"),
		simtest.TextReq(0.5, 1, "hello world", simtest.Block, 3),
		chat(0.6, map[string]string{"x-user-id": "u7"}, "ignored"),
		chat(0.7, nil, "   "),
	)
	reasons := []string{"session-header", "session-header", "session-header", "empty-text", "text-hash", "text-hash", "session-header", "empty-text"}
	for _, tt := range []struct {
		name string
		want []int
	}{
		{"vllm-router-consistent-hash", []int{0, 2, 1, 0, 1, 1, 2, 0}},
		{"vllm-router-rendezvous-hash", []int{1, 0, 1, 0, 0, 2, 2, 0}},
	} {
		got, why := simtest.Run(t, tr, simtest.Config(3), emulation(t, tt.name, Shipped()))
		if d := cmp.Diff(tt.want, got.Routes); d != "" {
			t.Errorf("%s routes (-want +got):\n%s", tt.name, d)
		}
		if d := cmp.Diff(reasons, why); d != "" {
			t.Errorf("%s reasons (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestWorkerURLsMoveRoutes: the ring is made of the workers' URLs, so other URLs route the same
// key elsewhere. With --worker-urls http://vllm-2:8000 http://vllm-1:8000 http://vllm-0:8000
// (the default URLs reversed), the points of URL u belong to the replica given u: "request:"
// lands on http://vllm-0:8000's point (above), now replica 2.
func TestWorkerURLsMoveRoutes(t *testing.T) {
	s := Shipped()
	s.WorkerURLs = []string{"http://vllm-2:8000", "http://vllm-1:8000", "http://vllm-0:8000"}
	tr := simtest.TextTrace(simtest.Block, chat(0, nil, ""), chat(0.1, map[string]string{"x-session-id": "bob"}, ""))
	got := simtest.Routes(t, tr, simtest.Config(3), emulation(t, "vllm-router-consistent-hash", s))
	if d := cmp.Diff([]int{2, 0}, got.Routes); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
}

// TestBalanceRoutes: round_robin counts requests modulo the workers (round_robin.rs:31-33),
// and a replica added changes the modulus, not the counter: with 2 replicas and a third from
// t = 0.25, requests 0-2 (before) go 0 1 0 and requests 3-6 (counter 3-6 mod 3) go 0 1 2 0.
func TestBalanceRoutes(t *testing.T) {
	var rs []sim.Request
	for i := range 7 {
		rs = append(rs, simtest.Req(float64(i)*0.1, "", 1, uint64(i+1)))
	}
	c := simtest.Config(2)
	c.AddReplicaAt = 0.25
	got, why := simtest.Run(t, simtest.Trace(rs...), c, emulation(t, "vllm-router-round-robin", Shipped()))
	if d := cmp.Diff([]int{0, 1, 0, 0, 1, 2, 0}, got.Routes); d != "" {
		t.Errorf("round-robin routes (-want +got):\n%s", d)
	}
	if why[0] != "round-robin" {
		t.Errorf("reason %q, want round-robin", why[0])
	}
}

// TestReasonsDeclared: every reason a route gives on random traffic is one its emulation
// declares (PolicyInfo.Reasons, listed in simulate's help), and every declared reason is given,
// as shipped or with --balance-abs-threshold 0 (cache_aware's imbalance branch needs more than
// 64 requests in flight at the shipped value).
func TestReasonsDeclared(t *testing.T) {
	tr := viewTraffic(7, 400)
	tight := Shipped()
	tight.BalanceAbs = 0
	for k, e := range (Router{}).Emulations(Shipped()) {
		seen := map[string]bool{}
		for _, e := range []sim.PolicyInfo{e, (Router{}).Emulations(tight)[k]} {
			_, why := simtest.Run(t, tr, simtest.Config(3), e)
			for i, r := range why {
				if !slices.Contains(e.Reasons, r) {
					t.Fatalf("%s: request %d gives reason %q, not among %v", e.Name, i, r, e.Reasons)
				}
				seen[r] = true
			}
		}
		for _, r := range e.Reasons {
			if !seen[r] {
				t.Errorf("%s: declared reason %q never given on random traffic", e.Name, r)
			}
		}
	}
}
