package sim

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestReadMooncake(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Request
		notes   int
		wantErr string
	}{
		{
			name: "two rows, a session id and an unknown field",
			in: `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 1024, "output_length": 7, "hash_ids": [0, 2], "session_id": 42, "new_field": true}
`,
			want: []Request{
				{Arrival: 0, Blocks: []uint64{0, 1}, InputTokens: 600, OutputTokens: 5, N: 1},
				{Arrival: 1.5, Session: "42", Blocks: []uint64{0, 2}, InputTokens: 1024, OutputTokens: 7, N: 1},
			},
			notes: 1,
		},
		{
			name: "out of order rows are sorted and noted",
			in: `{"timestamp": 2000, "input_length": 10, "output_length": 1, "hash_ids": [5]}

{"timestamp": 1000, "input_length": 10, "output_length": 1, "hash_ids": [6], "chat_id": "c"}
`,
			want: []Request{
				{Arrival: 0, Session: "c", Blocks: []uint64{6}, InputTokens: 10, OutputTokens: 1, N: 1},
				{Arrival: 1, Blocks: []uint64{5}, InputTokens: 10, OutputTokens: 1, N: 1},
			},
			notes: 1,
		},
		{
			// Epoch milliseconds: arrivals count from the first request, so that
			// --add-replica-at 30m means 30 minutes into the trace.
			name: "arrivals count from the first request",
			in: `{"timestamp": 1732000000000, "input_length": 10, "output_length": 1, "hash_ids": [5]}
{"timestamp": 1732000001500, "input_length": 10, "output_length": 1, "hash_ids": [6]}
`,
			want: []Request{
				{Arrival: 0, Blocks: []uint64{5}, InputTokens: 10, OutputTokens: 1, N: 1},
				{Arrival: 1.5, Blocks: []uint64{6}, InputTokens: 10, OutputTokens: 1, N: 1},
			},
		},
		{
			name:  "hash_ids count inconsistent with input_length is noted",
			in:    `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1, 2, 3]}`,
			want:  []Request{{Blocks: []uint64{1, 2, 3}, InputTokens: 10, OutputTokens: 1, N: 1}},
			notes: 1,
		},
		{
			// vLLM's wire hashes are unsigned 64-bit: half of them do not fit an int64.
			name:  "hash ids above 2^63 and negative ones",
			in:    `{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [18446744073709551615, -1, 9223372036854775808, 7]}`,
			want:  []Request{{Blocks: []uint64{18446744073709551615, 18446744073709551615, 9223372036854775808, 7}, InputTokens: 1536, OutputTokens: 1, N: 1}},
			notes: 1,
		},
		{name: "hash id beyond 64 bits", in: `{"timestamp": 0, "input_length": 1, "hash_ids": [18446744073709551616]}`, wantErr: "line 1"},
		{name: "hash ids not an array", in: `{"timestamp": 0, "input_length": 1, "hash_ids": "abc"}`, wantErr: "line 1"},
		{name: "not JSON", in: "timestamp,input\n", wantErr: "line 1"},
		{name: "no hash_ids", in: `{"timestamp": 0, "input_length": 10, "output_length": 1}`, wantErr: "--format azure"},
		{name: "no timestamp", in: `{"input_length": 10, "hash_ids": []}`, wantErr: "no timestamp"},
		{name: "negative length", in: `{"timestamp": 0, "input_length": -1, "hash_ids": []}`, wantErr: "negative length"},
		{name: "huge input length", in: `{"timestamp": 0, "input_length": 9223372036854775807, "output_length": 1, "hash_ids": [0]}`, wantErr: "at most 1073741824"},
		{name: "huge output length", in: `{"timestamp": 0, "input_length": 1, "output_length": 9223372036854775807, "hash_ids": [0]}`, wantErr: "at most 1073741824"},
		{name: "fractional hash id", in: `{"timestamp": 0, "input_length": 1, "hash_ids": [1.5]}`, wantErr: "line 1"},
		{name: "empty", in: "", wantErr: "no requests"},
		{name: "two values on a line", in: `{"timestamp": 0, "input_length": 1, "hash_ids": []} {}`, wantErr: "more than one JSON value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadMooncake(strings.NewReader(tc.in), "t.jsonl", 512)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "t.jsonl") {
					t.Fatalf("error = %v, want one naming t.jsonl and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, tr.Requests); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if len(tr.Notes) != tc.notes {
				t.Errorf("notes = %q, want %d", tr.Notes, tc.notes)
			}
		})
	}
}

