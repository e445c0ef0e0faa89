package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// chatLine builds one chat request line.
func chatLine(t testing.TB, session string, msgs ...Message) string {
	t.Helper()
	type m struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := struct {
		Messages []m               `json:"messages"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{}
	for _, x := range msgs {
		body.Messages = append(body.Messages, m(x))
	}
	if session != "" {
		body.Metadata = map[string]string{"session_id": session}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// system128 is a system prompt whose rendered form ("<|system|>\n" + content + "\n") is exactly
// 128 bytes: two estimated blocks at block size 16.
var system128 = strings.Repeat("S", 128-len("<|system|>\n")-1)

// user100 is a 100-byte user message that differs from others in a number near its start.
func user100(n int) string {
	s := fmt.Sprintf("Where is order %05d? ", n)
	return s + strings.Repeat("x", 100-len(s))
}

// TestAuditRequestsFigures checks every figure on a set built so the answer is known: each
// request renders to 238 bytes (60 estimated tokens, 3 full blocks, at most 3 cacheable
// blocks since the last token is recomputed); the first two blocks are the shared system prompt.
func TestAuditRequestsFigures(t *testing.T) {
	lines := []string{
		chatLine(t, "s1", Message{"system", system128}, Message{"user", user100(1)}),
		chatLine(t, "s1", Message{"system", system128}, Message{"user", user100(2)}),
		chatLine(t, "s2", Message{"system", system128}, Message{"user", user100(3)}),
		// A different system prompt: a unique first block.
		chatLine(t, "s3", Message{"system", "Time: 2026-11-30T10:00:00Z " + system128[27:]}, Message{"user", user100(4)}),
		`{"prompt":"short"}`,
		`garbage`,
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
	if err != nil {
		t.Fatalf("AuditRequests: %v", err)
	}
	want := Summary{
		Exact: false, BlockSize: 16,
		Requests: 5, Chat: 4, Completion: 1, Short: 1, Skipped: 1,
		LineErrors:   []string{"line 6: not a JSON object: want one request body (or export record) per line"},
		PromptTokens: 4*60 + 2,
		// Requests 2 and 3 reuse the two system blocks (32 tokens each).
		CacheableTokens:     64,
		WithinSessionTokens: 32,
		CrossSessionTokens:  32,
		Sessions:            3,
		// Request 2 is session s1's second: its 60 tokens, 32 from cache, same first block.
		RepeatedSessions: 1, // the one follow-up's session
		FollowUps:        1, FollowUpTokens: 60, FollowUpCacheable: 32,
		// Request 4's first block is its own.
		UniqueFirstBlock: 1,
		SharedPrefix: []Bucket{
			{0, 0, 2}, {1, 1, 0}, {2, 3, 2}, {4, 7, 0}, {8, 15, 0}, {16, 63, 0}, {64, 255, 0}, {256, -1, 0},
		},
	}
	gotSites := sum.Sites
	sum.Sites = nil
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// Requests 2 and 3 leave the shared prefix in the user message at the order number; request
	// 4 in the system message at the timestamp.
	type site struct {
		Message int
		Role    string
		Offset  int
		Block   int
		Cause   string
		Count   int64
	}
	var sites []site
	for _, s := range gotSites {
		sites = append(sites, site{s.Message, s.Role, s.Offset, s.Block, s.Cause, s.Count})
	}
	wantSites := []site{
		{1, "user", 19, 2, "number", 2},
		{0, "system", 0, 0, "date/time", 1},
	}
	if diff := cmp.Diff(wantSites, sites); diff != "" {
		t.Errorf("divergence sites (-want +got):\n%s", diff)
	}
	fs := sum.Findings("log.jsonl")
	var codes []string
	for _, f := range fs {
		codes = append(codes, f.Code+"/"+f.Severity.String())
		if !f.Estimated {
			t.Errorf("finding %s not marked estimated", f.Code)
		}
		// A figure in blocks from estimated tokens says so in the text too.
		if f.Block >= 0 && !strings.Contains(f.Message, "(estimated)") {
			t.Errorf("finding %s at block %d: message %q does not say the figure is estimated", f.Code, f.Block, f.Message)
		}
	}
	if diff := cmp.Diff([]string{"audit/unique-first-block/warning", "audit/skipped-lines/warning"}, codes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestAuditRequestsCacheControlAndCap(t *testing.T) {
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf(`{"messages":[{"role":"system","content":"%s"},{"role":"user","content":"q%d %s","cache_control":{"type":"ephemeral"}}]}`, system128, i, strings.Repeat("y", 200)))
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{MaxBlocks: 20})
	if err != nil {
		t.Fatal(err)
	}
	if sum.CacheControlLast != 50 || sum.CacheControlRequests != 50 {
		t.Errorf("cache_control last = %d, requests = %d; want 50, 50", sum.CacheControlLast, sum.CacheControlRequests)
	}
	if !sum.Capped || sum.UnindexedBlocks == 0 {
		t.Errorf("capped = %v, unindexed = %d; want the 20-block index to overflow", sum.Capped, sum.UnindexedBlocks)
	}
	// The shared system blocks were indexed first, so every later request still hits them.
	if want := int64(49 * 32); sum.CacheableTokens != want {
		t.Errorf("cacheable = %d, want %d", sum.CacheableTokens, want)
	}
	var codes []string
	for _, f := range sum.Findings("x") {
		codes = append(codes, f.Code)
	}
	// Each request is a conversation of its own, so 50 sessions: 20 fit the table and the
	// other 30 requests are of sessions it could not tell apart.
	if !sum.SessionsCapped || sum.Sessions != 20 || sum.UntrackedRequests != 30 {
		t.Errorf("sessions %d, capped %v, untracked %d; want 20, true, 30", sum.Sessions, sum.SessionsCapped, sum.UntrackedRequests)
	}
	if diff := cmp.Diff([]string{"audit/cache-control-last", "audit/sessions-full", "audit/index-full"}, codes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestSessionFirstBlock: a timestamp at the very start changes the first block between turns
// of one session, so even session affinity cannot reuse the prefix.
func TestSessionFirstBlock(t *testing.T) {
	var lines []string
	for turn := range 4 {
		lines = append(lines, chatLine(t, "only", Message{"system", fmt.Sprintf("%02d:%02d:07 %s", 10, turn, system128)}, Message{"user", user100(turn)}))
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FollowUps != 3 || sum.FollowUpFirstBlockChanged != 3 || sum.FollowUpCacheable != 0 {
		t.Errorf("follow-ups %d, first block changed %d, cacheable %d; want 3, 3, 0", sum.FollowUps, sum.FollowUpFirstBlockChanged, sum.FollowUpCacheable)
	}
	var got []string
	for _, f := range sum.Findings("x") {
		got = append(got, f.Code+"/"+f.Severity.String())
	}
	want := []string{"audit/unique-first-block/error", "audit/session-first-block/error"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestSessionSplitInterleaved: two sessions share a system prompt and take turns. The second
// session's first request reuses the system prompt from the first session (cross-session); every
// later turn reuses only what its own session computed before, so session affinity serves it
// (within-session), even where another session stored those blocks first.
func TestSessionSplitInterleaved(t *testing.T) {
	sys := Message{"system", system128}
	turn2 := []Message{{"assistant", "Sure."}, {"user", "And then?"}}
	a1 := []Message{sys, {"user", user100(1)}}
	b1 := []Message{sys, {"user", user100(2)}}
	// Without ids the sessions are inferred: a later turn repeats its first turn's messages.
	for _, ids := range []struct{ a, b string }{{"A", "B"}, {"", ""}} {
		t.Run(fmt.Sprintf("ids=%t", ids.a != ""), func(t *testing.T) {
			lines := []string{
				chatLine(t, ids.a, a1...),
				chatLine(t, ids.b, b1...),
				chatLine(t, ids.a, append(slices.Clone(a1), turn2...)...),
				chatLine(t, ids.b, append(slices.Clone(b1), turn2...)...),
			}
			sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Each first turn renders to 238 bytes: 3 full blocks, the first 2 the system
			// prompt. B1 hits the 2 system blocks A1 stored: cross. A2 and B2 hit the 3
			// blocks of their own first turn: within, 6 blocks.
			type split struct{ Cacheable, Cross, Within, Sessions, Inferred, FollowUps int64 }
			got := split{sum.CacheableTokens, sum.CrossSessionTokens, sum.WithinSessionTokens, sum.Sessions, sum.InferredSessions, sum.FollowUps}
			want := split{8 * 16, 2 * 16, 6 * 16, 2, 0, 2}
			if ids.a == "" {
				want.Inferred = 2
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reuse split in tokens (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTokenIDPrompts: completion prompts given as token ids are the engine's own ids, block
// for block. 40 shared ids, then one that differs per request and 20 more: 61 tokens, 3 full
// blocks, the first 2 shared; the batch form reads its first prompt.
func TestTokenIDPrompts(t *testing.T) {
	shared := make([]int, 40)
	for i := range shared {
		shared[i] = 1000 + i
	}
	var lines []string
	for i := range 4 {
		ids := append(append(slices.Clone(shared), 5000+i), make([]int, 20)...)
		b, _ := json.Marshal(map[string]any{"prompt": ids})
		lines = append(lines, string(b))
	}
	b, _ := json.Marshal(map[string]any{"prompt": [][]int{append(slices.Clone(shared), 1, 2, 3), {9, 9}}})
	lines = append(lines, string(b), `{"prompt":[1,-2]}`)
	run := func(t *testing.T, tok Tokenizer) Summary {
		sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{Tokenizer: tok})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	type figures struct {
		Requests, Skipped, PromptTokens, Cacheable int64
		Block, Offset                              int
		Cause, Example                             string
	}
	// Requests 2-4 reuse 2 blocks each; the batch's 43-token first prompt reuses 2.
	want := figures{5, 1, 4*61 + 43, 4 * 32, 2, 40, "token ids", "ids 1037 1038 1039 | 5001 0 0 0 0"}
	for _, tt := range []struct {
		name string
		tok  Tokenizer
	}{
		{"estimated", nil},
		// The server must not be asked: the ids are the engine's already.
		{"exact", &Server{BaseURL: "http://127.0.0.1:1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum := run(t, tt.tok)
			got := figures{sum.Requests, sum.Skipped, sum.PromptTokens, sum.CacheableTokens, -1, -1, "", ""}
			if len(sum.Sites) > 0 {
				st := sum.Sites[0]
				got.Block, got.Offset, got.Cause, got.Example = st.Block, st.Offset, st.Cause, st.Example
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
			if len(sum.LineErrors) != 1 || !strings.Contains(sum.LineErrors[0], "line 6: prompt: token id -2") {
				t.Errorf("line errors %q, want line 6's out-of-range id", sum.LineErrors)
			}
		})
	}
}

// TestInferredSessionTimestampedSystem: an agent stamps the time into its system prompt on
// every call and the log has no session ids. The later turns still continue their
// conversations (same messages after the system prompt), so they are follow-ups whose first
// block changed: session affinity cannot help them either.
func TestInferredSessionTimestampedSystem(t *testing.T) {
	sys := func(call int) Message {
		return Message{"system", fmt.Sprintf("Time: 2026-11-30T10:%02d:%02d.%06dZ. ", call/60, call%60, call*7919) + system128}
	}
	var lines []string
	call := 0
	for s := range 2 {
		conv := []Message{{"user", user100(s)}}
		for range 3 {
			call++
			lines = append(lines, chatLine(t, "", append([]Message{sys(call)}, conv...)...))
			conv = append(conv, Message{"assistant", "Checking."}, Message{"user", "And now?"})
		}
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type figs struct{ Sessions, Inferred, FollowUps, FirstBlockChanged int64 }
	if diff := cmp.Diff(figs{2, 2, 4, 4}, figs{sum.Sessions, sum.InferredSessions, sum.FollowUps, sum.FollowUpFirstBlockChanged}); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	var codes []string
	for _, f := range sum.Findings("x") {
		codes = append(codes, f.Code)
	}
	if !slices.Contains(codes, "audit/session-first-block") {
		t.Errorf("findings %v, want audit/session-first-block", codes)
	}
}

// TestImagesDiffer: two requests with the same text and different images share only the
// blocks before the image, as in the engine, where the image's hash enters the block hash.
func TestImagesDiffer(t *testing.T) {
	line := func(url string) string {
		return `{"messages":[{"role":"system","content":"` + system128 + `"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"text","text":"` + strings.Repeat("Describe this picture. ", 8) + `"}]}]}`
	}
	for _, tt := range []struct {
		name string
		urls []string
		want int64 // cacheable tokens
	}{
		// Only the two system blocks are shared.
		{"different images", []string{"https://x/a.png", "https://x/b.png"}, 32},
		{"same image", []string{"https://x/a.png", "https://x/a.png"}, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := line(tt.urls[0]) + "\n" + line(tt.urls[1])
			sum, err := AuditRequests(context.Background(), strings.NewReader(in), RequestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want < 0 {
				// Everything but the last partial block and the last token.
				want = (sum.PromptTokens/2 - 1) / 16 * 16
			}
			if sum.CacheableTokens != want {
				t.Errorf("cacheable %d tokens, want %d", sum.CacheableTokens, want)
			}
		})
	}
}

func TestAuditRequestsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "no requests in the input"},
		{"all bad", "x\ny\n", "no usable request in 2 lines"},
		// The same reason for five lines is said once.
		{"same reason", strings.Repeat(`{"a": 1}`+"\n", 6), "no usable request in 6 lines (first: lines 1 to 5: no request body"},
		// A Mooncake trace given as a request log: its records name --trace.
		{"a trace", `{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}` + "\n", "a trace record of block hashes (hash_ids), not a request: give the file with --trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AuditRequests(context.Background(), strings.NewReader(tt.in), RequestOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestJoinLineErrors(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"line 1: bad", "line 2: bad", "line 3: bad"}, "lines 1 to 3: bad"},
		{[]string{"line 1: bad", "line 4: bad", "line 5: worse"}, "2 lines from 1 to 4: bad; line 5: worse"},
		{[]string{"line 2: bad"}, "line 2: bad"},
		{[]string{"read: EOF", "line 7: bad: really"}, "read: EOF; line 7: bad: really"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := JoinLineErrors(tt.in); got != tt.want {
			t.Errorf("JoinLineErrors(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// replica serves the emulated /tokenize and a minimal /metrics with cache_config_info.
func replica(t *testing.T, blockSize int, prefixCaching string, now func() time.Time) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/tokenize", fleet.TokenizeHandler(fleet.TokenizeOptions{DateLine: true, Now: now}))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",enable_prefix_caching=\"%s\",num_gpu_blocks=\"2048\",prefix_caching_hash_algo=\"sha256\"} 1.0\n", blockSize, prefixCaching)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestExactEndToEnd runs the exact path against the emulated replica: the block size comes
// from /metrics, the ids from /tokenize, and the template probe finds the date line.
func TestExactEndToEnd(t *testing.T) {
	day := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	srv := replica(t, 32, "True", func() time.Time { return day })
	ctx := context.Background()
	remote, err := Connect(ctx, srv.URL, "", 30*time.Second, 16)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	on := true
	if diff := cmp.Diff(vllm.CacheConfig{BlockSize: 32, PrefixCaching: &on, NumGPUBlocks: 2048, HashAlgo: "sha256"}, remote.Config); diff != "" {
		t.Errorf("cache config (-want +got):\n%s", diff)
	}
	if remote.BlockSize != 32 || remote.Assumed || remote.CachingOff != nil {
		t.Errorf("remote = %+v; want the server's block size 32, prefix caching on", remote)
	}
	s, cc := remote.Server, remote.Config
	var lines []string
	for i := range 40 {
		lines = append(lines, chatLine(t, fmt.Sprintf("s%d", i%4), Message{"system", system128 + system128}, Message{"user", user100(i % 10)}))
	}
	sum, err := AuditRequests(ctx, strings.NewReader(strings.Join(lines, "\n")), RequestOptions{BlockSize: cc.BlockSize, Tokenizer: s, Concurrency: 4})
	if err != nil {
		t.Fatalf("AuditRequests: %v", err)
	}
	if !sum.Exact || sum.BlockSize != 32 || sum.Requests != 40 {
		t.Fatalf("exact = %v, block size = %d, requests = %d; want true, 32, 40", sum.Exact, sum.BlockSize, sum.Requests)
	}
	// Compare with the estimate: the same conversations must give the same shape of reuse:
	// the 10 distinct conversations are stored once and every repeat is served from cache.
	ids, err := s.Tokenize(ctx, &Request{Chat: true, Messages: []Message{{"system", system128 + system128}, {"user", user100(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(ids.IDs)
	full := int64((n - 1) / 32 * 32)
	if want := 30 * full; sum.CacheableTokens < want {
		t.Errorf("cacheable = %d, want at least %d (30 repeats of %d tokens)", sum.CacheableTokens, want, full)
	}
	if sum.PromptTokens != int64(40*n) {
		t.Errorf("prompt tokens = %d, want %d (exact count)", sum.PromptTokens, 40*n)
	}
	tpl, fs, err := ProbeServerTemplate(ctx, s, 16)
	if err != nil {
		t.Fatalf("ProbeServerTemplate: %v", err)
	}
	if len(fs) != 1 {
		t.Fatalf("probe findings = %+v, want the date line only", fs)
	}
	f := fs[0]
	// Exact: the date lands at token 18-19 with the Llama-3-style header, block 1 at block
	// size 16, before the system prompt: early, not in block zero.
	if f.Estimated || f.Block != 1 || f.Position != Early || tpl.Verdict != VerdictEarly || f.Severity != finding.Warning {
		t.Errorf("probe: %+v, verdict %s; want exact, block 1, early, warning", f, tpl.Verdict)
	}
}

func TestExactErrors(t *testing.T) {
	srv := replica(t, 16, "False", time.Now)
	ctx := context.Background()
	remote, err := Connect(ctx, srv.URL, "other", 30*time.Second, 32)
	if err != nil || remote.CachingOff == nil || remote.CachingOff.Code != "prefix-caching-off" || remote.CachingOff.Subject != srv.URL || remote.BlockSize != 16 {
		t.Errorf("Connect = %+v, %v; want block size 16 and the prefix-caching-off finding about %s", remote, err, srv.URL)
	}
	s := remote.Server
	// A request the server rejects (400) is skipped with the server's message; the rest goes on.
	long := `{"messages":[{"role":"user","content":"` + strings.Repeat("w ", 9000) + `"}]}`
	sum, err := AuditRequests(ctx, strings.NewReader(long+"\n"+`{"prompt":"fine"}`), RequestOptions{Tokenizer: s})
	if err != nil || sum.Requests != 1 || sum.Skipped != 1 || !strings.Contains(sum.LineErrors[0], "line 1: tokenize") || !strings.Contains(sum.LineErrors[0], "maximum context length") {
		t.Errorf("summary %+v, error %v: want line 1 skipped with the server's message", sum, err)
	}
	// Any other failure stops the audit.
	down := &Server{BaseURL: "http://127.0.0.1:1"}
	if _, err := AuditRequests(ctx, strings.NewReader(`{"prompt":"x"}`), RequestOptions{Tokenizer: down}); err == nil || !strings.Contains(err.Error(), "line 1: tokenize") {
		t.Errorf("error = %v, want the connection failure with the line", err)
	}
	if _, err := Connect(ctx, srv.URL+"/nowhere", "", time.Second, 16); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "check --tokenize") {
		t.Errorf("Connect to a wrong URL: %v, want a 404 error saying what to do", err)
	}
}

// BenchmarkAuditExact measures the exact path: every distinct conversation tokenized by the
// emulated replica's /tokenize over loopback, 8 in flight, against the estimate on the same log.
func BenchmarkAuditExact(b *testing.B) {
	mux := http.NewServeMux()
	mux.Handle("/tokenize", fleet.TokenizeHandler(fleet.TokenizeOptions{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var sb strings.Builder
	const n = 2000
	for i := range n {
		sb.WriteString(chatLine(b, fmt.Sprintf("s%d", i%50), Message{"system", system128 + system128}, Message{"user", user100(i)}))
		sb.WriteByte('\n')
	}
	data := sb.String()
	for _, tc := range []struct {
		name string
		tok  Tokenizer
	}{
		{"exact-tokenize", &Server{BaseURL: srv.URL, Client: srv.Client()}},
		{"estimate-reference", Estimator{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := AuditRequests(context.Background(), strings.NewReader(data), RequestOptions{Tokenizer: tc.tok, Concurrency: 8}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}

// TestExactSendsRequestAsSent: with --tokenize the ids must be the ones the engine computes for
// the request as the client sent it: tool calls rendered by the template (not pasted into the
// content as JSON) and the request's chat_template_kwargs applied (here the date line).
func TestExactSendsRequestAsSent(t *testing.T) {
	srv := replica(t, 16, "True", func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) })
	line := `{"model":"m","chat_template_kwargs":{"date_string":"01 Jan 2020"},"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}],` +
		`"messages":[{"role":"system","content":"You are an agent."},{"role":"user","content":"find x"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\": \"x\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"found"}]}`
	// What the engine tokenizes: the body itself, with the generation prompt.
	var body map[string]any
	if err := json.Unmarshal([]byte(line), &body); err != nil {
		t.Fatal(err)
	}
	body["add_generation_prompt"] = true
	direct, _ := json.Marshal(body)
	resp, err := http.Post(srv.URL+"/tokenize", "application/json", strings.NewReader(string(direct)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var want struct {
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&want); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("direct tokenize: status %d, %v", resp.StatusCode, err)
	}
	rr := NewRequestReader(strings.NewReader(line), 0)
	rr.KeepRaw = true
	req, err := rr.Next()
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&Server{BaseURL: srv.URL}).Tokenize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Tokens, got.IDs); diff != "" {
		t.Errorf("ids (-engine's +audit's):\n%s", diff)
	}
	// And the whole exact path sees the same count.
	sum, err := AuditRequests(context.Background(), strings.NewReader(line), RequestOptions{Tokenizer: &Server{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.PromptTokens != int64(len(want.Tokens)) {
		t.Errorf("prompt tokens %d, want the engine's %d", sum.PromptTokens, len(want.Tokens))
	}
}

// TestProbeClockOnlyTemplate: a template that reads the clock itself ignores the date kwargs and
// renders alike all day; the probe finds today's date in the render instead. A template
// without a date stays clean.
func TestProbeClockOnlyTemplate(t *testing.T) {
	tests := []struct {
		name string
		opts fleet.TokenizeOptions
		want int // findings
	}{
		{"clock only", fleet.TokenizeOptions{DateLine: true, ClockOnly: true}, 1},
		{"no date", fleet.TokenizeOptions{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("/tokenize", fleet.TokenizeHandler(tt.opts))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			tpl, fs, err := ProbeServerTemplate(context.Background(), &Server{BaseURL: srv.URL}, 16)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != tt.want {
				t.Fatalf("findings %+v, want %d", fs, tt.want)
			}
			if tt.want == 0 {
				if tpl.Verdict != VerdictClean {
					t.Errorf("verdict %s, want clean", tpl.Verdict)
				}
				return
			}
			f := fs[0]
			type fig struct {
				Kind      Kind
				Freq      Frequency
				Block     int
				Position  Position
				Estimated bool
				Verdict   Verdict
			}
			// "Today Date: " after the header: token 18-19, block 1, before the system prompt.
			if diff := cmp.Diff(fig{KindClock, Daily, 1, Early, false, VerdictEarly}, fig{f.Kind, f.Frequency, f.Block, f.Position, f.Estimated, tpl.Verdict}); diff != "" {
				t.Errorf("probe (-want +got):\n%s\n%s", diff, f.Message)
			}
		})
	}
}

// TestUniqueFirstBlockUserText: requests that open with the user's own question have unique
// first blocks, but nothing generated breaks a prefix there: info, not an error to fix.
func TestUniqueFirstBlockUserText(t *testing.T) {
	questions := []string{
		"How do I reverse a linked list in place without extra memory?",
		"What is the difference between a mutex and a semaphore in practice?",
		"Can you explain how TCP slow start interacts with packet loss?",
		"Why does my Python program use so much memory when reading CSV files?",
		"Which sorting algorithm is stable and runs in n log n time?",
		"Summarise the causes of the French Revolution in three sentences.",
	}
	tests := []struct {
		name string
		line func(i int, q string) string
		want finding.Severity
	}{
		{"user text first", func(i int, q string) string { return chatLine(t, "", Message{"user", q}) }, finding.Info},
		{"timestamp first", func(i int, q string) string {
			return chatLine(t, "", Message{"system", fmt.Sprintf("2026-11-30T10:%02d:%02d.%06dZ You are a helpful assistant.", i, i*7%60, i*12345)}, Message{"user", q})
		}, finding.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for i, q := range questions {
				lines = append(lines, tt.line(i, q))
			}
			sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range sum.Findings("log.jsonl") {
				if f.Code == "audit/unique-first-block" {
					if f.Severity != tt.want {
						t.Errorf("unique-first-block is %s, want %s: %s", f.Severity, tt.want, f.Message)
					}
					got = append(got, f.Message)
				}
			}
			if len(got) != 1 {
				t.Fatalf("got %d unique-first-block findings, want 1: %q", len(got), got)
			}
		})
	}
}

// TestUserIsNotASession is issue 9's second failure: many tenants, each with its own long
// system prompt, and end users identified by OpenAI's user field who talk to several tenants.
// Reading user as a session made every user's next request "a later turn whose first block
// changed" (a different tenant's prompt) and the audit said fix first. A user is not a
// conversation: there are no later turns here, and no session-first-block finding.
func TestUserIsNotASession(t *testing.T) {
	var lines []string
	for i := range 30 {
		tenant := i % 5
		sys := fmt.Sprintf("You are the assistant of tenant %d. ", tenant) + strings.Repeat(fmt.Sprintf("Tenant %d policy text. ", tenant), 20)
		body := map[string]any{
			"user":     fmt.Sprintf("user-%d", i%3),
			"messages": []map[string]string{{"role": "system", "content": sys}, {"role": "user", "content": fmt.Sprintf("question number %d about my order", i)}},
		}
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FollowUps != 0 || sum.FollowUpFirstBlockChanged != 0 {
		t.Errorf("follow-ups %d, first block changed %d: the user field was read as a session", sum.FollowUps, sum.FollowUpFirstBlockChanged)
	}
	for _, f := range sum.Findings("log") {
		if f.Code == "audit/session-first-block" || f.Severity == finding.Error {
			t.Errorf("finding %s %s: %s", f.Severity, f.Code, f.Message)
		}
	}
	// Every tenant's prompt repeats across users: the reuse is there, and cross-session.
	if sum.CrossSessionTokens == 0 {
		t.Errorf("no cross-session reuse of the tenants' prompts: %+v", sum)
	}
}

// TestOrderCause: requests whose prefixes differ only by the order of their tool list or of
// JSON keys name that cause. The fixtures (an OpenAI-style agent with three function tools,
// three sessions of two turns) were worked out by hand:
//   - tool_order.jsonl: session 1 sends the tools as A,B,C then A,C,B; session 2 B,C,A twice;
//     session 3 C,A,B twice. Requests 2, 3 and 5 leave the prefix inside the tools, each with
//     the same tools as an earlier request in another order: 3 of 6, an error.
//   - key_order.jsonl: the same tools; sessions 2 and 3 write "required" before "properties".
//     Request 3 leaves the prefix there (key order); requests 4-6 reuse its bytes: 1 of 6.
func TestOrderCause(t *testing.T) {
	tests := []struct {
		file  string
		cause string
		count int64
		sev   finding.Severity
		share string
	}{
		{"tool_order.jsonl", CauseToolOrder, 3, finding.Error, "50.0% of requests (3)"},
		{"key_order.jsonl", CauseKeyOrder, 1, finding.Warning, "16.7% of requests (1)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("../../testdata/audit/requests", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			sum, err := AuditRequests(t.Context(), f, RequestOptions{BlockSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, st := range sum.Sites {
				if st.Cause == tt.cause {
					if st.Message != -1 {
						t.Errorf("site %+v: want the tools", st)
					}
					n += st.Count
				}
			}
			if n != tt.count {
				t.Errorf("%d requests diverge on %s, want %d (sites %+v)", n, tt.cause, tt.count, sum.Sites)
			}
			var got *Finding
			for _, x := range sum.Findings(tt.file) {
				if x.Code == "audit/unstable-order" {
					got = &x
				}
			}
			if got == nil {
				t.Fatalf("no audit/unstable-order finding in %+v", sum.Findings(tt.file))
			}
			if got.Severity != tt.sev || !strings.Contains(got.Message, tt.share) || !strings.Contains(got.Message, tt.cause) {
				t.Errorf("finding %s %q, want %s with %q and %q", got.Severity, got.Message, tt.sev, tt.share, tt.cause)
			}
		})
	}
}

