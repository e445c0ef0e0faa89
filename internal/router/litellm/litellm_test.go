package litellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// draws returns the first k simple-shuffle draws over n deployments for seed: every litellm-*
// emulation draws its fallback deployment from this sequence, one draw per request it does not
// pin (litellmShuffleStream), so a test can say which draw a request gets.
func draws(seed uint64, n, k int) []int {
	rng := rand.New(rand.NewPCG(seed, litellmShuffleStream))
	out := make([]int, k)
	for i := range out {
		out[i] = rng.IntN(n)
	}
	return out
}

// emulation is the emulation named, run with settings s.
func emulation(name string, s Settings) sim.PolicyInfo {
	for _, e := range (Router{}).Emulations(s) {
		if e.Name == name {
			return e
		}
	}
	panic("no emulation " + name)
}

// shipped is the emulation named as LiteLLM ships.
func shipped(name string) sim.PolicyInfo { return emulation(name, Shipped()) }

// with is the emulation named with the shipped settings changed by fn.
func with(name string, fn func(*Settings)) sim.PolicyInfo {
	s := Shipped()
	fn(&s)
	return emulation(name, s)
}

func TestLiteLLMSimpleShuffle(t *testing.T) {
	// Every request is one draw: the routes are the draw sequence, hits follow from them.
	tr := simtest.Trace(simtest.Req(0, "", 0, 1, 2), simtest.Req(1, "", 0, 1, 3), simtest.Req(2, "", 0, 1, 4))
	got := simtest.Routes(t, tr, simtest.Config(8), shipped("litellm-simple-shuffle"))
	if d := cmp.Diff(draws(1, 8, 3), got.Routes); d != "" {
		t.Errorf("routes are not the draws (-draws +got):\n%s", d)
	}
	// Uniform: 800 requests on 4 deployments, 200 expected each (sd 12): none under 140.
	var rs []sim.Request
	for i := range 800 {
		rs = append(rs, simtest.Req(float64(i), "", 0, uint64(i+1)))
	}
	got = simtest.Routes(t, simtest.Trace(rs...), simtest.Config(4), shipped("litellm-simple-shuffle"))
	n := make([]int, 4)
	for _, r := range got.Routes {
		n[r]++
	}
	for i, k := range n {
		if k < 140 {
			t.Errorf("deployment %d got %d of 800: %v", i, k, n)
		}
	}
}

