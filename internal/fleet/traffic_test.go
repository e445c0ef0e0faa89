package fleet

import (
	"strings"
	"testing"
)

// TestTraffic works given traffic through one replica by hand (16-token blocks, one output
// token each, so a request takes two steps: arrival and admission, then its one decode).
// Requests A and B share blocks 1 and 2 of a 40-token prompt: A misses, B hits 2 blocks = 32
// tokens (the 40th token is recomputed, and 39/16 = 2 blocks). A round is 80 tokens looked up,
// 32 hit; the second round renames the blocks, so A misses again as in the first: 64 of 160,
// not the 96 of a cache that kept round one's blocks.
func TestTraffic(t *testing.T) {
	a := Request{Blocks: []uint64{1, 2}, Prompt: 40, Output: 1}
	f, err := New(Options{Replicas: []Config{{Traffic: []Request{a, a}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Replicas()[0]
	for round, want := range []Totals{{Queries: 80, Hits: 32, Requests: 2}, {Queries: 160, Hits: 64, Requests: 4}} {
		f.Step(4)
		if got := r.Totals(); got != want {
			t.Errorf("after round %d: %+v, want %+v", round+1, got, want)
		}
	}
}

// TestTrafficReleaseTailFirst: a finished request's blocks are released tail first, as vLLM
// frees them, so its shared head outlives its tail. In a 4-block cache, A (blocks 1, 2 and a
// partial one) finishes, C (block 5 and a partial one) needs two blocks: one free, and the
// least recently released, A's partial block. A again then hits blocks 1 and 2 (32 tokens);
// released head first, block 1 would have gone and A would hit nothing.
func TestTrafficReleaseTailFirst(t *testing.T) {
	a := Request{Blocks: []uint64{1, 2}, Prompt: 40, Output: 1}
	c := Request{Blocks: []uint64{5}, Prompt: 20, Output: 1}
	f, err := New(Options{Replicas: []Config{{KVBlocks: 4, Traffic: []Request{a, c, a}}}})
	if err != nil {
		t.Fatal(err)
	}
	f.Step(6)
	if got, want := f.Replicas()[0].Totals(), (Totals{Queries: 100, Hits: 32, Requests: 3}); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
}

// TestTrafficBad: a request with no prompt, or one that can never fit in the KV cache, is an
// error naming the replica and the request, not a replica that waits forever.
func TestTrafficBad(t *testing.T) {
	for _, tt := range []struct {
		req  Request
		want string
	}{
		{Request{Prompt: 0, Output: 1}, "traffic request 1: prompt 0 tokens"},
		{Request{Prompt: 16 * 100, Output: 1}, "traffic request 1 needs 102 blocks"},
	} {
		_, err := New(Options{Replicas: []Config{{Name: "r", KVBlocks: 64, Traffic: []Request{{Prompt: 20, Output: 1}, tt.req}}}})
		if err == nil || !strings.Contains(err.Error(), "replica r: "+tt.want) {
			t.Errorf("%+v: error %v, want one containing %q", tt.req, err, tt.want)
		}
	}
}
