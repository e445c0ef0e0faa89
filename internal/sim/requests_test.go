package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/audit"
	emulated "github.com/kvcheck/kvcheck/internal/fleet"
)

// blk is one 16-token block of the byte estimate (4 bytes a token): 64 bytes of c.
func blk(c byte) string { return strings.Repeat(string(c), 64) }

// shape names each request's block keys by order of first appearance in the trace ("0 1 2",
// then "0 1 3" for a request sharing two blocks), so fixtures can state which blocks match
// without knowing the hash values.
func shape(tr *Trace) []string {
	names := map[uint64]int{}
	out := make([]string, len(tr.Requests))
	for i, r := range tr.Requests {
		parts := make([]string, len(r.Blocks))
		for k, b := range r.Blocks {
			id, ok := names[b]
			if !ok {
				id = len(names)
				names[b] = id
			}
			parts[k] = fmt.Sprint(id)
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

// noBlocks returns the requests without their keys, for comparison with cmp.
func noBlocks(rs []Request) []Request {
	out := make([]Request, len(rs))
	for i, r := range rs {
		r.Blocks, r.View = nil, nil // views: view_test.go
		out[i] = r
	}
	return out
}

func completion(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadRequests(t *testing.T) {
	ab := blk('a') + blk('b')
	cases := []struct {
		name    string
		lines   func(t *testing.T) []string
		opts    RequestLogOptions
		want    []Request
		shape   []string
		notes   []string // substrings, each expected in some note
		wantErr string
	}{
		{
			name: "plain bodies with a time in seconds, max_tokens, n and a session",
			lines: func(t *testing.T) []string {
				return []string{
					completion(t, map[string]any{"prompt": ab + "x", "timestamp": 1700000000, "max_tokens": 10, "session_id": "s1"}),
					completion(t, map[string]any{"prompt": ab + blk('c'), "timestamp": 1700000002.5, "max_completion_tokens": 20, "max_tokens": 99, "n": 3}),
					completion(t, map[string]any{"prompt": blk('b') + blk('a'), "timestamp": 1700000003, "user": "u7"}),
				}
			},
			want: []Request{
				{Arrival: 0, Session: "s1", InputTokens: 33, OutputTokens: 10, N: 1},
				{Arrival: 2.5, InputTokens: 48, OutputTokens: 20, N: 3},
				// OpenAI's user field names an end user, not a conversation: no session.
				{Arrival: 3, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: 1},
			},
			// Block b after a is not block b at the start: only true prefixes match.
			shape: []string{"0 1 2", "0 1 3", "4 5"},
			notes: []string{"tokens: estimated", `from field "timestamp" (seconds)`, "on 2 requests (a cap), --output-tokens 256 on the other 1", "1 request asks for n > 1", "1 requests carry a session or conversation id; 0 continue"},
		},
		{
			// A time of 2^63 ns (the year 2262) would stretch the traffic over centuries, and
			// n=1e9 was capped without a word.
			name: "an impossible time is refused, an impossible n reported",
			lines: func(t *testing.T) []string {
				return []string{
					completion(t, map[string]any{"prompt": ab, "timestamp": 1700000000}),
					completion(t, map[string]any{"prompt": ab, "timestamp": uint64(1) << 63}),
					completion(t, map[string]any{"prompt": ab, "timestamp": 1700000001, "n": 1e9}),
				}
			},
			want: []Request{
				{Arrival: 0, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 1, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: maxSiblings},
			},
			shape: []string{"0 1", "0 1"},
			notes: []string{"1 line was not a usable request and was skipped (first: line 2: time 9.22337e+09 is not an arrival of this log", "1 request asks for n above 1024 (first on line 3: n=1000000000)"},
		},
		{
			// Issue 23: n and max_tokens above 2^30 were dropped without a word (n simulated as
			// 1, the output length as --output-tokens). n=2^31 is more completions than any
			// server returns, so it is capped at 1,024 as n=1e9 is; n=-2 and n=0 are refused by
			// a server and simulated as one; max_tokens=2^31 (or 1.5, or "lots") is no token
			// count, so --output-tokens 256 stands in, and each is noted with its first line.
			name: "n and max_tokens above 2^30 or unusable are noted, never dropped",
			lines: func(t *testing.T) []string {
				return []string{
					completion(t, map[string]any{"prompt": ab, "n": uint64(1) << 31, "max_tokens": uint64(1) << 31}),
					completion(t, map[string]any{"prompt": ab, "n": -2, "max_tokens": 1.5}),
					completion(t, map[string]any{"prompt": ab, "n": 0, "max_completion_tokens": "lots", "max_tokens": 12}),
					completion(t, map[string]any{"prompt": ab, "n": "1e400", "max_completion_tokens": -1}),
				}
			},
			want: []Request{
				{Arrival: 0, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: maxSiblings},
				{Arrival: 1, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: 1},
				// max_tokens gives the length when max_completion_tokens is unusable.
				{Arrival: 2, InputTokens: 32, OutputTokens: 12, N: 1},
				{Arrival: 3, InputTokens: 32, OutputTokens: DefaultOutputTokens, N: maxSiblings},
			},
			shape: []string{"0 1", "0 1", "0 1", "0 1"},
			notes: []string{
				"2 requests ask for n above 1024 (first on line 1: n=2147483648)",
				"2 requests have an n that is not a positive integer (first on line 2: n=-2), which a server refuses: simulated as one completion each",
				"3 requests have a max_completion_tokens or max_tokens that is not a token count of at most 2^30 (first on line 1: max_tokens=2147483648), which a server refuses: --output-tokens 256 used for them",
			},
		},
		{
			name: "chat without ids: a request that extends an earlier one's messages continues its session; user is not one",
			lines: func(t *testing.T) []string {
				msg := func(role, text string) map[string]string { return map[string]string{"role": role, "content": text} }
				sys, q1, a1, q2 := msg("system", blk('s')), msg("user", blk('q')), msg("assistant", blk('r')), msg("user", blk('t'))
				return []string{
					completion(t, map[string]any{"messages": []any{sys, q1}, "user": "alice"}),
					completion(t, map[string]any{"messages": []any{sys, msg("user", blk('z'))}, "user": "alice"}),
					completion(t, map[string]any{"messages": []any{sys, q1, a1, q2}, "user": "bob"}),
				}
			},
			want: []Request{
				{Arrival: 0, Session: InferredSessionPrefix + "1", InputTokens: 38, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 1, Session: InferredSessionPrefix + "2", InputTokens: 38, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 2, Session: InferredSessionPrefix + "1", InputTokens: 76, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0 1 2", "0 3 4", "0 1 5 6 7"},
			notes: []string{"0 requests carry a session or conversation id; 1 continue an earlier request's conversation", "the OpenAI user field is not a session"},
		},
		{
			name: "gateway export: body in a JSON string, RFC 3339 start time, session in metadata",
			lines: func(t *testing.T) []string {
				body := func(p string, max int) string {
					return completion(t, map[string]any{"model": "m", "prompt": p, "max_tokens": max})
				}
				return []string{
					completion(t, map[string]any{"startTime": "2026-11-30T10:00:00Z", "metadata": map[string]any{"litellm_session_id": "c1"}, "request_body": body(ab, 5)}),
					completion(t, map[string]any{"startTime": "2026-11-30T10:00:01.5Z", "metadata": map[string]any{"litellm_session_id": "c1"}, "request_body": body(ab+blk('d'), 6)}),
				}
			},
			want: []Request{
				{Arrival: 0, Session: "c1", InputTokens: 32, OutputTokens: 5, N: 1},
				{Arrival: 1.5, Session: "c1", InputTokens: 48, OutputTokens: 6, N: 1},
			},
			shape: []string{"0 1", "0 1 2"},
			notes: []string{`"request_body" field`, `from field "startTime" (date and time)`, "max_completion_tokens or max_tokens of every request"},
		},
		{
			name: "no time field: synthetic arrivals at --rate; a blank and a bad line skipped",
			lines: func(t *testing.T) []string {
				return []string{
					completion(t, map[string]any{"prompt": blk('a')}),
					"",
					"not json",
					completion(t, map[string]any{"prompt": blk('a')}),
					completion(t, map[string]any{"prompt": blk('a')}),
				}
			},
			opts: RequestLogOptions{Rate: 4, OutputTokens: 7},
			want: []Request{
				{Arrival: 0, InputTokens: 16, OutputTokens: 7, N: 1},
				{Arrival: 0.25, InputTokens: 16, OutputTokens: 7, N: 1},
				{Arrival: 0.5, InputTokens: 16, OutputTokens: 7, N: 1},
			},
			shape: []string{"0", "0", "0"},
			notes: []string{"arrivals: synthetic, one request every 0.25s (--rate 4)", "--output-tokens 7 for every request", "1 line was not a usable request"},
		},
		{
			name: "milliseconds, a request without time, out of order",
			lines: func(t *testing.T) []string {
				return []string{
					completion(t, map[string]any{"prompt": blk('a'), "created": 1700000002000}),
					completion(t, map[string]any{"prompt": blk('b')}),
					completion(t, map[string]any{"prompt": blk('c'), "created": 1700000000000, "timestamp": "ignored: not the field chosen"}),
				}
			},
			want: []Request{
				{Arrival: 0, InputTokens: 16, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 2, InputTokens: 16, OutputTokens: DefaultOutputTokens, N: 1},
				{Arrival: 2, InputTokens: 16, OutputTokens: DefaultOutputTokens, N: 1},
			},
			shape: []string{"0", "1", "2"},
			notes: []string{`from field "created" (milliseconds); 1 request without it`, "sorted by time"},
		},
		{
			name: "an unreadable time on the first request: synthetic arrivals, and why",
			lines: func(t *testing.T) []string {
				return []string{completion(t, map[string]any{"prompt": "x", "timestamp": "soon"}), completion(t, map[string]any{"prompt": "y", "timestamp": 1700000000})}
			},
			want:  []Request{{InputTokens: 1, OutputTokens: DefaultOutputTokens, N: 1}, {Arrival: 1, InputTokens: 1, OutputTokens: DefaultOutputTokens, N: 1}},
			shape: []string{"0", "1"},
			notes: []string{`arrivals: synthetic, one request every 1s (--rate 1): the first request's "timestamp" is not a number`},
		},
		{
			name: "max requests",
			lines: func(t *testing.T) []string {
				return []string{completion(t, map[string]any{"prompt": "x"}), completion(t, map[string]any{"prompt": "y"}), completion(t, map[string]any{"prompt": "z"})}
			},
			opts:  RequestLogOptions{MaxRequests: 2},
			want:  []Request{{InputTokens: 1, OutputTokens: DefaultOutputTokens, N: 1}, {Arrival: 1, InputTokens: 1, OutputTokens: DefaultOutputTokens, N: 1}},
			shape: []string{"0", "1"},
			notes: []string{"first 2 requests only"},
		},
		{
			name:    "no usable line",
			lines:   func(*testing.T) []string { return []string{"[1]", `{"model": "m"}`} },
			wantErr: "request log t.jsonl: no usable request in 2 lines (first: line 1: not a JSON object",
		},
		{
			name:    "empty",
			lines:   func(*testing.T) []string { return nil },
			wantErr: "request log t.jsonl: no requests",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.lines(t), "\n")
			tr, err := ReadRequests(context.Background(), strings.NewReader(in), "t.jsonl", tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != "requests" || tr.Tokens != "estimated" || tr.BlockSize != audit.DefaultBlockSize || !tr.PrefixInfo {
				t.Errorf("trace = %s, %s tokens, block %d, prefix info %v; want requests, estimated, %d, true", tr.Format, tr.Tokens, tr.BlockSize, tr.PrefixInfo, audit.DefaultBlockSize)
			}
			if diff := cmp.Diff(tc.want, noBlocks(tr.Requests)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.shape, shape(tr)); diff != "" {
				t.Errorf("block shape (-want +got):\n%s", diff)
			}
			for _, want := range tc.notes {
				found := false
				for _, n := range tr.Notes {
					found = found || strings.Contains(n, want)
				}
				if !found {
					t.Errorf("no note contains %q; notes:\n%s", want, strings.Join(tr.Notes, "\n"))
				}
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		raw  string
		want float64
		unit string
		ok   bool
	}{
		{`1700000000`, 1700000000, "seconds", true},
		{`1700000000.25`, 1700000000.25, "seconds", true},
		{`1700000000250`, 1700000000.25, "milliseconds", true},
		{`1700000000250000`, 1700000000.25, "microseconds", true},
		{`1700000000250000000`, 1700000000.25, "nanoseconds", true},
		{`"1700000000"`, 1700000000, "seconds", true},
		{`"2023-11-14T22:13:20.25Z"`, 1700000000.25, "date and time", true},
		{`"2023-11-15T00:13:20.25+02:00"`, 1700000000.25, "date and time", true},
		{`"2023-11-14 22:13:20.25"`, 1700000000.25, "date and time", true},
		{`"2023-11-14T22:13:20.25"`, 1700000000.25, "date and time", true},
		// Past 2262 a time no longer fits int64 nanoseconds; it wrapped to a negative time.
		{`"2320-11-14 22:13:20.25"`, 11072412800.25, "date and time", true},
		{`"1960-01-01T00:00:00Z"`, 0, "", false},
		{`"yesterday"`, 0, "", false},
		{`-5`, 0, "", false},
		{`{}`, 0, "", false},
		{`true`, 0, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			got, unit, ok := parseTime(json.RawMessage(tc.raw))
			if ok != tc.ok || unit != tc.unit || (ok && !near(got, tc.want) && (got-tc.want > 1e-6 || tc.want-got > 1e-6)) {
				t.Errorf("parseTime(%s) = %v, %q, %v; want %v, %q, %v", tc.raw, got, unit, ok, tc.want, tc.unit, tc.ok)
			}
		})
	}
}

// TestChainOnlyPrefixes checks that equal block content at different depths, or after a
// different block, gets different keys: only a true prefix matches.
func TestChainOnlyPrefixes(t *testing.T) {
	ids := func(vals ...uint32) []uint32 { return vals }
	cases := []struct {
		name string
		a, b []uint32
		same int // leading keys equal
	}{
		{"identical", ids(1, 2, 3, 4, 5), ids(1, 2, 3, 4, 5), 3},
		{"differ in the partial block", ids(1, 2, 3, 4, 5), ids(1, 2, 3, 4, 6), 2},
		{"differ in block 0, equal later", ids(9, 2, 3, 4), ids(1, 2, 3, 4), 0},
		{"partial block is not the full block", ids(1, 2, 3), ids(1, 2, 3, 4), 1},
		{"block contents swapped", ids(1, 2, 3, 4), ids(3, 4, 1, 2), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := appendChain(nil, tc.a, 2), appendChain(nil, tc.b, 2)
			same := 0
			for same < len(ka) && same < len(kb) && ka[same] == kb[same] {
				same++
			}
			if same != tc.same {
				t.Errorf("%d leading keys equal, want %d (%x vs %x)", same, tc.same, ka, kb)
			}
			seen := map[uint64]bool{}
			for _, k := range ka[same:] {
				seen[k] = true
			}
			for _, k := range kb[same:] {
				if seen[k] {
					t.Errorf("key %x appears in both chains after they diverge", k)
				}
			}
		})
	}
}

// tokenizeServer serves the emulated /tokenize and a minimal /metrics with cache_config_info, as a
// vLLM server would.
func tokenizeServer(t *testing.T, blockSize int) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/tokenize", emulated.TokenizeHandler(emulated.TokenizeOptions{}))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE vllm:cache_config_info gauge")
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"%d\",enable_prefix_caching=\"True\",prefix_caching_hash_algo=\"sha256\"} 1\n", blockSize)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestReadRequestsExact tokenizes through the emulated replica's /tokenize: the block size
// comes from its /metrics, the input lengths are the server's token counts, and chat requests
// that share a system prompt share their leading blocks.
func TestReadRequestsExact(t *testing.T) {
	srv := tokenizeServer(t, 8)
	ctx := context.Background()
	remote, err := audit.Connect(ctx, srv.URL, "", 30*time.Second, 16)
	if err != nil {
		t.Fatal(err)
	}
	server, cc := remote.Server, remote
	if cc.BlockSize != 8 {
		t.Fatalf("block size from /metrics = %d, want 8", cc.BlockSize)
	}
	system := "You are a careful assistant. Answer in one short paragraph and cite sources by title."
	chat := func(user string, ts int) string {
		return completion(t, map[string]any{"timestamp": ts, "messages": []map[string]string{
			{"role": "system", "content": system}, {"role": "user", "content": user},
		}})
	}
	lines := []string{
		chat("What is the capital of France?", 100),
		"not a request",
		chat("What is the tallest mountain on Earth?", 101),
		chat("What is the capital of France?", 102),
	}
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			tr, err := ReadRequests(ctx, strings.NewReader(strings.Join(lines, "\n")), "chat.jsonl",
				RequestLogOptions{BlockSize: cc.BlockSize, Tokenizer: server, Concurrency: conc})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Tokens != "exact" || tr.BlockSize != 8 {
				t.Errorf("tokens %q, block size %d; want exact, 8", tr.Tokens, tr.BlockSize)
			}
			if len(tr.Requests) != 3 {
				t.Fatalf("%d requests, want 3", len(tr.Requests))
			}
			for i, line := range []int{0, 2, 3} {
				req, err := audit.NewRequestReader(strings.NewReader(lines[line]), 0).Next()
				if err != nil {
					t.Fatal(err)
				}
				toks, err := server.Tokenize(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				got := tr.Requests[i]
				if got.InputTokens != len(toks.IDs) || len(got.Blocks) != (len(toks.IDs)+7)/8 {
					t.Errorf("request %d: %d tokens in %d blocks, want the server's %d tokens in %d blocks", i, got.InputTokens, len(got.Blocks), len(toks.IDs), (len(toks.IDs)+7)/8)
				}
				if got.Arrival != float64(i) {
					t.Errorf("request %d arrives at %v, want %d", i, got.Arrival, i)
				}
			}
			r0, r1, r2 := tr.Requests[0].Blocks, tr.Requests[1].Blocks, tr.Requests[2].Blocks
			if diff := cmp.Diff(r0, r2); diff != "" {
				t.Errorf("the same conversation twice gave different chains:\n%s", diff)
			}
			shared := 0
			for shared < min(len(r0), len(r1)) && r0[shared] == r1[shared] {
				shared++
			}
			if shared < 2 || shared == len(r0) {
				t.Errorf("conversations with the same system prompt share %d of %d blocks, want the system prompt's blocks and no more", shared, len(r0))
			}
			if !strings.Contains(strings.Join(tr.Notes, "\n"), "1 line was not a usable request") {
				t.Errorf("notes do not count the bad line: %q", tr.Notes)
			}
		})
	}
}

// TestReadRequestsExactMaxRequests stops after MaxRequests requests with an exact tokenizer too:
// bad lines do not count towards the limit, and nothing past it is read.
func TestReadRequestsExactMaxRequests(t *testing.T) {
	srv := tokenizeServer(t, 8)
	lines := []string{`{"prompt": "a"}`, "not a request", `{"prompt": "b"}`, `{"prompt": "c"}`, "not read"}
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			tr, err := ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "x.jsonl",
				RequestLogOptions{Tokenizer: &audit.Server{BaseURL: srv.URL}, Concurrency: conc, MaxRequests: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Requests) != 2 {
				t.Fatalf("%d requests, want 2", len(tr.Requests))
			}
			notes := strings.Join(tr.Notes, "\n")
			for _, want := range []string{"first 2 requests only", "1 line was not a usable request"} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes %q do not say %q", tr.Notes, want)
				}
			}
		})
	}
}