// TestOrdersCause checks the order rule on JSON units directly: a reordered list, reordered
// keys, a JSON message content, and a real change, which is no order cause.
func TestOrdersCause(t *testing.T) {
	o := newOrders(maphash.MakeSeed())
	steps := []struct {
		tag  int
		raw  string
		want string
	}{
		{0, `[{"name":"a","x":1},{"name":"b","x":2}]`, ""},
		{0, `[{"name":"a","x":1},{"name":"b","x":2}]`, ""},
		{0, `[{"name":"b","x":2},{"name":"a","x":1}]`, CauseToolOrder},
		{0, `[{"x":1,"name":"a"},{"x":2,"name":"b"}]`, CauseKeyOrder},
		{0, `[{"name":"a","x":1},{"name":"b","x":3}]`, ""},
		{2, `{"order_id":"A1","status":"shipped"}`, ""},
		{2, `{"status":"shipped","order_id":"A1"}`, CauseKeyOrder},
		{2, `{"items":[1,2]}`, ""},
		{2, `{"items":[2,1]}`, CauseListOrder},
		{2, `not json`, ""},
	}
	for i, s := range steps {
		if got := o.cause(s.tag, s.raw); got != s.want {
			t.Errorf("step %d %s: cause %q, want %q", i, s.raw, got, s.want)
		}
	}
}

