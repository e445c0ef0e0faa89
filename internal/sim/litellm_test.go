package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func withLiteLLM(c Config, fn func(*LiteLLMSettings)) Config {
	r := DefaultRouterSettings()
	fn(&r.LiteLLM)
	c.Routers = &r
	return c
}

func TestLiteLLMSimpleShuffle(t *testing.T) {
	// Every request is one draw: the routes are the draw sequence, hits follow from them.
	tr := tinyTrace(req(0, "", 0, 1, 2), req(1, "", 0, 1, 3), req(2, "", 0, 1, 4))
	got := runTiny(t, tr, tinyConfig(8), "litellm-simple-shuffle")
	if d := cmp.Diff(draws(1, 8, 3), got.Routes); d != "" {
		t.Errorf("routes are not the draws (-draws +got):\n%s", d)
	}
	// Uniform: 800 requests on 4 deployments, 200 expected each (sd 12): none under 140.
	var rs []Request
	for i := range 800 {
		rs = append(rs, req(float64(i), "", 0, uint64(i+1)))
	}
	got = runTiny(t, tinyTrace(rs...), tinyConfig(4), "litellm-simple-shuffle")
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
		if got := litellmSessionID(&View{Headers: tc.headers, MetadataSession: tc.meta}); got != tc.want {
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
		tr := textTrace(tinyBlock,
			chatReq(0, 0, s("s1"), tinyBlock, 1, 2), chatReq(5, 0, s("s1"), tinyBlock, 1, 3),
			chatReq(14, 0, s("s1"), tinyBlock, 1, 4), chatReq(40, 0, s("s1"), tinyBlock, 1, 5),
			chatReq(41, 0, nil, tinyBlock, 1, 6), chatReq(42, 0, s("s1"), tinyBlock, 1, 7))
		c := withLiteLLM(tinyConfig(8), func(l *LiteLLMSettings) { l.AffinityTTLSecs = 10 })
		d := draws(1, 8, 3)
		got := runTiny(t, tr, c, "litellm-session-affinity")
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
	var rs []Request
	for k := range 4 {
		for i := range 50 {
			rs = append(rs, chatReq(float64(100*k+i), 0, s(fmt.Sprintf("session-%03d", i)), tinyBlock, uint64(i+1)))
		}
	}
	tr := textTrace(tinyBlock, rs...)
	moved := func(c Config) int {
		got := runTiny(t, tr, c, "litellm-session-affinity")
		n := 0
		for i := 50; i < len(got.Routes); i++ {
			if got.Routes[i] != got.Routes[i%50] {
				n++
			}
		}
		return n
	}
	shared := withLiteLLM(tinyConfig(8), func(l *LiteLLMSettings) { l.ProxyPods, l.Redis = 2, true })
	perPod := withLiteLLM(tinyConfig(8), func(l *LiteLLMSettings) { l.ProxyPods, l.Redis = 2, false })
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
	logOf := func(system, mark string) *Trace {
		var lines []string
		turns := []string{"q1", "a1", "q2", "a2", "q3"}
		for k := 1; k <= 5; k += 2 {
			lines = append(lines, chatLog(t, system, turns[:k], mark))
		}
		lines = append(lines, chatLog(t, system, []string{"another question"}, mark))
		tr, err := ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "chat.jsonl", RequestLogOptions{Rate: 1.0 / 60})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	c := tinyConfig(8)
	shuffled := func(tr *Trace) []int { return runTiny(t, tr, c, "litellm-simple-shuffle").Routes }
	t.Run("a marker on the last message never pins a follow-up", func(t *testing.T) {
		// Each turn's key covers the whole conversation including its newest message: no
		// request finds a pin, every request is a draw, as under simple-shuffle.
		tr := logOf(long, "last")
		got := runTiny(t, tr, c, "litellm-prompt-caching")
		if want := shuffled(tr); !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want simple-shuffle's %v", got.Routes, want)
		}
	})
	t.Run("a marker on the system prompt pins every request sharing it", func(t *testing.T) {
		// r0: no pin yet, draw 0; on success the system prompt's key is pinned to it for 300 s.
		// r1 (60 s), r2, r3 (the other conversation): the same key, >= 1,024 tokens: pinned.
		tr := logOf(long, "system")
		got := runTiny(t, tr, c, "litellm-prompt-caching")
		d := draws(1, 8, 1)[0]
		if want := []int{d, d, d, d}; !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want all on draw 0's deployment %d", got.Routes, d)
		}
	})
	t.Run("under 1,024 tokens nothing pins", func(t *testing.T) {
		tr := logOf(short, "system")
		got := runTiny(t, tr, c, "litellm-prompt-caching")
		if want := shuffled(tr); !cmp.Equal(want, got.Routes) {
			t.Errorf("routes %v, want simple-shuffle's %v", got.Routes, want)
		}
	})
	t.Run("no marker, no pin", func(t *testing.T) {
		tr := logOf(long, "")
		got := runTiny(t, tr, c, "litellm-prompt-caching")
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
		mk := func(at float64) Request {
			r := chatReq(at, 0, nil, tinyBlock, blocks...)
			r.View.CacheKey = 42
			return r
		}
		tr := textTrace(tinyBlock, mk(0), mk(10), mk(700), mk(701))
		got := runTiny(t, tr, c, "litellm-prompt-caching")
		d := draws(1, 8, 4)
		if !cmp.Equal(d, got.Routes) {
			t.Errorf("routes %v, want the draws %v", got.Routes, d)
		}
		// The same with r2 at 300 s: r1 finished last (its prefill waits for nothing on another
		// deployment, or queues behind r0 on the same one: either way by 40 s), so its pin holds
		// at 300 s: r2 goes to r1's deployment.
		tr = textTrace(tinyBlock, mk(0), mk(10), mk(300))
		got = runTiny(t, tr, c, "litellm-prompt-caching")
		if got.Routes[2] != got.Routes[1] {
			t.Errorf("routes %v: r2 should follow r1's pin", got.Routes)
		}
	})
}

// TestEmulationSettingsRefused: settings no router runs with are refused with a CannotRunError
// naming the setting, not simulated.
func TestEmulationSettingsRefused(t *testing.T) {
	tr := textTrace(tinyBlock, chatReq(0, 0, nil, tinyBlock, 1))
	cases := []struct {
		policy, want string
		cfg          Config
	}{
		{"prodstack-loadaware", "--loadaware-beta NaN", withProdStack(tinyConfig(2), func(s *ProdStackSettings) { s.LoadBeta = math.NaN() })},
		{"litellm-session-affinity", "deployment_affinity_ttl_seconds 0", withLiteLLM(tinyConfig(2), func(l *LiteLLMSettings) { l.AffinityTTLSecs = 0 })},
		{"litellm-prompt-caching", "prompt_caching TTL -1", withLiteLLM(tinyConfig(2), func(l *LiteLLMSettings) { l.PromptCacheTTLSecs = -1 })},
		{"litellm-session-affinity", "0 proxy pods", withLiteLLM(tinyConfig(2), func(l *LiteLLMSettings) { l.ProxyPods = 0 })},
	}
	for _, tc := range cases {
		_, err := Simulate(tr, tc.cfg, tc.policy)
		var cr *CannotRunError
		if !errors.As(err, &cr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a CannotRunError containing %q", tc.policy, err, tc.want)
		}
	}
}