func TestLiteLLMSessionID(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		meta    string
		want    string
	}{
		{"trace id first", map[string]string{"x-litellm-trace-id": "T", "x-litellm-session-id": "S"}, "M", "T"},
		{"then the session id header", map[string]string{"x-litellm-session-id": "S"}, "M", "S"},
		{"a vendor header with a long enough id", map[string]string{"x-acme-session-id": "conv_1234"}, "M", "conv_1234"},
		{"a vendor header with a short id is skipped", map[string]string{"x-acme-session-id": "c1234"}, "M", "M"},
		{"a vendor header with a space is skipped", map[string]string{"x-acme-session-id": "conv 1234"}, "", ""},
		{"plain x-session-id does not match", map[string]string{"x-session-id": "conversation-1"}, "", ""},
		{"two vendor headers: the first by name", map[string]string{"x-b-session-id": "bbbbbbbb", "x-a-session-id": "aaaaaaaa"}, "", "aaaaaaaa"},
		{"metadata.session_id last", nil, "M", "M"},
	}
	for _, tc := range cases {
		if got := litellmSessionID(&sim.View{Headers: tc.headers, MetadataSession: tc.meta}); got != tc.want {
			t.Errorf("%s: session id %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLiteLLMSessionAffinity(t *testing.T) {
	s := func(id string) map[string]string { return map[string]string{"x-litellm-session-id": id} }
	t.Run("pins for the TTL, refreshed by every request", func(t *testing.T) {
		// TTL 10 s. r0 (0 s): no pin, draw 0 -> d0, pinned until 10. r1 (5 s): pinned -> d0, pin
		// until 15. r2 (14 s): pinned -> d0, until 24. r3 (40 s): expired: draw 1. r4 (41 s), no
		// session: draw 2. r5 (42 s): pinned since r3 -> draw 1's deployment.
		tr := simtest.TextTrace(simtest.Block,
			simtest.ChatReq(0, 0, s("s1"), simtest.Block, 1, 2), simtest.ChatReq(5, 0, s("s1"), simtest.Block, 1, 3),
			simtest.ChatReq(14, 0, s("s1"), simtest.Block, 1, 4), simtest.ChatReq(40, 0, s("s1"), simtest.Block, 1, 5),
			simtest.ChatReq(41, 0, nil, simtest.Block, 1, 6), simtest.ChatReq(42, 0, s("s1"), simtest.Block, 1, 7))
		d := draws(1, 8, 3)
		got := simtest.Routes(t, tr, simtest.Config(8), with("litellm-session-affinity", func(l *Settings) { l.AffinityTTLSecs = 10 }))
		if want := []int{d[0], d[0], d[0], d[1], d[2], d[1]}; !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want %v (draws %v)", got.Routes, want, d)
		}
		// r1 and r2 hit block 1 where r0 left it (limit (8-1)/4 = 1).
		if got.Hits[1] != 1 || got.Hits[2] != 1 {
			t.Errorf("hits %v: r1 and r2 should hit the pinned deployment's block", got.Hits)
		}
	})
	// Fifty sessions of four requests each on 8 deployments, 2 proxy pods. With Redis a session
	// stays on its first deployment; without, each pod pins its own draw, so about half the
	// follow-ups reach the other pod, which picks another deployment 7 times in 8.
	var rs []sim.Request
	for k := range 4 {
		for i := range 50 {
			rs = append(rs, simtest.ChatReq(float64(100*k+i), 0, s(fmt.Sprintf("session-%03d", i)), simtest.Block, uint64(i+1)))
		}
	}
	tr := simtest.TextTrace(simtest.Block, rs...)
	moved := func(info sim.PolicyInfo) int {
		got := simtest.Routes(t, tr, simtest.Config(8), info)
		n := 0
		for i := 50; i < len(got.Routes); i++ {
			if got.Routes[i] != got.Routes[i%50] {
				n++
			}
		}
		return n
	}
	shared := with("litellm-session-affinity", func(l *Settings) { l.ProxyPods, l.Redis = 2, true })
	perPod := with("litellm-session-affinity", func(l *Settings) { l.ProxyPods, l.Redis = 2, false })
	if n := moved(shared); n != 0 {
		t.Errorf("with Redis, %d of 150 follow-ups left their session's deployment", n)
	}
	// Expected about 150 * 1/2 * 7/8 = 66; 35 is far below.
	if n := moved(perPod); n < 35 {
		t.Errorf("per-pod pins: only %d of 150 follow-ups left their session's first deployment", n)
	}
}

// chatLog builds a request log line: a system prompt and the conversation's turns, with
// cache_control markers where asked ("system", "last").
func chatLog(t *testing.T, system string, turns []string, mark string) string {
	t.Helper()
	type msg struct {
		Role         string         `json:"role"`
		Content      string         `json:"content"`
		CacheControl map[string]any `json:"cache_control,omitempty"`
	}
	eph := map[string]any{"type": "ephemeral"}
	msgs := []msg{{Role: "system", Content: system}}
	if mark == "system" {
		msgs[0].CacheControl = eph
	}
	for i, u := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, msg{Role: role, Content: u})
	}
	if mark == "last" {
		msgs[len(msgs)-1].CacheControl = eph
	}
	b, err := json.Marshal(map[string]any{"messages": msgs, "max_tokens": 1})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLiteLLMPromptCaching(t *testing.T) {
	long := strings.Repeat("You are a careful assistant who answers in full sentences. ", 100) // 5,900 bytes: about 1,475 tokens
	short := "You are brief."
	// A conversation of four turns and a second conversation on the same system prompt, read
	// through the request-log reader (so the keys are the reader's), one request a second (each
	// done long before the next: 1,500 tokens at 10 ms is 15 s... so 60 s apart).
	logOf := func(system, mark string) *sim.Trace {
		var lines []string
		turns := []string{"q1", "a1", "q2", "a2", "q3"}
		for k := 1; k <= 5; k += 2 {
			lines = append(lines, chatLog(t, system, turns[:k], mark))
		}
		lines = append(lines, chatLog(t, system, []string{"another question"}, mark))
		tr, err := sim.ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "chat.jsonl", sim.RequestLogOptions{Rate: 1.0 / 60})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	c := simtest.Config(8)
	shuffled := func(tr *sim.Trace) []int { return simtest.Routes(t, tr, c, shipped("litellm-simple-shuffle")).Routes }
	t.Run("a marker on the last message never pins a follow-up", func(t *testing.T) {
		// Each turn's key covers the whole conversation including its newest message: no
		// request finds a pin, every request is a draw, as under simple-shuffle.
		tr := logOf(long, "last")
		got := simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		if want := shuffled(tr); !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want simple-shuffle's %v", got.Routes, want)
		}
	})
	t.Run("a marker on the system prompt pins every request sharing it", func(t *testing.T) {
		// r0: no pin yet, draw 0; on success the system prompt's key is pinned to it for 300 s.
		// r1 (60 s), r2, r3 (the other conversation): the same key, >= 1,024 tokens: pinned.
		tr := logOf(long, "system")
		got := simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		d := draws(1, 8, 1)[0]
		if want := []int{d, d, d, d}; !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want all on draw 0's deployment %d", got.Routes, d)
		}
	})
	t.Run("under 1,024 tokens nothing pins", func(t *testing.T) {
		tr := logOf(short, "system")
		got := simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		if want := shuffled(tr); !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want simple-shuffle's %v", got.Routes, want)
		}
	})
	t.Run("no marker, no pin", func(t *testing.T) {
		tr := logOf(long, "")
		got := simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		if want := shuffled(tr); !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want simple-shuffle's %v", got.Routes, want)
		}
	})
	t.Run("the pin is written on success and lasts 300 s", func(t *testing.T) {
		// Hand-made views with one key and 2,000 tokens (500 blocks of 4), output 0: r0's
		// prefill lasts 20 s (2,000 tokens at 10 ms). r1 at 10 s: r0 has not succeeded, no pin:
		// draw 1. r0 succeeds at 20 s, pinned until 320 (r1, succeeding later, re-pins its own
		// deployment until its end + 300). r2 at 700 s: both pins expired: draw 2. r3 at 701 s,
		// while r2 runs: draw 3.
		blocks := make([]uint64, 500)
		for i := range blocks {
			blocks[i] = uint64(i + 1)
		}
		mk := func(at float64) sim.Request {
			r := simtest.ChatReq(at, 0, nil, simtest.Block, blocks...)
			r.View.CacheKey = 42
			return r
		}
		tr := simtest.TextTrace(simtest.Block, mk(0), mk(10), mk(700), mk(701))
		got := simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		d := draws(1, 8, 4)
		if !cmp.Equal(d, got.Routes) {
			t.Errorf("routes %v, want the draws %v", got.Routes, d)
		}
		// The same with r2 at 300 s: r1 finished last (its prefill waits for nothing on another
		// deployment, or queues behind r0 on the same one: either way by 40 s), so its pin holds
		// at 300 s: r2 goes to r1's deployment.
		tr = simtest.TextTrace(simtest.Block, mk(0), mk(10), mk(300))
		got = simtest.Routes(t, tr, c, shipped("litellm-prompt-caching"))
		if got.Routes[2] != got.Routes[1] {
			t.Errorf("routes %v: r2 should follow r1's pin", got.Routes)
		}
	})
}