func TestReadAzure(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Request
		wantErr string
	}{
		{
			name: "lengths become unique blocks",
			in: "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
				"2023-11-16 18:15:46.6805900,20,44\n" +
				"2023-11-16 18:15:48.1805900,16,3\n",
			want: []Request{
				{Arrival: 0, Blocks: []uint64{uniqueKeyBase, uniqueKeyBase + 1}, InputTokens: 20, OutputTokens: 44, N: 1},
				{Arrival: 1.5, Blocks: []uint64{uniqueKeyBase + 2}, InputTokens: 16, OutputTokens: 3, N: 1},
			},
		},
		{name: "missing column", in: "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.68,1\n", wantErr: "no generatedtokens column"},
		{name: "bad time", in: "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", wantErr: "line 2"},
		{name: "bad count", in: "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,-4,1\n", wantErr: "non-negative"},
		{name: "header only", in: "TIMESTAMP,ContextTokens,GeneratedTokens\n", wantErr: "no requests"},
		{name: "empty", in: "", wantErr: "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadAzure(strings.NewReader(tc.in), "t.csv", 16)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "t.csv") {
					t.Fatalf("error = %v, want one naming t.csv and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, tr.Requests); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if tr.PrefixInfo {
				t.Errorf("PrefixInfo = true for a lengths-only trace")
			}
		})
	}
}