// TestReadRequestsExactRepeats tokenizes a repeated conversation once.
func TestReadRequestsExactRepeats(t *testing.T) {
	var calls atomic.Int64
	mux := http.NewServeMux()
	toy := emulated.TokenizeHandler(emulated.TokenizeOptions{})
	mux.HandleFunc("/tokenize", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		toy.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	lines := []string{`{"prompt": "the same prompt"}`, `{"prompt": "another"}`, `{"prompt": "the same prompt"}`, `{"prompt": "the same prompt", "model": "other"}`}
	tr, err := ReadRequests(context.Background(), strings.NewReader(strings.Join(lines, "\n")), "x.jsonl",
		RequestLogOptions{Tokenizer: &audit.Server{BaseURL: srv.URL}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("%d calls to /tokenize for 4 requests, 3 of them distinct (a model counts), want 3", got)
	}
	if diff := cmp.Diff(tr.Requests[0].Blocks, tr.Requests[2].Blocks); diff != "" {
		t.Errorf("the repeat has other blocks:\n%s", diff)
	}
}

// TestReadRequestsServerDown fails with the line and the server's address, not a partial trace.
func TestReadRequestsServerDown(t *testing.T) {
	srv := tokenizeServer(t, 16)
	url := srv.URL
	srv.Close()
	_, err := ReadRequests(context.Background(), strings.NewReader(`{"prompt": "hello"}`), "x.jsonl",
		RequestLogOptions{Tokenizer: &audit.Server{BaseURL: url}})
	if err == nil || !strings.Contains(err.Error(), "request log x.jsonl line 1: tokenize "+url) {
		t.Fatalf("error = %v, want it to name the log, the line and the server", err)
	}
}

func FuzzReadFields(f *testing.F) {
	f.Add([]byte(`{"prompt": "x", "timestamp": 1700000000, "max_tokens": 5, "n": 2}`), "")
	f.Add([]byte(`{"startTime": "2026-11-30T10:00:00Z", "request_body": "{\"prompt\": \"x\", \"max_tokens\": 3}"}`), "request_body")
	f.Add([]byte(`{"a": {"b": {"messages": [], "max_completion_tokens": "7"}}, "created": 1.7e12}`), "a.b")
	f.Add([]byte(`{"timestamp": "2023-11-14 22:13:20.25", "n": -1, "max_tokens": 1e99}`), "")
	f.Fuzz(func(t *testing.T, line []byte, bodyKey string) {
		fs, err := readFields(line, bodyKey, "")
		if err != nil {
			return
		}
		if fs.hasOutput && (fs.output < 0 || fs.output > 1<<30) {
			t.Errorf("output %d out of range", fs.output)
		}
		if fs.n < 0 || fs.n > 1<<30 {
			t.Errorf("n %d out of range", fs.n)
		}
		if fs.hasTime && (fs.time < 0 || fs.time != fs.time) {
			t.Errorf("time %v", fs.time)
		}
		// On valid JSON the shallow walk must agree with encoding/json.
		var top map[string]json.RawMessage
		if bodyKey != "" || json.Unmarshal(line, &top) != nil {
			return
		}
		want, wantOK, _ := nonNegInt(span(bytes.TrimSpace(top["max_tokens"])))
		if w2, ok, _ := nonNegInt(span(bytes.TrimSpace(top["max_completion_tokens"]))); ok {
			want, wantOK = w2, true
		}
		if fs.hasOutput != wantOK || fs.output != want {
			t.Errorf("output %d (%v), encoding/json reads %d (%v)", fs.output, fs.hasOutput, want, wantOK)
		}
	})
}

// TestReadRequestsExactToolCalls sends the conversation as the client wrote it, tool calls
// included, so simulate's exact tokens are the ones kvcheck audit gets for the same line.
func TestReadRequestsExactToolCalls(t *testing.T) {
	srv := tokenizeServer(t, 8)
	ctx := context.Background()
	server := &audit.Server{BaseURL: srv.URL}
	line := `{"messages": [{"role": "system", "content": "You look things up."},` +
		`{"role": "user", "content": "Weather in Paris?"},` +
		`{"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},` +
		`{"role": "tool", "tool_call_id": "call_1", "content": "18 C, cloudy"}]}`
	tr, err := ReadRequests(ctx, strings.NewReader(line), "tools.jsonl",
		RequestLogOptions{BlockSize: 8, Tokenizer: server, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 1 {
		t.Fatalf("%d requests, want 1", len(tr.Requests))
	}
	raw := audit.NewRequestReader(strings.NewReader(line), 0)
	raw.KeepRaw = true
	req, err := raw.Next()
	if err != nil {
		t.Fatal(err)
	}
	want, err := server.Tokenize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := audit.NewRequestReader(strings.NewReader(line), 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	flat, err := server.Tokenize(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(flat.IDs) == len(want.IDs) {
		t.Fatalf("the emulated server renders the tool call the same with and without the raw messages (%d tokens): the test proves nothing", len(want.IDs))
	}
	if got := tr.Requests[0].InputTokens; got != len(want.IDs) {
		t.Errorf("simulate tokenized %d tokens, want the %d the server gives for the raw messages (%d without them)", got, len(want.IDs), len(flat.IDs))
	}
}

// TestRequestLogBounds: a request log that expands past the block-reference limit, or past the
// request limit (requests shorter than a block add no reference), is refused at the line that
// crosses it, with an error naming the limit and what to do; one within both is read.
func TestRequestLogBounds(t *testing.T) {
	// Three completions of 2, 3 and 1 whole blocks of the estimate (64 bytes a block).
	log := completion(t, map[string]any{"model": "m", "prompt": blk('a') + blk('b')}) + "\n" +
		completion(t, map[string]any{"model": "m", "prompt": blk('c') + blk('d') + blk('e')}) + "\n" +
		completion(t, map[string]any{"model": "m", "prompt": blk('f')}) + "\n"
	read := func(o RequestLogOptions) (*Trace, error) {
		return ReadRequests(context.Background(), strings.NewReader(log), "r.jsonl", o)
	}
	tr, err := read(RequestLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, r := range tr.Requests {
		refs += len(r.Blocks)
	}
	if _, err := read(RequestLogOptions{MaxBlockRefs: refs, MaxTraceRequests: len(tr.Requests)}); err != nil {
		t.Errorf("at exactly its %d references and %d requests: %v", refs, len(tr.Requests), err)
	}
	_, err = read(RequestLogOptions{MaxBlockRefs: refs - 1})
	if want := "request log r.jsonl line 3 (blocks of 16 tokens): more than " + fmt.Sprint(refs-1) + " block references"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--max-block-refs") {
		t.Errorf("one reference short: error %v, want %q naming --max-block-refs", err, want)
	}
	_, err = read(RequestLogOptions{MaxTraceRequests: 2})
	if want := "request log r.jsonl line 3: more than 2 requests"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "raise the limit with --max-trace-requests") || !strings.Contains(err.Error(), "--max-requests N") {
		t.Errorf("one request too many: error %v, want %q naming --max-trace-requests and --max-requests", err, want)
	}
}