// TestRequestLogBOM: a request log saved by a Windows tool (PowerShell's Out-File, Notepad)
// starts with a UTF-8 byte order mark and ends its lines with CRLF. Both requests are read:
// the first line is not "not a JSON object", from a file as from standard input.
func TestRequestLogBOM(t *testing.T) {
	a := chatLine(t, "s1", Message{"system", system128}, Message{"user", user100(1)})
	b := chatLine(t, "s2", Message{"system", system128}, Message{"user", user100(2)})
	body := "\ufeff" + a + "\r\n" + b + "\r\n"
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, "-"} {
		in, _, closeFn, err := OpenRequests(name, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := AuditRequests(context.Background(), in, RequestOptions{})
		closeFn()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Requests != 2 || rep.Skipped != 0 {
			t.Errorf("%s: %d requests, %d skipped; want 2 and 0", name, rep.Requests, rep.Skipped)
		}
	}
}

// TestRequestLogUTF16: a log saved as UTF-16 is refused by name, not read as lines that are
// all "not a JSON object".
func TestRequestLogUTF16(t *testing.T) {
	_, _, _, err := OpenRequests("-", strings.NewReader("\xff\xfe{\x00\"\x00"))
	if err == nil || !strings.Contains(err.Error(), "saved as UTF-16") {
		t.Errorf("error = %v, want saved as UTF-16", err)
	}
}

