package benchdata

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/lint"
)

func corpus(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	return dir
}

func TestScopeExpr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`vllm:num_requests_running`, `vllm:num_requests_running{namespace="t"}`},
		{`rate(vllm:prompt_tokens_total{model_name="$m"}[5m])`, `rate(vllm:prompt_tokens_total{namespace="t",model_name="$m"}[5m])`},
		{`sum(vllm:x{}) / sum(vllm:y)`, `sum(vllm:x{namespace="t",}) / sum(vllm:y{namespace="t"})`},
		{`{__name__=~"vllm:gpu_.*"}`, `{__name__=~"vllm:gpu_.*"}`},
		{`up`, `up`},
	} {
		if got := scopeExpr(tc.in, "t"); got != tc.want {
			t.Errorf("scopeExpr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDashboards: the generated dashboards are valid, near the size asked, the same for the
// same seed, and lint reads every one as a Grafana dashboard whose queries all parse (the
// scoping and the edits keep them PromQL).
func TestDashboards(t *testing.T) {
	c, err := LoadCorpus(corpus(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, again := t.TempDir(), t.TempDir()
	const n, total = 60, 1 << 20
	st, err := c.Dashboards(dir, n, total, 7)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != n || st.Bytes < total*3/4 || st.Bytes > total*5/4 {
		t.Errorf("wrote %d files of %d bytes, want %d of about %d", st.Files, st.Bytes, n, total)
	}
	if _, err := c.Dashboards(again, n, total, 7); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := lint.New(cat, lint.Options{}).Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != n {
		t.Fatalf("lint read %d files, want %d", len(rs), n)
	}
	queries := 0
	for _, r := range rs {
		b, err := os.ReadFile(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Errorf("%s is not JSON", r.Path)
		}
		rel, _ := filepath.Rel(dir, r.Path)
		if b2, err := os.ReadFile(filepath.Join(again, rel)); err != nil || !bytes.Equal(b, b2) {
			t.Errorf("%s differs between two runs with the same seed (%v)", rel, err)
		}
		if len(r.Formats) != 1 || r.Formats[0] != lint.FormatGrafana {
			t.Errorf("%s read as %v, want a Grafana dashboard", rel, r.Formats)
		}
		queries += r.Queries
		for _, f := range r.Findings {
			if f.Code == lint.CodeUnparsed {
				t.Errorf("%s: %s: %s", rel, f.Metric, f.Message)
			}
		}
	}
	if queries < n {
		t.Errorf("%d queries in %d dashboards, want more", queries, n)
	}
}

func TestBigDashboard(t *testing.T) {
	c, err := LoadCorpus(corpus(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := c.BigDashboard(&buf, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) != 300 || st.Panels != 300 || bytes.Count(bytes.TrimSpace(buf.Bytes()), []byte("\n")) != 0 {
		t.Errorf("%d panels (said %d) on %d lines, want 300 on one line", len(d.Panels), st.Panels, bytes.Count(buf.Bytes(), []byte("\n"))+1)
	}
}

// TestRequestLog: every line is a chat request with a time and max_tokens, the size is what
// was asked (to one request), and the first two rows of the Mooncake trace, which share their
// first block id (0), share the system prompt made of it and nothing of their second blocks.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	const size = 2 << 20
	st, err := RequestLog(corpus(t), &buf, size)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) || st.Bytes < size || st.Bytes > size+1<<20 {
		t.Errorf("wrote %d bytes (said %d), want %d and at most one request more", buf.Len(), st.Bytes, size)
	}
	var lines []requestLine
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l requestLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Timestamp < 1764496800 || l.MaxTokens <= 0 || len(l.Messages) != 2 {
			t.Fatalf("line %d: %+v", len(lines)+1, l)
		}
		lines = append(lines, l)
	}
	if len(lines) != st.Requests || len(lines) < 3 {
		t.Fatalf("%d lines, said %d", len(lines), st.Requests)
	}
	a, b := lines[0].Messages, lines[1].Messages
	if a[0].Content != b[0].Content || len(a[0].Content) != 2048 {
		t.Errorf("system prompts of the first two rows: %d and %d bytes, equal %v; want the same 2048", len(a[0].Content), len(b[0].Content), a[0].Content == b[0].Content)
	}
	if strings.HasPrefix(b[1].Content, a[1].Content[:64]) {
		t.Errorf("the rows' second blocks (ids 1 and 14) begin alike: %q", a[1].Content[:64])
	}
	if want := 4 * (6758 - 512); len(a[1].Content) != want {
		t.Errorf("first row's user turn is %d bytes, want %d (4 bytes a token of its 6,758 after the first block)", len(a[1].Content), want)
	}
}

// TestDecodeJobs: the reference decodes every file of a tree whatever its goroutines, counts
// them and their bytes, and names a file that is not JSON.
func TestDecodeJobs(t *testing.T) {
	dir := t.TempDir()
	var bytes int64
	for i := range 40 {
		s := `{"a": [1, 2, {"b": "` + strings.Repeat("x", i) + `"}]}`
		bytes += int64(len(s))
		if err := os.MkdirAll(filepath.Join(dir, string(rune('a'+i%3))), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i%3)), strings.Repeat("f", 1+i)+".json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, jobs := range []int{1, 2, 5} {
		st, err := DecodeJobs([]string{dir}, jobs)
		if err != nil || st != (DecodeStats{Files: 40, Bytes: bytes}) {
			t.Errorf("jobs %d: %+v, %v; want 40 files, %d bytes", jobs, st, err, bytes)
		}
	}
	bad := filepath.Join(dir, "b", "bad.json")
	if err := os.WriteFile(bad, []byte(`{"a": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeJobs([]string{dir}, 3); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("err %v, want one naming %s", err, bad)
	}
}