// TestSettingsRefused: settings no proxy runs with are refused with a CannotRunError naming the
// setting, not simulated.
func TestSettingsRefused(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block, simtest.ChatReq(0, 0, nil, simtest.Block, 1))
	cases := []struct {
		policy, want string
		set          func(*Settings)
	}{
		{"litellm-session-affinity", "deployment_affinity_ttl_seconds 0", func(l *Settings) { l.AffinityTTLSecs = 0 }},
		{"litellm-prompt-caching", "prompt_caching TTL -1", func(l *Settings) { l.PromptCacheTTLSecs = -1 }},
		{"litellm-session-affinity", "0 proxy pods", func(l *Settings) { l.ProxyPods = 0 }},
	}
	for _, tc := range cases {
		_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), with(tc.policy, tc.set))
		var cr *sim.CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a CannotRunError containing %q", tc.policy, err, tc.want)
		}
	}
}

// TestSessions: the traffic carries LiteLLM session ids when a request has metadata.session_id
// or a header matching ^x-.+-session-id$ with 8 or more of [A-Za-z0-9_-]; plain x-session-id and
// a 5-character id do not count.
func TestSessions(t *testing.T) {
	tr := &sim.Trace{Name: "r.jsonl", Format: "requests", BlockSize: 16, PrefixInfo: true, Requests: []sim.Request{
		{Blocks: []uint64{1, 2}, View: &sim.View{Chat: true, Headers: map[string]string{"x-session-id": "abcdefghij"}}},
		{Blocks: []uint64{1, 4}, View: &sim.View{Chat: true, Headers: map[string]string{"x-acme-session-id": "short"}}},
		{Blocks: []uint64{5, 6}},
	}}
	if sessions(tr) || sessions(nil) {
		t.Error("no LiteLLM session id in the traffic")
	}
	tr.Requests[1].View.Headers["x-acme-session-id"] = "conv-000001"
	if !sessions(tr) {
		t.Error("x-acme-session-id conv-000001 is a LiteLLM session id")
	}
	tr.Requests[1].View.Headers = nil
	tr.Requests[0].View.MetadataSession = "m"
	if !sessions(tr) {
		t.Error("metadata.session_id is a LiteLLM session id")
	}
}