// corpusTrace opens a trace of the shared corpus, skipping when KVCHECK_CORPUS is unset.
func corpusTrace(t testing.TB, name string) *os.File {
	t.Helper()
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	f, err := os.Open(filepath.Join(dir, "traces", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func mooncake(t testing.TB) *Trace {
	t.Helper()
	tr, err := ReadMooncake(corpusTrace(t, "mooncake_conversation_trace.jsonl"), "mooncake", MooncakeBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestMooncakeAnchors checks the published figures of the Mooncake FAST'25 conversation trace.
func TestMooncakeAnchors(t *testing.T) {
	tr := mooncake(t)
	got := Stats(tr)
	want := TraceStats{Requests: 12031, BlockRefs: 288500, DistinctBlocks: 182790, Repeats: 105710}
	if got.Requests != want.Requests || got.BlockRefs != want.BlockRefs || got.DistinctBlocks != want.DistinctBlocks || got.Repeats != want.Repeats {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if s := fmt.Sprintf("%.2f", got.Ceiling*100); s != "36.64" {
		t.Errorf("ceiling = %.4f%%, want 36.64%%", got.Ceiling*100)
	}
	if len(tr.Notes) != 0 {
		t.Errorf("notes on a clean trace: %q", tr.Notes)
	}
	for i, r := range tr.Requests {
		if len(r.Blocks) == 0 || r.Blocks[0] != 0 {
			t.Fatalf("request %d does not start with block 0: the hot-spot premise fails", i)
		}
	}
}

// TestMooncakePolicies runs every policy over the real trace at 8 replicas and checks what the
// simulator exists to show: no policy beats the ceiling, naive longest-prefix and block-0
// session affinity pile everything on one replica, and the load-aware KV policies keep the
// fleet balanced while hitting more than round-robin.
func TestMooncakePolicies(t *testing.T) {
	tr := mooncake(t)
	ceiling := Stats(tr).Ceiling
	base := Config{AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams(), Seed: 1}
	res, err := Run(t.Context(), tr, Sweep{Replicas: []int{8}, KVBlocks: []int{2048}, Policies: PolicyNames(), Base: base}, nil)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Result{}
	for _, r := range res {
		by[r.Policy] = r
		if r.BlockHitRate > ceiling {
			t.Errorf("%s: block hit rate %.4f above the ceiling %.4f", r.Policy, r.BlockHitRate, ceiling)
		}
		if r.Requests != 12031 {
			t.Errorf("%s: %d requests routed, want 12031", r.Policy, r.Requests)
		}
	}
	for _, p := range []string{"kv-longest", "session"} {
		if got := by[p].LoadMaxOverMean; got != 8 {
			t.Errorf("%s: load max/mean = %.2f, want 8 (everything on one replica)", p, got)
		}
	}
	rr := by["round-robin"]
	for _, p := range []string{"kv-llmd", "kv-load", "approx-prefix"} {
		r := by[p]
		if r.HitRate <= rr.HitRate || r.LoadMaxOverMean > 1.25 || r.TTFTP99 >= by["kv-longest"].TTFTP99 {
			t.Errorf("%s: hit %.3f (round-robin %.3f), max/mean %.2f, ttft p99 %.1f: want more hits than round-robin, balance within 1.25, and no hot spot",
				p, r.HitRate, rr.HitRate, r.LoadMaxOverMean, r.TTFTP99)
		}
	}
}

// TestAzureUniquePrefix checks the lengths-only trace: nothing can hit.
func TestAzureUniquePrefix(t *testing.T) {
	tr, err := ReadAzure(corpusTrace(t, "azure_llm_inference_trace_2023_conv.csv"), "azure", 16)
	if err != nil {
		t.Fatal(err)
	}
	// MANIFEST.tsv says 19,365 rows; the last row has no newline, so `wc -l` undercounts by one.
	if got := len(tr.Requests); got != 19366 {
		t.Errorf("requests = %d, want 19366", got)
	}
	if s := Stats(tr); s.Repeats != 0 {
		t.Errorf("repeats = %d, want 0 in a lengths-only trace", s.Repeats)
	}
	c := Config{Replicas: 4, KVBlocks: 4096, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams()}
	r, err := Simulate(tr, c, "kv-llmd")
	if err != nil {
		t.Fatal(err)
	}
	if r.HitTokens != 0 {
		t.Errorf("hit tokens = %d, want 0", r.HitTokens)
	}
}

func FuzzReadMooncake(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}`))
	f.Add([]byte(`{"timestamp": 3, "input_length": 1, "hash_ids": [], "session_id": {"a": 1}}` + "\n\n{}"))
	f.Add([]byte(`{"timestamp": 1e300, "input_length": 1, "hash_ids": [-1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadMooncake(strings.NewReader(string(b)), "fuzz", 16)
		if err != nil {
			return
		}
		c := Config{Replicas: 2, KVBlocks: 4, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams()}
		if _, err := Simulate(tr, c, "kv-llmd"); err != nil {
			t.Fatalf("simulate a trace the reader accepted: %v", err)
		}
	})
}

func FuzzReadAzure(f *testing.F) {
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"))
	f.Add([]byte("\ufeffTIMESTAMP,GeneratedTokens,ContextTokens,x\n2023-11-16 18:15:46,1,2,\"q\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadAzure(strings.NewReader(string(b)), "fuzz", 16)
		if err != nil {
			return
		}
		c := Config{Replicas: 2, KVBlocks: 4, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams()}
		if _, err := Simulate(tr, c, "round-robin"); err != nil {
			t.Fatalf("simulate a trace the reader accepted: %v", err)
		}
	})
}

// TestTraceBounds checks that an endless trace stops with an error at the memory bound rather
// than taking all memory: the bounds are lowered so that the test is quick.
func TestTraceBounds(t *testing.T) {
	lim := Limits{BlockRefs: 10, Requests: 4}
	cases := []struct {
		name, in, wantErr string
		read              func(string) error
	}{
		{
			name: "mooncake block references",
			in:   strings.Repeat(`{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [0, 1, 2]}`+"\n", 4),
			read: func(s string) error {
				_, err := readMooncake(strings.NewReader(s), "t.jsonl", 512, lim)
				return err
			},
			wantErr: "t.jsonl line 4: more than 10 block references",
		},
		{
			name: "mooncake requests",
			in:   strings.Repeat(`{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []}`+"\n", 5),
			read: func(s string) error {
				_, err := readMooncake(strings.NewReader(s), "t.jsonl", 512, lim)
				return err
			},
			wantErr: "t.jsonl line 5: more than 4 requests",
		},
		{
			name: "azure requests",
			in:   "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("2023-11-16 18:15:46.68,0,1\n", 5),
			read: func(s string) error {
				_, err := readAzure(strings.NewReader(s), "t.csv", 16, lim)
				return err
			},
			wantErr: "t.csv line 6: more than 4 requests",
		},
		{
			name: "azure block references",
			in:   "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("2023-11-16 18:15:46.68,48,1\n", 4),
			read: func(s string) error {
				_, err := readAzure(strings.NewReader(s), "t.csv", 16, lim)
				return err
			},
			// A short line can claim a huge prompt: the limit is checked before its blocks
			// are made, and the error says a larger block size makes fewer.
			wantErr: "t.csv line 5 (blocks of 16 tokens): more than 10 block references, the most this run holds in memory (reading them took this process to … MB, its largest resident size so far: about … bytes a reference, where 12 bytes each stay once read): raise the limit with --max-block-refs if the machine has the memory, or use a larger --block-size",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read(tc.in)
			// "…" stands for a figure of the machine: what reading took.
			if err == nil || !regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(tc.wantErr), "…", `[0-9]+`)).MatchString(err.Error()) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			flag := "--max-trace-requests"
			if strings.Contains(tc.wantErr, "block references") {
				flag = "--max-block-refs"
			}
			if !strings.Contains(err.Error(), "raise the limit with "+flag) {
				t.Errorf("error = %v, want it to name %s", err, flag)
			}
			if err := tc.read(strings.Join(strings.SplitAfter(tc.in, "\n")[:3], "")); err != nil {
				t.Errorf("within the bounds: %v", err)
			}
		})
	}
}

// TestTraceBytesPerRequest keeps the memory figures the limit's error and --help quote in step
// with the types: a Request and its offset into the interned ids.
func TestTraceBytesPerRequest(t *testing.T) {
	if got := int(unsafe.Sizeof(Request{})) + int(unsafe.Sizeof(0)); got != traceBytesPerRequest {
		t.Errorf("a request costs %d bytes, traceBytesPerRequest says %d", got, traceBytesPerRequest)
	}
}

// repeatReader serves n bytes of c, then what follows.
type repeatReader struct {
	c    byte
	n    int
	then io.Reader
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return r.then.Read(p)
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = r.c
	}
	r.n -= k
	return k, nil
}

// TestReadAzureLineLimit: a line longer than the readers' 64 MiB line bound is an error naming
// the bound, read no further than the bound; and no message echoes more than a clip of the
// input. The reader had no bound (a 200 MB line cost 1.1 GB) and put the whole header, or a
// whole field, into its errors.
func TestReadAzureLineLimit(t *testing.T) {
	t.Run("endless header", func(t *testing.T) {
		in := &repeatReader{c: 'a', n: maxLine + 1<<20, then: strings.NewReader("\n")}
		_, err := ReadAzure(in, "t.csv", 16)
		if err == nil || !strings.Contains(err.Error(), "longer than 64 MiB") || len(err.Error()) > 300 {
			t.Fatalf("error (%d bytes) %.300v, want a short one naming the 64 MiB line bound", len(fmt.Sprint(err)), err)
		}
		if in.n > 1<<20 {
			t.Errorf("%d bytes left unread of the %d past the bound: stopped too early?", in.n, 1<<20)
		}
	})
	t.Run("wide header", func(t *testing.T) {
		header := "TIMESTAMP," + strings.Repeat("x", 1<<20)
		_, err := ReadAzure(strings.NewReader(header+"\n2023-11-16 18:15:46.68,1\n"), "t.csv", 16)
		if err == nil || !strings.Contains(err.Error(), "no contexttokens column") || len(err.Error()) > 300 {
			t.Fatalf("error (%d bytes) %.300v, want a short one naming the missing column", len(fmt.Sprint(err)), err)
		}
	})
	t.Run("huge field", func(t *testing.T) {
		in := "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("9", 1<<20) + ",1,1\n"
		_, err := ReadAzure(strings.NewReader(in), "t.csv", 16)
		if err == nil || !strings.Contains(err.Error(), "line 2") || len(err.Error()) > 300 {
			t.Fatalf("error (%d bytes) %.300v, want a short one naming line 2", len(fmt.Sprint(err)), err)
		}
	})
	t.Run("many unused columns", func(t *testing.T) {
		cols := make([]string, 1000)
		for i := range cols {
			cols[i] = fmt.Sprintf("c%d", i)
		}
		in := "TIMESTAMP,ContextTokens,GeneratedTokens," + strings.Join(cols, ",") + "\n2023-11-16 18:15:46.68,1,1" + strings.Repeat(",", 1000) + "\n"
		tr, err := ReadAzure(strings.NewReader(in), "t.csv", 16)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Notes) > 3 {
			t.Errorf("%d notes, want the unused columns summed up in one", len(tr.Notes))
		}
	})
}