// TestBatchPrompts: a completion whose prompt is a list is a batch: the engine runs each
// prompt as a request of its own. The audit reads the first of each batch; the rest are not
// left out in silence: a finding counts them (3 prompts in two lines, strings and token ids).
func TestBatchPrompts(t *testing.T) {
	log := `{"model":"m","prompt":["You are a bot. What is 1+1?","You are a bot. What is 2+2?","You are a bot. What is 3+3?"]}` + "\n" +
		`{"model":"m","prompt":[[1,2,3],[1,2,4]]}` + "\n" + `{"model":"m","prompt":"one"}` + "\n"
	sum, err := AuditRequests(context.Background(), strings.NewReader(log), RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	for _, f := range sum.Findings("log") {
		if f.Code == "audit/batch-prompts" {
			msg = f.Message
		}
	}
	if !strings.Contains(msg, "2 requests") || !strings.Contains(msg, "3 more prompts") {
		t.Errorf("batch finding %q, want 2 requests and 3 more prompts", msg)
	}
}

// TestAuditSessionsCapped: past the session table's bound (--max-blocks) the count is a lower
// bound and says so, instead of reporting the bound as the count. Six completions in sessions
// s0..s5 then one more in s0, with room for three sessions: s0, s1, s2 are tracked; s3, s4, s5
// are new past the bound (3 untracked requests); s0's second request is a follow-up of a
// tracked session, so it is counted.
func TestAuditSessionsCapped(t *testing.T) {
	var lines []string
	for _, s := range []int{0, 1, 2, 3, 4, 5, 0} {
		lines = append(lines, fmt.Sprintf(`{"prompt": "q%d %s", "session_id": "s%d"}`, s, strings.Repeat("y", 10), s))
	}
	sum, err := AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{MaxBlocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != 3 || !sum.SessionsCapped || sum.UntrackedRequests != 3 || sum.FollowUps != 1 {
		t.Errorf("sessions %d, capped %v, untracked %d, follow-ups %d; want 3, true, 3, 1", sum.Sessions, sum.SessionsCapped, sum.UntrackedRequests, sum.FollowUps)
	}
	var codes []string
	for _, f := range sum.Findings("x") {
		codes = append(codes, f.Code)
	}
	if !slices.Contains(codes, "audit/sessions-full") {
		t.Errorf("findings %v, want audit/sessions-full", codes)
	}
	// Within the bound nothing is said.
	sum, err = AuditRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), RequestOptions{MaxBlocks: 6})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != 6 || sum.SessionsCapped || sum.UntrackedRequests != 0 {
		t.Errorf("room for 6: sessions %d, capped %v, untracked %d; want 6, false, 0", sum.Sessions, sum.SessionsCapped, sum.UntrackedRequests)
	}
}