// TestReadMooncakeUnknownFieldsBounded: a trace whose rows each carry a field never seen before
// counts the first 64 apart and the rest together, instead of growing a note and a map entry
// per field.
func TestReadMooncakeUnknownFieldsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 16, "output_length": 1, "hash_ids": [%d], "extra_%d": 1}`+"\n", i, i, i)
	}
	tr, err := ReadMooncake(strings.NewReader(b.String()), "t.jsonl", 16)
	if err != nil {
		t.Fatal(err)
	}
	fields := 0
	for _, n := range tr.Notes {
		if strings.Contains(n, "not used by the simulator") {
			fields++
		}
	}
	if fields != maxUnknownFields+1 {
		t.Errorf("%d notes about unused fields, want %d and one for the rest", fields, maxUnknownFields+1)
	}
}

// TestRequestLimitRaised: a trace one request over --max-trace-requests is refused with an
// error naming the limit and the flag, in both trace formats; the flag raised to the trace's
// size reads the same trace, which simulates to the same results as under the default limit.
// A simulation whose siblings (--n 2) send more requests than the limit is refused naming the
// same flag, and runs once the limit covers them.
func TestRequestLimitRaised(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"t.jsonl": `{"timestamp": 0, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 2]}
{"timestamp": 500, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 3]}
{"timestamp": 900, "input_length": 600, "output_length": 3, "hash_ids": [4, 5]}
{"timestamp": 1200, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 2]}
{"timestamp": 1300, "input_length": 600, "output_length": 3, "hash_ids": [4, 6]}
`,
		"t.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
			"2023-11-16 18:15:46.00,40,3\n2023-11-16 18:15:46.50,40,3\n2023-11-16 18:15:47.00,20,3\n" +
			"2023-11-16 18:15:47.20,40,3\n2023-11-16 18:15:47.30,20,3\n",
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadTraceFileLimit(path, FormatAuto, 0, Limits{Requests: 4})
			if err == nil || !strings.Contains(err.Error(), name+" line ") || !strings.Contains(err.Error(), "more than 4 requests") || !strings.Contains(err.Error(), "raise the limit with --max-trace-requests") {
				t.Fatalf("one request over the limit: error %v, want one naming the line, the limit of 4 and --max-trace-requests", err)
			}
			def, err := ReadTraceFile(path, FormatAuto, 0)
			if err != nil {
				t.Fatal(err)
			}
			raised, err := ReadTraceFileLimit(path, FormatAuto, 0, Limits{Requests: 5})
			if err != nil {
				t.Fatalf("limit raised to the trace's 5 requests: %v", err)
			}
			if len(raised.Requests) != 5 {
				t.Fatalf("read %d requests, want 5", len(raised.Requests))
			}
			c := Config{Replicas: 2, KVBlocks: 2, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams()}
			for _, policy := range []string{"round-robin", "kv-longest", "kv-llmd"} {
				want, err := Simulate(def, c, policy)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Simulate(raised, c, policy)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s under the raised limit (-default +raised):\n%s", policy, d)
				}
			}
			c.Siblings = 2
			_, err = Simulate(raised, c, "round-robin")
			if err == nil || !strings.Contains(err.Error(), "10 requests with their siblings") || !strings.Contains(err.Error(), "more than the 5 a simulation sends") || !strings.Contains(err.Error(), "--max-trace-requests") {
				t.Fatalf("siblings past the limit: error %v, want one naming 10 requests, the limit of 5 and --max-trace-requests", err)
			}
			ten, err := ReadTraceFileLimit(path, FormatAuto, 0, Limits{Requests: 10})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Simulate(def, c, "round-robin")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Simulate(ten, c, "round-robin")
			if err != nil {
				t.Fatalf("siblings within a limit of 10: %v", err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("siblings under the raised limit (-default +raised):\n%s", d)
			}
		})
	}
}

// TestSiblingLimitWithoutFlag: requests whose own n carries a run past the request limit, with
// no --n given (as in assess, which has no such flag), are refused with advice that does not
// tell the user to lower --n; with --n given, it does.
func TestSiblingLimitWithoutFlag(t *testing.T) {
	tr := &Trace{Name: "t", Format: "requests", BlockSize: 16, maxRequests: 5}
	for i := range 5 {
		tr.Requests = append(tr.Requests, Request{Arrival: float64(i), Blocks: []uint64{uint64(i)}, InputTokens: 16, OutputTokens: 1})
	}
	tr.Requests[0].N = 6 // 6 + 4 = 10 requests sent
	c := Config{Replicas: 2, KVBlocks: 2, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams()}
	_, err := Simulate(tr, c, "round-robin")
	if err == nil || !strings.Contains(err.Error(), "10 requests with their siblings") || !strings.Contains(err.Error(), "--max-trace-requests") {
		t.Fatalf("error %v, want one naming 10 requests and --max-trace-requests", err)
	}
	if strings.Contains(err.Error(), "--n") {
		t.Errorf("error %v names --n, which was not given", err)
	}
	c.Siblings = 2
	if _, err = Simulate(tr, c, "round-robin"); err == nil || !strings.Contains(err.Error(), "lower --n") {
		t.Errorf("with --n 2: error %v, want one saying to lower --n", err)
	}
}
